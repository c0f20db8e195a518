#include "emulator/sm80_copy.h"

#include <algorithm>
#include <cstring>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

// ---- cp.async groups ------------------------------------------------------------------------

void AsyncCopyTracker::reset(char* smem, size_t smem_size, unsigned threads) {
  if (active_) {
    std::fill(state_.begin(), state_.end(), uint8_t(kFree));
    std::fill(writers_.begin(), writers_.end(), uint8_t(0));
    for (auto& p : pending_) p.clear();
    std::fill(committed_.begin(), committed_.end(), 0);
    private_ranges_.clear();
  }
  active_ = false;
  smem_ = smem;
  if (state_.size() != smem_size) {
    state_.assign(smem_size, kFree);
    owner_.assign(smem_size, 0);
    line_.assign(smem_size, 0);
    writers_.assign(smem_size, 0);
    value_.assign(smem_size, 0);
  }
  if (pending_.size() != threads) {
    pending_.assign(threads, {});
    committed_.assign(threads, 0);
  }
}

namespace {
std::string line_text(int line) { return line ? " (line " + std::to_string(line) + ")" : ""; }
}  // namespace

std::string AsyncCopyTracker::issue(unsigned thread, uintptr_t dst, const void* src, int src_bytes, int bytes,
                                    int line) {
  active_ = true;
  size_t off = dst - reinterpret_cast<uintptr_t>(smem_);
  Copy c;
  c.dst = dst;
  c.bytes = bytes;
  c.group = -1;
  c.line = line;
  std::memset(c.data, 0, sizeof c.data);
  if (src_bytes > 0) std::memcpy(c.data, src, size_t(std::min(src_bytes, bytes)));
  for (int k = 0; k < bytes; ++k) {
    size_t b = off + size_t(k);
    bool same_value_elsewhere = owner_[b] != thread && value_[b] == c.data[k] && writers_[b] < 255;
    if (state_[b] == kPending && !same_value_elsewhere)
      return "cp.async writes shared memory at offset " + std::to_string(b) + " that an earlier cp.async of thread " +
             std::to_string(owner_[b]) + line_text(line_[b]) + " still writes (no cp_async_wait_group between them)";
  }
  pending_[thread].push_back(c);
  for (int k = 0; k < bytes; ++k) {
    size_t b = off + size_t(k);
    if (state_[b] == kPending) {
      ++writers_[b];  // the first writer stays the one the diagnostics name
      continue;
    }
    state_[b] = kPending;
    owner_[b] = uint16_t(thread);
    line_[b] = line;
    writers_[b] = 1;
    value_[b] = c.data[k];
  }
  return "";
}

void AsyncCopyTracker::land(const Copy& c, unsigned thread, uint8_t landed) {
  std::memcpy(reinterpret_cast<void*>(c.dst), c.data, size_t(c.bytes));
  size_t off = c.dst - reinterpret_cast<uintptr_t>(smem_);
  bool published = false;
  for (int k = 0; k < c.bytes; ++k) {
    size_t b = off + size_t(k);
    if (--writers_[b] > 0) continue;  // another thread's copy of the same value is still in flight
    state_[b] = landed;
    owner_[b] = uint16_t(thread);
    published = true;
  }
  if (landed == kPrivate && published) private_ranges_.emplace_back(off, c.bytes);
}

void AsyncCopyTracker::commit(unsigned thread) {
  int64_t g = committed_[thread]++;
  for (Copy& c : pending_[thread])
    if (c.group < 0) c.group = g;
}

void AsyncCopyTracker::wait(unsigned thread, int64_t pending_allowed) {
  // Groups g < committed - N are complete; copies not yet committed are not waited for.
  const int64_t limit = committed_[thread] - pending_allowed;
  auto& list = pending_[thread];
  size_t keep = 0;
  for (size_t k = 0; k < list.size(); ++k) {
    Copy& c = list[k];
    if (c.group >= 0 && c.group < limit) {
      land(c, thread, kPrivate);
    } else {
      list[keep++] = c;
    }
  }
  list.resize(keep);
}

