#include "cute/tensor.h"

#include <algorithm>

#include "cute/pointer.h"
#include "dsl/dtype.h"
#include "dsl/arch_ops.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using dsl::Num;

ir::Builder& trace_builder(const char* what) {
  if (ir::Builder* b = L::current_builder()) return *b;
  return dsl::Tracer::require(what).builder();
}

namespace {

const Tensor& require_memory(const Tensor& t, const char* what) {
  if (!t.is_memory())
    throw dsl::UserError("TENSOR_NOT_MEMORY", std::string(what) + " needs a memory tensor; " + to_string(t) +
                                                  " is a coordinate tensor");
  return t;
}

int64_t static_size(const Tensor& t, const char* what) {
  L::Int n = L::size(t.layout);
  if (!n.is_static())
    throw dsl::UserError("PHASE_REQUIRES_CONSTANT", std::string(what) + " needs a tensor of static size, got " +
                                                        to_string(t));
  return n.value();
}

L::IntTuple zeros_like(const L::IntTuple& shape) {
  if (!shape.is_tuple()) return L::IntTuple(0);
  std::vector<L::IntTuple> out;
  for (const auto& e : shape.elems()) out.push_back(zeros_like(e));
  return L::IntTuple(std::move(out));
}

ir::Value* element_pointer(const Tensor& t, const L::IntTuple& coord) { return element_address(t, coord); }

// 2^(the bit above the highest bit a swizzle reads or writes): adding a multiple of it commutes
// with the swizzle, so such offsets can live in the pointer.
int64_t swizzle_period(const L::Swizzle& s) {
  if (s.is_identity()) return 1;
  return int64_t(1) << (s.base + (s.shift < 0 ? -s.shift : s.shift) + s.bits);
}

// Adds `offset` (elements, in the outer layout's codomain) to a swizzled tensor: the part that
// commutes with the swizzle moves the pointer, the rest joins swizzle_offset.
void add_swizzled_offset(Tensor& t, const L::Int& offset) {
  int64_t period = swizzle_period(*t.swizzle);
  L::Int to_ptr = 0, to_swizzle = offset;
  if (offset.is_static()) {
    int64_t o = offset.value();
    int64_t lo = ((o % period) + period) % period;
    to_ptr = o - lo;
    to_swizzle = lo;
  } else if (offset.divisibility() != 0 && offset.divisibility() % period == 0) {
    to_ptr = offset;
    to_swizzle = 0;
  }
  if (!to_ptr.is_static_value(0)) t.ptr = offset_pointer(trace_builder("tensor slicing"), t.ptr, to_ptr);
  if (!to_swizzle.is_static_value(0)) t.swizzle_offset = t.swizzle_offset + to_swizzle;
}

// A loop over [0, n) whose body `body(index)` emits IR at the loop's insertion point.
template <class Body>
void emit_loop(ir::Builder& b, int64_t n_static, const L::Int& n, Body&& body) {
  ir::Value* lb = b.const_int(ir::i32(), 0);
  ir::Value* ub = n.is_static() ? b.const_int(ir::i32(), n_static) : n.materialize(ir::i32());
  ir::Op* loop = b.create_for(lb, ub, b.const_int(ir::i32(), 1), {}, 0);
  ir::Block* outer = b.block();
  ir::Block* inner = loop->region_block(0);
  b.set_block(inner);
  body(L::Int::dynamic(inner->args[0].get()));
  b.yield({});
  b.set_block(outer);
}

}  // namespace

Tensor make_tensor(ir::Value* ptr, L::Layout layout) {
  if (!ptr || !ptr->type->is_pointer()) throw dsl::UserError("TYPE_MISMATCH", "make_tensor needs a pointer");
  Tensor t;
  t.ptr = ptr;
  t.layout = std::move(layout);
  return t;
}

