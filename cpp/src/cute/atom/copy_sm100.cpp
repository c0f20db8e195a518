#include "cute/atom/copy_sm100.h"

#include "cute/atom/mma_sm90.h"
#include "cute/pointer.h"
#include "dsl/sm100_ops.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using L::IntTuple;
using L::Layout;

namespace {

IntTuple T(std::initializer_list<IntTuple> e) { return IntTuple(std::vector<IntTuple>(e)); }

const char* const kShapeNames[] = {"32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"};
constexpr int64_t kDpBits = int64_t(1) << 21;  // one tensor-memory lane in bits of address

// 32-bit units per lane per repetition, and lanes.
int units(ir::Tcgen05Shape s) {
  switch (s) {
    case ir::Tcgen05Shape::S32x32b: return 1;
    case ir::Tcgen05Shape::S16x64b: return 2;
    case ir::Tcgen05Shape::S16x128b: return 4;
    case ir::Tcgen05Shape::S16x256b: return 8;
    case ir::Tcgen05Shape::S16x32bx2: return 2;
  }
  return 1;
}
int lanes(ir::Tcgen05Shape s) { return s == ir::Tcgen05Shape::S32x32b ? 32 : 16; }
int max_repetitions(ir::Tcgen05Shape s) {
  return s == ir::Tcgen05Shape::S16x128b ? 64 : s == ir::Tcgen05Shape::S16x256b ? 32 : 128;
}

Layout register_layout(ir::Tcgen05Shape s, int64_t R) {
  switch (s) {
    case ir::Tcgen05Shape::S32x32b: return Layout(T({32, 32 * R}), T({32 * R, 1}));
    case ir::Tcgen05Shape::S16x64b: return Layout(T({T({2, 2, 8}), T({32, R})}), T({T({512 * R, 32, 64 * R}), T({1, 64})}));
    case ir::Tcgen05Shape::S16x128b: return Layout(T({T({4, 8}), T({32, 2, R})}), T({T({32, 128 * R}), T({1, 1024 * R, 128})}));
    case ir::Tcgen05Shape::S16x256b: return Layout(T({T({4, 8}), T({64, 2, R})}), T({T({64, 256 * R}), T({1, 2048 * R, 256})}));
    case ir::Tcgen05Shape::S16x32bx2: return Layout(T({T({16, 2}), 32 * R}), T({T({64 * R, 32 * R}), 1}));
  }
  return Layout();
}

// Logical bit -> tensor-memory bit.
Layout val_id(ir::Tcgen05Shape s, int64_t R, bool pack) {
  const int64_t row = 32 * units(s) * R;
  if (pack) return Layout(T({T({16, row / 16}), lanes(s)}), T({T({1, 32}), kDpBits}));
  return Layout(T({row, lanes(s)}), T({1, kDpBits}));
}

[[noreturn]] void atom_error(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }

}  // namespace

bool is_tmem_copy(const CopyAtom& a) { return a.op == CopyOp::TmemLoad || a.op == CopyOp::TmemStore; }

TmemCopyProperties tmem_copy_properties(const CopyAtom& a) {
  if (!is_tmem_copy(a))
    atom_error("INVALID_COPY_ATOM", "get_tmem_copy_properties: expected a tcgen05 Ld / St atom, got " + a.op_name);
  const auto s = ir::Tcgen05Shape(a.tmem_shape);
  const int bits = s == ir::Tcgen05Shape::S16x32bx2 ? 32 : 32 * units(s);
  return {lanes(s), bits, a.tmem_repetitions, a.tmem_pack};
}

