#include "emulator/sm100_tmem.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

void TensorMemory::reset() {
  if (cells_.empty()) cells_.assign(size_t(kLanes) * kColumns, 0);
  writers_.assign(size_t(kLanes) * kColumns, Writer::None);
  allocations_.clear();
  used_.fill(false);
  relinquished_ = false;
  pair_allocs_reached = 0;
}

std::string TensorMemory::allocate(int64_t columns, const ir::Op* op, uint32_t* column) {
  if (columns < 32 || columns > kColumns || (columns & (columns - 1)))
    return "tcgen05.alloc: the number of columns must be a power of two in [32, 512], got " + std::to_string(columns);
  if (relinquished_)
    return "tcgen05.alloc after tcgen05.relinquish_alloc_permit: the CTA gave up its right to allocate tensor memory";
  for (int64_t c = 0; c + columns <= kColumns; c += columns) {
    bool free = true;
    for (int64_t k = c; k < c + columns && free; ++k) free = !used_[size_t(k)];
    if (!free) continue;
    for (int64_t k = c; k < c + columns; ++k) used_[size_t(k)] = true;
    for (uint32_t l = 0; l < uint32_t(kLanes); ++l)
      std::fill_n(writers_.begin() + long(size_t(l) * kColumns + size_t(c)), columns, Writer::None);
    allocations_.push_back({uint32_t(c), columns, op});
    *column = uint32_t(c);
    return "";
  }
  int64_t in_use = 0;
  for (bool u : used_) in_use += u;
  return "tcgen05.alloc of " + std::to_string(columns) + " columns cannot be satisfied: " + std::to_string(in_use) +
         " of the 512 columns are allocated and not freed (the GPU would wait here for a tcgen05.dealloc)";
}

std::string TensorMemory::deallocate(uint32_t address, int64_t columns) {
  const uint32_t column = address & 0xffff;
  if (address >> 16)
    return "tcgen05.dealloc: the address " + std::to_string(address >> 16) + "<<16|" + std::to_string(column) +
           " names lane " + std::to_string(address >> 16) + "; an allocation's address has lane 0";
  for (size_t i = 0; i < allocations_.size(); ++i) {
    if (allocations_[i].column != column) continue;
    if (allocations_[i].columns != columns)
      return "tcgen05.dealloc of " + std::to_string(columns) + " columns at column " + std::to_string(column) +
             ": that allocation has " + std::to_string(allocations_[i].columns) + " columns";
    for (int64_t k = column; k < column + columns; ++k) used_[size_t(k)] = false;
    allocations_.erase(allocations_.begin() + long(i));
    return "";
  }
  return "tcgen05.dealloc at column " + std::to_string(column) + ": no allocation starts there";
}

std::string TensorMemory::check_columns(uint32_t column, int64_t count, const char* what) const {
  for (int64_t k = column; k < int64_t(column) + count; ++k)
    if (k >= kColumns || !used_[size_t(k)])
      return std::string(what) + " reaches tensor-memory column " + std::to_string(k) +
             ", outside the CTA's allocation (tcgen05.alloc)";
  return "";
}

const ir::Op* TensorMemory::leaked(int64_t* columns) const {
  if (allocations_.empty()) return nullptr;
  *columns = allocations_.front().columns;
  return allocations_.front().op;
}

