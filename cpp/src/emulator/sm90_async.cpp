#include "emulator/sm90_async.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "emulator/device_atomics.h"
#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"
#include "emulator/sm90_tensormap.h"
#include "ir/async_attributes.h"
#include "ir/scalar_semantics.h"

namespace opencute::emulator {

void MbarrierTable::init(uintptr_t addr, int64_t count, const ir::Op* op) {
  MbarrierState& s = bars_[addr];
  s = MbarrierState{};
  s.expected = s.pending = count;
  s.init_op = op;
  ++epoch_;
}

void MbarrierTable::maybe_complete(MbarrierState& s) {
  if (s.pending == 0 && s.tx == 0) {
    ++s.phase;
    s.pending = s.expected;
  }
}

std::string MbarrierTable::arrive(uintptr_t addr, int64_t count) {
  MbarrierState& s = bars_.at(addr);
  if (count > s.pending)
    return std::to_string(count) + " arrival(s) on an mbarrier whose current phase has only " +
           std::to_string(s.pending) + " of " + std::to_string(s.expected) +
           " outstanding (more arrivals than its mbarrier_init count)";
  s.pending -= count;
  ++epoch_;
  maybe_complete(s);
  return "";
}

void MbarrierTable::expect_tx(uintptr_t addr, int64_t bytes) {
  MbarrierState& s = bars_.at(addr);
  s.tx += bytes;
  ++epoch_;
}

void MbarrierTable::complete_tx(uintptr_t addr, int64_t bytes) {
  MbarrierState& s = bars_.at(addr);
  s.tx -= bytes;
  ++epoch_;
  maybe_complete(s);
}

int tensor_map_data_type(ir::Type t) {
  // cuda.h CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5,
  // FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9, TFLOAT32 11, 16U4_ALIGN8B 13. 8-bit floats travel
  // as UINT8, packed 4-bit ones as 16U4_ALIGN8B (CuTe does too).
  if (t->is_float()) {
    switch (t->float_kind) {
      case ir::FloatKind::F16: return 6;
      case ir::FloatKind::BF16: return 9;
      case ir::FloatKind::F32: return 7;
      case ir::FloatKind::TF32: return 11;  // TFLOAT32: fp32 bytes, copied unchanged
      case ir::FloatKind::F64: return 8;
      case ir::FloatKind::E4M3: case ir::FloatKind::E5M2: case ir::FloatKind::E8M0: return 0;
      case ir::FloatKind::E2M1: return kTmaPacked4Bit;
      case ir::FloatKind::E2M3: case ir::FloatKind::E3M2: break;  // 6-bit: only unpacked in shared memory (16U6_ALIGN16B)
    }
  }
  if (t->is_int() && !t->is_bool()) {
    switch (t->width) {
      case 4: return kTmaPacked4Bit;  // Int4 / Uint4: 4-bit values, as fp4 travels
      case 8: return 0;
      case 16: return 1;
      case 32: return t->is_signed ? 3 : 2;
      case 64: return t->is_signed ? 5 : 4;
    }
  }
  return -1;
}

int tma_encode_data_type(const ir::Op& encode) {
  const size_t rank = size_t(encode.int_attr);
  return encode.ints.size() > 1 + rank ? int(encode.ints[1 + rank]) : -1;
}

void fill_tma_descriptor(TmaDescriptor& d, ir::Type element, int rank, uint64_t global_address,
                         const uint64_t* dims, const uint64_t* strides_bytes, const uint32_t* box, int swizzle_bytes,
                         int data_type) {
  auto bad = [](const std::string& m) { throw std::invalid_argument("TMA descriptor: " + m); };
  if (tensor_map_data_type(element) < 0) bad("TMA cannot copy elements of type " + ir::to_string(element));
  if (data_type >= 0 && !(data_type == kTmaUnpacked4Bit && tensor_map_data_type(element) == kTmaPacked4Bit))
    bad("tensor-map data type " + std::to_string(data_type) + " does not hold elements of type " + ir::to_string(element));
  if (rank < 1 || rank > 5) bad("a tensor map has 1 to 5 dimensions, got " + std::to_string(rank));
  if (swizzle_bytes != 0 && swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128)
    bad("the swizzle must be 0, 32, 64 or 128 bytes, got " + std::to_string(swizzle_bytes));
  d.magic = kTmaDescriptorMagic;
  d.rank = rank;
  d.data_type = data_type >= 0 ? data_type : tensor_map_data_type(element);
  d.elem_bytes = tma_packed_4bit(d.data_type) ? 1 : element->byte_size();
  d.swizzle_bytes = swizzle_bytes;
  d.global_address = global_address;
  if (global_address % 16) bad("the global tensor's address must be 16-byte aligned");
  for (int k = 0; k < 5; ++k) {
    d.dims[k] = k < rank ? dims[k] : 1;
    d.strides[k] = k < rank ? strides_bytes[k] : 0;
    d.box[k] = k < rank ? box[k] : 1;
  }
  // A dimension of extent 1 is only ever read at coordinate 0, so its stride never moves an
  // address; callers may hand any stride for it (the runtime normalises size-1 modes' strides, as
  // DLPack producers do, e.g. the batch mode of an L = 1 GEMM), while the tensor map insists on a
  // multiple of 16 bytes: give it the span of the dimensions inside it.
  for (int k = 1; k < rank; ++k)
    if (d.dims[k] == 1 && d.strides[k] % 16)
      d.strides[k] = (d.strides[k - 1] * d.dims[k - 1] + 15) / 16 * 16;
  for (int k = 0; k < rank; ++k) {
    if (d.dims[k] == 0 || d.dims[k] > (uint64_t(1) << 32))
      bad("extent " + std::to_string(d.dims[k]) + " of dimension " + std::to_string(k) + " is outside [1, 2^32]");
    if (d.box[k] == 0 || d.box[k] > 256)
      bad("box size " + std::to_string(d.box[k]) + " of dimension " + std::to_string(k) + " is outside [1, 256]");
    if (k > 0 && d.strides[k] % 16)
      bad("the byte stride " + std::to_string(d.strides[k]) + " of dimension " + std::to_string(k) +
          " is not a multiple of 16");
  }
  if (d.strides[0] != uint64_t(d.elem_bytes)) bad("dimension 0 must be contiguous in global memory");
  // Packed 4-bit values (16U4_ALIGN8B / _ALIGN16B): dimension 0 counts the values, two to a byte.
  const bool packed = tma_packed_4bit(d.data_type);
  if (packed && d.dims[0] % 2) bad("the extent of dimension 0 must be even for packed 4-bit elements");
  if (d.data_type == kTmaUnpacked4Bit) {
    // cuda.h's rules for 16U4_ALIGN16B.
    const std::string what = " for 4-bit elements unpacked in shared memory (16U4_ALIGN16B)";
    if (global_address % 32) bad("the global tensor's address must be 32-byte aligned" + what);
    if (d.dims[0] % 128) bad("the extent " + std::to_string(d.dims[0]) + " of dimension 0 must be a multiple of 128" + what);
    if (d.box[0] != 128) bad("the innermost box dimension must be 128 values, got " + std::to_string(d.box[0]) + what);
    for (int k = 1; k < rank; ++k)
      if (d.dims[k] > 1 && d.strides[k] % 32)
        bad("the byte stride " + std::to_string(d.strides[k]) + " of dimension " + std::to_string(k) +
            " must be a multiple of 32" + what);
    if (swizzle_bytes != 0 && swizzle_bytes != 128)
      bad("the swizzle must be none or 128 bytes" + what + ", got " + std::to_string(swizzle_bytes));
  }
  // The innermost box dimension's bytes in shared memory.
  const uint64_t inner = d.data_type == kTmaUnpacked4Bit ? uint64_t(d.box[0])
                         : packed                       ? uint64_t(d.box[0]) / 2
                                                        : uint64_t(d.box[0]) * uint64_t(d.elem_bytes);
  if (packed && d.box[0] % 2) bad("the innermost box dimension of packed 4-bit elements must be even");
  if (inner % 16) bad("the innermost box dimension spans " + std::to_string(inner) + " bytes, not a multiple of 16");
  if (swizzle_bytes && inner > uint64_t(swizzle_bytes))
    bad("the innermost box dimension spans " + std::to_string(inner) + " bytes, more than the " +
        std::to_string(swizzle_bytes) + "-byte swizzle");
}

TmaDescriptor tma_byte_view(const TmaDescriptor& d, int64_t* origin, std::string* error) {
  if (!tma_packed_4bit(d.data_type)) return d;
  if (origin[0] % 2) {
    *error = "a TMA copy of packed 4-bit elements at coordinate " + std::to_string(origin[0]) +
             " of dimension 0, which splits a byte";
    return d;
  }
  TmaDescriptor v = d;
  v.dims[0] = d.dims[0] / 2;
  v.box[0] = d.box[0] / 2;
  v.elem_bytes = 1;
  v.data_type = 0;  // UINT8
  origin[0] /= 2;
  return v;
}

void MbarrierTable::add_filling(uintptr_t begin, uintptr_t end, uintptr_t bar, const ir::Op* op) {
  const MbarrierState* s = find(bar);
  if (s) filling_.push_back({begin, end, bar, s->phase, op});
}

std::string MbarrierTable::check_filling(uintptr_t addr, size_t bytes, const char* smem) {
  for (size_t k = 0; k < filling_.size();) {
    const Filling& f = filling_[k];
    const MbarrierState* s = find(f.bar);
    if (!s || s->phase > f.phase) {  // the phase completed: the bytes are there for everyone
      filling_[k] = filling_.back();
      filling_.pop_back();
      continue;
    }
    if (addr < f.end && addr + bytes > f.begin) {
      const uintptr_t base = reinterpret_cast<uintptr_t>(smem);
      std::string m = "an access to shared offset " + std::to_string(int64_t(addr - base)) +
                      ", which a TMA load" +
                      (f.op && f.op->line ? " (line " + std::to_string(f.op->line) + ")" : std::string()) +
                      " is still filling: its bytes complete phase " + std::to_string(f.phase) +
                      " of the mbarrier at shared offset " + std::to_string(int64_t(f.bar - base)) +
                      "; wait on that phase (mbarrier_wait / consumer_wait) before reading the tile";
      return m;
    }
    ++k;
  }
  return "";
}

std::string describe_mbarrier(const MbarrierTable& t, uintptr_t addr, const char* smem) {
  std::string s = "the mbarrier at shared offset " + std::to_string(int64_t(addr - reinterpret_cast<uintptr_t>(smem)));
  auto it = t.all().find(addr);
  if (it == t.all().end()) return s + " (never initialised)";
  const MbarrierState& b = it->second;
  if (b.init_op && b.init_op->line)
    s += " (mbarrier_init at " + (b.init_op->file.empty() ? std::string("line ") : b.init_op->file + ":") +
         std::to_string(b.init_op->line) + ")";
  s += ": phase " + std::to_string(b.phase) + " (parity " + std::to_string(b.phase & 1) + ") still needs " +
       std::to_string(b.pending) + " of " + std::to_string(b.expected) + " arrival(s)";
  if (b.tx > 0) s += " and " + std::to_string(b.tx) + " transaction byte(s)";
  return s;
}

namespace {

using ir::OpCode;

Scalar& at(Sm90WarpContext& w, int reg, int lane) { return w.regs[size_t(reg) * kWarp + size_t(lane)]; }

// The barrier of `lane` and its table: the block's own, or a cluster peer's for a remote op.
std::pair<uintptr_t, MbarrierTable*> barrier_of(const Inst& i, Sm90WarpContext& w, int lane, bool remote, bool must_exist) {
  uintptr_t addr = uintptr_t(at(w, i.a, lane).i);
  uintptr_t base = reinterpret_cast<uintptr_t>(w.smem);
  if (addr < base || addr + 8 > base + w.smem_size)
    w.fail(lane, std::string("the mbarrier pointer of ") + ir::opcode_name(i.code) + " lies outside the block's shared memory");
  if (addr % 8) w.fail(lane, "misaligned mbarrier at shared offset " + std::to_string(addr - base) + ": not a multiple of 8");
  const size_t offset = addr - base;
  MbarrierTable* table = w.table;
  if (remote) {
    int64_t rank = at(w, i.c, lane).i;
    auto [peer_smem, peer_table] = w.peer(rank);
    if (!peer_smem) w.fail(lane, "an mbarrier arrive on CTA rank " + std::to_string(rank) + ", which is not in the cluster");
    addr = reinterpret_cast<uintptr_t>(peer_smem) + offset;
    table = peer_table;
  }
  if (must_exist && !table->find(addr))
    w.fail(lane, std::string(ir::opcode_name(i.code)) + " on the mbarrier at shared offset " +
                     std::to_string(offset) + (remote ? " of CTA rank " + std::to_string(at(w, i.c, lane).i) : std::string()) +
                     ", which was never initialised (mbarrier_init)");
  return {addr, table};
}

// Byte offset of box element `linear` in shared memory: the box is dense, dimension 0 fastest;
// a swizzle of S bytes (32/64/128) XORs the 16-byte chunk index (address bits 4..) with the
// 128-byte row index (bits 7..), over log2(S/16) bits, on the shared-window address.
uintptr_t swizzled(uintptr_t addr, int swizzle_bytes) {
  if (!swizzle_bytes) return addr;
  const int bits = swizzle_bytes == 32 ? 1 : swizzle_bytes == 64 ? 2 : 3;
  const uintptr_t mask = (uintptr_t(1) << bits) - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

// The host's descriptor (a kernel parameter) or a tensor map a kernel copied into memory (sm90_tensormap).
TmaDescriptor descriptor_of(const Inst& i, Sm90WarpContext& w, int lane) {
  TmaDescriptor d;
  uintptr_t addr = uintptr_t(at(w, i.a, lane).i);
  if (w.tensor_map_address && addr) addr = w.tensor_map_address(lane, addr);
  if (!tma_descriptor_at(addr, &d))
    w.fail(lane, std::string(ir::opcode_name(i.code)) + " through a pointer that is not a TMA descriptor made by "
                                                        "make_tiled_tma_atom (nor a copy of one: copy_tensormap)");
  if (d.invalid)
    w.fail(lane, std::string(ir::opcode_name(i.code)) + " through a tensor map that make_tiled_tma_atom in the kernel "
                                                        "encoded from values TMA refuses (an extent, stride, box or "
                                                        "address out of its range)");
  if (d.rank != int(i.imm))
    w.fail(lane, std::string(ir::opcode_name(i.code)) + " with " + std::to_string(i.imm) +
                     " coordinates through a descriptor of rank " + std::to_string(d.rank));
  return d;
}

// Visits every element of the box at `origin`: f(global address or 0 when out of bounds,
// shared byte offset of the element before swizzling).
template <class F>
void for_box(const TmaDescriptor& d, const int64_t* origin, F&& f) {
  int64_t c[5] = {0, 0, 0, 0, 0};
  uint64_t total = 1;
  for (int k = 0; k < d.rank; ++k) total *= d.box[k];
  for (uint64_t lin = 0; lin < total; ++lin) {
    uint64_t r = lin;
    bool inside = true;
    uintptr_t g = uintptr_t(d.global_address);
    for (int k = 0; k < d.rank; ++k) {
      c[k] = int64_t(r % d.box[k]);
      r /= d.box[k];
      int64_t x = origin[k] + c[k];
      if (x < 0 || uint64_t(x) >= d.dims[k]) inside = false;
      else g += uintptr_t(x) * uintptr_t(d.strides[k]);
    }
    f(inside ? g : uintptr_t(0), lin * uint64_t(d.elem_bytes));
  }
}

// Visits the box at `origin` in runs along dimension 0: f(global address of the run's first
// element or 0 when the run is out of bounds, shared byte offset of its first element before
// swizzling, elements in the run). A run's elements are consecutive in both memories; with a
// dimension-0 stride other than the element size every element is a run of its own.
template <class F>
void for_box_runs(const TmaDescriptor& d, const int64_t* origin, F&& f) {
  if (d.strides[0] != uint64_t(d.elem_bytes)) {
    for_box(d, origin, [&](uintptr_t g, uint64_t o) { f(g, o, uint64_t(1)); });
    return;
  }
  const uint64_t box0 = d.box[0];
  const int64_t lo = std::clamp<int64_t>(-origin[0], 0, int64_t(box0));
  const int64_t hi = std::clamp<int64_t>(int64_t(d.dims[0]) - origin[0], lo, int64_t(box0));
  int64_t c[5] = {0, 0, 0, 0, 0};
  uint64_t rows = 1;
  for (int k = 1; k < d.rank; ++k) rows *= d.box[k];
  for (uint64_t row = 0; row < rows; ++row) {
    uint64_t r = row;
    bool inside = true;
    uintptr_t g = uintptr_t(d.global_address);
    for (int k = 1; k < d.rank; ++k) {
      c[k] = int64_t(r % d.box[k]);
      r /= d.box[k];
      int64_t x = origin[k] + c[k];
      if (x < 0 || uint64_t(x) >= d.dims[k]) inside = false;
      else g += uintptr_t(x) * uintptr_t(d.strides[k]);
    }
    const uint64_t o = row * box0 * uint64_t(d.elem_bytes), eb = uint64_t(d.elem_bytes);
    if (!inside || lo == hi) {
      f(uintptr_t(0), o, box0);
      continue;
    }
    if (lo > 0) f(uintptr_t(0), o, uint64_t(lo));
    f(g + uintptr_t(origin[0] + lo) * eb, o + uint64_t(lo) * eb, uint64_t(hi - lo));
    if (uint64_t(hi) < box0) f(uintptr_t(0), o + uint64_t(hi) * eb, box0 - uint64_t(hi));
  }
}

// Calls f(shared offset after swizzling, byte within the run, bytes) for the pieces of the run of
// `bytes` at shared offset `off` (before swizzling) that stay together: a swizzle moves whole
// 16-byte chunks.
template <class F>
void for_swizzled_pieces(uint64_t off, uint64_t bytes, int swizzle_bytes, F&& f) {
  if (!swizzle_bytes) {
    f(off, uint64_t(0), bytes);
    return;
  }
  for (uint64_t b = 0; b < bytes;) {
    const uint64_t n = std::min<uint64_t>(bytes - b, 16 - ((off + b) % 16));
    f(uint64_t(swizzled(uintptr_t(off + b), swizzle_bytes)), b, n);
    b += n;
  }
}

// Whether a run of `n` elements starting at global `g` may be copied as a whole: the elements are
// whole 16-byte-chunk parts (no element straddles a swizzle chunk), aligned as check_access wants
// them, and the launch's buffers hold the run (then *host is its first byte).
bool whole_run(const TmaDescriptor& d, Sm90WarpContext& w, uintptr_t g, uint64_t n, uintptr_t* host) {
  const uint64_t eb = uint64_t(d.elem_bytes);
  if (n < 2 || !w.global_run || eb > 16 || 16 % eb || (g & (eb - 1))) return false;
  return w.global_run(g, size_t(n * eb), host);
}

// The descriptor of a TMA op and its coordinates, packed 4-bit elements viewed as bytes
// (*data_type: the map's own).
TmaDescriptor descriptor_and_origin(const Inst& i, Sm90WarpContext& w, int lane, int64_t* origin, int* data_type = nullptr) {
  const TmaDescriptor m = descriptor_of(i, w, lane);
  if (data_type) *data_type = m.data_type;
  for (int k = 0; k < m.rank; ++k) origin[k] = int32_t(at(w, i.srcs[size_t(k)], lane).i);
  std::string error;
  TmaDescriptor d = tma_byte_view(m, origin, &error);
  if (!error.empty()) w.fail(lane, error);
  return d;
}

void tma_load(const Inst& i, Sm90WarpContext& w, int lane) {
  int64_t origin[5] = {0, 0, 0, 0, 0};
  int format = 0;
  const TmaDescriptor d = descriptor_and_origin(i, w, lane, origin, &format);
  const bool spread = format == kTmaUnpacked4Bit;  // each 8 bytes take 16 in shared memory
  const uintptr_t base = reinterpret_cast<uintptr_t>(w.smem);
  const uintptr_t dst = uintptr_t(at(w, i.b, lane).i), bar = uintptr_t(at(w, i.c, lane).i);
  uint64_t bytes = uint64_t(d.elem_bytes);  // what the load reads and its transaction bytes
  for (int k = 0; k < d.rank; ++k) bytes *= d.box[k];
  const uint64_t footprint = spread ? 2 * bytes : bytes;
  if (dst < base || dst + footprint > base + w.smem_size)
    w.fail(lane, "a TMA load of " + std::to_string(footprint) + " bytes to shared offset " +
                     std::to_string(int64_t(dst - base)) + " runs outside the block's " + std::to_string(w.smem_size) +
                     " bytes of shared memory");
  // The PTX ISA asks 128 bytes of a tensor copy's shared address, swizzled or not: the swizzle is
  // a function of the address itself (`swizzled`), so a box at 128 mod 1024 starts mid-pattern,
  // just as a swizzled-pointer tensor over that memory reads it.
  if ((dst - base) % 128)
    w.fail(lane, "a TMA load to shared offset " + std::to_string(dst - base) + ", which is not 128-byte aligned");
  if (bar < base || bar + 8 > base + w.smem_size || !w.table->find(bar))
    w.fail(lane, "a TMA load completing on an mbarrier that is not an initialised shared-memory mbarrier");
  // Multicast: every CTA in the mask receives the box at the same offset and its own mbarrier
  // (at the same offset) is credited; without a mask, this CTA only. A cta_group::2 load credits
  // the mbarrier of the receiving CTA's pair leader (even rank) instead.
  const bool two_sm = i.op && i.op->ints.size() > 2 && i.op->ints[2] == 2;
  std::vector<int64_t> ranks;
  if (i.dsts.empty()) {
    ranks.push_back(two_sm ? w.rank : -1);
  } else {
    const uint32_t mask = uint32_t(at(w, i.dsts[0], lane).i) & 0xffff;
    for (int r = 0; r < 16; ++r)
      if ((mask >> r) & 1) ranks.push_back(r);
  }
  for (int64_t rank : ranks) {
    char* smem = w.smem;
    MbarrierTable* table = w.table;
    if (rank >= 0) {
      auto [s, t] = w.peer(rank);
      if (!s) w.fail(lane, "a TMA multicast to CTA rank " + std::to_string(rank) + ", which is not in the cluster");
      smem = s, table = t;
    }
    const uintptr_t sbase = reinterpret_cast<uintptr_t>(smem), off = dst - base;
    if (w.check_smem_fill) w.check_smem_fill(lane, smem, sbase + off, footprint);
    const uint64_t eb = uint64_t(d.elem_bytes);
    // f(shared offset after swizzling, byte within the run, bytes) for the pieces of the box's
    // bytes [o, o + n) that stay together in shared memory.
    auto pieces = [&](uint64_t o, uint64_t n, auto&& f) {
      if (!spread) {
        for_swizzled_pieces(off + o, n, d.swizzle_bytes, f);
        return;
      }
      for (uint64_t b = 0; b < n;) {
        const uint64_t len = std::min<uint64_t>(n - b, 8 - (o + b) % 8);
        for_swizzled_pieces(off + tma_smem_offset(format, o + b), len, d.swizzle_bytes,
                            [&](uint64_t s, uint64_t within, uint64_t l) { f(s, b + within, l); });
        b += len;
      }
    };
    for_box_runs(d, origin, [&](uintptr_t g, uint64_t o, uint64_t n) {
      uintptr_t host = 0;
      if (!g) {  // out-of-bounds elements are zero-filled
        pieces(o, n * eb, [&](uint64_t s, uint64_t, uint64_t bytes) { std::memset(smem + s, 0, size_t(bytes)); });
      } else if (whole_run(d, w, g, n, &host)) {
        pieces(o, n * eb, [&](uint64_t s, uint64_t b, uint64_t bytes) {
          std::memcpy(smem + s, reinterpret_cast<const void*>(host + b), size_t(bytes));
        });
      } else {
        for (uint64_t k = 0; k < n; ++k) {
          char* p = smem + swizzled(uintptr_t(off + tma_smem_offset(format, o + k * eb)), d.swizzle_bytes);
          const uintptr_t h = w.check_global(lane, g + uintptr_t(k * eb), size_t(eb), false);
          std::memcpy(p, reinterpret_cast<const void*>(h), size_t(eb));
        }
      }
    });
    if (spread)  // the gaps: the second 8 bytes of each 16-byte chunk (a swizzle moves whole chunks)
      for (uint64_t c = 0; c < footprint; c += 16)
        std::memset(smem + swizzled(uintptr_t(off + c + 8), d.swizzle_bytes), 0, 8);
    (void)sbase;
    char* bar_smem = smem;
    if (two_sm) {
      auto [s, t] = w.peer(rank & ~int64_t(1));
      if (!s) w.fail(lane, "a cta_group::2 TMA load into CTA rank " + std::to_string(rank) + ", whose pair leader is not "
                           "in the cluster");
      bar_smem = s, table = t;
    }
    const uintptr_t peer_bar = reinterpret_cast<uintptr_t>(bar_smem) + (bar - base);
    if (!table->find(peer_bar))
      w.fail(lane, "a TMA " + std::string(two_sm ? "load (cta_group::2)" : "multicast") + " to CTA rank " +
                       std::to_string(rank) + " whose mbarrier at shared offset " + std::to_string(bar - base) +
                       (two_sm ? " of its pair leader" : "") + " was never initialised");
    table->add_filling(reinterpret_cast<uintptr_t>(smem) + off, reinterpret_cast<uintptr_t>(smem) + off + footprint,
                       peer_bar, i.op);
    table->complete_tx(peer_bar, int64_t(bytes));
  }
}

// cp.async.bulk (non-tensor): `bytes` contiguous bytes from global memory to this CTA's shared
// memory, credited to the mbarrier when issued.
void bulk_load(const Inst& i, Sm90WarpContext& w, int lane) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(w.smem);
  const uintptr_t dst = uintptr_t(at(w, i.a, lane).i), src = uintptr_t(at(w, i.b, lane).i);
  const uintptr_t bar = uintptr_t(at(w, i.c, lane).i);
  const int64_t bytes = at(w, i.srcs[0], lane).i;
  if (bytes <= 0 || bytes % 16 || dst % 16 || src % 16)
    w.fail(lane, "a bulk copy of " + std::to_string(bytes) + " bytes from global address " + std::to_string(src) +
                     " to shared offset " + std::to_string(int64_t(dst - base)) +
                     ": the size and both addresses must be multiples of 16 bytes");
  if (dst < base || dst + uint64_t(bytes) > base + w.smem_size)
    w.fail(lane, "a bulk copy of " + std::to_string(bytes) + " bytes to shared offset " +
                     std::to_string(int64_t(dst - base)) + " runs outside the block's " + std::to_string(w.smem_size) +
                     " bytes of shared memory");
  if (bar < base || bar + 8 > base + w.smem_size || !w.table->find(bar))
    w.fail(lane, "a bulk copy completing on an mbarrier that is not an initialised shared-memory mbarrier");
  if (w.check_smem_fill) w.check_smem_fill(lane, w.smem, dst, size_t(bytes));
  const uintptr_t g = w.check_global(lane, src, size_t(bytes), false);
  std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(g), size_t(bytes));
  w.table->add_filling(dst, dst + uintptr_t(bytes), bar, i.op);
  w.table->complete_tx(bar, bytes);
}

void tma_store_element(const Inst& i, Sm90WarpContext& w, int lane, const TmaDescriptor& d, uintptr_t src_offset,
                       ir::TmaReduceKind reduce, ir::Type elem, uintptr_t g, uint64_t o);

void tma_store(const Inst& i, Sm90WarpContext& w, int lane) {
  int64_t origin[5] = {0, 0, 0, 0, 0};
  int format = 0;
  const TmaDescriptor d = descriptor_and_origin(i, w, lane, origin, &format);
  if (format == kTmaUnpacked4Bit)
    w.fail(lane, "a TMA store through a tensor map of 4-bit elements unpacked in shared memory (16U4_ALIGN16B), "
                 "which TMA only loads");
  const uintptr_t base = reinterpret_cast<uintptr_t>(w.smem), src = uintptr_t(at(w, i.b, lane).i);
  uint64_t bytes = uint64_t(d.elem_bytes);
  for (int k = 0; k < d.rank; ++k) bytes *= d.box[k];
  if (src < base || src + bytes > base + w.smem_size)
    w.fail(lane, "a TMA store of " + std::to_string(bytes) + " bytes from shared offset " +
                     std::to_string(int64_t(src - base)) + " runs outside the block's shared memory");
  // A reduce-store (ints[0]) combines each element into global memory, atomically per element
  // as PTX requires: other CTAs (blocks run in parallel on host threads) may reduce into the same
  // elements (fmha_bwd.py's CTAs, one per key tile, each add their dQ part).
  const auto reduce = i.op->ints.empty() ? ir::TmaReduceKind::None : ir::TmaReduceKind(i.op->ints[0]);
  const ir::Type elem = i.op->operands[1]->type->element;
  auto store_element = [&](uintptr_t g, uint64_t o) { tma_store_element(i, w, lane, d, src - base, reduce, elem, g, o); };
  uintptr_t host = 0;
  const uint64_t eb = uint64_t(d.elem_bytes);
  for_box_runs(d, origin, [&](uintptr_t g, uint64_t o, uint64_t n) {
    if (!g) return;  // elements outside the tensor are not written
    if (reduce == ir::TmaReduceKind::None && whole_run(d, w, g, n, &host)) {
      for_swizzled_pieces(src - base + o, n * eb, d.swizzle_bytes, [&](uint64_t s, uint64_t b, uint64_t bytes) {
        std::memcpy(reinterpret_cast<void*>(host + b), w.smem + s, size_t(bytes));
      });
      return;
    }
    for (uint64_t k = 0; k < n; ++k) store_element(g + uintptr_t(k * eb), o + k * eb);
  });
}

void tma_store_element(const Inst& i, Sm90WarpContext& w, int lane, const TmaDescriptor& d, uintptr_t src_offset,
                       ir::TmaReduceKind reduce, ir::Type elem, uintptr_t g, uint64_t o) {
  static const ir::AtomicKind kCombine[] = {ir::AtomicKind::Add, ir::AtomicKind::Add, ir::AtomicKind::Min,
                                            ir::AtomicKind::Max, ir::AtomicKind::And, ir::AtomicKind::Or,
                                            ir::AtomicKind::Xor};
  {
    g = w.check_global(lane, g, size_t(d.elem_bytes), true);
    const char* from = w.smem + swizzled(src_offset + o, d.swizzle_bytes);
    if (reduce == ir::TmaReduceKind::None) {
      std::memcpy(reinterpret_cast<void*>(g), from, size_t(d.elem_bytes));
      return;
    }
    try {
      atomic_update(kCombine[int(reduce)], elem, reinterpret_cast<void*>(g), ir::load_scalar(elem, from), ir::Scalar{});
    } catch (const std::logic_error& e) {
      w.fail(lane, std::string("a TMA reduce-store: ") + e.what());
    }
  }
}

}  // namespace