Tensor make_tensor(ir::Value* ptr, const L::ComposedLayout& layout) {
  if (!layout.inner_is_swizzle())
    throw dsl::UserError("NOT_SUPPORTED", "tensors over composed layouts need a swizzle as the inner function, got " +
                                              L::to_string(layout));
  if (!layout.offset.is_int())
    throw dsl::UserError("TYPE_MISMATCH", "the offset of a swizzled layout must be an integer, got " +
                                              L::to_string(layout));
  Tensor t = make_tensor(ptr, layout.outer);
  if (t.space() == ir::AddrSpace::Rmem)
    throw dsl::UserError("NOT_SUPPORTED", "register tensors cannot be swizzled: " + L::to_string(layout));
  t.swizzle = layout.swizzle();
  add_swizzled_offset(t, layout.offset.as_int());
  return t;
}

Tensor make_address_swizzled_tensor(ir::Value* ptr, const L::Swizzle& swizzle, L::Layout layout) {
  Tensor t = make_tensor(ptr, std::move(layout));
  if (t.space() != ir::AddrSpace::Smem)
    throw dsl::UserError("NOT_SUPPORTED", "a swizzled pointer must point to shared memory, got " +
                                              pointer_string(ptr->type));
  t.swizzle = swizzle;
  t.swizzle_in_address = true;
  return t;
}

ir::Value* swizzle_address(ir::Builder& b, ir::Value* ptr, const L::Swizzle& swizzle) {
  if (swizzle.is_identity()) return ptr;
  ir::Type pt = ptr->type;
  ir::Value* addr = b.create(ir::OpCode::PtrToInt, {ptr}, {ir::i64()})->result();
  // The swizzle keeps the low M bits, so the alignment below 2^M bytes survives.
  L::BuilderScope scope(&b);
  L::Int moved = swizzle(L::Int::dynamic(addr, pt->align));
  int align = int(std::min<int64_t>(pt->align, int64_t(1) << std::min(swizzle.base, 30)));
  align = std::max(align, 1);
  return b.create(ir::OpCode::IntToPtr, {moved.materialize(ir::i64())}, {ir::pointer_type(pt->element, pt->space, align)})
      ->result();
}

L::ComposedLayout Tensor::composed_layout() const {
  return L::make_composed_layout(swizzle ? *swizzle : L::make_swizzle(0, 4, 3), L::IntTuple(swizzle_offset), layout);
}

Tensor make_coord_tensor(L::IntTuple coord, L::Layout layout) {
  Tensor t;
  t.coord = std::move(coord);
  t.layout = std::move(layout);
  return t;
}

Tensor make_identity_tensor(const L::IntTuple& shape) {
  return make_coord_tensor(zeros_like(shape), L::make_identity_layout(shape));
}

Tensor make_rmem_tensor(const L::Layout& layout, ir::Type element) {
  L::Int n = L::cosize(layout);
  if (!n.is_static())
    throw dsl::UserError("PHASE_REQUIRES_CONSTANT",
                         "register tensors need a static layout, got " + L::to_string(layout));
  // 32-byte alignment, as the CuTe DSL gives register fragments, so that any vector access fits.
  ir::Value* p = trace_builder("make_rmem_tensor").local_array(element, std::max<int64_t>(n.value(), 1), 32);
  return make_tensor(p, layout);
}

L::Layout fragment_like_layout(const L::Layout& l) {
  // CuTe's make_fragment_like: mode 0 compact column-major (keeping its stride-0 leaves, so
  // broadcast values stay broadcast), then the other modes compact in the order of their
  // strides; extent-1 leaves get stride 0.
  if (!l.shape.is_static())
    throw dsl::UserError("PHASE_REQUIRES_CONSTANT", "make_fragment_like needs a static shape, got " +
                                                        L::to_string(l));
  auto shapes = L::flatten_to_vector(l.shape);
  auto strides = L::flatten_to_vector(l.stride);
  int first = int(L::flatten_to_vector(L::get(l.shape, {0})).size());
  if (l.rank() == 1) first = int(shapes.size());
  std::vector<L::IntTuple> out(shapes.size());
  auto is_zero = [](const L::IntTuple& d) { return d.is_int() && d.as_int().is_static_value(0); };
  int64_t running = 1;
  for (int i = 0; i < first; ++i) {
    int64_t n = shapes[i].as_int().value();
    if (is_zero(strides[i]) || n == 1) { out[i] = L::IntTuple(0); continue; }
    out[i] = L::IntTuple(running);
    running *= n;
  }
  std::vector<int> order;
  for (int i = first; i < int(shapes.size()); ++i) order.push_back(i);
  bool static_strides = std::all_of(order.begin(), order.end(), [&](int i) {
    return strides[i].is_int() && strides[i].as_int().is_static();
  });
  if (static_strides)
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return strides[a].as_int().value() < strides[b].as_int().value();
    });
  for (int i : order) {
    int64_t n = shapes[i].as_int().value();
    if (n == 1) { out[i] = L::IntTuple(0); continue; }
    out[i] = L::IntTuple(running);
    running *= n;
  }
  return L::Layout(l.shape, L::unflatten(out, l.shape));
}

