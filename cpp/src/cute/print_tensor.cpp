// cute.print_tensor as IR: printf calls in loops and ifs (see print_tensor.h for the format).
#include "cute/print_tensor.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cute/pointer.h"
#include "dsl/printf_format.h"
#include "layout/print.h"

namespace opencute::cute {
namespace {

namespace L = opencute::layout;
using dsl::Num;

// How far each nesting level is indented: the width of "tensor(".
constexpr int kIndent = 7;
// A mode longer than 2 * kEdge shows only its first and last kEdge entries.
constexpr int kEdge = 3;

class Emitter {
 public:
  explicit Emitter(ir::Builder& b) : b_(b) {}

  ir::Builder& builder() { return b_; }
  ir::Value* i32(int64_t v) { return b_.const_int(ir::i32(), v); }

  // `dsl_format` may mix `{}` and C conversions; literal text must not contain `%`.
  void print(const std::string& dsl_format, const std::vector<ir::Value*>& args = {}) {
    std::vector<ir::Type> types;
    for (ir::Value* v : args) types.push_back(v->type);
    b_.printf(dsl::to_c_format(dsl_format, types), args);
  }

  template <class Body>
  void loop(ir::Value* n, Body&& body) {
    ir::Op* op = b_.create_for(i32(0), n, i32(1), {}, 0);
    ir::Block* outer = b_.block();
    b_.set_block(op->region_block(0));
    body(op->region_block(0)->args[0].get());
    b_.yield({});
    b_.set_block(outer);
  }

  template <class Then, class Else>
  void if_else(ir::Value* cond, Then&& then_body, Else&& else_body) {
    if (std::optional<bool> c = constant(cond)) {
      if (*c) then_body();
      else else_body();
      return;
    }
    ir::Op* op = b_.create_if(cond);
    ir::Block* outer = b_.block();
    b_.set_block(op->region_block(0));
    then_body();
    b_.yield({});
    b_.set_block(op->region_block(1));
    else_body();
    b_.yield({});
    b_.set_block(outer);
  }

  template <class Then>
  void when(ir::Value* cond, Then&& then_body) {
    if_else(cond, then_body, [] {});
  }

  // `a` (an i32) compared with a constant or another i32.
  ir::Value* cmp(ir::CmpPredicate p, ir::Value* a, int64_t c) { return b_.cmp(p, a, i32(c)); }
  ir::Value* cmp_values(ir::CmpPredicate p, ir::Value* a, ir::Value* c) { return b_.cmp(p, a, c); }
  ir::Value* both(ir::Value* x, ir::Value* y) { return b_.binary(ir::OpCode::And, x, y); }
  ir::Value* minus(ir::Value* n, int64_t c) { return b_.binary(ir::OpCode::Sub, n, i32(c)); }

  // Index `i` of a mode of extent `n` is hidden behind `...` (CuTe shows kEdge at each end).
  ir::Value* hidden(ir::Value* i, ir::Value* n) {
    return both(cmp(ir::CmpPredicate::Ge, i, kEdge), cmp_values(ir::CmpPredicate::Lt, i, minus(n, kEdge)));
  }
  ir::Value* is_first_hidden(ir::Value* i) { return cmp(ir::CmpPredicate::Eq, i, kEdge); }

 private:
  static std::optional<bool> constant(ir::Value* v) {
    if (v->def && v->def->code == ir::OpCode::Constant) return v->def->int_attr != 0;
    return std::nullopt;
  }