namespace {

using ir::OpCode;

bool is_tmem_op(OpCode c) {
  return c == OpCode::TmemAlloc || c == OpCode::TmemDealloc || c == OpCode::TmemRelinquish || c == OpCode::Tcgen05Ld ||
         c == OpCode::Tcgen05St || c == OpCode::Tcgen05Wait || c == OpCode::Tcgen05Fence || c == OpCode::Tcgen05Cp;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// The value of register `reg`, which must be the same in every active lane (a .sync.aligned
// operand); "" or why not.
std::string uniform(const LaneRegs& at, uint32_t mask, int reg, const char* what, const char* op, int64_t* out) {
  const int first = __builtin_ctz(mask);
  int64_t v = at(reg, first).i;
  FOR_LANES(mask) {
    int l = LANE;
    if (at(reg, l).i != v)
      return std::string(op) + ": the " + what + " differs between lanes " + std::to_string(first) + " and " +
             std::to_string(l) + "; it must be the same in the whole warp";
  }
  *out = v;
  return "";
}

std::string whole_warp(const Warp& warp, const char* op) {
  if (warp.mask == 0xffffffffu) return "";
  return std::string(op) + " is a warp-wide instruction (.sync.aligned) but lanes " + hex32(~warp.mask) +
         " of the warp do not execute it";
}

// (thread, register) -> (lane offset, 32-bit unit of the row) for one repetition pattern of a
// tcgen05.ld / st shape (CuTe C++'s copy_traits_sm100.hpp DstLayouts; PTX ISA "Matrix fragments
// for tcgen05.ld / st").
void ldst_cell(ir::Tcgen05Shape s, int t, int reg, int split, int* lane, int* unit) {
  switch (s) {
    case ir::Tcgen05Shape::S32x32b: *lane = t, *unit = reg; return;
    case ir::Tcgen05Shape::S16x64b: *lane = 8 * (t % 2) + t / 4, *unit = 2 * reg + (t / 2) % 2; return;
    case ir::Tcgen05Shape::S16x128b: {
      int r = reg / 2, j = reg % 2;
      *lane = t / 4 + 8 * j, *unit = 4 * r + t % 4;
      return;
    }
    case ir::Tcgen05Shape::S16x256b: {
      int r = reg / 4, j = reg % 4;
      *lane = t / 4 + 8 * (j / 2), *unit = 8 * r + 2 * (t % 4) + j % 2;
      return;
    }
    case ir::Tcgen05Shape::S16x32bx2: *lane = t % 16, *unit = reg + (t / 16) * split; return;
  }
}

Flow exec_ldst(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const ir::Op& op = *i.op;
  const bool load = op.code == OpCode::Tcgen05Ld;
  const char* name = load ? "tcgen05.ld" : "tcgen05.st";
  const LaneRegs at{warp.regs};
  std::string e = whole_warp(warp, name);
  int64_t addr = 0;
  if (e.empty()) e = uniform(at, warp.mask, i.srcs[0], "tensor-memory address", name, &addr);
  if (!e.empty()) fail_at(c, w, warp, __builtin_ctz(warp.mask ? warp.mask : 1u), i, e);
  const auto shape = ir::Tcgen05Shape(op.int_attr);
  const bool packed = op.ints.at(1) != 0;
  const int split = int(op.ints.at(2));
  const uint32_t a = uint32_t(addr), lane0 = a >> 16, col0 = a & 0xffff;
  const uint32_t group = uint32_t(warp.index % 4) * 32;
  const int lanes = shape == ir::Tcgen05Shape::S32x32b ? 32 : 16;
  if (lane0 < group || lane0 + uint32_t(lanes) > group + 32)
    fail_at(c, w, warp, 0, i,
            std::string(name) + ": warp " + std::to_string(warp.index) + " may reach tensor-memory lanes [" +
                std::to_string(group) + ", " + std::to_string(group + 32) + ") only (warp % 4 picks them), but the address " +
                hex32(a) + " names lanes [" + std::to_string(lane0) + ", " + std::to_string(lane0 + uint32_t(lanes)) + ")");
  const int nregs = int(load ? i.dsts.size() : i.srcs.size() - 1);
  // Columns reached: the largest unit + 1 (x2 when packed), plus the split-off half.
  int max_unit = 0;
  for (int t = 0; t < kWarp; ++t)
    for (int r = 0; r < nregs; ++r) {
      int l = 0, u = 0;
      ldst_cell(shape, t, r, 0, &l, &u);
      max_unit = std::max(max_unit, u);
    }
  int64_t span = int64_t(max_unit + 1) * (packed ? 2 : 1);
  e = w.tmem.check_columns(col0, span, name);
  if (e.empty() && shape == ir::Tcgen05Shape::S16x32bx2) e = w.tmem.check_columns(col0 + uint32_t(split), span, name);
  if (!e.empty()) fail_at(c, w, warp, 0, i, e + " (address " + hex32(a) + ")");
  if (load && w.cluster->mma_completion.any_in_flight()) {
    const uint32_t end = col0 + uint32_t(span) + (shape == ir::Tcgen05Shape::S16x32bx2 ? uint32_t(split) : 0u);
    if (const MmaCompletion::InFlight* m = w.cluster->mma_completion.writing(w.rank, col0, end))
      fail_at(c, w, warp, 0, i,
              "tcgen05.ld reads tensor-memory columns [" + std::to_string(col0) + ", " + std::to_string(end) +
                  ") before the MMA that writes them is known to be complete: " + describe_mma_in_flight(*w.cluster, *m));
  }
  const auto written = TensorMemory::Writer::CopyOrStore;
  for (int t = 0; t < kWarp; ++t)
    for (int r = 0; r < nregs; ++r) {
      int l = 0, u = 0;
      ldst_cell(shape, t, r, 0, &l, &u);
      uint32_t col = col0;
      if (shape == ir::Tcgen05Shape::S16x32bx2) col += uint32_t((t / 16) * split), u = r;
      uint32_t* row = w.tmem.row(lane0 + uint32_t(l));
      if (!packed) {
        uint32_t& cell = row[col + uint32_t(u)];
        if (load) {
          at(i.dsts[size_t(r)], t).i = int64_t(int32_t(cell));
        } else {
          cell = uint32_t(at(i.srcs[size_t(r) + 1], t).i);
          w.tmem.wrote(lane0 + uint32_t(l), col + uint32_t(u), written);
        }
        continue;
      }
      // .pack::16b / .unpack::16b: the register's halves are the low halves of two adjacent columns.
      uint32_t& lo = row[col + 2 * uint32_t(u)];
      uint32_t& hi = row[col + 2 * uint32_t(u) + 1];
      if (load) {
        at(i.dsts[size_t(r)], t).i = int64_t(int32_t((lo & 0xffffu) | (hi << 16)));
      } else {
        uint32_t v = uint32_t(at(i.srcs[size_t(r) + 1], t).i);
        lo = v & 0xffffu, hi = v >> 16;
        w.tmem.wrote(lane0 + uint32_t(l), col + 2 * uint32_t(u), written);
        w.tmem.wrote(lane0 + uint32_t(l), col + 2 * uint32_t(u) + 1, written);
      }
    }
  return Flow::Next;
}

// tcgen05.cp: rows of 16-byte chunks from shared memory, through a K-major matrix descriptor
// without swizzle (8-row core matrices: rows 16 bytes apart, 8-row groups SBO apart, chunks LBO
// apart), to tensor-memory lanes; the warpx2 / warpx4 forms copy the rows to 2 or 4 lane groups.
// cta_group::2 (issued by the even CTA of a pair, as its MMAs are): each CTA of the pair copies
// from its own shared memory to its own tensor memory at the same addresses (a 2-CTA block-scaled
// MMA reads each CTA's rows' factors, and all of B's, from that CTA's tensor memory).
Flow exec_cp(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const ir::Op& op = *i.op;
  const LaneRegs at{warp.regs};
  const int lane = __builtin_ctz(warp.mask ? warp.mask : 1u);
  const uint32_t a = uint32_t(at(i.srcs[0], lane).i);
  const uint64_t d = uint64_t(at(i.srcs[1], lane).i);
  const auto shape = ir::Tcgen05CpShape(op.ints.at(0));
  int rows = 128, chunks = 2;  // 128x256b
  std::vector<int> copies{0};
  switch (shape) {
    case ir::Tcgen05CpShape::S128x256b: break;
    case ir::Tcgen05CpShape::S4x256b: rows = 4; break;
    case ir::Tcgen05CpShape::S128x128b: chunks = 1; break;
    case ir::Tcgen05CpShape::S64x128bWarpx2_02_13: rows = 64, chunks = 1, copies = {0, 64}; break;
    case ir::Tcgen05CpShape::S64x128bWarpx2_01_23: rows = 64, chunks = 1, copies = {0, 32}; break;
    case ir::Tcgen05CpShape::S32x128bWarpx4: rows = 32, chunks = 1, copies = {0, 32, 64, 96}; break;
  }
  if ((d >> 61) != 0)
    fail_at(c, w, warp, lane, i, "tcgen05.cp: the shared-memory descriptor " + hex32(uint32_t(d >> 32)) + hex32(uint32_t(d)).substr(2) +
                                     " asks for a swizzle; the emulator reads tcgen05.cp sources without swizzle only");
  const uint64_t start = (d & 0x3FFF) << 4, lbo = ((d >> 16) & 0x3FFF) << 4, sbo = ((d >> 32) & 0x3FFF) << 4;
  std::vector<Worker*> ctas{&w};
  if (op.int_attr == 2) {
    if (w.rank % 2)
      fail_at(c, w, warp, lane, i, "tcgen05.cp.cta_group::2 is issued by the even CTA of the pair, not by CTA rank " +
                                       std::to_string(w.rank));
    if (w.rank + 1 >= w.cluster->size)
      fail_at(c, w, warp, lane, i, "tcgen05.cp.cta_group::2 needs a peer CTA (rank + 1) in the cluster");
    ctas.push_back(w.cluster->blocks[w.rank + 1]);
  }
  const uint32_t lane0 = a >> 16, col0 = a & 0xffff;
  for (Worker* cta : ctas) {
    // The descriptor's start is an offset in the shared window: the same in both CTAs of a pair.
    const uintptr_t smem = reinterpret_cast<uintptr_t>(w.smem);
    uintptr_t base = (smem & ~uintptr_t(0x3FFFF)) | uintptr_t(start);
    if (base < smem) base += 0x40000;
    base = base - smem + reinterpret_cast<uintptr_t>(cta->smem);
    std::string e = cta->tmem.check_columns(col0, 4 * chunks, "tcgen05.cp");
    if (!e.empty()) fail_at(c, w, warp, lane, i, e);
    for (int r = 0; r < rows; ++r)
      for (int ch = 0; ch < chunks; ++ch) {
        uintptr_t p = base + uintptr_t((r % 8) * 16) + uintptr_t(r / 8) * sbo + uintptr_t(ch) * lbo;
        if (!in_smem(*cta, p, 16))
          fail_at(c, w, warp, lane, i, "tcgen05.cp: the shared-memory descriptor reaches outside the CTA's shared memory");
        for (int off : copies) {
          uint32_t l = lane0 + uint32_t(r + (off ? off : 0));
          if (shape == ir::Tcgen05CpShape::S64x128bWarpx2_02_13) l = lane0 + uint32_t((r / 32) * 32 + r % 32 + off);
          if (shape == ir::Tcgen05CpShape::S64x128bWarpx2_01_23) l = lane0 + uint32_t((r / 32) * 64 + r % 32 + off);
          if (l >= 128) fail_at(c, w, warp, lane, i, "tcgen05.cp: the copy reaches past tensor-memory lane 127");
          std::memcpy(cta->tmem.row(l) + col0 + 4 * ch, reinterpret_cast<const void*>(p), 16);
          for (uint32_t k = 0; k < 4; ++k) cta->tmem.wrote(l, col0 + 4 * uint32_t(ch) + k, TensorMemory::Writer::CopyOrStore);
        }
      }
    // Complete on the GPU only once a commit after it is waited for (sm100_mma_completion.h).
    w.cluster->mma_completion.copy(&op, w.rank, warp.index, cta->rank, col0, col0 + 4 * uint32_t(chunks));
  }
  return Flow::Next;
}

bool pending(const Warp& warp, int reg, int width) {
  if (reg < 0) return false;
  for (int k = 0; k < width; ++k)
    if (size_t(reg + k) < warp.tmem_pending_regs.size() && warp.tmem_pending_regs[size_t(reg + k)]) return true;
  return false;
}

void set_pending(Warp& warp, int reg, int width, bool on) {
  if (reg < 0) return;
  for (int k = 0; k < width; ++k)
    if (size_t(reg + k) < warp.tmem_pending_regs.size()) warp.tmem_pending_regs[size_t(reg + k)] = on;
}

}  // namespace

void check_tmem_pending(const LaunchCtx& c, Worker& w, Warp& warp, const Inst& i) {
  const LaneRegs at{warp.regs};
  auto used = [&]() {
    Inst ld;
    ld.op = warp.tmem_pending_ld;
    fail_at(c, w, warp, __builtin_ctz(warp.mask ? warp.mask : 1u), ld,
            "a tcgen05.ld result is used before tcgen05.wait::ld (cute.arch.fence_view_async_tmem_load):");
  };
  const bool in_a = pending(warp, i.a, i.width), in_b = pending(warp, i.b, i.width), in_c = pending(warp, i.c, i.width);
  bool in_srcs = false;
  for (int s : i.srcs) in_srcs = in_srcs || pending(warp, s, 1);
  switch (i.kind) {
    case K::Move: case K::Bitcast: case K::Cast: case K::Unary: case K::Binary: case K::AddI32: case K::SubI32:
    case K::MulI32: case K::AddF32: case K::MulF32: case K::VecInsert: case K::VecSplat:
      // Moving or converting the value carries the mark along.
      set_pending(warp, i.dst, i.width, in_a || in_b || in_c);
      return;
    case K::PMove:
      for (size_t k = 0; k < i.srcs.size(); ++k) set_pending(warp, i.dsts[k], 1, pending(warp, i.srcs[k], 1));
      return;
    case K::Store: {
      // Stored to the thread's local memory (the register fragment's array): the mark follows the
      // bytes. Stored anywhere else, the value is used.
      if (in_b) used();
      FOR_LANES(warp.mask) {
        uintptr_t addr = uintptr_t(at(i.b, LANE).i);
        if (!in_a) {
          warp.tmem_pending_local.erase(addr);
          continue;
        }
        const uintptr_t local = reinterpret_cast<uintptr_t>(warp.local) + uintptr_t(LANE) * c.local_stride;
        if (addr < local || addr >= local + c.local_stride) used();
        warp.tmem_pending_local.insert(addr);
      }
      return;
    }
    case K::Load: {
      if (in_a) used();
      if (!warp.tmem_pending_local.empty())
        FOR_LANES(warp.mask) {
          if (warp.tmem_pending_local.count(uintptr_t(at(i.a, LANE).i))) used();
        }
      set_pending(warp, i.dst, i.width, false);
      return;
    }
    case K::Sm100Tmem:
      return;  // further tcgen05.ld / st and the waits: their handler
    default:
      if (in_a || in_b || in_c || in_srcs) used();
      set_pending(warp, i.dst, i.width, false);
      for (int d : i.dsts) set_pending(warp, d, 1, false);
  }
}

namespace {

// tcgen05.alloc.cta_group::2: one warp of each CTA of the pair allocates, collectively (PTX ISA), so
// the warp that gets there first waits for the peer's: neither CTA's MMA may then find columns the
// other has not allocated yet. False while the peer has not reached as many such allocs.
bool peer_reached_pair_alloc(Worker& w, Warp& warp) {
  const unsigned peer = w.rank ^ 1u;
  if (peer >= w.cluster->size) return true;  // no pair: nothing to wait for
  if (!warp.tmem_pair_alloc_waiting) {
    warp.tmem_pair_alloc_waiting = true;
    ++w.tmem.pair_allocs_reached;
    ++w.cluster->epoch;
  }
  if (w.cluster->blocks[peer]->tmem.pair_allocs_reached < w.tmem.pair_allocs_reached) return false;
  warp.tmem_pair_alloc_waiting = false;
  return true;
}

Flow exec_tmem(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const ir::Op& op = *i.op;
  const LaneRegs at{warp.regs};
  const int first = __builtin_ctz(warp.mask ? warp.mask : 1u);
  auto check = [&](const std::string& e) {
    if (!e.empty()) fail_at(c, w, warp, first, i, e);
  };
  switch (op.code) {
    case OpCode::TmemAlloc: {
      check(whole_warp(warp, "tcgen05.alloc"));
      int64_t dst = 0, cols = 0;
      check(uniform(at, warp.mask, i.srcs[0], "destination address", "tcgen05.alloc", &dst));
      check(uniform(at, warp.mask, i.srcs[1], "column count", "tcgen05.alloc", &cols));
      if (!in_smem(w, uintptr_t(dst), 4) || (dst & 3))
        check("tcgen05.alloc: the address is written to shared memory, but " + hex(uintptr_t(dst)) +
              " is not a 4-byte aligned address in the CTA's shared memory");
      if (op.int_attr == 2 && !peer_reached_pair_alloc(w, warp)) {
        warp.state = WarpState::Parked;  // runs the alloc again when resumed
        return Flow::Stop;
      }
      uint32_t col = 0;
      check(w.tmem.allocate(cols, &op, &col));
      std::memcpy(reinterpret_cast<void*>(dst), &col, 4);
      return Flow::Next;
    }
    case OpCode::TmemDealloc: {
      // The dealloc runs once the CTA's other warps can get no further: the latest point the GPU
      // could run it. A kernel may leave a warp's last tcgen05.ld unordered with another warp's
      // dealloc (NVIDIA's fmha_bwd.py: the dQ reduction against the epilogue's dealloc); on the GPU
      // that read comes first in practice, the columns keeping their values until allocated again.
      // Deferring is a scheduling step (the epoch moves), not a wait.
      if (warp.dealloc_seen_steps != w.steps) {
        warp.dealloc_seen_steps = w.steps;
        ++w.cluster->epoch;
        warp.state = WarpState::Parked;
        return Flow::Stop;
      }
      warp.dealloc_seen_steps = ~uint64_t(0);
      check(whole_warp(warp, "tcgen05.dealloc"));
      int64_t addr = 0, cols = 0;
      check(uniform(at, warp.mask, i.srcs[0], "tensor-memory address", "tcgen05.dealloc", &addr));
      check(uniform(at, warp.mask, i.srcs[1], "column count", "tcgen05.dealloc", &cols));
      check(w.tmem.deallocate(uint32_t(addr), cols));
      return Flow::Next;
    }
    case OpCode::TmemRelinquish:
      check(whole_warp(warp, "tcgen05.relinquish_alloc_permit"));
      w.tmem.relinquish();
      return Flow::Next;
    case OpCode::Tcgen05Ld:
      exec_ldst(i, c, w, warp);
      // The registers hold the values once tcgen05.wait::ld returns (check_tmem_pending).
      if (warp.tmem_pending_regs.size() < size_t(c.prog->num_regs)) warp.tmem_pending_regs.resize(size_t(c.prog->num_regs));
      for (int d : i.dsts) warp.tmem_pending_regs[size_t(d)] = 1;
      warp.tmem_pending_ld = &op;
      return Flow::Next;
    case OpCode::Tcgen05St:
      return exec_ldst(i, c, w, warp);
    case OpCode::Tcgen05Wait:
      if (op.int_attr == 0 && warp.tmem_pending_ld) {
        warp.tmem_pending_ld = nullptr;
        std::fill(warp.tmem_pending_regs.begin(), warp.tmem_pending_regs.end(), 0);
        warp.tmem_pending_local.clear();
      }
      return Flow::Next;
    case OpCode::Tcgen05Cp:
      return exec_cp(i, c, w, warp);
    default:
      // Waits and fences: the emulator's loads and stores complete when issued.
      return Flow::Next;
  }
}

}  // namespace

bool lower_sm100_tmem(DeviceEmulator::Program& p, const ir::Op& op) {
  if (!is_tmem_op(op.code)) return false;
  Inst i(K::Sm100Tmem);
  i.op = &op;
  i.code = op.code;
  i.imm = op.int_attr;
  for (const ir::Value* v : op.operands) i.srcs.push_back(p.reg(v));
  for (auto& r : op.results) i.dsts.push_back(p.reg(r.get()));
  p.emit(std::move(i));
  return true;
}

void register_sm100_tmem_handlers(HandlerTable& t) { t.add(K::Sm100Tmem, exec_tmem); }

}  // namespace opencute::emulator