CopyAtom make_tmem_copy_atom(int shape, int repetitions, bool pack, bool store, ir::Type value_type) {
  if (shape < 0 || shape > 4) atom_error("INVALID_COPY_ATOM", "unknown tensor-memory copy shape");
  const auto s = ir::Tcgen05Shape(shape);
  const std::string name = std::string(store ? "St" : "Ld") + kShapeNames[shape] + "Op";
  dsl::require_tcgen05("tcgen05." + name);
  const int R = repetitions;
  if (R < 1 || R > max_repetitions(s) || (R & (R - 1)))
    atom_error("INVALID_COPY_ATOM", "tcgen05." + name + ": the " + kShapeNames[shape] + " shape has repetitions x1 to x" +
                                        std::to_string(max_repetitions(s)) + ", got x" + std::to_string(R));
  // 32-bit values, or 16-bit ones two to a register: two to a column, or with packing one to a
  // column (its low half).
  const int bits = value_type->bit_size();
  if (bits != 32 && bits != 16)
    atom_error("TYPE_MISMATCH", "tcgen05." + name + " moves 32-bit or 16-bit values; the atom's value type " +
                                    ir::to_string(value_type) + " has " + std::to_string(bits) + " bits");
  if (pack && bits != 16)
    atom_error("TYPE_MISMATCH", "tcgen05." + name + ": 16-bit packing needs a 16-bit value type, got " +
                                    ir::to_string(value_type));
  CopyAtom a;
  a.op = store ? CopyOp::TmemStore : CopyOp::TmemLoad;
  a.op_name = name;
  a.value_type = value_type;
  a.tmem_shape = shape;
  a.tmem_repetitions = R;
  a.tmem_pack = pack;
  const int nregs = ir::tcgen05_ldst_registers(s, R);
  a.num_bits = 32 * nregs;
  a.thr_id_layout = Layout(32, 1);
  const int64_t total = 32 * units(s) * R * lanes(s);
  Layout whole(T({32, total}), T({0, 1}));
  Layout regs = register_layout(s, R);
  a.src_bits = store ? regs : whole;
  a.dst_bits = store ? whole : regs;
  a.ref_bits = whole;  // the tensor-memory side: make_tmem_copy lays the atom over tensor memory
  return a;
}

namespace {
TiledCopy cotiled_copy(const CopyAtom& atom, const Layout& atom_tv, const Tensor& tmem, const std::string& fn);
}  // namespace

TiledCopy make_tmem_copy(const CopyAtom& atom, const Tensor& tmem) {
  if (!is_tmem_copy(atom))
    atom_error("INVALID_COPY_ATOM", "make_tmem_copy: expected a tcgen05 Ld / St atom, got " + atom.op_name);
  if (!tmem.is_memory() || tmem.space() != ir::AddrSpace::Tmem)
    atom_error("TYPE_MISMATCH", "make_tmem_copy: expected a tensor-memory tensor, got " + to_string(tmem));
  const int bits = tmem.element()->bit_size();
  if (bits != atom.value_bits())
    atom_error("TYPE_MISMATCH", "make_tmem_copy: the atom moves " + std::to_string(atom.value_bits()) +
                                    "-bit values but the tensor holds " + ir::to_string(tmem.element()));
  const auto s = ir::Tcgen05Shape(atom.tmem_shape);
  const int64_t dp = (int64_t(1) << 16) * (32 / std::min(bits, 32));
  // Four warps, each on its own 32 lanes; the atom's values as element offsets.
  Layout atom_t(T({32, 4}), T({0, 32 * dp}));
  Layout atom_v = L::coalesce(L::recast_layout(bits, 1, val_id(s, atom.tmem_repetitions, atom.tmem_pack)));
  return cotiled_copy(atom, L::make_layout({atom_t, atom_v}), tmem, "make_tmem_copy");
}