AsyncStep execute_sm90_async(const Inst& i, Sm90WarpContext& w) {
  switch (i.code) {
    case OpCode::MbarrierInit:
      for (uint32_t m = w.mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        int64_t count = at(w, i.b, l).i;
        if (count < 1 || count >= (1 << 20))
          w.fail(l, "mbarrier_init with arrival count " + std::to_string(count) + " outside [1, 2^20 - 1]");
        w.table->init(barrier_of(i, w, l, false, false).first, count, i.op);
      }
      return AsyncStep::Continue;
    case OpCode::MbarrierArrive: {
      const auto kind = ir::MbarrierArriveKind(i.imm);
      const bool remote = i.c >= 0;
      for (uint32_t m = w.mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        auto [addr, table] = barrier_of(i, w, l, remote, true);
        int64_t v = at(w, i.b, l).i;
        if (v < 0) w.fail(l, std::string(ir::opcode_name(i.code)) + " with a negative count " + std::to_string(v));
        std::string err;
        switch (kind) {
          case ir::MbarrierArriveKind::Arrive: err = table->arrive(addr, v); break;
          case ir::MbarrierArriveKind::ArriveExpectTx:
            table->expect_tx(addr, v);
            err = table->arrive(addr, 1);
            break;
          case ir::MbarrierArriveKind::ExpectTx: table->expect_tx(addr, v); break;
        }
        if (!err.empty()) w.fail(l, err);
      }
      return AsyncStep::Continue;
    }
    case OpCode::MbarrierWait: {
      const auto kind = ir::MbarrierWaitKind(i.imm);
      bool all_done = true;
      for (uint32_t m = w.mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        auto [addr, table] = barrier_of(i, w, l, false, true);
        int64_t parity = at(w, i.b, l).i;
        bool done = table->phase_done(addr, parity);
        if (kind != ir::MbarrierWaitKind::Wait) at(w, i.dst, l).i = done;
        if (!done && all_done) w.wait_addr = addr, w.wait_parity = parity;
        all_done = all_done && done;
      }
      if (all_done) return AsyncStep::Continue;
      return kind == ir::MbarrierWaitKind::Wait ? AsyncStep::Block : AsyncStep::Yield;
    }
    case OpCode::TmaLoad:
    case OpCode::TmaStore:
      // One elected lane of the warp issues the copy (the lowering's elect.sync). It lands at
      // once: the bytes are in shared (global) memory and credited to the mbarrier when issued.
      // A predicated load (i.dst: its i1 predicate) is issued by every lane where it holds.
      if (i.dst >= 0) {
        for (uint32_t m = w.mask; m; m &= m - 1) {
          const int l = __builtin_ctz(m);
          if (at(w, i.dst, l).i) tma_load(i, w, l);
        }
      } else if (w.mask) {
        const int l = __builtin_ctz(w.mask);
        if (i.code == OpCode::TmaLoad) tma_load(i, w, l);
        else tma_store(i, w, l);
      }
      return AsyncStep::Continue;
    case OpCode::BulkLoad:
      if (w.mask) bulk_load(i, w, __builtin_ctz(w.mask));  // one elected lane issues it
      return AsyncStep::Continue;
    case OpCode::BulkCommit:
    case OpCode::BulkWait:
    case OpCode::TmaDescOp:
      // Stores complete when issued, so no bulk group is ever pending; descriptors need no
      // prefetch or proxy fence on the CPU.
      return AsyncStep::Continue;
    case OpCode::Fence:
      // The emulator runs one instruction at a time and every copy lands when it is issued:
      // all memory is already ordered, for every proxy.
      return AsyncStep::Continue;
    default:
      w.fail(0, std::string("not an SM90 async op: ") + ir::opcode_name(i.code));
  }
  return AsyncStep::Continue;
}

