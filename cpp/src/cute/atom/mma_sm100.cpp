#include "cute/atom/mma_sm100.h"

#include <algorithm>
#include <map>
#include <memory>

#include "cute/atom/mma_sm90.h"
#include "dsl/dtype.h"
#include "dsl/sm100_ops.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

[[noreturn]] void invalid(const std::string& msg) { throw dsl::UserError("INVALID_MMA_OP", msg); }

const char* kind_op_name(ir::Tcgen05Kind k) {
  switch (k) {
    case ir::Tcgen05Kind::F16: return "MmaF16BF16Op";
    case ir::Tcgen05Kind::TF32: return "MmaTF32Op";
    case ir::Tcgen05Kind::F8F6F4: return "MmaFP8Op";
    case ir::Tcgen05Kind::I8: return "MmaI8Op";
    case ir::Tcgen05Kind::MXF8F6F4: return "MmaMXF8Op";
    case ir::Tcgen05Kind::MXF4: return "MmaMXF4Op";
    case ir::Tcgen05Kind::MXF4NVF4: return "MmaMXF4NVF4Op";
  }
  return "MmaOp";
}

const char* major_name(OperandMajor m) { return m == OperandMajor::K ? "K" : "MN"; }

ir::Builder& kernel_builder(const std::string& what) {
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return trace_builder(what.c_str());
}

// Whether a buffer of `element` holds MMA operands of type `want`: tf32 operands live in Float32
// or TFloat32 buffers (the same bytes).
bool holds_operand_type(ir::Type element, ir::Type want) {
  return element == want || (want->is_float_kind(ir::FloatKind::TF32) && element->is_f32());
}

// The operand format code of the instruction descriptor (A / B fields).
uint32_t format_code(ir::Tcgen05Kind kind, ir::Type t) {
  switch (kind) {
    case ir::Tcgen05Kind::F16: return t->is_bf16() ? 1 : 0;
    case ir::Tcgen05Kind::TF32: return 2;
    case ir::Tcgen05Kind::F8F6F4: return t->is_float_kind(ir::FloatKind::E5M2) ? 1 : 0;
    case ir::Tcgen05Kind::I8: return t->is_signed ? 1 : 0;
    case ir::Tcgen05Kind::MXF8F6F4:
      return t->is_fp4() ? 5 : t->is_float_kind(ir::FloatKind::E5M2) ? 1 : 0;
    case ir::Tcgen05Kind::MXF4: case ir::Tcgen05Kind::MXF4NVF4: return 1;  // E2M1
  }
  return 0;
}

}  // namespace

