// CPU semantics of the SM90 asynchronous machinery: mbarriers (phases, arrival and transaction
// counts) and fences. Private to the emulator: device_lowering.cpp calls lower_sm90_async,
// the handler registered by register_sm90_async_handlers runs Inst K::Sm90Async through
// execute_sm90_async and parks warps whose wait cannot complete yet.
//
// Where an mbarrier's state lives: in an emulator-side table keyed by the barrier's address,
// not in its 8 bytes of shared memory. The table holds more than 64 bits can: the arrival count
// of each phase, the pending arrivals and transaction bytes, the completed phases, and the op
// that initialised it (its user line for reports); the key, an address, works alike for a
// CTA's own barriers and a cluster peer's (distributed shared memory), and a use before
// mbarrier_init is caught instead of reading whatever the bytes hold.
//
// Waiting: a blocking wait whose phase has not completed parks the warp at that barrier (the
// instruction re-runs when it is woken). A failed try_wait / test_wait returns false and yields
// the warp so that the others run; a warp that keeps failing while nothing changes on any
// barrier is parked until something does. When every warp of the block is parked or at a
// barrier that cannot complete, the launch fails with an ExecutionError naming each barrier (its
// shared-memory offset and the line that initialised it) and the waiting warps: never a hang.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/device_program.h"

namespace opencute::emulator {

// What a TMA op reads through its descriptor pointer: the CUtensorMap the driver encoded (128
// opaque bytes, zero without a driver) followed by the same fields for the emulator, written by
// runtime/tma_descriptor. Dimension 0 is the innermost (contiguous) one.
constexpr uint32_t kTmaDescriptorMagic = 0x544d4131;  // "TMA1"
struct TmaDescriptor {
  alignas(64) unsigned char tensor_map[128];
  uint32_t magic = kTmaDescriptorMagic;
  int32_t rank = 0;
  int32_t elem_bytes = 0;
  int32_t swizzle_bytes = 0;  // 0 (none), 32, 64 or 128
  uint64_t global_address = 0;
  uint64_t dims[5] = {1, 1, 1, 1, 1};
  uint64_t strides[5] = {0, 0, 0, 0, 0};  // bytes
  uint32_t box[5] = {1, 1, 1, 1, 1};
  int32_t data_type = -1;  // CUtensorMapDataType (tensor_map_data_type); what a reducing store combines
  // 1: a kernel encoded it (make_tiled_tma_atom in a kernel) from values TMA refuses (an empty
  // expert's extent 0); copying it to a slot is fine, a TMA copy through it is an error.
  int32_t invalid = 0;
};

// CUtensorMapDataType of an element type; -1 when TMA cannot move it.
int tensor_map_data_type(ir::Type element);
// CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: packed 4-bit values, dense in shared memory as in global.
// A descriptor of this type counts dimension 0's extent, box and coordinate in values (two per
// byte); its elem_bytes and strides[0] are 1.
constexpr int kTmaPacked4Bit = 13;
// CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: packed 4-bit values in global memory, spread in shared
// memory so that each 16 of them (8 bytes) start a 16-byte chunk whose last 8 bytes are a gap
// (cuda.h: "8 byte gaps between every 8 byte chunk"): the byte-per-value tile that ldmatrix
// .b8x16.b4x16_p64 reads (sm_120's mixed FP4 x FP8 GEMMs). Loads only; dimension 0 counts values
// as for 16U4_ALIGN8B, and its box is 128 of them (128 bytes of shared memory). The transaction
// bytes a load completes are the packed bytes it reads (half its shared footprint), as CUTLASS
// counts them. The emulators write zeros in the gaps.
constexpr int kTmaUnpacked4Bit = 14;
inline bool tma_packed_4bit(int data_type) { return data_type == kTmaPacked4Bit || data_type == kTmaUnpacked4Bit; }
// The shared-memory byte offset of byte `dense` of a box's packed bytes (its byte view, below):
// itself, or for 16U4_ALIGN16B its place once each 8 bytes take 16.
inline uint64_t tma_smem_offset(int data_type, uint64_t dense) {
  return data_type == kTmaUnpacked4Bit ? dense / 8 * 16 + dense % 8 : dense;
}
// The same copy in bytes: a packed 4-bit descriptor halved along dimension 0, with `origin[0]`
// (which must be even; else `error` says why and `d` comes back) halved too; others unchanged.
TmaDescriptor tma_byte_view(const TmaDescriptor& d, int64_t* origin, std::string* error);
// Fills `d` (everything but tensor_map) and checks it; throws std::invalid_argument naming the
// broken rule (16-byte aligned address and strides, extents in [1, 2^32], box 1..256 per dim,
// dimension 0 contiguous, the inner box within the swizzle span). `data_type`: -1 for the
// element's own (tensor_map_data_type), or kTmaUnpacked4Bit for 4-bit elements (and its rules:
// 32-byte aligned address and strides, dimension 0's extent a multiple of 128 and its box 128,
// no swizzle or the 128-byte one).
void fill_tma_descriptor(TmaDescriptor& d, ir::Type element, int rank, uint64_t global_address, const uint64_t* dims,
                         const uint64_t* strides_bytes, const uint32_t* box, int swizzle_bytes, int data_type = -1);
// The data type a tma_encode op asks for beyond its element's own (its ints' optional last entry), or -1.
int tma_encode_data_type(const ir::Op& encode);

struct MbarrierState {
  int64_t expected = 0;  // arrivals that complete a phase (the init count)
  int64_t pending = 0;   // arrivals still missing in the current phase
  int64_t tx = 0;        // transaction bytes still missing (negative while bytes land before expect_tx)
  uint64_t phase = 0;    // phases completed so far; the current phase's parity is phase & 1
  const ir::Op* init_op = nullptr;
};

class MbarrierTable {
 public:
  void reset() { bars_.clear(), filling_.clear(), epoch_ = 0; }
  MbarrierState* find(uintptr_t addr) {
    auto it = bars_.find(addr);
    return it == bars_.end() ? nullptr : &it->second;
  }
  void init(uintptr_t addr, int64_t count, const ir::Op* op);
  // "" or why the update is wrong (more arrivals than the phase has outstanding).
  std::string arrive(uintptr_t addr, int64_t count);
  void expect_tx(uintptr_t addr, int64_t bytes);
  void complete_tx(uintptr_t addr, int64_t bytes);
  // True when the phase of parity `parity` completed: the current phase has the other parity.
  bool phase_done(uintptr_t addr, int64_t parity) {
    MbarrierState* s = find(addr);
    return s && int64_t(s->phase & 1) != (parity & 1);
  }
  // Bumped by every change to any barrier: a spinning warp waits for it to move.
  uint64_t epoch() const { return epoch_; }
  const std::unordered_map<uintptr_t, MbarrierState>& all() const { return bars_; }

