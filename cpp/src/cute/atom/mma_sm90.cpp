#include "cute/atom/mma_sm90.h"

#include "ir/wgmma_element.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

const char* major_name(OperandMajor m) { return m == OperandMajor::K ? "K" : "MN"; }

// (64, N) or (64, N, k): N a multiple of 8 in [8, 256].
int64_t instruction_n(const char* op, const std::vector<int64_t>& shape, int64_t k) {
  bool ok = (shape.size() == 2 || (shape.size() == 3 && shape[2] == k)) && shape[0] == 64 && shape[1] >= 8 &&
            shape[1] <= 256 && shape[1] % 8 == 0;
  if (!ok)
    invalid(std::string(op) + ": instruction_shape must be (64, N) or (64, N, " + std::to_string(k) +
            ") with N a multiple of 8 in [8, 256], got " + mma_shape_text(shape));
  return shape[1];
}

// The tables of CuTe's mma_traits_sm90_gmma.hpp.
MmaAtom warpgroup_atom(ir::Type a, ir::Type b, ir::Type acc, int64_t n, int64_t k, OperandSource a_src,
                       OperandMajor a_major, OperandMajor b_major) {
  MmaAtom t;
  t.kind = MmaKind::Warpgroup;
  t.a_type = a, t.b_type = b, t.c_type = acc;
  t.m = 64, t.n = int(n), t.k = int(k);
  t.a_source = a_src, t.a_major = a_major, t.b_major = b_major;
  t.thr_id = Layout(128, 1);
  auto smem_tile = [](int64_t mn, int64_t kk) { return Layout(T({128, T({mn, kk})}), T({0, T({1, mn})})); };
  if (a_src == OperandSource::Smem) t.layout_a_tv = smem_tile(64, k);
  else if (a->width == 16) t.layout_a_tv = Layout(T({T({4, 8, 4}), T({2, 2, 2})}), T({T({128, 1, 16}), T({64, 8, 512})}));
  else t.layout_a_tv = Layout(T({T({4, 8, 4}), T({4, 2, 2})}), T({T({256, 1, 16}), T({64, 8, 1024})}));
  t.layout_b_tv = smem_tile(n, k);
  t.layout_c_tv = Layout(T({T({4, 8, 4}), T({2, 2, n / 8})}), T({T({128, 1, 16}), T({64, 8, 512})}));
  return t;
}

ir::Builder& kernel_builder(const std::string& what) {
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return trace_builder(what.c_str());
}

}  // namespace

void require_sm90a(const std::string& what) {
  const support::Arch& arch = dsl::Tracer::current_target_arch();
  if (arch.empty() || arch.has_wgmma()) return;
  throw dsl::UserError("UNSUPPORTED_ARCH", what + " (wgmma) needs sm_90a, but the program is compiled for " + arch.name);
}

MmaAtom make_wgmma_f16bf16(ir::Type ab, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                           OperandMajor a_major, OperandMajor b_major) {
  require_sm90a("warpgroup.MmaF16BF16Op");
  if (!ab->is_f16() && !ab->is_bf16()) invalid("MmaF16BF16Op: ab_dtype must be Float16 or BFloat16, got " + mma_type_name(ab));
  if (!acc->is_f16() && !acc->is_f32()) invalid("MmaF16BF16Op: acc_dtype must be Float16 or Float32, got " + mma_type_name(acc));
  if (ab->is_bf16() && !acc->is_f32())
    invalid("MmaF16BF16Op: acc_dtype must be Float32 when ab_dtype is BFloat16, got " + mma_type_name(acc));
  if (a_src == OperandSource::Rmem && a_major != OperandMajor::K)
    invalid("MmaF16BF16Op: operand A from registers (OperandSource.RMEM) must be K-major");
  int64_t n = instruction_n("MmaF16BF16Op", shape, 16);
  return warpgroup_atom(ab, ab, acc, n, 16, a_src, a_major, b_major);
}