void AsyncCopyTracker::complete_all(unsigned thread) {
  // The bytes are visible to the threads that wait on the mbarrier this completion arrives on,
  // so they are not private to the issuing thread as after a wait_group.
  for (Copy& c : pending_[thread]) land(c, thread, kFree);
  pending_[thread].clear();
}

void AsyncCopyTracker::barrier() {
  if (!active_) return;
  for (auto& [off, n] : private_ranges_)
    for (int b = 0; b < n; ++b)
      if (state_[off + size_t(b)] == kPrivate) state_[off + size_t(b)] = kFree;
  private_ranges_.clear();
}

std::string AsyncCopyTracker::check(unsigned thread, uintptr_t addr, size_t bytes, bool store,
                                    const unsigned char* copied) const {
  uintptr_t sb = reinterpret_cast<uintptr_t>(smem_);
  if (addr < sb || addr + bytes > sb + state_.size()) return "";
  size_t off = addr - sb;
  for (size_t k = 0; k < bytes; ++k) {
    uint8_t s = state_[off + k];
    if (s == kFree) continue;
    unsigned who = owner_[off + k];
    if (s == kPending && copied && who != thread && value_[off + k] == copied[k]) continue;
    std::string what = std::string(store ? "a store to" : "a read of") + " shared memory at offset " +
                       std::to_string(off + k);
    if (s == kPending)
      return what + " that a cp.async of thread " + std::to_string(who) + line_text(line_[off + k]) +
             " still writes: wait for it with cp_async_wait_group (and a barrier when other threads read it) first";
    if (who != thread)
      return what + " that a cp.async of thread " + std::to_string(who) + line_text(line_[off + k]) +
             " wrote: thread " + std::to_string(who) +
             " waited for it, but no barrier has made it visible to other threads yet";
  }
  return "";
}

// ---- instructions ---------------------------------------------------------------------------