Tensor with_layout(const Tensor& t, L::Layout l) {
  Tensor r = t;
  r.layout = std::move(l);
  return r;
}

Tensor with_composed_layout(const Tensor& t, const L::ComposedLayout& l) {
  if (!t.is_memory()) throw dsl::UserError("TYPE_MISMATCH", "a composed layout needs a memory tensor, got " + to_string(t));
  return make_tensor(t.ptr, l);
}

ir::Value* element_address(const Tensor& t, const L::IntTuple& coord) {
  L::IntTuple off = t.layout(coord);
  if (!off.is_int()) throw dsl::UserError("TYPE_MISMATCH", "memory tensor " + to_string(t) + " maps " +
                                                               L::to_string(coord) + " to " + L::to_string(off) +
                                                               ", not an element offset");
  L::Int index = off.as_int();
  if (t.desc_tile) return advance_descriptor(trace_builder("tensor indexing"), t.ptr, index);
  if (t.swizzle_in_address) {
    ir::Builder& b = trace_builder("tensor indexing");
    return swizzle_address(b, offset_pointer(b, t.ptr, index), *t.swizzle);
  }
  if (t.swizzle) {
    L::BuilderScope scope(&trace_builder("tensor indexing"));
    index = (*t.swizzle)(t.swizzle_offset + index);
  }
  return offset_pointer(trace_builder("tensor indexing"), t.ptr, index);
}

ir::Value* unswizzled_element_address(const Tensor& t, const L::IntTuple& coord) {
  L::IntTuple off = t.layout(coord);
  if (!off.is_int()) throw dsl::UserError("TYPE_MISMATCH", "memory tensor " + to_string(t) + " maps " +
                                                               L::to_string(coord) + " to " + L::to_string(off) +
                                                               ", not an element offset");
  L::Int index = off.as_int();
  if (t.swizzle && !t.swizzle_in_address) {
    L::BuilderScope scope(&trace_builder("tensor indexing"));
    index = t.swizzle_offset + index;
  }
  return offset_pointer(trace_builder("tensor indexing"), t.ptr, index);
}

Tensor recast_tensor(const Tensor& t, ir::Type element) {
  require_memory(t, "recast_tensor");
  ir::Type old = t.element();
  int old_bits = old->is_bool() ? 8 : old->width, new_bits = element->is_bool() ? 8 : element->width;
  ir::Value* p = recast_pointer(trace_builder("recast_tensor"), t.ptr, element);
  if (t.swizzle_in_address) return make_address_swizzled_tensor(p, *t.swizzle, L::recast_layout(new_bits, old_bits, t.layout));
  if (t.swizzle) return make_tensor(p, L::recast_layout(new_bits, old_bits, t.composed_layout()));
  return make_tensor(p, L::recast_layout(new_bits, old_bits, t.layout));
}

Tensor make_descriptor_tensor(const Tensor& smem, L::Layout vec, L::Layout tile) {
  const int bits = smem.element()->bit_size();
  std::vector<L::Layout> modes{std::move(vec)};
  for (int i = 1; i < smem.layout.rank(); ++i) modes.push_back(L::recast_layout(128, bits, smem.layout[i]));
  Tensor r = smem;
  r.layout = L::make_layout(modes);
  r.desc_tile = std::move(tile);
  return r;
}

ir::Value* advance_descriptor(ir::Builder& b, ir::Value* ptr, const L::Int& units) {
  if (units.is_static_value(0)) return ptr;
  L::BuilderScope scope(&b);
  ir::Value* bytes = offset_pointer(b, recast_pointer(b, ptr, ir::int_type(8)), units * L::Int(16));
  return recast_pointer(b, bytes, ptr->type->element);
}