MmaAtom make_wgmma_f8(ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                      OperandMajor a_major, OperandMajor b_major) {
  require_sm90a("warpgroup.MmaF8Op");
  if (!a->is_fp8()) invalid("MmaF8Op: a_dtype must be Float8E4M3FN or Float8E5M2, got " + mma_type_name(a));
  if (!b->is_fp8()) invalid("MmaF8Op: b_dtype must be Float8E4M3FN or Float8E5M2, got " + mma_type_name(b));
  if (!acc->is_f16() && !acc->is_f32()) invalid("MmaF8Op: acc_dtype must be Float16 or Float32, got " + mma_type_name(acc));
  // wgmma transposes 16-bit operands only: 8-bit ones are K-major.
  if (a_major != OperandMajor::K || b_major != OperandMajor::K)
    invalid(std::string("MmaF8Op: 8-bit operands must be K-major, got a_major_mode=") + major_name(a_major) +
            ", b_major_mode=" + major_name(b_major));
  int64_t n = instruction_n("MmaF8Op", shape, 32);
  return warpgroup_atom(a, b, acc, n, 32, a_src, a_major, b_major);
}

MmaAtom make_wgmma_i8(ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape, OperandSource a_src,
                      OperandMajor a_major, OperandMajor b_major) {
  require_sm90a("warpgroup.MmaI8Op");
  if (!a->is_int8()) invalid("MmaI8Op: a_dtype must be Int8 or Uint8, got " + mma_type_name(a));
  if (!b->is_int8()) invalid("MmaI8Op: b_dtype must be Int8 or Uint8, got " + mma_type_name(b));
  if (!acc || !acc->is_int() || acc->width != 32 || !acc->is_signed)
    invalid("MmaI8Op: acc_dtype must be Int32, got " + mma_type_name(acc));
  if (a_major != OperandMajor::K || b_major != OperandMajor::K)
    invalid(std::string("MmaI8Op: 8-bit operands must be K-major, got a_major_mode=") + major_name(a_major) +
            ", b_major_mode=" + major_name(b_major));
  int64_t n = instruction_n("MmaI8Op", shape, 32);
  // The integer wgmma has N = 8, 24 or a multiple of 16 (PTX ISA, wgmma .s8/.u8 shapes).
  if (n != 8 && n != 24 && n % 16)
    invalid("MmaI8Op: instruction N must be 8, 24 or a multiple of 16 in [16, 256], got " + std::to_string(n));
  return warpgroup_atom(a, b, acc, n, 32, a_src, a_major, b_major);
}

L::ComposedLayout make_smem_layout_atom(SmemLayoutAtomKind kind, ir::Type element) {
  int k = int(kind);
  bool mn = k < 4;
  int b = k % 4;  // INTER, SW32, SW64, SW128
  int bits = element->is_bool() ? 8 : element->width;
  int64_t c = (int64_t(128) << b) / bits;
  if (c <= 0 || (int64_t(128) << b) % bits)
    throw dsl::UserError("INVALID_VALUE", "make_smem_layout_atom: no swizzle atom for " + mma_type_name(element));
  L::ComposedLayout out;
  out.inner = L::make_swizzle(b, 4, 3);
  out.offset = IntTuple(0);
  out.outer = mn ? Layout(IntTuple{c, 8}, IntTuple{1, c}) : Layout(IntTuple{8, c}, IntTuple{c, 1});
  return out;
}

uint64_t GmmaDescriptorFields::bits() const {
  return (uint64_t(lbo & 0x3FFF) << 16) | (uint64_t(sbo & 0x3FFF) << 32) | (uint64_t(layout_type) << 62);
}

int descriptor_swizzle_bits(const Tensor& t, const std::string& what, const char* instruction) {
  if (!t.swizzle) return 0;
  if (!t.swizzle_in_address)
    throw dsl::UserError("INVALID_SMEM_LAYOUT",
                         what + ": the swizzle must be on the pointer (get_tensor(layout.outer, swizzle=layout.inner) "
                                "or recast_ptr(ptr, swizzle)), not in a composed layout; got " + to_string(t));
  const L::Swizzle& s = *t.swizzle;
  if (s.bits == 0) return 0;
  if (s.base != 4 || s.shift != 3 || s.bits > 3)
    throw dsl::UserError("INVALID_SMEM_LAYOUT", what + ": " + instruction +
                                                    " reads swizzles S<1..3,4,3> (32, 64, 128 bytes), got " +
                                                    L::to_string(s));
  return s.bits;
}