MmaAtom make_tcgen05_mma(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type acc, const std::vector<int64_t>& shape,
                         int cta_group, OperandSource a_src, OperandMajor a_major, OperandMajor b_major) {
  const std::string op = std::string("tcgen05.") + kind_op_name(kind);
  dsl::require_tcgen05(op);
  auto name = [](ir::Type t) { return mma_type_name(t); };
  switch (kind) {
    case ir::Tcgen05Kind::F16:
      if (!a->is_f16() && !a->is_bf16()) invalid(op + ": ab_dtype must be Float16 or BFloat16, got " + name(a));
      if (!acc->is_f32() && !acc->is_f16()) invalid(op + ": acc_dtype must be Float32 or Float16, got " + name(acc));
      break;
    case ir::Tcgen05Kind::TF32:
      if (!a->is_f32() && !a->is_float_kind(ir::FloatKind::TF32))
        invalid(op + ": ab_dtype must be TFloat32 (Float32 storage), got " + name(a));
      a = b = ir::tf32();  // Float32 data is read as tf32 (the low 13 mantissa bits ignored)
      if (!acc->is_f32()) invalid(op + ": acc_dtype must be Float32, got " + name(acc));
      break;
    case ir::Tcgen05Kind::F8F6F4:
      if (!a->is_fp8()) invalid(op + ": a_dtype must be Float8E4M3FN or Float8E5M2, got " + name(a));
      if (!b->is_fp8()) invalid(op + ": b_dtype must be Float8E4M3FN or Float8E5M2, got " + name(b));
      if (!acc->is_f32() && !acc->is_f16()) invalid(op + ": acc_dtype must be Float32 or Float16, got " + name(acc));
      break;
    case ir::Tcgen05Kind::I8:
      if (!a->is_int8()) invalid(op + ": a_dtype must be Int8 or Uint8, got " + name(a));
      if (!b->is_int8()) invalid(op + ": b_dtype must be Int8 or Uint8, got " + name(b));
      if (!acc->is_int() || acc->width != 32 || !acc->is_signed) invalid(op + ": acc_dtype must be Int32, got " + name(acc));
      break;
    case ir::Tcgen05Kind::MXF8F6F4:
    case ir::Tcgen05Kind::MXF4:
    case ir::Tcgen05Kind::MXF4NVF4:  // their scale factors: make_tcgen05_block_scaled_mma
      invalid(op + ": a block-scaled kind needs its scale-factor type and vector size");
  }
  if (kind != ir::Tcgen05Kind::F8F6F4 && kind != ir::Tcgen05Kind::I8 && a != b)
    invalid(op + ": A and B must have the same type, got " + name(a) + " and " + name(b));
  if (cta_group != 1 && cta_group != 2) invalid(op + ": cta_group must be CtaGroup.ONE or CtaGroup.TWO");
  const int64_t k = 256 / a->width;
  bool ok = (shape.size() == 2 || (shape.size() == 3 && shape[2] == k));
  const int64_t M = ok ? shape[0] : 0, N = ok ? shape[1] : 0;
  // With A in tensor memory, M = 128 also takes N = 8, 24, ... (NVIDIA's GQA decode packs 8 query
  // heads into N; CuTe's F16BF16_TS_NOELECT atom allows any multiple of 8 there).
  const int64_t n_step_m128 = a_src == OperandSource::Tmem ? 8 : 16;
  if (cta_group == 1)
    ok = ok && ((M == 64 && N % 8 == 0 && N >= 8) || (M == 128 && N % n_step_m128 == 0 && N >= n_step_m128)) &&
         N <= 256;
  else ok = ok && (M == 128 || M == 256) && N % 16 == 0 && N >= 32 && N <= 256;
  if (!ok)
    invalid(op + ": instruction_shape must be (M, N) or (M, N, " + std::to_string(k) + ") with " +
            (cta_group == 1 ? "M = 64 (N a multiple of 8) or M = 128 (N a multiple of 16; of 8 with A in tensor memory), N <= 256"
                            : "M = 128 or 256 and N a multiple of 16 in [32, 256] (CtaGroup.TWO)") +
            ", got " + mma_shape_text(shape));
  if (a_src == OperandSource::Tmem && a_major != OperandMajor::K)
    invalid(op + ": operand A in tensor memory (OperandSource.TMEM) must be K-major");
  if (a_src == OperandSource::Rmem) invalid(op + ": operand A comes from shared or tensor memory");
  MmaAtom t;
  t.kind = MmaKind::Tcgen05;
  t.tcgen05_kind = int(kind);
  t.cta_group = cta_group;
  t.a_type = a, t.b_type = b, t.c_type = acc;
  t.m = int(M), t.n = int(N), t.k = int(k);
  t.a_source = a_src, t.a_major = a_major, t.b_major = b_major;
  const int64_t g = cta_group;
  t.thr_id = g == 1 ? Layout(1, 0) : Layout(2, 1);
  auto tv = [&](int64_t mn, int64_t kk) {
    return g == 1 ? Layout(T({1, T({mn, kk})}), T({0, T({1, mn})}))
                  : Layout(T({2, T({mn / 2, kk})}), T({mn / 2, T({1, mn})}));
  };
  t.layout_a_tv = tv(M, k);
  t.layout_b_tv = tv(N, k);
  t.layout_c_tv = g == 1 ? Layout(T({1, T({M, N})}), T({0, T({1, M})}))
                         : Layout(T({2, T({M / 2, N})}), T({M / 2, T({1, M})}));
  return t;
}