bool lower_sm90_async(DeviceEmulator::Program& p, const ir::Op& op) {
  Inst i(K::Sm90Async);
  i.op = &op;
  i.code = op.code;
  i.imm = op.int_attr;
  switch (op.code) {
    case OpCode::MbarrierInit:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
      break;
    case OpCode::MbarrierArrive:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
      if (op.operands.size() == 3) i.c = p.reg(op.operands[2]);
      break;
    case OpCode::CpAsyncMbarrierArrive: i.a = p.reg(op.operands[0]); break;
    case OpCode::MbarrierWait:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
      if (!op.results.empty()) i.dst = p.reg(op.result());
      break;
    case OpCode::Fence: break;
    case OpCode::TmaLoad: case OpCode::TmaStore: {
      const bool load = op.code == OpCode::TmaLoad;
      const size_t fixed = load ? 3 : 2;
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
      if (load) i.c = p.reg(op.operands[2]);
      for (int64_t k = 0; k < op.int_attr; ++k) i.srcs.push_back(p.reg(op.operands[fixed + size_t(k)]));
      if (load && !op.ints.empty() && op.ints[0]) i.dsts.push_back(p.reg(op.operands[fixed + size_t(op.int_attr)]));
      if (load && op.ints.size() > 1 && op.ints[1]) i.dst = p.reg(op.operands.back());  // the predicate
      break;
    }
    case OpCode::BulkLoad:
      i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]), i.c = p.reg(op.operands[2]);
      i.srcs.push_back(p.reg(op.operands[3]));
      break;
    case OpCode::BulkCommit: case OpCode::BulkWait: break;
    case OpCode::TmaDescOp: i.a = p.reg(op.operands[0]); break;
    default: return false;
  }
  p.emit(std::move(i));
  return true;
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