uint64_t encode_gmma_descriptor(const GmmaDescriptorFields& f, uint64_t smem_address) {
  return f.bits() | ((smem_address >> 4) & 0x3FFF);
}

ir::Value* descriptor_start_address(ir::Builder& b, ir::Value* smem_ptr) {
  const ir::Type u32 = ir::int_type(32, false);
  ir::Value* addr = b.create(ir::OpCode::PtrToInt, {smem_ptr}, {u32})->result();
  addr = b.binary(ir::OpCode::Shr, addr, b.const_int(u32, 4));
  addr = b.binary(ir::OpCode::And, addr, b.const_int(u32, 0x3FFF));
  return b.cast(addr, ir::i64());
}

namespace {

// `ptr` as (base, bits): the pointer `bits` bits past `base`, through bitcasts and ptr_adds with
// constant indices.
std::pair<ir::Value*, int64_t> constant_offset_bits(ir::Value* ptr) {
  int64_t bits = 0;
  while (ptr->def) {
    const ir::Op* op = ptr->def;
    if (op->code == ir::OpCode::Bitcast && op->operands[0]->type->is_pointer()) {
      ptr = op->operands[0];
    } else if (op->code == ir::OpCode::PtrAdd && ir::is_constant(op->operands[1])) {
      bits += ir::constant_int(op->operands[1]) * int64_t(op->operands[0]->type->element->bit_size());
      ptr = op->operands[0];
    } else {
      break;
    }
  }
  return {ptr, bits};
}

}  // namespace

ir::Value* smem_descriptor(ir::Builder& b, ir::Value* smem_ptr, uint64_t fields) {
  auto [base, bits] = constant_offset_bits(smem_ptr);
  const int64_t units = bits / 128;  // 16-byte units
  const bool fold = bits > 0 && bits % 128 == 0 && units < (int64_t(1) << 14);
  ir::Value* desc = b.binary(ir::OpCode::Or, descriptor_start_address(b, fold ? base : smem_ptr),
                             b.const_int(ir::i64(), int64_t(fields)));
  return fold ? b.binary(ir::OpCode::Add, desc, b.const_int(ir::i64(), units)) : desc;
}