  ir::Builder& b_;
};

std::string spaces(int n) { return std::string(size_t(n), ' '); }

ir::Value* extent(const L::Layout& l, int mode) {
  return L::size(l, {mode}).materialize(ir::i32());
}

// A packed sub-byte element, read through its byte: a dsl load of one 4-bit element is refused
// (it shares its byte), but printing only reads. Element 2k is the low nibble of byte k.
ir::Value* load_packed_element(ir::Builder& b, const Tensor& t, const L::IntTuple& coord) {
  if (t.swizzle) throw dsl::UserError("NOT_SUPPORTED", "print_tensor of a swizzled tensor of packed " +
                                                           ir::to_string(t.element()) + " elements");
  L::IntTuple off = t.layout(coord);
  if (!off.is_int()) throw dsl::UserError("TYPE_MISMATCH", "print_tensor: " + to_string(t) + " has no element offset at " +
                                                              L::to_string(coord));
  const int bits = t.element()->bit_size(), per_byte = 8 / bits;
  const L::Int& index = off.as_int();
  ir::Value* i = index.is_static() ? b.const_int(ir::i64(), index.value()) : b.cast(index.ir_value(), ir::i64());
  ir::Value* byte_index = b.binary(ir::OpCode::Div, i, b.const_int(ir::i64(), per_byte));
  ir::Value* in_byte = b.binary(ir::OpCode::Rem, i, b.const_int(ir::i64(), per_byte));
  ir::Type u8 = ir::int_type(8, false);
  ir::Value* bytes = recast_pointer(b, t.ptr, u8);
  ir::Value* byte = b.cast(b.load(b.ptr_add(bytes, byte_index), u8), ir::int_type(32, false));
  ir::Value* shift = b.cast(b.binary(ir::OpCode::Mul, in_byte, b.const_int(ir::i64(), bits)), ir::int_type(32, false));
  ir::Value* code = b.binary(ir::OpCode::Shr, byte, shift);
  ir::Value* narrow = b.cast(code, ir::int_type(bits, false));  // keeps the low bits
  return b.bitcast(narrow, t.element());
}

// One element followed by `suffix`: numbers as %f / %d with a space where the sign would go,
// coordinates in CuTe's tuple form.
void print_element(Emitter& e, const Tensor& t, const L::IntTuple& coord, const std::string& suffix) {
  if (!t.is_memory()) {
    std::vector<ir::Value*> args;
    std::string text = L::printf_form(coordinate_at(t, coord), args);
    e.print(text + suffix, args);
    return;
  }
  ir::Builder& b = e.builder();
  ir::Type type = t.element();
  ir::Value* v = type->is_sub_byte() ? load_packed_element(b, t, coord) : dsl::materialize(load_element(t, coord));
  ir::Value* zero = nullptr;
  if (type->is_float()) {
    v = b.cast(v, ir::f64());
    zero = b.const_float(ir::f64(), 0.0);
  } else {
    if (type->is_bool() || type->width < 32) v = b.cast(v, type->is_signed ? ir::i32() : ir::int_type(32, false));
    zero = b.const_int(v->type, 0);
  }
  e.if_else(b.cmp(ir::CmpPredicate::Ge, v, zero), [&] { e.print(" {}" + suffix, {v}); },
            [&] { e.print("{}" + suffix, {v}); });
}

// "tensor(raw_ptr(0x...: f32, gmem, align<16>) o (4,3):(3,1), data=" (or the coordinate
// iterator in place of the pointer).
void print_header(Emitter& e, const Tensor& t, const std::string& tail) {
  std::vector<ir::Value*> args;
  std::string text = "tensor(";
  if (t.is_memory()) {
    ir::Type pt = t.ptr->type;
    ir::Op* as_int = e.builder().create(ir::OpCode::PtrToInt, {t.ptr}, {ir::i64()});
    args.push_back(as_int->result());
    text += "raw_ptr(0x%016llx: " + memory_element_string(pt->element) + ", " + ir::to_string(pt->space) + ", align<" +
            std::to_string(pt->align) + (t.swizzle_in_address ? ">, " + L::to_string(*t.swizzle) : ">") + ")";
  } else {
    text += L::printf_form(t.coord, args);
  }
  bool layout_swizzle = t.swizzle && !t.swizzle_in_address;
  text += " o " + (layout_swizzle ? L::printf_form(t.composed_layout(), args) : L::printf_form(t.layout, args)) +
          ", data=" + tail;
  e.print(text, args);
}

// One row: "[ a,  b, ...,  y,  z, ]" over mode 1 (`cols` entries) at row `row` of block `block`.
void print_row(Emitter& e, const Tensor& t, ir::Value* cols, const L::IntTuple& row, const L::IntTuple* block) {
  e.print("[");
  e.loop(cols, [&](ir::Value* j) {
    e.if_else(e.hidden(j, cols), [&] { e.when(e.is_first_hidden(j), [&] { e.print("..., "); }); },
              [&] {
                L::IntTuple col(L::Int::dynamic(j));
                L::IntTuple coord = block ? L::IntTuple::tuple({row, col, *block}) : L::IntTuple::tuple({row, col});
                print_element(e, t, coord, ", ");
              });
  });
  e.print("]");
}

// Rank 1: one element per line.
void print_column(Emitter& e, const Tensor& t) {
  ir::Value* n = extent(t.layout, 0);
  e.print(spaces(kIndent));
  e.loop(n, [&](ir::Value* i) {
    e.if_else(e.hidden(i, n), [&] { e.when(e.is_first_hidden(i), [&] { e.print(spaces(kIndent) + "...\n"); }); },
              [&] {
                e.when(e.cmp(ir::CmpPredicate::Ne, i, 0), [&] { e.print(spaces(kIndent)); });
                e.print("[");
                print_element(e, t, L::IntTuple(L::Int::dynamic(i)), ", ");
                e.print("]");
                e.when(e.cmp_values(ir::CmpPredicate::Lt, i, e.minus(n, 1)), [&] { e.print(",\n"); });
              });
  });
}

// Rank >= 2: matrices over modes 0 and 1, one per index of the remaining modes (grouped into
// one mode); with more than one block level the blocks get an enclosing bracket.
void print_blocks(Emitter& e, const Tensor& t) {
  int r = L::rank(t.layout);
  bool outer_bracket = r > 2;
  Tensor g = r > 2 ? with_layout(t, L::group_modes(t.layout, 2, r)) : t;
  ir::Value* rows = extent(g.layout, 0);
  ir::Value* cols = extent(g.layout, 1);
  ir::Value* blocks = r > 2 ? extent(g.layout, 2) : e.i32(1);
  int block_indent = kIndent + (outer_bracket ? 1 : 0);
  int row_indent = block_indent + 1;
  e.print(spaces(kIndent) + (outer_bracket ? "[" : ""));
  e.loop(blocks, [&](ir::Value* k) {
    e.when(e.cmp(ir::CmpPredicate::Ne, k, 0), [&] { e.print(spaces(block_indent)); });
    e.print("[");
    L::IntTuple block(L::Int::dynamic(k));
    e.loop(rows, [&](ir::Value* i) {
      e.if_else(e.hidden(i, rows),
                [&] { e.when(e.is_first_hidden(i), [&] { e.print(spaces(row_indent) + "...\n"); }); },
                [&] {
                  e.when(e.cmp(ir::CmpPredicate::Ne, i, 0), [&] { e.print(spaces(row_indent)); });
                  print_row(e, g, cols, L::IntTuple(L::Int::dynamic(i)), r > 2 ? &block : nullptr);
                  e.when(e.cmp_values(ir::CmpPredicate::Lt, i, e.minus(rows, 1)), [&] { e.print(",\n"); });
                });
    });
    e.print("]");
    e.when(e.cmp_values(ir::CmpPredicate::Lt, k, e.minus(blocks, 1)), [&] { e.print(",\n\n"); });
  });
  if (outer_bracket) e.print("]");
}

// Every coordinate with its value, last mode fastest: "\t(0,1)= 1.000000".
void print_verbose(Emitter& e, const Tensor& t) {
  int r = L::rank(t.layout);
  std::vector<ir::Value*> extents;
  for (int m = 0; m < r; ++m) extents.push_back(extent(t.layout, m));
  std::vector<ir::Value*> index;
  std::function<void(int)> nest = [&](int m) {
    if (m == r) {
      std::vector<L::IntTuple> modes;
      std::vector<ir::Value*> args(index);
      std::string text = "\t(";
      for (int i = 0; i < r; ++i) {
        modes.emplace_back(L::Int::dynamic(index[size_t(i)]));
        text += i ? ",{}" : "{}";
      }
      e.print(text + ")=", args);
      print_element(e, t, r == 1 ? modes[0] : L::IntTuple::tuple(modes), "\n");
      return;
    }
    e.loop(extents[size_t(m)], [&](ir::Value* i) {
      index.push_back(i);
      nest(m + 1);
      index.pop_back();
    });
  };
  nest(0);
}

}  // namespace

void print_tensor(const Tensor& t, bool verbose) {
  Emitter e(trace_builder("print_tensor"));
  print_header(e, t, verbose ? " (\n" : "\n");
  auto data = [&] {
    if (verbose) print_verbose(e, t);
    else if (L::rank(t.layout) <= 1) print_column(e, t);
    else print_blocks(e, t);
  };
  ir::AddrSpace space = t.is_memory() ? t.ptr->type->space : ir::AddrSpace::Rmem;
  if (space == ir::AddrSpace::Gmem || space == ir::AddrSpace::Generic) {
    // A null global tensor (an AOT caller's descriptor with no data, as NVIDIA's export drivers
    // pass) prints its header and "(null)" rather than fault reading address 0. (Shared memory
    // may legitimately start at address 0, so only global and generic pointers are checked.)
    ir::Value* address = e.builder().create(ir::OpCode::PtrToInt, {t.ptr}, {ir::i64()})->result();
    ir::Value* is_null = e.builder().cmp(ir::CmpPredicate::Eq, address, e.builder().const_int(ir::i64(), 0));
    e.if_else(is_null, [&] { e.print(spaces(kIndent) + "(null)"); }, data);
  } else {
    data();
  }
  e.print(")\n");
}

void print_tensor(const TensorSSA& v, bool verbose) {
  Tensor t = make_rmem_tensor(L::make_layout(v.shape), v.element);
  store(t, v.values);
  print_tensor(t, verbose);
}

}  // namespace opencute::cute