namespace {

// The address of the element that lane `lane` receives (ldmatrix) or gives (stmatrix) as its
// value `v` of matrix `j`, per the PTX ISA's fragment layout: without .trans, lane l holds
// bytes [4*(l%4), 4*(l%4)+4) of row l/4; with .trans (16-bit elements only), its two elements
// are column l/4 of rows 2*(l%4) and 2*(l%4)+1.
uintptr_t fragment_address(const uintptr_t rows[32], int lane, int j, int v, int elem_bytes, bool trans) {
  if (trans) return rows[8 * j + 2 * (lane % 4) + v] + uintptr_t(2 * (lane / 4));
  return rows[8 * j + lane / 4] + uintptr_t(4 * (lane % 4) + v * elem_bytes);
}

// ldmatrix .m16n16 .trans .b8: lane 4c + q receives, as byte i + 4r + 8m of its result, row
// 4q + i of matrix m (lane 16m + 4q + i's address) at byte c + 8r: 4 consecutive columns across 2
// rows of the transposed matrix (PTX ISA, ldmatrix).
uintptr_t wide_fragment_address(const uintptr_t rows[32], int lane, int v) {
  const int i = v & 3, r = (v >> 2) & 1, m = v >> 3, q = lane % 4, c = lane / 4;
  return rows[16 * m + 4 * q + i] + uintptr_t(c + 8 * r);
}

void matrix_op(const Inst& i, Sm80WarpContext& w, bool load) {
  const int num = int(i.imm & 0xff);
  const bool trans = (i.imm >> 8) & 1;
  const bool wide = (i.imm >> 9) & 1;
  const bool unpack4 = (i.imm >> 10) & 1;  // .b8x16.b4x16_p64
  const char* name = load ? "ldmatrix" : "stmatrix";
  if (w.mask != 0xffffffffu) {
    int lane = w.mask ? __builtin_ctz(w.mask) : 0;
    w.fail(lane, std::string(name) + " is warp-collective (.sync.aligned): all 32 lanes of the warp must execute it "
                                      "together, but only lanes " + std::to_string(__builtin_popcount(w.mask)) +
                     " of 32 are active here");
  }
  const int elem_bytes = i.type->byte_size();
  const int per_matrix = 4 / elem_bytes;
  uintptr_t rows[32];
  for (int r = 0; r < (wide ? 16 : 8) * num; ++r) {
    rows[r] = uintptr_t(w.regs[size_t(i.a) * kWarp + size_t(r)].i);
    w.check(r, rows[r], 16, !load, true);
    if (w.async && w.async->active()) {
      std::string e = w.async->check(w.first_thread + unsigned(r), rows[r], 16, !load);
      if (!e.empty()) w.fail(r, std::string(name) + ": " + e);
    }
  }
  const int reg = load ? i.dst : i.b;
  if (unpack4) {
    // Lane l's 4 bytes of matrix j are values 4(l%4) .. 4(l%4)+3 of row l/4: value c sits in
    // byte c/2 of the row's first 8 (the low nibble for even c), widened to a byte's low 4 bits.
    for (int l = 0; l < kWarp; ++l)
      for (int j = 0; j < num; ++j)
        for (int v = 0; v < 4; ++v) {
          const int c = 4 * (l % 4) + v;
          const auto* row = reinterpret_cast<const uint8_t*>(rows[8 * j + l / 4]);
          const uint8_t value = uint8_t((row[c / 2] >> (4 * (c % 2))) & 0xf);
          w.regs[size_t(reg + j * 4 + v) * kWarp + size_t(l)] = ir::load_scalar(i.type, &value);
        }
    return;
  }
  if (wide) {
    for (int l = 0; l < kWarp; ++l)
      for (int v = 0; v < 8 * num; ++v)
        w.regs[size_t(reg + v) * kWarp + size_t(l)] =
            ir::load_scalar(i.type, reinterpret_cast<void*>(wide_fragment_address(rows, l, v)));
    return;
  }
  for (int l = 0; l < kWarp; ++l)
    for (int j = 0; j < num; ++j)
      for (int v = 0; v < per_matrix; ++v) {
        void* p = reinterpret_cast<void*>(fragment_address(rows, l, j, v, elem_bytes, trans));
        Scalar& s = w.regs[size_t(reg + j * per_matrix + v) * kWarp + size_t(l)];
        if (load) s = ir::load_scalar(i.type, p);
        else ir::store_scalar(i.type, s, p);
      }
}

}  // namespace

void execute_sm80_copy(const Inst& i, Sm80WarpContext& w) {
  switch (i.code) {
    case OpCode::CpAsync: {
      const int bytes = int(i.imm);
      for (uint32_t m = w.mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        uintptr_t dst = uintptr_t(w.regs[size_t(i.a) * kWarp + size_t(l)].i);
        uintptr_t src = uintptr_t(w.regs[size_t(i.b) * kWarp + size_t(l)].i);
        int64_t src_bytes = w.regs[size_t(i.c) * kWarp + size_t(l)].i;
        if (src_bytes < 0 || src_bytes > bytes)
          w.fail(l, "cp.async with a source size of " + std::to_string(src_bytes) + " bytes for a " +
                        std::to_string(bytes) + "-byte copy");
        w.check(l, dst, size_t(bytes), true, true);
        // A zero-fill copy (source size 0) does not touch its source: predicated-off threads may
        // point anywhere. The source's alignment still follows the copy size.
        if (src_bytes > 0) src = w.check(l, src, size_t(bytes), false, false);
        else if (src % uintptr_t(bytes))
          w.fail(l, "misaligned cp.async source address: not a multiple of " + std::to_string(bytes));
        unsigned t = w.first_thread + unsigned(l);
        unsigned char copied[16] = {};
        if (src_bytes > 0) std::memcpy(copied, reinterpret_cast<const void*>(src), size_t(std::min<int64_t>(src_bytes, bytes)));
        std::string e = w.async->check(t, dst, size_t(bytes), true, copied);
        if (e.empty())
          e = w.async->issue(t, dst, reinterpret_cast<const void*>(src), int(src_bytes), bytes, i.op ? i.op->line : 0);
        if (!e.empty()) w.fail(l, e);
      }
      break;
    }
    case OpCode::CpAsyncCommit:
      for (uint32_t m = w.mask; m; m &= m - 1) w.async->commit(w.first_thread + unsigned(__builtin_ctz(m)));
      break;
    case OpCode::CpAsyncWait:
      for (uint32_t m = w.mask; m; m &= m - 1) w.async->wait(w.first_thread + unsigned(__builtin_ctz(m)), i.imm);
      break;
    case OpCode::LdMatrix: matrix_op(i, w, true); break;
    case OpCode::StMatrix: matrix_op(i, w, false); break;
    default: w.fail(0, std::string("not an SM80 copy: ") + ir::opcode_name(i.code));
  }
}