namespace {

// CuTe's make_cotiled_copy: the atom's (thread, value) -> tensor-memory offsets laid over the
// tensor's layout.
TiledCopy cotiled_copy(const CopyAtom& atom, const Layout& atom_tv, const Tensor& tmem, const std::string& fn) {
  const Layout& data = tmem.layout;
  if (!data.is_static()) atom_error("NOT_SUPPORTED", fn + ": needs a static tensor-memory layout, got " + to_string(tmem));
  // (thread, value) -> data coordinate (CuTe's make_cotiled_copy).
  Layout inv_data = L::make_layout({L::left_inverse(data), Layout(1, 0)});
  Layout tv_data = L::composition(inv_data, atom_tv);
  std::vector<IntTuple> flat;
  for (int i = 0; i < data.rank(); ++i) flat.push_back(IntTuple(L::size(data, {i})));
  if (data.rank() == 0) flat.push_back(IntTuple(L::size(data)));
  std::vector<IntTuple> tile;
  std::vector<L::Tiler> tilers;
  std::vector<Layout> layouts;
  for (size_t i = 0; i < flat.size(); ++i) {
    std::vector<IntTuple> st;
    for (size_t j = 0; j < flat.size(); ++j) st.push_back(IntTuple(i == j ? 1 : 0));
    Layout pick = L::filter(L::composition(L::make_layout(IntTuple(flat), IntTuple(st)), tv_data));
    Layout c = L::coalesce(pick);
    tile.push_back(IntTuple(L::size(c)));
    tilers.push_back(L::Tiler(c));
    layouts.push_back(c);
  }
  Layout tile2data = L::composition(L::make_layout(IntTuple(flat)), L::Tiler(tilers));
  Layout layout_tv = L::composition(L::left_inverse(tile2data), tv_data);
  TiledCopy tc = make_tiled_copy(atom, layout_tv, IntTuple(tile));
  tc.tiler_layouts = layouts;
  return tc;
}

Layout group_rest(const Layout& l) {
  if (l.rank() == 1) return Layout(IntTuple{l.shape, 1}, IntTuple{l.stride, 0});
  return L::group_modes(l, 1, l.rank());
}

[[noreturn]] void copy_error(const std::string& msg) { throw L::LayoutError("copy: " + msg); }

ir::Value* element_pointer(ir::Builder& b, const Tensor& t, const Layout& l, int64_t k, int64_t r) {
  if (t.swizzle) return element_address(with_layout(t, l), IntTuple{IntTuple(k), IntTuple(r)});
  return offset_pointer(b, t.ptr, l(IntTuple{IntTuple(k), IntTuple(r)}).as_int());
}

// A thread's share of each call: its nr values must be the cells the atom gives lane 0's
// registers, relative to the first (CuTe's partition_D of a load / partition_S of a store over
// tensor memory: right_inverse(RefLayout) o register layout, through the atom's ValID).
void check_thread_share(const CopyAtom& atom, const Tensor& tm, const Layout& tv, int64_t calls, int64_t nrest,
                        const Tensor& src, const Tensor& dst) {
  const bool load = atom.op == CopyOp::TmemLoad;
  const int bits = atom.value_bits();
  const auto s = ir::Tcgen05Shape(atom.tmem_shape);
  Layout regs = load ? atom.layout_dst_tv() : atom.layout_src_tv();
  Layout cells = L::recast_layout(bits, 1, val_id(s, atom.tmem_repetitions, atom.tmem_pack));
  const int64_t nr = L::size(regs, {1}).value();
  auto cell = [&](int64_t k) { return cells(regs(IntTuple{IntTuple(0), IntTuple(k)})).as_int().value(); };
  for (int64_t r = 0; r < nrest; ++r)
    for (int64_t c = 0; c < calls; ++c) {
      L::Int first = tv(IntTuple{IntTuple(c * nr), IntTuple(r)}).as_int();
      for (int64_t k = 0; k < nr; ++k) {
        L::Int at = tv(IntTuple{IntTuple(c * nr + k), IntTuple(r)}).as_int();
        if (!at.is_static() || !first.is_static() || at.value() - first.value() != cell(k) - cell(0))
          copy_error("the value modes of " + to_string(src) + " and " + to_string(dst) + " do not split into " +
                     atom.op_name + " calls: a thread's " + std::to_string(nr) + " tensor-memory values are not the " +
                     "cells its registers hold (" + to_string(tm) + ")");
      }
    }
}

}  // namespace