namespace {
// Moves the engine of `t` by `offset` (a codomain offset of its layout).
void advance_engine(Tensor& t, const L::IntTuple& offset) {
  if (t.desc_tile) {
    t.ptr = advance_descriptor(trace_builder("tensor slicing"), t.ptr, offset.as_int());
  } else if (t.swizzle && !t.swizzle_in_address) {
    add_swizzled_offset(t, offset.as_int());
  } else if (t.is_memory()) {
    t.ptr = offset_pointer(trace_builder("tensor slicing"), t.ptr, offset.as_int());
  } else {
    t.coord = L::offset_add(t.coord, offset);
  }
}
}  // namespace

Tensor slice(const Tensor& t, const L::IntTuple& coord) {
  auto [sub, offset] = L::slice_and_offset(coord, t.layout);
  Tensor r = t;
  r.layout = sub;
  advance_engine(r, offset);
  return r;
}

Tensor domain_offset(const L::IntTuple& coord, const Tensor& t) {
  if (L::has_underscore(coord))
    throw dsl::UserError("TYPE_MISMATCH", "domain_offset needs a coordinate without `None`, got " + L::to_string(coord));
  Tensor r = t;
  advance_engine(r, t.layout(coord));
  return r;
}

void check_bounds(const Tensor& t, const L::IntTuple& coord, const std::string& file, int line) {
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (!tracer || !tracer->assertions_enabled()) return;
  // 0 <= index < size for a linear index; each coordinate below its extent otherwise.
  L::Int ok = 1;
  if (!coord.is_tuple()) {
    const L::Int& i = coord.as_int();
    ok = L::logical_and(L::le(L::Int(0), i), L::lt(i, L::size(t.layout)));
  } else if (L::congruent(coord, t.layout.shape)) {
    auto cs = L::flatten_to_vector(coord), ss = L::flatten_to_vector(t.layout.shape);
    for (size_t k = 0; k < cs.size(); ++k)
      ok = L::logical_and(ok, L::logical_and(L::le(L::Int(0), cs[k].as_int()), L::lt(cs[k].as_int(), ss[k].as_int())));
  } else {
    return;  // a partial hierarchical coordinate: CuTe's own congruence rules apply
  }
  std::string what = "index " + L::to_string(coord) + " out of bounds of " + to_string(t);
  if (ok.is_static()) {
    if (ok.value() == 0) throw dsl::UserError("VALUE_OUT_OF_BOUNDS", what);
    return;
  }
  dsl::assertion(Num::of_value(ok.ir_value()), what, file, line);
}

namespace {
// The CuTe DSL does not dereference a single element narrower than a byte.
void require_whole_byte_element(const Tensor& t, const char* what) {
  if (t.element()->is_sub_byte())
    throw dsl::UserError("NOT_SUPPORTED", std::string(what) + " of " + dsl::dtype_name(t.element()) + ": a " +
                                              std::to_string(t.element()->width) +
                                              "-bit element shares its byte and cannot be accessed alone; "
                                              "recast_tensor the tensor to Uint8 to read or write its bytes");
}
}  // namespace

Num load_element(const Tensor& t, const L::IntTuple& coord) {
  require_memory(t, "loading an element");
  require_whole_byte_element(t, "loading an element");
  ir::Builder& b = trace_builder("tensor indexing");
  return Num::of_value(b.load(element_pointer(t, coord), t.element()));
}

void store_element(const Tensor& t, const L::IntTuple& coord, const Num& value) {
  require_memory(t, "storing an element");
  require_whole_byte_element(t, "storing an element");
  ir::Builder& b = trace_builder("tensor indexing");
  b.store(dsl::materialize(dsl::convert(value, t.element())), element_pointer(t, coord));
}

L::IntTuple coordinate_at(const Tensor& t, const L::IntTuple& coord) {
  return L::offset_add(t.coord, t.layout(coord));
}