MmaAtom make_tcgen05_block_scaled_mma(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type sf, int sf_vec_size,
                                      const std::vector<int64_t>& shape, int cta_group, OperandSource a_src,
                                      OperandMajor a_major, OperandMajor b_major) {
  const std::string op = std::string("tcgen05.") + kind_op_name(kind);
  dsl::require_tcgen05(op);
  auto name = [](ir::Type t) { return mma_type_name(t); };
  const bool fp4 = kind != ir::Tcgen05Kind::MXF8F6F4;
  if (fp4) {
    if (!a->is_fp4() || !b->is_fp4()) invalid(op + ": A and B must be Float4E2M1FN, got " + name(a) + " and " + name(b));
  } else {
    for (ir::Type t : {a, b})
      if (!t->is_fp8()) invalid(op + ": A and B must be Float8E4M3FN or Float8E5M2, got " + name(t));
  }
  if (kind == ir::Tcgen05Kind::MXF4NVF4) {
    if (!sf->is_e8m0() && !sf->is_float_kind(ir::FloatKind::E4M3))
      invalid(op + ": sf_dtype must be Float8E8M0FNU or Float8E4M3FN, got " + name(sf));
  } else if (!sf->is_e8m0()) {
    invalid(op + ": sf_dtype must be Float8E8M0FNU, got " + name(sf));
  }
  if (sf_vec_size != (kind == ir::Tcgen05Kind::MXF4NVF4 ? 16 : 32))
    invalid(op + ": sf_vec_size must be " + (kind == ir::Tcgen05Kind::MXF4NVF4 ? "16" : "32") + ", got " +
            std::to_string(sf_vec_size));
  if (cta_group != 1 && cta_group != 2) invalid(op + ": cta_group must be CtaGroup.ONE or CtaGroup.TWO");
  const int64_t k = fp4 ? 64 : 32;
  bool ok = (shape.size() == 2 || (shape.size() == 3 && shape[2] == k));
  const int64_t M = ok ? shape[0] : 0, N = ok ? shape[1] : 0;
  ok = ok && M == 128 * cta_group && N % (8 * cta_group) == 0 && N >= 8 * cta_group && N <= 256;
  if (!ok)
    invalid(op + ": instruction_shape must be (M, N) or (M, N, " + std::to_string(k) + ") with M = " +
            std::to_string(128 * cta_group) + " and N a multiple of " + std::to_string(8 * cta_group) +
            " up to 256, got " + mma_shape_text(shape));
  if (a_src != OperandSource::Smem) invalid(op + ": operand A comes from shared memory (OperandSource.SMEM)");
  if (fp4 && (a_major != OperandMajor::K || b_major != OperandMajor::K))
    invalid(op + ": 4-bit operands must be K-major");
  return tcgen05_block_scaled_atom(kind, a, b, sf, sf_vec_size, M, N, k, cta_group, a_src, a_major, b_major);
}

MmaAtom tcgen05_block_scaled_atom(ir::Tcgen05Kind kind, ir::Type a, ir::Type b, ir::Type sf, int sf_vec_size, int64_t M,
                                  int64_t N, int64_t k, int cta_group, OperandSource a_src, OperandMajor a_major,
                                  OperandMajor b_major) {
  // The tables of the dense kinds (make_tcgen05_mma).
  MmaAtom t;
  t.kind = MmaKind::Tcgen05;
  t.tcgen05_kind = int(kind);
  t.cta_group = cta_group;
  t.a_type = a, t.b_type = b, t.c_type = ir::f32();
  t.m = int(M), t.n = int(N), t.k = int(k);
  t.a_source = a_src, t.a_major = a_major, t.b_major = b_major;
  t.thr_id = cta_group == 1 ? Layout(1, 0) : Layout(2, 1);
  t.layout_c_tv = cta_group == 1 ? Layout(T({1, T({M, N})}), T({0, T({1, M})}))
                                 : Layout(T({2, T({M / 2, N})}), T({M / 2, T({1, M})}));
  auto tv = [&](int64_t mn, int64_t kk) {
    return cta_group == 1 ? Layout(T({1, T({mn, kk})}), T({0, T({1, mn})}))
                          : Layout(T({2, T({mn / 2, kk})}), T({mn / 2, T({1, mn})}));
  };
  t.layout_a_tv = tv(M, k);
  t.layout_b_tv = tv(N, k);
  t.sf_type = sf;
  t.sf_vec_size = sf_vec_size;
  return t;
}

namespace {

const char* const kScaleFactorCell[2] = {"tcgen05.sfa", "tcgen05.sfb"};

ir::Block* function_body(ir::Block* b) {
  while (b->parent_op) b = b->parent_op->parent;
  return b;
}

// The atom's SFA / SFB cell when it belongs to the kernel being traced.
ir::Value* live_scale_factor_cell(const MmaAtom& atom, int which, ir::Block* body) {
  if (!atom.sf_cells[which]) return nullptr;
  for (auto& op : body->ops)  // compares pointers only: a cell of an earlier trace is never dereferenced
    if (op->code == ir::OpCode::Alloca && op->str_attr == kScaleFactorCell[which] && op->result() == atom.sf_cells[which])
      return atom.sf_cells[which];
  return nullptr;
}

}  // namespace