namespace {

GmmaDescriptorFields check_gmma_descriptor_tile(const Layout& tile, int element_bits, int swizzle_bits,
                                                OperandMajor major, const std::string& operand) {
  auto fail = [&](const std::string& why) -> void {
    throw dsl::UserError("INVALID_SMEM_LAYOUT", "wgmma operand " + operand + ": the shared-memory tile " +
                                                    L::to_string(tile) + " is not a " + major_name(major) +
                                                    "-major wgmma layout with swizzle S<" +
                                                    std::to_string(swizzle_bits) + ",4,3>: " + why);
  };
  if (swizzle_bits < 0 || swizzle_bits > 3) fail("the swizzle must be S<0..3,4,3>");
  if (tile.rank() != 2 || !tile.is_static()) fail("expected a static (MN, K) layout");
  const int64_t MN = L::size(tile, {0}).value(), K = L::size(tile, {1}).value();
  const int64_t t = 128 / element_bits, w = int64_t(1) << swizzle_bits;  // elements per 16 B, chunks per row
  auto at = [&](int64_t mn, int64_t k) { return tile(IntTuple{mn, k}).as_int().value(); };
  if (K * element_bits != 256) fail("K must span 32 bytes, got " + std::to_string(K) + " elements");
  if (MN % 8) fail("the M/N extent must be a multiple of 8");
  auto in_chunks = [&](int64_t elems, const char* what) -> uint32_t {
    if (elems % t || elems < 0 || elems / t >= (1 << 14))
      fail(std::string("the ") + what + " " + std::to_string(elems) + " is not a multiple of 16 bytes below 256 KiB");
    return uint32_t(elems / t);
  };
  GmmaDescriptorFields f;
  static const GmmaLayoutType types[4] = {GmmaLayoutType::Interleave, GmmaLayoutType::B32, GmmaLayoutType::B64,
                                          GmmaLayoutType::B128};
  f.layout_type = types[swizzle_bits];
  bool swizzled = swizzle_bits > 0;
  std::function<int64_t(int64_t, int64_t)> expected;
  if (major == OperandMajor::K) {
    // ((8,m),(T,2)): rows of W*T elements (T when not swizzled), 8-row groups SBO apart; the two
    // 16-byte chunks of K adjacent (swizzled) or LBO apart.
    f.sbo = MN > 8 ? in_chunks(at(8, 0), "stride between 8-row groups") : 0;
    f.lbo = swizzled ? 1 : in_chunks(at(0, t), "stride between the K chunks");
    const int64_t sbo = f.sbo * t, kc = swizzled ? t : f.lbo * t;
    expected = [=](int64_t mn, int64_t k) { return (mn % 8) * w * t + (mn / 8) * sbo + k % t + (k / t) * kc; };
  } else {
    // ((W*T,m),(8,k)): W*T contiguous elements of MN per row, rows W*T apart, 8-row groups of K
    // SBO apart, MN atoms LBO apart (not swizzled: T elements, 8-row groups LBO apart, MN chunks
    // SBO apart).
    const int64_t row = w * t;
    if (swizzled) {
      f.lbo = MN > row ? in_chunks(at(row, 0), "stride between M/N swizzle atoms") : 0;
      f.sbo = K > 8 ? in_chunks(at(0, 8), "stride between 8-row groups of K") : 0;
      const int64_t lbo = f.lbo * t, sbo = f.sbo * t;
      expected = [=](int64_t mn, int64_t k) { return mn % row + (mn / row) * lbo + (k % 8) * row + (k / 8) * sbo; };
    } else {
      f.sbo = MN > t ? in_chunks(at(t, 0), "stride between 16-byte M/N chunks") : 0;
      f.lbo = K > 8 ? in_chunks(at(0, 8), "stride between 8-row groups of K") : 0;
      const int64_t lbo = f.lbo * t, sbo = f.sbo * t;
      expected = [=](int64_t mn, int64_t k) { return mn % t + (mn / t) * sbo + (k % 8) * t + (k / 8) * lbo; };
    }
  }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t mn = 0; mn < MN; ++mn)
      if (at(mn, k) != expected(mn, k))
        fail("element (" + std::to_string(mn) + "," + std::to_string(k) + ") is at offset " +
             std::to_string(at(mn, k)) + ", the descriptor would read offset " + std::to_string(expected(mn, k)));
  return f;
}

}  // namespace

GmmaDescriptorFields gmma_descriptor_fields(const Layout& tile, int element_bits, int swizzle_bits, OperandMajor major,
                                            const std::string& operand) {
  // The check reads every element's offset (3072 for a 192x16 tile, about 1 ms), and a kernel asks
  // for the same few tiles at each of its wgmmas (FA4's forward: dozens): tiles that passed are
  // remembered per process. Only static layouts are remembered, whose text is the layout itself;
  // the operand's name is only in errors, which are never remembered.
  if (!tile.is_static()) return check_gmma_descriptor_tile(tile, element_bits, swizzle_bits, major, operand);
  static std::mutex mu;
  static std::unordered_map<std::string, GmmaDescriptorFields> passed;
  std::string key = L::to_string(tile) + " " + std::to_string(element_bits) + " " + std::to_string(swizzle_bits) +
                    " " + major_name(major);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = passed.find(key); it != passed.end()) return it->second;
  }
  GmmaDescriptorFields f = check_gmma_descriptor_tile(tile, element_bits, swizzle_bits, major, operand);
  std::lock_guard<std::mutex> lock(mu);
  if (passed.size() >= 4096) passed.clear();  // bounded: a long-lived process tracing many layouts
  passed.emplace(std::move(key), f);
  return f;
}

bool is_wgmma_desc_operand(const MmaAtom& atom, MmaOperand which) {
  if (atom.kind != MmaKind::Warpgroup) return false;
  return which == MmaOperand::B || (which == MmaOperand::A && atom.a_source == OperandSource::Smem);
}

namespace {

const char* operand_name(MmaOperand w) { return w == MmaOperand::A ? "A" : "B"; }

}  // namespace