  // TMA loads land at once on the emulator, but on the GPU the bytes arrive some time before the
  // phase they complete: until the barrier at `bar` passes its current phase, [begin, end) of
  // shared memory is being filled and an ordinary access to it is a race (reported).
  void add_filling(uintptr_t begin, uintptr_t end, uintptr_t bar, const ir::Op* op);
  bool any_filling() const { return !filling_.empty(); }
  // "" or why an access of [addr, addr + bytes) races with a TMA load still filling it.
  std::string check_filling(uintptr_t addr, size_t bytes, const char* smem);

 private:
  struct Filling {
    uintptr_t begin, end, bar;
    uint64_t phase;  // the barrier's phase the bytes complete
    const ir::Op* op;
  };
  void maybe_complete(MbarrierState& s);
  std::unordered_map<uintptr_t, MbarrierState> bars_;
  std::vector<Filling> filling_;
  uint64_t epoch_ = 0;
};

// What execute_sm90_async needs of the warp it runs on.
struct Sm90WarpContext {
  Scalar* regs = nullptr;  // SoA: register r of lane l at regs[r * 32 + l]
  uint32_t mask = 0;       // active lanes
  MbarrierTable* table = nullptr;
  int64_t rank = 0;        // the block's rank in its cluster
  char* smem = nullptr;    // the block's shared memory
  size_t smem_size = 0;
  // The shared memory of the CTA of the cluster with rank `rank` and its table (null smem when
  // there is no such CTA); the block itself for its own rank.
  std::function<std::pair<char*, MbarrierTable*>(int64_t rank)> peer;
  std::function<void(int lane, const std::string& what)> fail;  // raises
  // Out: the barrier and parity a parked warp waits for.
  uintptr_t wait_addr = 0;
  int64_t wait_parity = 0;
  // Global-memory bounds check of a TMA access (raises), as for ordinary loads and stores.
  // Returns the host address to access (a staged device address's host copy, else `addr`).
  std::function<uintptr_t(int lane, uintptr_t addr, size_t bytes, bool store)> check_global;
  // Optional: a run of elements [addr, addr + bytes) that passes check_global as a whole, element
  // by element: true with the host address of its first byte (the others follow it). False when
  // that is not plainly so; the elements are then checked one by one.
  std::function<bool(uintptr_t addr, size_t bytes, uintptr_t* host)> global_run;
  // Optional: the host address of a tensor map the kernel names by `addr`, which may be a
  // staged device address (raises when it is device memory that is not staged).
  std::function<uintptr_t(int lane, uintptr_t addr)> tensor_map_address;
  // Optional: checks that a TMA load may write [begin, begin + bytes) of the shared memory `smem`
  // (this CTA's or a peer's) now, e.g. that no wgmma still in flight reads it (raises).
  std::function<void(int lane, const char* smem, uintptr_t begin, size_t bytes)> check_smem_fill;
};

enum class AsyncStep : uint8_t { Continue, Block, Yield };
// Continue: the warp goes on. Block: a blocking wait must park the warp (its pc stays on the
// instruction). Yield: a try/test wait failed for some lane; the warp should let others run.
AsyncStep execute_sm90_async(const Inst& i, Sm90WarpContext& w);

// Lowers one of the SM90 async ops into the program; false when `op` is not one.
bool lower_sm90_async(DeviceEmulator::Program& p, const ir::Op& op);

// One line describing a barrier for deadlock reports: its shared offset and state.
std::string describe_mbarrier(const MbarrierTable& t, uintptr_t addr, const char* smem);

}  // namespace opencute::emulator