void set_tcgen05_scale_factor(MmaAtom& atom, int which, const dsl::Num& ptr) {
  const std::string what = std::string("set(Field.") + (which ? "SFB" : "SFA") + ")";
  if (!atom.is_tcgen05() || !atom.sf_type)
    throw dsl::UserError("INVALID_MMA_OP", what + ": only the block-scaled tcgen05 MMAs (MmaMXF8Op, MmaMXF4Op, "
                                                 "MmaMXF4NVF4Op) have scale-factor fields");
  ir::Builder& bld = kernel_builder(what);
  if (ptr.type->is_pointer() && ptr.type->element != atom.sf_type)
    throw dsl::UserError("TYPE_MISMATCH", what + ": the scale factors are " + mma_type_name(atom.sf_type) +
                                              ", got a pointer to " + mma_type_name(ptr.type->element));
  ir::Value* address = dsl::tmem_address(what, ptr);
  ir::Block* body = function_body(bld.block());
  ir::Value* cell = live_scale_factor_cell(atom, which, body);
  if (!cell) {
    // Built at the end of the body, then moved to its front (as the ACCUMULATE cell).
    size_t before = body->ops.size();
    ir::Builder at_entry(body);
    cell = at_entry.local_array(ir::i32(), 1, 4);
    cell->def->str_attr = kScaleFactorCell[which];
    at_entry.store(at_entry.const_int(ir::i32(), 0), cell);
    std::rotate(body->ops.begin(), body->ops.begin() + long(before), body->ops.end());
    atom.sf_cells[which] = cell;
  }
  bld.store(address, cell);
}

void check_scale_factor_layout(const MmaAtom& atom, const std::string& fn, int64_t sf_vec_size, int64_t layout_vec,
                               int64_t layout_factors) {
  if (!atom.is_tcgen05() || !atom.sf_type) return;  // sm_120's warp-level MMAs: sm120_blockscaled
  const std::string mma = "the MMA (" + std::string(atom.k == 96 ? "sm_103 " : "") +
                          kind_op_name(ir::Tcgen05Kind(atom.tcgen05_kind)) + ", K = " + std::to_string(atom.k) +
                          ") reads one scale factor per " + std::to_string(atom.sf_vec_size) + " K elements";
  if (sf_vec_size && sf_vec_size != atom.sf_vec_size)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": sf_vec_size " + std::to_string(sf_vec_size) + " does not match " +
                                               "the tiled MMA: " + mma);
  if (layout_vec && layout_vec != atom.sf_vec_size)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": the scale-factor layout holds one factor per " +
                                               std::to_string(layout_vec) + " K elements, but " + mma);
  // One factor per K block is a view of the factors one block at a time (NVIDIA's sm_103 kernels).
  if (layout_vec && layout_factors > 1 && atom.k != 96 && layout_vec * layout_factors != atom.k)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": the scale-factor layout's MMA mode holds " +
                                               std::to_string(layout_factors) + " factor(s) of " +
                                               std::to_string(layout_vec) + " K elements (K = " +
                                               std::to_string(layout_vec * layout_factors) + "), but " + mma + ", " +
                                               std::to_string(atom.k / atom.sf_vec_size) + " per MMA");
}

int tcgen05_scale_vec(const MmaAtom& atom) {
  // The factors one 256-bit (K 64 fp4, K 32 fp8) slice of a row takes: scale_vec::1X / 2X / 4X
  // (the sm_103 K = 96 forms keep the scale_vec of their vector size).
  const bool fp4 = ir::Tcgen05Kind(atom.tcgen05_kind) != ir::Tcgen05Kind::MXF8F6F4;
  return (fp4 ? 64 : 32) / atom.sf_vec_size;
}

uint32_t tcgen05_instruction_descriptor(const MmaAtom& atom) {
  const auto kind = ir::Tcgen05Kind(atom.tcgen05_kind);
  if (ir::is_block_scaled(kind))  // no D format; bit 23 the scale format (1 UE8M0); the factor IDs come with the call;
                                  // bit 31 K = 96 (sm_103's fp4 forms)
    return (format_code(kind, atom.a_type) << 7) | (format_code(kind, atom.b_type) << 10) |
           (uint32_t(atom.a_major == OperandMajor::MN) << 15) | (uint32_t(atom.b_major == OperandMajor::MN) << 16) |
           (uint32_t(atom.n >> 3) << 17) | (uint32_t(atom.sf_type->is_e8m0()) << 23) | (uint32_t(atom.m >> 4) << 24) |
           (uint32_t(atom.k == 96) << 31);
  const uint32_t c = atom.c_type->is_int() ? 2 : atom.c_type->is_f32() ? 1 : 0;
  return (c << 4) | (format_code(kind, atom.a_type) << 7) | (format_code(kind, atom.b_type) << 10) |
         (uint32_t(atom.a_major == OperandMajor::MN) << 15) | (uint32_t(atom.b_major == OperandMajor::MN) << 16) |
         (uint32_t(atom.n >> 3) << 17) | (uint32_t(atom.m >> 4) << 24);
}

uint64_t encode_umma_descriptor(const GmmaDescriptorFields& f, int swizzle_bits, uint64_t smem_address) {
  static const uint64_t layout_codes[4] = {0, 6, 4, 2};  // none, 32B, 64B, 128B
  return ((smem_address >> 4) & 0x3FFF) | (uint64_t(f.lbo & 0x3FFF) << 16) | (uint64_t(f.sbo & 0x3FFF) << 32) |
         (uint64_t(1) << 46) | (layout_codes[swizzle_bits] << 61);
}