bool lower_sm80_copy(DeviceEmulator::Program& p, const ir::Op& op) {
  Inst i(K::Sm80Copy);
  i.op = &op;
  i.code = op.code;
  switch (op.code) {
    case OpCode::CpAsync:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]), i.c = p.reg(op.operands[2]);
      i.imm = op.int_attr;
      break;
    case OpCode::CpAsyncCommit: break;
    case OpCode::CpAsyncWait: i.imm = op.int_attr; break;
    case OpCode::LdMatrix:
      i.a = p.reg(op.operands[0]);
      i.dst = p.reg(op.result());
      i.type = op.result()->type->element;
      i.width = op.result()->type->lanes;
      i.imm = op.int_attr | (op.ints.empty() ? 0 : op.ints[0] << 8) | (op.ints.size() > 1 ? op.ints[1] << 9 : 0) |
              (op.ints.size() > 2 && op.ints[2] == 4 ? 1 << 10 : 0);
      break;
    case OpCode::StMatrix:
      i.a = p.reg(op.operands[0]);
      i.b = p.reg(op.operands[1]);
      i.type = op.operands[1]->type->element;
      i.width = op.operands[1]->type->lanes;
      i.imm = op.int_attr | (op.ints.empty() ? 0 : op.ints[0] << 8);
      break;
    default:
      return false;
  }
  p.emit(std::move(i));
  return true;
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

Flow exec_sm80_copy(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  Sm80WarpContext ctx;
  ctx.regs = warp.regs;
  ctx.mask = m;
  ctx.first_thread = warp.first_thread;
  ctx.async = &w.async;
  ctx.check = [&](int lane, uintptr_t addr, size_t bytes, bool store, bool smem) -> uintptr_t {
    if (smem && !in_smem(w, addr, bytes))
      fail_at(c, w, warp, lane, i, std::string("a ") + ir::opcode_name(i.code) + " shared-memory address " +
                                       hex(addr) + " (" + std::to_string(bytes) +
                                       " bytes) lies outside the block's shared memory");
    if (addr % std::min<size_t>(bytes, 16))
      fail_at(c, w, warp, lane, i, std::string("misaligned ") + ir::opcode_name(i.code) + " address " +
                                       hex(addr) + ": not a multiple of " + std::to_string(std::min<size_t>(bytes, 16)));
    if (smem && store && w.wgmma_reads.active()) {
      std::string race = w.wgmma_reads.check_store(addr, bytes);
      if (!race.empty()) fail_at(c, w, warp, lane, i, race);
    }
    Inst probe = i;
    probe.space = smem ? ir::AddrSpace::Smem : ir::AddrSpace::Generic;
    return smem ? addr : check_access(c, w, warp, lane, probe, addr, bytes, store);
  };
  ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
  execute_sm80_copy(i, ctx);
  return Flow::Next;
}

}  // namespace

void register_sm80_copy_handlers(HandlerTable& t) {
  t.add(K::Sm80Copy, exec_sm80_copy);
}

}  // namespace opencute::emulator