void copy_sm100(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::string& file, int line) {
  const std::string& name = atom.op_name;
  const bool load = atom.op == CopyOp::TmemLoad;
  const Tensor& tm = load ? src : dst;
  const Tensor& rg = load ? dst : src;
  if (!tm.is_memory() || tm.space() != ir::AddrSpace::Tmem)
    throw dsl::UserError("COPY_MEMSPACE", name + ": the " + (load ? "source" : "destination") +
                                              " must be a tensor-memory tensor, got " + to_string(tm));
  if (!rg.is_memory() || rg.space() != ir::AddrSpace::Rmem)
    throw dsl::UserError("COPY_MEMSPACE", name + ": the " + (load ? "destination" : "source") +
                                              " must be a register tensor, got " + to_string(rg));
  const int vbits = atom.value_bits();
  for (const Tensor* t : {&src, &dst})
    if (t->element()->bit_size() != vbits)
      throw dsl::UserError("TYPE_MISMATCH", name + " atom of " + ir::to_string(atom.value_type) +
                                                " used with a tensor of " + ir::to_string(t->element()));
  if (src.layout.rank() != dst.layout.rank())
    copy_error("source and destination ranks differ: " + to_string(src) + " vs " + to_string(dst));
  Layout tv = group_rest(tm.layout), rv = group_rest(rg.layout);
  const int nt = load ? atom.num_src_values() : atom.num_dst_values();
  const int nr = load ? atom.num_dst_values() : atom.num_src_values();
  L::Int t0 = L::size(tv, {0}), r0 = L::size(rv, {0}), t1 = L::size(tv, {1}), r1 = L::size(rv, {1});
  if (!t0.is_static() || !r0.is_static() || !t1.is_static() || !r1.is_static())
    copy_error("the partitions must have static shapes: " + to_string(src) + " and " + to_string(dst));
  // The tensor-memory side names each call's whole region (nt values, through the warp's address:
  // partition_S of a load, partition_D of a store), or only the thread's own nr cells of it (a
  // tensor-memory tensor partitioned with the register side, as NVIDIA's mixed-input FMHA d512 does).
  const bool share = t0.value() == r0.value() && r0.value() % nr == 0 && t1.value() == r1.value();
  if (!share && (t0.value() % nt || r0.value() % nr || t0.value() / nt != r0.value() / nr || t1.value() != r1.value()))
    copy_error("the value modes of " + to_string(src) + " and " + to_string(dst) + " do not split into " + name +
               " calls of " + std::to_string(nt) + " tensor-memory and " + std::to_string(nr) + " register values");
  const int64_t calls = r0.value() / nr, nrest = t1.value();
  if (share) check_thread_share(atom, tm, tv, calls, nrest, src, dst);
  const auto shape = ir::Tcgen05Shape(atom.tmem_shape);
  const int nregs = ir::tcgen05_ldst_registers(shape, atom.tmem_repetitions);
  ir::Builder& b = trace_builder(("copy with " + name).c_str());
  const ir::Type u16 = ir::int_type(16, false);
  // Loads: every call's tcgen05.ld first, then one tcgen05.wait::ld, then the registers go to the
  // fragment. NVIDIA's examples read a copied fragment without a fence (the CuTe DSL waits for the
  // loads of a copy itself); the emulator reports a register read before its wait (sm100_tmem.h).
  std::vector<std::pair<ir::Op*, std::pair<int64_t, int64_t>>> loads;
  for (int64_t r = 0; r < nrest; ++r)
    for (int64_t c = 0; c < calls; ++c) {
      ir::Value* p = offset_pointer(b, tm.ptr, tv(IntTuple{IntTuple(c * (share ? nr : nt)), IntTuple(r)}).as_int());
      ir::Value* addr = b.create(ir::OpCode::PtrToInt, {p}, {ir::i32()})->result();
      // A thread's share starts at its own first cell; lane 0's is the region's first (the
      // hardware reads one address for the warp: tcgen05.ld / st take a warp-uniform address).
      if (share) addr = b.shuffle(ir::ShuffleKind::Idx, addr, b.const_int(ir::i32(), 0), b.const_int(ir::i32(), 31),
                                  b.const_int(ir::i32(), -1));
      const std::vector<int64_t> ints{atom.tmem_repetitions, atom.tmem_pack ? 1 : 0, atom.tmem_repetitions};
      if (load) {
        ir::Op* op = b.create(ir::OpCode::Tcgen05Ld, {addr}, std::vector<ir::Type>(size_t(nregs), ir::i32()));
        op->int_attr = atom.tmem_shape;
        op->ints = ints;
        if (!file.empty()) op->file = file, op->line = line;
        loads.push_back({op, {r, c}});
      } else {
        std::vector<ir::Value*> ops{addr};
        for (int j = 0; j < nregs; ++j) {
          if (vbits == 32) {
            ir::Value* x = b.load(element_pointer(b, rg, rv, c * nr + j, r), rg.element());
            ops.push_back(rg.element() == ir::i32() ? x : b.bitcast(x, ir::i32()));
          } else {
            ir::Value* lo = b.load(element_pointer(b, rg, rv, c * nr + 2 * j, r), rg.element());
            ir::Value* hi = b.load(element_pointer(b, rg, rv, c * nr + 2 * j + 1, r), rg.element());
            ir::Type u32 = ir::int_type(32, false);
            ir::Value* l32 = b.cast(b.bitcast(lo, u16), u32);
            ir::Value* h32 = b.binary(ir::OpCode::Shl, b.cast(b.bitcast(hi, u16), u32), b.const_int(u32, 16));
            ops.push_back(b.bitcast(b.binary(ir::OpCode::Or, l32, h32), ir::i32()));
          }
        }
        ir::Op* op = b.create(ir::OpCode::Tcgen05St, ops, {});
        op->int_attr = atom.tmem_shape;
        op->ints = ints;
        if (!file.empty()) op->file = file, op->line = line;
      }
    }
  if (!load) return;
  b.create(ir::OpCode::Tcgen05Wait, {}, {})->int_attr = 0;
  for (auto& [op, rc] : loads) {
    const int64_t r = rc.first, c = rc.second;
    for (int k = 0; k < nr; ++k) {
      ir::Value* reg = op->result(vbits == 32 ? k : k / 2);
      ir::Value* x;
      if (vbits == 32) {
        x = rg.element() == ir::i32() ? reg : b.bitcast(reg, rg.element());
      } else {
        ir::Type u32 = ir::int_type(32, false);
        ir::Value* sh = k % 2 ? b.binary(ir::OpCode::Shr, b.bitcast(reg, u32), b.const_int(u32, 16)) : b.bitcast(reg, u32);
        x = b.bitcast(b.cast(sh, u16), rg.element());
      }
      b.store(x, element_pointer(b, rg, rv, c * nr + k, r));
    }
  }
}