bool is_tcgen05_desc_operand(const MmaAtom& atom, MmaOperand which) {
  if (!atom.is_tcgen05()) return false;
  return which == MmaOperand::B || (which == MmaOperand::A && atom.a_source == OperandSource::Smem);
}

namespace {

const char* operand_name(MmaOperand w) { return w == MmaOperand::A ? "A" : w == MmaOperand::B ? "B" : "C"; }

// The CTA's part of the atom's tile of an operand: (M / g, K) for A, (N / g, K) for B.
int64_t cta_extent(const MmaAtom& atom, MmaOperand w) { return (w == MmaOperand::A ? atom.m : atom.n) / atom.cta_group; }

}  // namespace

Tensor make_tcgen05_desc_fragment(const TiledMma& mma, MmaOperand w, const Tensor& p) {
  const std::string fn = std::string("make_fragment_") + operand_name(w);
  const MmaAtom& atom = mma.atom;
  ir::Type want = w == MmaOperand::A ? atom.a_type : atom.b_type;
  if (!p.is_memory() || p.space() != ir::AddrSpace::Smem)
    throw dsl::UserError("TYPE_MISMATCH", fn + ": tcgen05.mma reads operand " + operand_name(w) +
                                              " from shared memory; expected an smem tensor, got " + to_string(p));
  if (!holds_operand_type(p.element(), want))
    throw dsl::UserError("TYPE_MISMATCH", fn + ": " + to_string(p) + " holds " + mma_type_name(p.element()) +
                                              " but the MMA atom takes " + mma_type_name(want));
  if (p.layout.rank() < 2)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": expected a tensor ((MMA_MN, MMA_K), ...) in the MMA's shape "
                                               "(tile_to_mma_shape / make_smem_layout_a/b), got " + to_string(p));
  Layout tile = p.layout[0];
  const int64_t mn = cta_extent(atom, w);
  if (tile.rank() != 2 || !tile.is_static() || L::size(tile, {0}).value() != mn || L::size(tile, {1}).value() != atom.k)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": mode 0 of " + to_string(p) + " must be the atom's (" +
                                               std::to_string(mn) + ", " + std::to_string(atom.k) + ") tile");
  OperandMajor major = w == MmaOperand::A ? atom.a_major : atom.b_major;
  gmma_descriptor_fields(tile, want->width, descriptor_swizzle_bits(p, fn, "tcgen05.mma"), major, operand_name(w));  // checks the layout
  return make_descriptor_tensor(p, Layout(1, 0), tile);
}

Tensor make_tcgen05_tmem_fragment(const TiledMma& mma, MmaOperand w, const IntTuple& shape) {
  const MmaAtom& atom = mma.atom;
  const std::string fn = std::string("make_fragment_") + operand_name(w);
  Layout full = L::make_layout(shape);
  if (full.rank() < 1 || L::get(full, {0}).rank() != 2 || !full.is_static())
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": expected a static shape ((M, N), ...) (partition_shape_" +
                                               operand_name(w) + " of the tile), got " + L::to_string(shape));
  const int64_t m = L::size(full, {0, 0}).value(), n = L::size(full, {0, 1}).value();
  ir::Type element = w == MmaOperand::C ? atom.c_type : atom.a_type;
  const int bits = element->bit_size();
  // Element offsets of tensor memory: a column holds 32 / bits elements, a lane is 1 << 16 columns.
  const int64_t per_col = 32 / std::min(bits, 32), dp = (int64_t(1) << 16) * per_col;
  Layout atom_layout;
  if (w == MmaOperand::A || m == 128) {
    atom_layout = Layout(T({m, n}), T({1, 128}));
  } else if (atom.cta_group == 1 && m == 64) {
    atom_layout = Layout(T({T({16, 4}), n}), T({T({1, 32}), 128}));
  } else if (atom.cta_group == 2 && (m == 64 || m == 32)) {
    const int64_t q = 128 / m;
    atom_layout = Layout(T({m, T({n / q, q})}), T({1, T({128, m})}));
  } else {
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": no tensor-memory layout for a (" + std::to_string(m) + ", " +
                                               std::to_string(n) + ") tile of this MMA");
  }
  std::vector<IntTuple> rest;
  for (int i = 1; i < full.rank(); ++i) rest.push_back(L::shape(full, {i}));
  Layout logical = atom_layout;
  if (!rest.empty()) logical = L::tiled_product(atom_layout, L::Tiler(L::make_layout(IntTuple(rest))));
  // (lane, column) of the logical index: 128 lanes, then columns.
  Layout restride(T({128, 16384}), T({dp, 1}));
  Layout tmem = L::composition(restride, logical);
  const ir::Type ptr_type = ir::pointer_type(element, ir::AddrSpace::Tmem, 16);
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (!tracer || !tracer->in_kernel()) {
    // Host code builds the fragment only to read its layout (get_num_tmem_alloc_cols): the pointer
    // is a placeholder defined by no op, so any op that would read or write through it fails the
    // IR's visibility check instead of touching memory.
    static std::map<ir::Type, std::unique_ptr<ir::Value>> placeholders;
    auto& v = placeholders[ptr_type];
    if (!v) {
      v = std::make_unique<ir::Value>();
      v->type = ptr_type;
    }
    return make_tensor(v.get(), tmem);
  }
  ir::Builder& b = kernel_builder(fn + " (tensor memory)");
  ir::Value* ptr = b.create(ir::OpCode::IntToPtr, {b.const_int(ir::i32(), 0)}, {ptr_type})->result();
  return make_tensor(ptr, tmem);
}