namespace {

// Vectors run along the leaf `s0:d0`; `others` are the strides of every other leaf, which
// (with the pointer) must keep each vector's start aligned to the vector's size.
int run_vector_width(ir::Type ptr_type, const L::IntTuple& s0, const L::IntTuple& d0,
                     const std::vector<L::IntTuple>& others, int max_bytes) {
  ir::Type e = ptr_type->element;
  if (e->is_bool()) return 1;  // i1 vectors are bit-packed in memory
  // In bits, so that packed sub-byte elements count; their vectors must fill whole bytes.
  const int64_t eb = e->bit_size();
  if (!s0.is_int() || !s0.as_int().is_static() || !d0.is_int() || !d0.as_int().is_static_value(1)) return 1;
  int64_t run = s0.as_int().value();
  int v = 1;
  while (run % (2 * v) == 0 && 2 * v * eb <= int64_t(max_bytes) * 8) v *= 2;
  for (; v > 1 && v * eb % 8 == 0; v /= 2) {
    int64_t need = v * eb;
    bool ok = (int64_t(ptr_type->align) * 8) % need == 0;
    for (size_t i = 0; ok && i < others.size(); ++i) {
      if (!others[i].is_int()) { ok = false; break; }
      int64_t d = others[i].as_int().divisibility();
      if (d != 0 && (d * eb) % need != 0) ok = false;
    }
    if (ok) return v;
  }
  return 1;
}

}  // namespace

bool vector_access_allowed() {
  const ir::Block* block = trace_builder("a tensor access").block();
  while (block && !block->parent_function) block = block->parent_op ? block->parent_op->parent : nullptr;
  return !block || block->parent_function->kind == ir::FunctionKind::Kernel;
}

// A swizzle keeps runs of 2^M elements together when they start at a multiple of the run: the
// largest vector (in elements) it allows, and the offset that joins the "other strides".
int swizzle_vector_cap(const Tensor& t, std::vector<L::IntTuple>& others) {
  if (!t.swizzle) return 1 << 30;
  if (t.swizzle_in_address) {
    if (t.swizzle->is_identity()) return 1 << 30;
    return std::max(1, (1 << t.swizzle->base) * 8 / t.element()->bit_size());
  }
  others.push_back(L::IntTuple(t.swizzle_offset));
  return t.swizzle->is_identity() ? 1 << 30 : 1 << t.swizzle->base;
}

int vector_width(const Tensor& t, int max_bytes) {
  if (!t.is_memory() || !vector_access_allowed()) return 1;
  L::Layout c = L::coalesce(t.layout);
  auto shapes = L::flatten_to_vector(c.shape);
  auto strides = L::flatten_to_vector(c.stride);
  std::vector<L::IntTuple> others(strides.begin() + 1, strides.end());
  int cap = swizzle_vector_cap(t, others);
  return std::min(cap, run_vector_width(t.ptr->type, shapes[0], strides[0], others, max_bytes));
}

int mode0_vector_width(const Tensor& t, int max_bytes) {
  L::Layout m0 = L::coalesce(t.layout[0]);
  auto shapes = L::flatten_to_vector(m0.shape);
  auto strides = L::flatten_to_vector(m0.stride);
  std::vector<L::IntTuple> others(strides.begin() + 1, strides.end());
  for (int i = 1; i < t.layout.rank(); ++i)
    for (auto& d : L::flatten_to_vector(L::get(t.layout.stride, {i}))) others.push_back(d);
  int cap = swizzle_vector_cap(t, others);
  return std::min(cap, run_vector_width(t.ptr->type, shapes[0], strides[0], others, max_bytes));
}

int mode0_vector_width(ir::Type ptr_type, const L::Layout& layout, int max_bytes) {
  L::Layout m0 = L::coalesce(layout[0]);
  auto shapes = L::flatten_to_vector(m0.shape);
  auto strides = L::flatten_to_vector(m0.stride);
  std::vector<L::IntTuple> others(strides.begin() + 1, strides.end());
  for (int i = 1; i < layout.rank(); ++i)
    for (auto& d : L::flatten_to_vector(L::get(layout.stride, {i}))) others.push_back(d);
  return run_vector_width(ptr_type, shapes[0], strides[0], others, max_bytes);
}