int64_t tmem_tensor_columns(const Tensor& t) {
  if (!t.is_memory() || t.space() != ir::AddrSpace::Tmem)
    throw dsl::UserError("TYPE_MISMATCH", "find_tmem_tensor_col_offset: expected a tensor-memory tensor, got " + to_string(t));
  L::Int cs = L::cosize(L::recast_layout(32, t.element()->bit_size(), t.layout));
  if (!cs.is_static()) throw dsl::UserError("NOT_SUPPORTED", "find_tmem_tensor_col_offset: needs a static layout");
  return cs.value() & 0xFFFF;
}

CopyAtom make_s2t_copy_atom(int shape, int cta_group, ir::Type value_type) {
  static const char* const names[] = {"Cp128x256bOp", "Cp4x256bOp", "Cp128x128bOp", "Cp2x64x128bOp",
                                      "Cp2x64x128bOp", "Cp4x32x128bOp"};
  if (shape < 0 || shape > 5) atom_error("INVALID_COPY_ATOM", "unknown tcgen05.cp shape");
  const std::string name = std::string("tcgen05.") + names[shape];
  dsl::require_tcgen05(name);
  if (shape != int(ir::Tcgen05CpShape::S32x128bWarpx4))
    atom_error("NOT_SUPPORTED", name + ": only Cp4x32x128bOp (tcgen05.cp .32x128b.warpx4) is implemented so far");
  if (cta_group != 1 && cta_group != 2) atom_error("INVALID_VALUE", name + ": the CTA group must be ONE or TWO");
  const int bits = value_type->bit_size();
  if (bits < 8 || bits > 32 || 128 % bits)
    atom_error("TYPE_MISMATCH", name + " moves 8-, 16- or 32-bit values, got " + ir::to_string(value_type));
  CopyAtom a;
  a.op = CopyOp::SmemToTmem;
  a.op_name = names[shape];
  a.value_type = value_type;
  a.tmem_shape = shape;
  a.cp_cta_group = cta_group;
  // CuTe's table without its broadcast mode: the copies to lanes 32-127 are the instruction's,
  // and the tensor-memory tensors (make_tmem_layout_sfa/sfb) name lanes 0-31 only.
  a.num_bits = 32 * 128;
  a.thr_id_layout = Layout(1, 0);
  a.src_bits = Layout(T({1, T({32, 128})}), T({0, T({1, 32})}));
  a.dst_bits = Layout(T({1, 4096}), T({0, 1}));
  a.ref_bits = a.dst_bits;
  return a;
}