namespace {

ir::Value* descriptor_value(ir::Builder& b, const Tensor& t, ir::Type want, OperandMajor major, const char* which) {
  if (!t.desc_tile)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which +
                                              " of a tcgen05 MMA must be a descriptor fragment (tiled_mma.make_fragment_" +
                                              which + " of an smem tensor), got " + to_string(t));
  if (!t.desc_value && !holds_operand_type(t.element(), want))
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " holds " + mma_type_name(t.element()) +
                                              " but the MMA atom takes " + mma_type_name(want));
  L::Int n = L::size(t.layout);
  if (!n.is_static() || n.value() != 1)
    throw dsl::UserError("SHAPE_MISMATCH", std::string("gemm: operand ") + which + " " + to_string(t) +
                                               " must be one descriptor per atom call");
  if (t.desc_value) return t.desc_value;
  const int swz = descriptor_swizzle_bits(t, std::string("gemm: operand ") + which, "tcgen05.mma");
  GmmaDescriptorFields f = gmma_descriptor_fields(*t.desc_tile, want->width, swz, major, which);
  return smem_descriptor(b, t.ptr, encode_umma_descriptor(f, swz, 0));
}

ir::Value* tmem_address(ir::Builder& b, const Tensor& t, ir::Type want, const char* which) {
  if (!t.is_memory() || t.space() != ir::AddrSpace::Tmem || t.element() != want)
    throw dsl::UserError("TYPE_MISMATCH", std::string("gemm: operand ") + which + " of a tcgen05 MMA must be a tensor-memory "
                                              "tensor of " + mma_type_name(want) + " (make_fragment_" + which +
                                              " with the allocated pointer), got " + to_string(t));
  return b.create(ir::OpCode::PtrToInt, {t.ptr}, {ir::i32()})->result();
}

void tcgen05_call(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const dsl::Num& accumulate) {
  ir::Builder& bld = kernel_builder("cute.gemm with a tcgen05 MMA");
  const bool a_tmem = atom.a_source == OperandSource::Tmem;
  ir::Value* dv = tmem_address(bld, d, atom.c_type, "C");
  ir::Value* av = a_tmem ? tmem_address(bld, a, atom.a_type, "A") : descriptor_value(bld, a, atom.a_type, atom.a_major, "A");
  ir::Value* bv = descriptor_value(bld, b, atom.b_type, atom.b_major, "B");
  ir::Value* id = bld.const_int(ir::i32(), int64_t(int32_t(tcgen05_instruction_descriptor(atom))));
  std::vector<ir::Value*> operands{dv, av, bv, id, dsl::materialize(dsl::to_boolean(accumulate))};
  const auto kind = ir::Tcgen05Kind(atom.tcgen05_kind);
  if (ir::is_block_scaled(kind)) {
    // The factors' addresses from the SFA / SFB fields; the byte of the column they start at (the
    // address's top two bits, as CuTe's 8-bit tensor-memory pointers carry it) goes to the
    // descriptor's scale-factor IDs (A bits [29,31), B bits [4,6)).
    ir::Block* body = function_body(bld.block());
    ir::Value* sf[2];
    for (int w = 0; w < 2; ++w) {
      ir::Value* cell = live_scale_factor_cell(atom, w, body);
      if (!cell)
        throw dsl::UserError("INVALID_MMA_OP", std::string("gemm: a block-scaled tcgen05 MMA reads its scale factors "
                                                           "from tensor memory: set tiled_mma.set(tcgen05.Field.") +
                                                   (w ? "SFB" : "SFA") + ", ptr) before cute.gemm");
      sf[w] = bld.load(cell, ir::i32());
    }
    auto id_bits = [&](ir::Value* address, int shift) {
      ir::Value* top = bld.binary(ir::OpCode::And, bld.binary(ir::OpCode::Shr, address, bld.const_int(ir::i32(), 30)),
                                  bld.const_int(ir::i32(), 3));
      return bld.binary(ir::OpCode::Shl, top, bld.const_int(ir::i32(), shift));
    };
    id = bld.binary(ir::OpCode::Or, id, bld.binary(ir::OpCode::Or, id_bits(sf[0], 29), id_bits(sf[1], 4)));
    operands[3] = id;
    operands.push_back(sf[0]);
    operands.push_back(sf[1]);
  }
  ir::Op* op = bld.create(ir::OpCode::Tcgen05Mma, operands, {});
  op->int_attr = atom.cta_group;
  op->ints = {atom.tcgen05_kind, a_tmem ? 1 : 0};
  if (ir::is_block_scaled(kind)) op->ints.push_back(tcgen05_scale_vec(atom));
}