namespace {
// Packed sub-byte elements are accessed as whole bytes: vectors along a unit-stride first mode.
void require_whole_byte_vectors(const Tensor& t, int v, const char* what) {
  ir::Type e = t.element();
  if (!e->is_sub_byte() || (v * e->bit_size()) % 8 == 0) return;
  throw dsl::UserError("NOT_SUPPORTED", std::string(what) + " of a " + dsl::dtype_name(e) + " tensor " + to_string(t) +
                                            ": " + std::to_string(e->bit_size()) +
                                            "-bit elements are accessed as whole bytes, which needs the first mode "
                                            "(after coalescing) to have stride 1 and an extent of whole bytes, "
                                            "in a kernel");
}
}  // namespace

std::vector<Num> load(const Tensor& t) {
  require_memory(t, "load()");
  int64_t n = static_size(t, "load()");
  ir::Builder& b = trace_builder("load()");
  ir::Type e = t.element();
  int v = vector_width(t);
  require_whole_byte_vectors(t, v, "load()");
  std::vector<Num> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; i += v) {
    ir::Value* p = element_pointer(t, L::IntTuple(i));
    if (v == 1) {
      out.push_back(Num::of_value(b.load(p, e)));
      continue;
    }
    ir::Value* vec = b.load(p, ir::vector_type(e, v));
    for (int lane = 0; lane < v; ++lane) out.push_back(Num::of_value(b.vec_extract(vec, lane)));
  }
  return out;
}

void store(const Tensor& t, const std::vector<Num>& values) {
  require_memory(t, "store()");
  int64_t n = static_size(t, "store()");
  if (int64_t(values.size()) != n)
    throw dsl::UserError("SHAPE_MISMATCH", "store() of " + std::to_string(values.size()) +
                                               " values into a tensor of " + std::to_string(n) + " elements (" +
                                               to_string(t) + ")");
  ir::Builder& b = trace_builder("store()");
  ir::Type e = t.element();
  int v = vector_width(t);
  require_whole_byte_vectors(t, v, "store()");
  for (int64_t i = 0; i < n; i += v) {
    ir::Value* p = element_pointer(t, L::IntTuple(i));
    if (v == 1) {
      b.store(dsl::materialize(dsl::convert(values[i], e)), p);
      continue;
    }
    ir::Value* vec = b.vec_splat(dsl::materialize(dsl::convert(values[i], e)), v);
    for (int lane = 1; lane < v; ++lane)
      vec = b.vec_insert(vec, dsl::materialize(dsl::convert(values[i + lane], e)), lane);
    b.store(vec, p);
  }
}

void fill(const Tensor& t, const Num& value) {
  require_memory(t, "fill()");
  Num x = dsl::convert(value, t.element());
  L::Int n = L::size(t.layout);
  // Small static tensors (register fragments) are filled with straight-line (vector) stores;
  // anything else gets a loop.
  if (n.is_static() && n.value() <= 256) {
    store(t, std::vector<Num>(size_t(n.value()), x));
    return;
  }
  ir::Builder& b = trace_builder("fill()");
  ir::Value* xv = dsl::materialize(x);
  emit_loop(b, n.is_static() ? n.value() : 0, n, [&](const L::Int& i) {
    b.store(xv, element_pointer(t, L::IntTuple(i)));
  });
}

// ---- partitioning -------------------------------------------------------------------------------

L::IntTuple underscores_like(const L::IntTuple& shape) {
  if (!shape.is_tuple()) return L::IntTuple::underscore();
  return L::IntTuple(std::vector<L::IntTuple>(shape.rank(), L::IntTuple::underscore()));
}

Tensor local_tile(const Tensor& t, const L::Tiler& tiler, const L::IntTuple& coord) {
  L::Layout tiled = L::zipped_divide(t.layout, tiler);
  L::IntTuple rest_coord = coord;
  int r1 = L::rank(L::get(tiled.shape, {1}));
  if (coord.is_tuple() && coord.rank() < r1) rest_coord = L::append(coord, L::IntTuple::underscore(), r1);
  return slice(with_layout(t, tiled), L::IntTuple{underscores_like(L::get(tiled.shape, {0})), rest_coord});
}