TiledCopy make_s2t_copy(const CopyAtom& atom, const Tensor& tmem) {
  if (atom.op != CopyOp::SmemToTmem)
    atom_error("INVALID_COPY_ATOM", "make_s2t_copy: expected a tcgen05.cp atom (Cp4x32x128bOp), got " + atom.op_name);
  if (!tmem.is_memory() || tmem.space() != ir::AddrSpace::Tmem)
    atom_error("TYPE_MISMATCH", "make_s2t_copy: expected a tensor-memory tensor, got " + to_string(tmem));
  const int bits = tmem.element()->bit_size();
  if (bits != atom.value_bits())
    atom_error("TYPE_MISMATCH", "make_s2t_copy: the atom moves " + ir::to_string(atom.value_type) +
                                    " but the tensor holds " + ir::to_string(tmem.element()));
  // CuTe's ValID in elements, without the broadcast to the other subpartitions: 32 lanes, 128
  // bits of columns.
  const int64_t dp = (int64_t(1) << 16) * (32 / bits);
  Layout atom_v = L::coalesce(Layout(T({32, 128 / bits}), T({dp, 1})));
  return cotiled_copy(atom, L::make_layout({Layout(1, 0), atom_v}), tmem, "make_s2t_copy");
}

Tensor s2t_smem_desc_tensor(const TiledCopy& tc, const Tensor& p) {
  const std::string fn = "get_s2t_smem_desc_tensor";
  if (tc.atom.op != CopyOp::SmemToTmem)
    atom_error("INVALID_COPY_ATOM", fn + ": expected a tiled copy of a tcgen05.cp atom, got " + tc.atom.op_name);
  if (!p.is_memory() || p.space() != ir::AddrSpace::Smem || p.swizzle)
    throw dsl::UserError("TYPE_MISMATCH", fn + ": expected the source partition in shared memory without swizzle, got " +
                                              to_string(p));
  const Layout v = p.layout[0];
  if (v.rank() != 2 || !v.is_static() || L::size(v, {1}).value() != 1)
    throw dsl::UserError("SHAPE_MISMATCH", fn + ": expected a partition ((ATOM_V, 1), ...) of the tiled copy, got " +
                                               to_string(p));
  const int bits = p.element()->bit_size();
  const int64_t per_row = 128 / bits;
  // The atom's 32 rows x 128 bits, in the atom's value order (row fastest).
  Layout core = L::composition(L::flatten(v[0]), L::make_layout(T({32, per_row})));
  // tcgen05.cp reads K-major core matrices without swizzle: 8 rows 16 bytes apart, the 8-row
  // groups SBO apart.
  const int64_t row_bytes = 16, sbo = core(IntTuple{IntTuple(8), IntTuple(0)}).as_int().value() * bits / 8;
  for (int64_t r = 0; r < 32; ++r)
    for (int64_t e = 0; e < per_row; ++e) {
      const int64_t want = (r % 8) * row_bytes * 8 / bits + (r / 8) * sbo * 8 / bits + e;
      if (core(IntTuple{IntTuple(r), IntTuple(e)}).as_int().value() != want || sbo % 16 || sbo <= 0)
        throw dsl::UserError("INVALID_SMEM_LAYOUT", fn + ": the rows of a tcgen05.cp block must be 16 contiguous bytes, "
                                                         "8-row groups a multiple of 16 bytes apart; got " + L::to_string(core));
    }
  return make_descriptor_tensor(p, Layout(T({1, 1}), T({0, 0})), core);
}