[[noreturn]] void incongruent(const std::string& why, const Tensor& d, const Tensor& a, const Tensor& b) {
  throw dsl::UserError("SHAPE_MISMATCH", "gemm: " + why + "; got D " + to_string(d) + ", A " + to_string(a) + ", B " +
                                             to_string(b));
}

int64_t static_mode(const Tensor& t, int mode, const Tensor& d, const Tensor& a, const Tensor& b) {
  L::Int n = L::size(t.layout, {mode});
  if (!n.is_static()) incongruent("fragment modes must be static", d, a, b);
  return n.value();
}

Tensor pick(const Tensor& t, std::vector<int64_t> coords) {
  std::vector<IntTuple> c{IntTuple::underscore()};
  for (int64_t x : coords) c.push_back(IntTuple(x));
  return slice(t, IntTuple(c));
}

void tcgen05_vmn(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const dsl::Num& accumulate) {
  int64_t M = static_mode(a, 1, d, a, b), N = static_mode(b, 1, d, a, b);
  if (static_mode(d, 1, d, a, b) != M || static_mode(d, 2, d, a, b) != N)
    incongruent("the accumulator's (M, N) modes must match A's M and B's N", d, a, b);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) tcgen05_call(atom, pick(d, {m, n}), pick(a, {m}), pick(b, {n}), accumulate);
}

}  // namespace

void tcgen05_gemm(const MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& b, const Tensor& c) {
  dsl::require_tcgen05("cute.gemm with a tcgen05 MMA");
  if (c.ptr != d.ptr || !(c.layout == d.layout))
    if (!(c.is_memory() && d.is_memory() && c.space() == ir::AddrSpace::Tmem))
      incongruent("a tcgen05 MMA accumulates in place: C must be the tensor-memory accumulator D", d, a, b);
  int rd = d.layout.rank(), ra = a.layout.rank(), rb = b.layout.rank();
  if (ra != rb) incongruent("A and B must have the same rank", d, a, b);
  dsl::Num accumulate = wgmma_accumulate(atom);
  if (rd == 1 && ra == 1) return tcgen05_call(atom, d, a, b, accumulate);
  if (rd == 3 && ra == 2) return tcgen05_vmn(atom, d, a, b, accumulate);
  if (rd == 3 && ra == 3) {
    int64_t K = static_mode(a, 2, d, a, b);
    if (static_mode(b, 2, d, a, b) != K) incongruent("A's and B's K modes differ", d, a, b);
    IntTuple us = IntTuple::underscore();
    for (int64_t k = 0; k < K; ++k)
      tcgen05_vmn(atom, d, slice(a, IntTuple{us, us, IntTuple(k)}), slice(b, IntTuple{us, us, IntTuple(k)}),
                  k == 0 ? accumulate : dsl::Num::of_int(ir::bool_type(), 1));
    return;
  }
  incongruent("a tcgen05 MMA takes (V)x(V)->(V), (V,M)x(V,N)->(V,M,N) or (V,M,K)x(V,N,K)->(V,M,N)", d, a, b);
}