Tensor local_tile(const Tensor& t, const L::IntTuple& tiler, const L::IntTuple& coord, const L::IntTuple& proj) {
  // A coordinate longer than the projection (NVIDIA's Hopper GEMMs tile an (M,K,L) tensor by an
  // (M,N,K) tiler at (m, n, None, l) with proj (1, None, 1)): the projection dices the modes the
  // tiler covers, and the trailing coordinates (the batch) index the rest modes past the tile.
  if (proj.is_tuple() && coord.is_tuple() && coord.rank() > proj.rank()) {
    std::vector<L::IntTuple> head, tail;
    for (int i = 0; i < coord.rank(); ++i) (i < proj.rank() ? head : tail).push_back(L::get(coord, {i}));
    L::IntTuple diced = L::dice(proj, L::IntTuple(head));
    std::vector<L::IntTuple> modes;
    if (diced.is_tuple()) for (int i = 0; i < diced.rank(); ++i) modes.push_back(L::get(diced, {i}));
    else modes.push_back(diced);
    modes.insert(modes.end(), tail.begin(), tail.end());
    return local_tile(t, L::Tiler::from_shape(L::dice(proj, tiler)), L::IntTuple(modes));
  }
  return local_tile(t, L::Tiler::from_shape(L::dice(proj, tiler)), L::dice(proj, coord));
}

Tensor local_partition(const Tensor& t, const L::Layout& thr_layout, const L::Int& thr_index) {
  // The thread's coordinate in thr_layout, one flat index per top-level mode.
  L::IntTuple hier = L::idx2crd(L::IntTuple(thr_index), thr_layout.shape, thr_layout.stride);
  std::vector<L::IntTuple> flat;
  for (int i = 0; i < thr_layout.rank(); ++i) {
    const L::IntTuple& mode_shape = L::get(thr_layout.shape, {i});
    const L::IntTuple& mode_coord = thr_layout.rank() == 1 && !hier.is_tuple() ? hier : L::get(hier, {i});
    flat.push_back(L::crd2idx(mode_coord, mode_shape));
  }
  L::IntTuple coord = flat.size() == 1 ? flat[0] : L::IntTuple(flat);
  L::Layout tiled = L::zipped_divide(t.layout, L::Tiler::from_shape(L::product_each(thr_layout.shape)));
  return slice(with_layout(t, tiled), L::IntTuple{coord, underscores_like(L::get(tiled.shape, {1}))});
}

Tensor local_partition(const Tensor& t, const L::Layout& thr_layout, const L::Int& thr_index,
                       const L::IntTuple& proj) {
  return local_partition(t, L::Layout(L::dice(proj, thr_layout.shape), L::dice(proj, thr_layout.stride)),
                         thr_index);
}

// ---- printing -----------------------------------------------------------------------------------

std::string to_string(const Tensor& t) {
  std::string it = t.is_memory() ? pointer_string(t.ptr->type) : L::to_string(t.coord);
  if (t.swizzle_in_address) it = it.substr(0, it.size() - 1) + ", " + L::to_string(*t.swizzle) + ">";
  if (t.desc_tile) it = "gmma_desc<" + it + ", " + L::to_string(*t.desc_tile) + ">";
  std::string l = t.swizzle && !t.swizzle_in_address ? L::to_string(t.composed_layout()) : L::to_string(t.layout);
  return "tensor<" + it + " o " + l + ">";
}

std::string type_string(const Tensor& t) {
  if (!t.is_memory())
    return "!cute.coord_tensor<\"" + L::to_string(t.coord) + "\", \"" + L::to_string(t.layout) + "\">";
  ir::Type pt = t.ptr->type;
  std::string s = "!cute.memref<" + memory_element_string(pt->element) + ", " + ir::to_string(pt->space);
  if (pt->align > pt->element->min_align()) s += ", align<" + std::to_string(pt->align) + ">";
  if (t.swizzle_in_address) s += ", " + L::to_string(*t.swizzle);
  std::string l = t.swizzle && !t.swizzle_in_address ? L::to_string(t.composed_layout()) : L::to_string(t.layout);
  return s + ", \"" + l + "\">";
}

}  // namespace opencute::cute