Tensor make_wgmma_desc_fragment(const TiledMma& mma, MmaOperand w, const Tensor& p) {
  std::string fn = std::string("make_fragment_") + operand_name(w);
  const MmaAtom& atom = mma.atom;
  ir::Type want = w == MmaOperand::A ? atom.a_type : atom.b_type;
  if (!p.is_memory() || p.space() != ir::AddrSpace::Smem)
    throw dsl::UserError("TYPE_MISMATCH", fn + ": the warpgroup MMA reads operand " + operand_name(w) +
                                              " from shared memory; expected a partitioned smem tensor, got " +
                                              to_string(p));
  if (p.element() != want)
    throw dsl::UserError("TYPE_MISMATCH", fn + ": " + to_string(p) + " holds " + mma_type_name(p.element()) +
                                              " but the MMA atom takes " + mma_type_name(want));
  if (p.layout.rank() < 3)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": expected a partitioned tensor (MMA, MMA_M/N, MMA_K, ...) of rank >= 3, got " +
                                               to_string(p));
  Layout tile = p.layout[0];
  int64_t mn = w == MmaOperand::A ? atom.m : atom.n;
  if (tile.rank() != 2 || !tile.is_static() || L::size(tile, {0}).value() != mn ||
      L::size(tile, {1}).value() != atom.k)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": mode 0 of " + to_string(p) + " must be the atom's (" +
                                               std::to_string(mn) + ", " + std::to_string(atom.k) +
                                               ") tile; partition the tensor with this MMA first");
  OperandMajor major = w == MmaOperand::A ? atom.a_major : atom.b_major;
  gmma_descriptor_fields(tile, want->width, descriptor_swizzle_bits(p, fn, "wgmma"), major, operand_name(w));  // checks
  return make_descriptor_tensor(p, Layout(1, 0), tile);
}

namespace {

const char* const kAccumulateCell = "warpgroup.accumulate";

ir::Block* function_body(ir::Block* b) {
  while (b->parent_op) b = b->parent_op->parent;
  return b;
}

// The atom's cell when it belongs to the kernel being traced (it was allocated in this body).
ir::Value* live_cell(const MmaAtom& atom, ir::Block* body) {
  if (!atom.accumulate_cell) return nullptr;
  for (auto& op : body->ops)  // compares pointers only: a cell of an earlier trace is never dereferenced
    if (op->code == ir::OpCode::Alloca && op->str_attr == kAccumulateCell && op->result() == atom.accumulate_cell)
      return atom.accumulate_cell;
  return nullptr;
}

}  // namespace

void set_wgmma_accumulate(MmaAtom& atom, const dsl::Num& v) {
  if (atom.kind != MmaKind::Warpgroup && atom.kind != MmaKind::Tcgen05)
    throw dsl::UserError("INVALID_MMA_OP", "set(Field.ACCUMULATE, ...): only warpgroup MMAs have the ACCUMULATE field");
  dsl::Num b = dsl::to_boolean(v);
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (!tracer || !tracer->in_kernel()) {
    if (!b.is_static)
      throw dsl::UserError("PHASE_REQUIRES_CONSTANT",
                           "set(Field.ACCUMULATE, ...) outside a kernel needs a static bool, got " + dsl::num_repr(v));
    atom.accumulate = b;
    atom.accumulate_cell = nullptr;
    return;
  }
  ir::Builder& bld = trace_builder("set(Field.ACCUMULATE)");
  ir::Value* cell = accumulate_cell(atom, bld);
  bld.store(dsl::materialize(dsl::convert(b, ir::i32())), cell);
}

ir::Value* accumulate_cell(MmaAtom& atom, ir::Builder& bld) {
  ir::Block* body = function_body(bld.block());
  ir::Value* cell = live_cell(atom, body);
  if (!cell) {
    // Built at the end of the body, then moved to its front.
    size_t before = body->ops.size();
    ir::Builder at_entry(body);
    cell = at_entry.local_array(ir::i32(), 1, 4);
    cell->def->str_attr = kAccumulateCell;
    at_entry.store(at_entry.const_int(ir::i32(), atom.accumulate.s.i != 0), cell);
    std::rotate(body->ops.begin(), body->ops.begin() + long(before), body->ops.end());
    atom.accumulate_cell = cell;
  }
  return cell;
}

void prepare_accumulate_field(MmaAtom& atom) {
  if (atom.kind != MmaKind::Warpgroup && atom.kind != MmaKind::Tcgen05) return;
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (!tracer || !tracer->in_kernel() || !atom.accumulate.is_static) return;
  accumulate_cell(atom, trace_builder("cute.gemm"));
}