void tcgen05_scaled_gemm(MmaAtom& atom, const Tensor& d, const Tensor& a, const Tensor& sfa, const Tensor& b,
                         const Tensor& sfb, const Tensor& c) {
  dsl::require_tcgen05("cute.gemm with a tcgen05 MMA");
  if (!atom.is_tcgen05() || !atom.sf_type)
    throw dsl::UserError("INVALID_MMA_OP", "gemm: scale-factor operands ([A, SFA], [B, SFB]) need a block-scaled "
                                           "tcgen05 MMA (MmaMXF8Op, MmaMXF4Op, MmaMXF4NVF4Op)");
  if (c.ptr != d.ptr || !(c.layout == d.layout))
    if (!(c.is_memory() && d.is_memory() && c.space() == ir::AddrSpace::Tmem))
      incongruent("a tcgen05 MMA accumulates in place: C must be the tensor-memory accumulator D", d, a, b);
  const int ra = a.layout.rank();
  if (d.layout.rank() != 3 || ra != 3 || b.layout.rank() != 3)
    incongruent("a block-scaled cute.gemm takes (V,M,K)x(V,N,K)->(V,M,N)", d, a, b);
  const int64_t M = static_mode(a, 1, d, a, b), N = static_mode(b, 1, d, a, b), K = static_mode(a, 2, d, a, b);
  if (static_mode(b, 2, d, a, b) != K) incongruent("A's and B's K modes differ", d, a, b);
  if (static_mode(d, 1, d, a, b) != M || static_mode(d, 2, d, a, b) != N)
    incongruent("the accumulator's (M, N) modes must match A's M and B's N", d, a, b);
  const Tensor* sf[2] = {&sfa, &sfb};
  const int64_t rows[2] = {M, N};
  for (int w = 0; w < 2; ++w) {
    const Tensor& t = *sf[w];
    const std::string name = w ? "SFB" : "SFA";
    if (!t.is_memory() || t.space() != ir::AddrSpace::Tmem || t.layout.rank() != 3)
      incongruent(name + " must be a tensor-memory tensor ((MMA), MMA_" + (w ? "N" : "M") + ", MMA_K), got " +
                      to_string(t), d, a, b);
    // Mode 0 ((rows), (vector, factors)) as make_tmem_layout_sfa / sfb build it.
    const IntTuple& m0 = t.layout.shape[0];
    auto static_leaf = [](const IntTuple& x) { return x.is_int() && x.as_int().is_static(); };
    if (m0.is_tuple() && m0.rank() == 2 && m0[1].is_tuple() && m0[1].rank() == 2 && static_leaf(m0[1][0]) &&
        static_leaf(m0[1][1]))
      check_scale_factor_layout(atom, "gemm: " + name, 0, m0[1][0].as_int().value(), m0[1][1].as_int().value());
    const int64_t r = static_mode(t, 1, d, a, b);
    if ((r != 1 && r != rows[w]) || static_mode(t, 2, d, a, b) != K)
      incongruent(name + "'s (" + (w ? "N" : "M") + ", K) modes must match " + (w ? "B's" : "A's") + " (or be 1 along " +
                      (w ? "N" : "M") + "), got " + to_string(t), d, a, b);
  }
  const dsl::Num accumulate = wgmma_accumulate(atom);
  const IntTuple us = IntTuple::underscore();
  const bool sfa_rows = L::size(sfa.layout, {1}).value() > 1, sfb_rows = L::size(sfb.layout, {1}).value() > 1;
  for (int64_t k = 0; k < K; ++k) {
    const Tensor ak = slice(a, IntTuple{us, us, IntTuple(k)}), bk = slice(b, IntTuple{us, us, IntTuple(k)});
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        set_tcgen05_scale_factor(atom, 0, dsl::Num::of_value(pick(sfa, {sfa_rows ? m : 0, k}).ptr));
        set_tcgen05_scale_factor(atom, 1, dsl::Num::of_value(pick(sfb, {sfb_rows ? n : 0, k}).ptr));
        tcgen05_call(atom, pick(d, {m, n}), pick(ak, {m}), pick(bk, {n}),
                     k == 0 ? accumulate : dsl::Num::of_int(ir::bool_type(), 1));
      }
  }
}

std::string tcgen05_op_string(const MmaAtom& a) {
  const auto kind = ir::Tcgen05Kind(a.tcgen05_kind);
  const std::string name = a.k != 96 ? kind_op_name(kind) : a.sf_vec_size == 32 ? "SM103MmaMXF4Op" : "SM103MmaMXF4NVF4Op";
  std::string s = "tcgen05 " + name + " MMA Operation\n";
  s += "  CTA group = " + std::string(a.cta_group == 1 ? "1CTA" : "2CTA") + "\n";
  if (a.a_type == a.b_type) s += "  A/B data type = " + mma_type_name(a.a_type) + "\n";
  else s += "  A data type = " + mma_type_name(a.a_type) + "\n  B data type = " + mma_type_name(a.b_type) + "\n";
  return s + "  Accumulator data type = " + mma_type_name(a.c_type) + "\n  Instruction shape MNK = " +
         mma_shape_text(a.shape_mnk()) + "\n  A source location = " +
         (a.a_source == OperandSource::Tmem ? "TMEM" : "SMEM") + "\n  A major mode = " + major_name(a.a_major) +
         "\n  B major mode = " + major_name(a.b_major);
}

}  // namespace opencute::cute