// A wait that saw its mbarrier's phase complete: the tcgen05.mma that the commits arriving on it
// track are complete (sm100_mma_completion.h).
void note_wait_for_mma_commits(const Inst& i, Sm90WarpContext& ctx, Worker& w) {
  for (uint32_t m = ctx.mask; m; m &= m - 1) {
    const int l = __builtin_ctz(m);
    auto [addr, table] = barrier_of(i, ctx, l, false, true);
    if (!table->phase_done(addr, at(ctx, i.b, l).i)) continue;
    w.cluster->mma_completion.waited(w.rank, addr, table->find(addr)->phase);
    return;
  }
}

Flow exec_sm90_async(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const uint32_t m = warp.mask;
  Sm90WarpContext ctx;
  ctx.regs = warp.regs;
  ctx.mask = m;
  ctx.table = &w.mbarriers;
  ctx.rank = w.rank;
  ctx.smem = w.smem;
  ctx.smem_size = w.smem_size;
  // The CTA of rank `rank` in this cluster (without a cluster, a block is rank 0 of one).
  ctx.peer = [&](int64_t rank) -> std::pair<char*, MbarrierTable*> {
    if (rank < 0 || rank >= int64_t(w.cluster->size)) return {nullptr, nullptr};
    Worker* b = w.cluster->blocks[size_t(rank)];
    return {b->smem, &b->mbarriers};
  };
  ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
  ctx.check_global = [&](int lane, uintptr_t addr, size_t bytes, bool store) {
    return check_access(c, w, warp, lane, i, addr, bytes, store);
  };
  ctx.global_run = [&](uintptr_t addr, size_t bytes, uintptr_t* host) { return plain_global_run(c, w, addr, bytes, host); };
  if (c.cfg->device_memory)
    ctx.tensor_map_address = [&](int lane, uintptr_t addr) { return device_host_address(c, w, warp, lane, i, addr, 128); };
  // A TMA load refilling shared memory that a wgmma in flight (not yet retired by its
  // warpgroup's wait_group) still reads: on the GPU the MMA may read the new bytes.
  ctx.check_smem_fill = [&](int lane, const char* smem, uintptr_t begin, size_t bytes) {
    for (Worker* b : w.cluster->blocks)
      if (b->smem == smem && b->wgmma_reads.active()) {
        std::string race = b->wgmma_reads.check_store(begin, bytes);
        if (!race.empty()) fail_at(c, w, warp, lane, i, "a TMA load overwrites shared memory: " + race);
      }
  };
  if (i.code == OpCode::CpAsyncMbarrierArrive) {
    // The thread's earlier cp.async land now, then the arrive (with .noinc it is one of the
    // barrier's expected arrivals; without, the pending count was raised first: no net arrival).
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      const int l = __builtin_ctz(mm);
      w.async.complete_all(warp.first_thread + unsigned(l));
      if (!i.imm) continue;
      auto [addr, table] = barrier_of(i, ctx, l, false, true);
      std::string err = table->arrive(addr, 1);
      if (!err.empty()) fail_at(c, w, warp, l, i, err);
    }
    return Flow::Next;
  }
  const AsyncStep step = execute_sm90_async(i, ctx);
  if (i.code == OpCode::MbarrierWait && step != AsyncStep::Block && w.cluster->mma_completion.any_commit())
    note_wait_for_mma_commits(i, ctx, w);
  if (step == AsyncStep::Continue) return Flow::Next;
  warp.mbar = ctx.wait_addr;
  warp.mbar_parity = ctx.wait_parity;
  warp.mbar_wait = &i;
  if (step == AsyncStep::Block) {  // re-runs the wait when woken
    warp.state = WarpState::AtMbarrier;
    return Flow::Stop;
  }
  // A failed try/test wait: let the other warps run. Failing again and again while no
  // barrier changes parks the warp until one does (a spin loop cannot hang the emulator).
  const uint64_t epoch = w.mbarriers.epoch();
  warp.spins = warp.spin_epoch == epoch ? warp.spins + 1 : 1;
  warp.spin_epoch = epoch;
  if (warp.spins >= 3) warp.state = WarpState::Spinning;
  warp.pc++;
  return Flow::Stop;
}

}  // namespace

void register_sm90_async_handlers(HandlerTable& t) {
  t.add(K::Sm90Async, exec_sm90_async);
}

}  // namespace opencute::emulator