dsl::Num wgmma_accumulate(const MmaAtom& atom) {
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (tracer && tracer->in_kernel()) {
    ir::Builder& bld = trace_builder("cute.gemm");
    if (ir::Value* cell = live_cell(atom, function_body(bld.block()))) {
      ir::Value* v = bld.load(cell, ir::i32());
      return dsl::Num::of_value(bld.cmp(ir::CmpPredicate::Ne, v, bld.const_int(ir::i32(), 0)));
    }
  }
  return atom.accumulate;
}

namespace {

// The Wgmma op's descriptor operand for a (1) descriptor fragment.
ir::Value* descriptor_value(ir::Builder& b, const Tensor& t, ir::Type want, OperandMajor major, const char* which) {
  if (!t.desc_tile)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which +
                                              " of a warpgroup MMA must be a descriptor fragment "
                                              "(tiled_mma.make_fragment_" + which + " of a partitioned smem tensor), got " +
                                              to_string(t));
  if (t.element() != want)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " holds " + mma_type_name(t.element()) +
                                              " but the MMA atom takes " + mma_type_name(want));
  L::Int n = L::size(t.layout);
  if (!n.is_static() || n.value() != 1)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: operand ") + which + " " + to_string(t) +
                                               " must be one descriptor per atom call");
  GmmaDescriptorFields f = gmma_descriptor_fields(*t.desc_tile, want->width,
                                                  descriptor_swizzle_bits(t, std::string("gemm: operand ") + which, "wgmma"),
                                                  major, which);
  return smem_descriptor(b, t.ptr, f.bits());
}

std::vector<ir::Value*> register_values(const Tensor& t, ir::Type want, int count, const char* which) {
  check_mma_fragment(t, want, count, which, /*registers_only=*/true);
  std::vector<ir::Value*> out;
  for (int i = 0; i < count; ++i) out.push_back(dsl::materialize(load_element(t, IntTuple(i))));
  return out;
}

void wgmma_call(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c,
                const dsl::Num& accumulate) {
  ir::Builder& bld = kernel_builder("cute.gemm with a warpgroup MMA");
  std::vector<ir::Value*> ops;
  bool a_regs = atom.a_source == OperandSource::Rmem;
  if (a_regs) ops = register_values(a, atom.a_type, atom.values_a(), "A");
  else ops.push_back(descriptor_value(bld, a, atom.a_type, atom.a_major, "A"));
  ops.push_back(descriptor_value(bld, b, atom.b_type, atom.b_major, "B"));
  ops.push_back(dsl::materialize(dsl::to_boolean(accumulate)));
  for (ir::Value* v : register_values(c, atom.c_type, atom.values_c(), "C")) ops.push_back(v);
  if (!d.is_memory() || d.space() != ir::AddrSpace::Rmem || d.element() != atom.c_type)
    throw dsl::UserError("TYPE_MISMATCH", "gemm: operand D must be a register fragment of " + mma_type_name(atom.c_type) +
                                              ", got " + to_string(d));
  L::Int nd = L::size(d.layout);
  if (!nd.is_static() || nd.value() != atom.values_c())
    throw dsl::UserError("SHAPE_MISMATCH", "gemm: operand D " + to_string(d) + " does not hold the atom's " +
                                               std::to_string(atom.values_c()) + " accumulator values");
  ir::Op* op = bld.create(ir::OpCode::Wgmma, ops, std::vector<ir::Type>(size_t(atom.values_c()), atom.c_type));
  op->ints = {atom.m, atom.n, atom.k, ir::wgmma_element_code(atom.a_type), ir::wgmma_element_code(atom.b_type),
              int64_t(atom.a_major), int64_t(atom.b_major), a_regs ? 1 : 0};
  for (size_t i = 0; i < op->results.size(); ++i)
    store_element(d, IntTuple(int64_t(i)), dsl::Num::of_value(op->results[i].get()));
}

[[noreturn]] void incongruent(const std::string& why, const Tensor& d, const Tensor& a, const Tensor& b,
                              const Tensor& c) {
  throw dsl::UserError("SHAPE_MISMATCH", "gemm: " + why + "; got D " + to_string(d) + ", A " + to_string(a) + ", B " +
                                             to_string(b) + ", C " + to_string(c));
}

