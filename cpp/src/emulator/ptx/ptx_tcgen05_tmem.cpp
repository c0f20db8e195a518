// tcgen05 tensor-memory instructions (sm_100a): alloc / dealloc / relinquish_alloc_permit, ld / st
// of the 32x32b, 16x64b, 16x128b, 16x256b and 16x32bx2 shapes (with .pack::16b / .unpack::16b),
// wait::ld / wait::st and the fences. Written from the PTX ISA ("Tensor Memory", "Matrix fragments
// for tcgen05.ld / st"), independently of the IR emulator's sm100_tmem.cpp.
//
// Tensor memory is per CTA: 128 lanes x 512 columns of 32-bit cells, named by 32-bit addresses
// (lane << 16) | column. Allocation is by columns (a power of two in [32, 512] at a multiple of
// itself); the first column's address goes to shared memory. A warp reaches the 32 lanes
// 32 * (warp % 4) .. + 31. Loads and stores complete when issued: the waits and fences are no-ops.
#include <algorithm>
#include <cctype>

#include "emulator/ptx/ptx_family_support.h"

namespace opencute::emulator::ptx {

void decode_tcgen05_async(Inst& i);  // ptx_tcgen05_mma.cpp: mma, cp, commit

namespace {

constexpr uint32_t kLanes = 128, kColumns = 512;

enum Kind : int32_t { Alloc, Dealloc, Relinquish, Load, Store, NoOp };
enum Shape : int32_t { S32x32b, S16x64b, S16x128b, S16x256b, S16x32bx2 };
enum Flag : uint32_t { Packed = 1, Split = 2 };

// One repetition of a shape: how many 32-bit columns and registers (per thread) it spans.
struct ShapeInfo {
  const char* name;
  int lanes, columns, regs;
};
const ShapeInfo kShapes[] = {
    {"32x32b", 32, 1, 1}, {"16x64b", 16, 2, 1}, {"16x128b", 16, 4, 2}, {"16x256b", 16, 8, 4}, {"16x32bx2", 16, 1, 1}};

// The cell register `r` (of one repetition) of thread `t` holds: its lane and column offsets.
// 32x32b: thread t holds lane t. The 16-lane shapes follow the figures: threads in quads (t / 4
// picks the lane within 8), 16x256b the m16n8 accumulator pattern (two adjacent columns per
// half, lanes 8 apart), 16x128b one column per thread of the quad, 16x64b two threads of the
// quad per column with the even and odd ones 8 lanes apart; 16x32bx2 two 16x32b halves, the
// second `split` columns on.
void cell_of(int shape, int t, int r, int split, int* lane, int* column) {
  switch (shape) {
    case S32x32b: *lane = t, *column = 0; return;
    case S16x64b: *lane = t / 4 + (t & 1) * 8, *column = (t >> 1) & 1; return;
    case S16x128b: *lane = t / 4 + r * 8, *column = t % 4; return;
    case S16x256b: *lane = t / 4 + (r / 2) * 8, *column = (t % 4) * 2 + r % 2; return;
    case S16x32bx2: *lane = t % 16, *column = t < 16 ? 0 : split; return;
  }
}

bool is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

void ensure_tmem(Cta& cta) {
  if (cta.tmem.empty()) {
    cta.tmem.assign(size_t(kLanes) * kColumns, 0);
    cta.tmem_allocated.assign(kColumns, false);
    cta.tmem_writer.assign(size_t(kLanes) * kColumns, TmemUnwritten);
  }
}

ThreadCtx first_thread(CollectiveCtx& c, const Inst& i) {
  for (size_t l = 0; l < c.threads.size(); ++l)
    if (c.threads[l]) return c.ctx(int(l));
  c.fail(i.opcode + " with no thread");
}

uint32_t column_count(CollectiveCtx& c, const Inst& i, const Operand& o) {
  const uint32_t n = uint32_t(first_thread(c, i).get(o));
  if (n < 32 || n > kColumns || !is_pow2(n))
    c.fail(i.opcode + ": " + std::to_string(n) + " columns (a power of two in [32, 512])");
  return n;
}

void run_alloc(const Inst& i, CollectiveCtx& c) {
  ensure_tmem(c.cta);
  if (c.cta.tmem_relinquished) c.fail("tcgen05.alloc after tcgen05.relinquish_alloc_permit");
  const uint32_t n = column_count(c, i, i.ops[1]);
  for (uint32_t start = 0; start < kColumns; start += n) {
    bool free = true;
    for (uint32_t k = start; k < start + n && free; ++k) free = !c.cta.tmem_allocated[k];
    if (!free) continue;
    for (uint32_t k = start; k < start + n; ++k) c.cta.tmem_allocated[k] = true;
    for (uint32_t l = 0; l < kLanes; ++l)
      std::fill_n(c.cta.tmem_writer.begin() + long(size_t(l) * kColumns + start), n, uint8_t(TmemUnwritten));
    ThreadCtx t = first_thread(c, i);
    const uint32_t address = start;  // lane 0
    std::memcpy(t.host(t.address(i.ops[0]), i.space, 4, true, 4), &address, 4);
    return;
  }
  // On the GPU the warp would wait for another warp to free columns; nothing here would.
  c.fail("tcgen05.alloc of " + std::to_string(n) + " columns cannot be satisfied: the allocated columns leave no room");
}

void run_dealloc(const Inst& i, CollectiveCtx& c) {
  ensure_tmem(c.cta);
  const uint32_t address = uint32_t(first_thread(c, i).get(i.ops[0]));
  const uint32_t n = column_count(c, i, i.ops[1]), start = address & 0xffff;
  if ((address >> 16) != 0 || start % n != 0 || start + n > kColumns)
    c.fail("tcgen05.dealloc of address " + std::to_string(address) + ", which no allocation of " + std::to_string(n) +
           " columns starts at");
  for (uint32_t k = start; k < start + n; ++k) {
    if (!c.cta.tmem_allocated[k]) c.fail("tcgen05.dealloc of column " + std::to_string(k) + ", which is not allocated");
    c.cta.tmem_allocated[k] = false;
  }
}

void run_relinquish(const Inst&, CollectiveCtx& c) { c.cta.tmem_relinquished = true; }

// ld: ops {regs}, [taddr][, split]; st: [taddr][, split], {regs}.
void run_ldst(const Inst& i, CollectiveCtx& c) {
  ensure_tmem(c.cta);
  const bool load = i.i0 == Load;
  const int shape = i.i1, reps = i.i2;
  const ShapeInfo& info = kShapes[shape];
  const bool packed = i.flags & Packed;
  const Operand& taddr_op = i.ops[load ? 1 : 0];
  const Operand& regs = load ? i.ops[0] : i.ops.back();
  const int split = (i.flags & Split) ? int(i.ops[load ? 2 : 1].imm) : 0;
  for (int l = 0; l < 32; ++l)
    if (!c.threads[size_t(l)]) c.fail(i.opcode + " needs all 32 threads of the warp");
  // The address is warp-uniform (.sync.aligned): lane 0's.
  const uint32_t taddr = uint32_t(c.ctx(0).address(taddr_op));
  const uint32_t lane0 = taddr >> 16, col0 = taddr & 0xffff;
  const uint32_t quarter = 32 * uint32_t(c.threads[0]->warp % 4);
  if (lane0 < quarter || lane0 + uint32_t(info.lanes) > quarter + 32)
    c.fail(i.opcode + ": lanes " + std::to_string(lane0) + ".." + std::to_string(lane0 + uint32_t(info.lanes) - 1) +
           " are outside lanes " + std::to_string(quarter) + ".." + std::to_string(quarter + 31) + " of warp " +
           std::to_string(c.threads[0]->warp));
  const int per_reg = packed ? 2 : 1;  // columns a register covers
  auto cell = [&](int t, int reg, int half) -> uint32_t& {
    const int rep = reg / info.regs;
    int lane = 0, column = 0;
    cell_of(shape, t, reg % info.regs, split, &lane, &column);
    const uint32_t col = col0 + uint32_t(((rep * info.columns) + column) * per_reg + half);
    const uint32_t ln = lane0 + uint32_t(lane);
    if (col >= kColumns || !c.cta.tmem_allocated[col])
      c.fail(i.opcode + ": column " + std::to_string(col) + " of tensor memory is not allocated");
    if (!load) c.cta.tmem_writer[size_t(ln) * kColumns + col] = TmemCopyOrStore;
    return c.cta.tmem[size_t(ln) * kColumns + col];
  };
  const int nregs = info.regs * reps;
  for (int t = 0; t < 32; ++t) {
    Thread& th = *c.threads[size_t(t)];
    for (int r = 0; r < nregs; ++r) {
      const Operand& reg = regs.elems[size_t(r)];
      if (load) {
        uint64_t v = packed ? (cell(t, r, 0) & 0xffffu) | ((cell(t, r, 1) & 0xffffu) << 16) : cell(t, r, 0);
        th.regs[size_t(reg.reg)] = v;
      } else {
        const uint32_t v = uint32_t(reg_of(th, reg));
        if (packed) cell(t, r, 0) = v & 0xffffu, cell(t, r, 1) = v >> 16;
        else cell(t, r, 0) = v;
      }
    }
  }
}

Step run_no_op(const Inst&, ThreadCtx&) { return Step::Next; }

void decode_tcgen05(Inst& i) {
  const std::string& k = i.mods.at(0);
  if (k == "wait::ld" || k == "wait::st" || k == "fence::before_thread_sync" || k == "fence::after_thread_sync") {
    i.i0 = NoOp;
    i.run = run_no_op;
    return;
  }
  if (k == "mma" || k == "cp" || k == "commit") return decode_tcgen05_async(i);
  if (k == "alloc" || k == "dealloc" || k == "relinquish_alloc_permit") {
    // cta_group::2: a warp of each CTA of the pair runs it, each for its own tensor memory.
    if (!i.has_mod("cta_group::1") && !i.has_mod("cta_group::2")) unsupported(i, "only .cta_group::1 and ::2");
    i.space = Space::Shared;
    if (k == "alloc") {
      if (i.ops.size() != 2) unsupported(i, "operands");
      as_collective(i, run_alloc, Scope::Warp);
    } else if (k == "dealloc") {
      if (i.ops.size() != 2) unsupported(i, "operands");
      as_collective(i, run_dealloc, Scope::Warp);
    } else {
      as_collective(i, run_relinquish, Scope::Warp);
    }
    return;
  }
  if (k != "ld" && k != "st") unsupported(i);
  i.i0 = k == "ld" ? Load : Store;
  i.i1 = -1;
  for (int s = 0; s < int(sizeof(kShapes) / sizeof(kShapes[0])); ++s)
    if (i.has_mod(kShapes[s].name)) i.i1 = s;
  if (i.i1 < 0) unsupported(i, "an unknown shape");
  for (const std::string& m : i.mods)
    if (m.size() > 1 && m[0] == 'x' && std::isdigit(static_cast<unsigned char>(m[1]))) i.i2 = std::stoi(m.substr(1));
  if (i.i2 < 1 || !is_pow2(uint32_t(i.i2)) || i.i2 > 128) unsupported(i, "no .x1 ... .x128 repetition");
  if (i.has_mod("pack::16b") || i.has_mod("unpack::16b")) i.flags |= Packed;
  if (i.i1 == S16x32bx2) i.flags |= Split;
  const size_t want_ops = (i.flags & Split) ? 3 : 2;
  const Operand& regs = i.i0 == Load ? i.ops.at(0) : i.ops.back();
  if (i.ops.size() != want_ops || regs.kind != Operand::Vec ||
      int(regs.elems.size()) != kShapes[i.i1].regs * i.i2)
    unsupported(i, "register count");
  if ((i.flags & Split) && i.ops[i.i0 == Load ? 2 : 1].kind != Operand::Imm) unsupported(i, "a split offset that is not an immediate");
  as_collective(i, run_ldst, Scope::Warp);
}

}  // namespace

void register_ptx_tcgen05_tmem(PtxFamilyTable& t) { t.add("tcgen05", decode_tcgen05); }

}  // namespace opencute::emulator::ptx