void copy_s2t(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::string& file, int line) {
  const std::string& name = atom.op_name;
  if (!src.desc_tile || !src.is_memory() || src.space() != ir::AddrSpace::Smem)
    throw dsl::UserError("COPY_MEMSPACE", name + ": the source must be a descriptor tensor "
                                                 "(tcgen05.get_s2t_smem_desc_tensor), got " + to_string(src));
  if (!dst.is_memory() || dst.space() != ir::AddrSpace::Tmem)
    throw dsl::UserError("COPY_MEMSPACE", name + ": the destination must be a tensor-memory tensor, got " + to_string(dst));
  if (src.layout.rank() != dst.layout.rank())
    copy_error("source and destination ranks differ: " + to_string(src) + " vs " + to_string(dst));
  Layout sv = group_rest(src.layout), dv = group_rest(dst.layout);
  L::Int s1 = L::size(sv, {1}), d1 = L::size(dv, {1}), d0 = L::size(dv, {0});
  if (!s1.is_static() || !d1.is_static() || !d0.is_static() || s1.value() != d1.value() ||
      L::size(sv, {0}).value() != 1 || d0.value() != atom.num_dst_values())
    copy_error("the partitions of " + to_string(src) + " and " + to_string(dst) + " do not split into " + name + " calls");
  const int64_t sbo = src.desc_tile->operator()(IntTuple{IntTuple(8), IntTuple(0)}).as_int().value() *
                      src.element()->bit_size() / 8;
  ir::Builder& b = trace_builder(("copy with " + name).c_str());
  const uint64_t fixed = (uint64_t(sbo >> 4) << 32) | (uint64_t(1) << 46);  // SBO, version 1, no swizzle
  for (int64_t r = 0; r < s1.value(); ++r) {
    ir::Value* t = offset_pointer(b, dst.ptr, dv(IntTuple{IntTuple(0), IntTuple(r)}).as_int());
    ir::Value* addr = b.create(ir::OpCode::PtrToInt, {t}, {ir::i32()})->result();
    ir::Value* s = advance_descriptor(b, src.ptr, sv(IntTuple{IntTuple(0), IntTuple(r)}).as_int());
    ir::Value* desc = b.binary(ir::OpCode::Or, descriptor_start_address(b, s), b.const_int(ir::i64(), int64_t(fixed)));
    ir::Op* op = b.create(ir::OpCode::Tcgen05Cp, {addr, desc}, {});
    op->int_attr = atom.cp_cta_group;
    op->ints = {atom.tmem_shape};
    if (!file.empty()) op->file = file, op->line = line;  // the MMAs' scale-factor reports name the copy
  }
}

}  // namespace opencute::cute