int64_t static_mode(const Tensor& t, int mode, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  L::Int n = L::size(t.layout, {mode});
  if (!n.is_static()) incongruent("fragment modes must be static", d, a, b, c);
  return n.value();
}

Tensor pick(const Tensor& t, std::vector<int64_t> coords) {
  std::vector<IntTuple> c{IntTuple::underscore()};
  for (int64_t x : coords) c.push_back(IntTuple(x));
  return slice(t, IntTuple(c));
}

void wgmma_vmn(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c,
               const dsl::Num& accumulate) {
  int64_t M = static_mode(a, 1, d, a, b, c), N = static_mode(b, 1, d, a, b, c);
  if (static_mode(c, 1, d, a, b, c) != M || static_mode(c, 2, d, a, b, c) != N)
    incongruent("C's (M, N) modes must match A's M and B's N", d, a, b, c);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      wgmma_call(atom, pick(d, {m, n}), pick(a, {m}), pick(b, {n}), pick(c, {m, n}), accumulate);
}

}  // namespace

void wgmma_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  require_sm90a("cute.gemm with a warpgroup MMA");
  int rd = d.layout.rank(), ra = a.layout.rank(), rb = b.layout.rank(), rc = c.layout.rank();
  if (ra != rb) incongruent("A and B must have the same rank", d, a, b, c);
  if (rc != rd) incongruent("C and D must have the same rank", d, a, b, c);
  dsl::Num accumulate = wgmma_accumulate(atom);
  if (rd == 1 && ra == 1) return wgmma_call(atom, d, a, b, c, accumulate);
  if (rd == 3 && ra == 2) return wgmma_vmn(atom, d, a, b, c, accumulate);
  if (rd == 3 && ra == 3) {
    int64_t K = static_mode(a, 2, d, a, b, c);
    if (static_mode(b, 2, d, a, b, c) != K) incongruent("A's and B's K modes differ", d, a, b, c);
    IntTuple us = IntTuple::underscore();
    for (int64_t k = 0; k < K; ++k)
      wgmma_vmn(atom, d, slice(a, IntTuple{us, us, IntTuple(k)}), slice(b, IntTuple{us, us, IntTuple(k)}),
                k == 0 ? c : d, k == 0 ? accumulate : dsl::Num::of_int(ir::bool_type(), 1));
    return;
  }
  incongruent("a warpgroup MMA takes (V)x(V)->(V), (V,M)x(V,N)->(V,M,N) or (V,M,K)x(V,N,K)->(V,M,N)", d, a, b, c);
}

void warpgroup_fence() {
  require_sm90a("warpgroup.fence");
  kernel_builder("warpgroup.fence").create(ir::OpCode::WgmmaFence, {}, {});
}

void warpgroup_commit_group() {
  require_sm90a("warpgroup.commit_group");
  kernel_builder("warpgroup.commit_group").create(ir::OpCode::WgmmaCommit, {}, {});
}

void warpgroup_wait_group(int64_t n) {
  require_sm90a("warpgroup.wait_group");
  if (n < 0 || n > 7)
    throw dsl::UserError("INVALID_VALUE", "warpgroup.wait_group: the number of pending groups must be in [0, 7], got " +
                                              std::to_string(n));
  kernel_builder("warpgroup.wait_group").create(ir::OpCode::WgmmaWait, {}, {})->int_attr = n;
}

std::string wgmma_op_string(const MmaAtom& a) {
  bool f8 = a.a_type && a.a_type->width == 8;
  std::string s = std::string("warpgroup-level ") + (f8 ? "F8" : "F16/BF16") + " MMA Operation\n";
  if (f8) s += "  A data type = " + mma_type_name(a.a_type) + "\n  B data type = " + mma_type_name(a.b_type) + "\n";
  else s += "  A/B data type = " + mma_type_name(a.a_type) + "\n";
  return s + "  Accumulator data type = " + mma_type_name(a.c_type) + "\n  Instruction shape MNK = " +
         mma_shape_text(a.shape_mnk()) + "\n  A source location = " +
         (a.a_source == OperandSource::Smem ? "SMEM" : "RMEM") + "\n  A major mode = " + major_name(a.a_major) +
         "\n  B major mode = " + major_name(a.b_major);
}

}  // namespace opencute::cute
