// The SM90 TMA copy atoms (CuTe's copy_traits_sm90_tma.hpp): CopyBulkTensorTileG2SOp (load),
// ...G2SMulticastOp and ...S2GOp (store). make_tiled_tma_atom derives the tensor map from the
// global tensor and the shared-memory layout of one CTA tile:
//   - the smem layout (the outer layout of a swizzled ComposedLayout, a trailing stage mode
//     dropped) must lay the tile out densely; sorting its leaves by smem stride gives the box
//     dimensions, innermost first, each a contiguous run of one tile mode (a mode may be split:
//     an MN-major 128B-swizzle atom of 64 elements tiled to 128 makes two dimensions);
//   - a run over a hierarchical global mode ((h, s) with h > 1: FlashAttention-4's packed GQA)
//     becomes one dimension per leaf it crosses, as CuTe C++ splits such modes;
//   - box dimension 0 must be contiguous in global memory; each dimension's global stride is the
//     leaf's stride times the run's coordinate step in the leaf; global leaves outside the tile
//     become dimensions with a box of 1 (batch modes);
//   - one box is one CTA tile (one multicast slice) where TMA allows: when the slice does not
//     split along the outermost dimension, or a dimension exceeds TMA's 256-element box, the
//     copy issues several instructions over sub-boxes (CuTe's (TMA, TMA_Iter) partition);
//   - dimensions contiguous in global memory too, each but the last covering its whole leaf,
//     merge into one while the merged box stays within 256 (CuTe's coalesce_256 of the tile's
//     global strides): the block-scale factors' ((32,4),(16,4)) atom is one run of 512 bytes;
//   - `internal_type` (CuTe's TmaInternalType) recasts the tensor map to that type: dimension 0's
//     extent, box and coordinate count its elements (an Int16 map of byte-sized scale factors);
//   - packed 4-bit elements (Float4E2M1FN) travel as CUDA's 16U4_ALIGN8B: extents, boxes and
//     coordinates count the 4-bit values, strides are bytes; with internal_type Int8 (or Uint8)
//     as 16U4_ALIGN16B: the smem tile holds a byte slot per value (each 16 values' 8 bytes then 8
//     bytes of gap, as ldmatrix .b4x16_p64 reads them), the box is 128 values, loads only;
//   - the swizzle S<B,M,3> (element units) must be TMA's 32/64/128-byte swizzle in bytes.
//   - a tiler mode may be a layout from tile positions to coordinate offsets (the sm100 epilogue
//     tile (32,2):(1,64) interleaves two warps' columns): each smem run is taken through it, and
//     an inner run whose next run starts further on spans the gap in the tensor map (wrap).
// The TMA tensor is the identity coordinate tensor over the global shape: it tiles and
// partitions like the global tensor, and a copy turns its first coordinate into the tensor
// map's coordinates. (NVIDIA's TMA tensor uses basis strides in the map's dimension order; the
// coordinates each copy gets are the same.)
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cute/atom/copy_atom.h"
#include "cute/tensor.h"
#include "ir/async_attributes.h"
#include "dsl/num.h"

namespace opencute::cute {

enum class TmaKind : uint8_t { Load, LoadMulticast, Store };

struct TmaAtom {
  TmaKind kind = TmaKind::Load;
  ir::Type element = nullptr;
  ir::Type map_element = nullptr;  // the tensor map's element type: `element`, or a wider internal_type
  int64_t recast = 1;            // elements of `element` per map element (dimension 0 counts map elements)
  bool unpacked = false;         // 4-bit elements each in a byte slot of shared memory (16U4_ALIGN16B)
  int rank = 0;                  // tensor-map dimensions
  int gmode[5] = {};             // the global layout's flattened leaf of each dimension
  int64_t tile_stride[5] = {};   // coordinate stride of the dimension inside its leaf (1: innermost run)
  int64_t box[5] = {};           // what one instruction copies along the dimension
  int64_t run[5] = {};           // the tile's extent along the dimension (a multiple of box)
  int64_t wrap[5] = {};          // the tensor map's extent of an inner run (its coordinate modulo this; see copy_sm90.cpp)
  int64_t pos_stride[5] = {};    // position stride of the dimension inside its tile mode
  int tile_mode[5] = {};         // the tile mode the dimension runs along (-1: outside the tile)
  bool outermost[5] = {};        // the last run of its leaf (takes the coordinate's quotient whole)
  bool folded[5] = {};           // an outer run of a leaf kept whole (extent 1, coordinate 0): see copy_sm90.cpp
  // A merged dimension: after its first leaf (gmode[k], the innermost), these leaves, each whole
  // but the last and read from coordinate step 1; the dimension's coordinate is the sum of each
  // leaf's coordinate times its global stride over the first one's (part_scale).
  static constexpr int kMaxParts = 6;
  int parts[5] = {};
  int part_leaf[5][kMaxParts] = {};
  int64_t part_scale[5][kMaxParts] = {};
  // A tile (or a CTA's multicast slice) larger than one box: the box is whole along the
  // dimensions below `split_dim`, a part of it along `split_dim` and 1 above; each copy issues
  // `copies` instructions, stepping box[split_dim] along split_dim then through the dimensions above.
  int split_dim = -1;
  int64_t copies = 1;
  int swizzle_bytes = 0;
  layout::Layout smem_layout;    // the tile's smem layout (outer, no stage mode)
  int64_t tile_elems = 0;
  int num_multicast = 1;
  // Multicast: each of the num_multicast CTAs loads one slice of the tile (along dimension
  // split_dim, tile mode `mcast_mode`) into every CTA of the mask; CTA i's slice starts at
  // position i * mcast_step of that mode (tma_partition offsets the tensors there).
  int mcast_mode = -1;
  int64_t mcast_step = 0;
  int tile_rank = 0;
  // More than 5 dimensions: the last one (index 4) addresses these flattened global leaves at
  // once, coordinate sum(c_j * ratio_j) (TmaAtomResult::merge_ratios); gmode[] are leaf indices.
  int merged_leaves = 0;
  int merged_leaf[8] = {};
  std::string op_name;
  // CopyReduceBulkTensorTileS2GOp: the store combines into global memory (TmaStore's ints[0]).
  ir::TmaReduceKind reduce = ir::TmaReduceKind::None;
  // 2: a Blackwell cta_group::2 load (a 2-CTA MMA's operand): the bytes land in the issuing (or
  // multicast) CTA and complete the mbarrier of that CTA's pair leader (even rank), at the same
  // offset as tma_bar_ptr (TmaLoad's ints[2]).
  int cta_group = 1;
  // The TMA tensor's coordinates list the global leaves in the order of the first tensor-map
  // dimension each feeds (the contiguous one first, as NVIDIA's TMA tensors count them), then the
  // leaves no dimension reads: coord_of_leaf[f] is leaf f's position (empty: leaf order).
  std::vector<int> coord_of_leaf;
};

struct TmaAtomResult {
  TmaAtom atom;
  dsl::Num descriptor;  // the host program's pointer to the TMA descriptor (param space)
  Tensor tma_tensor;
  std::vector<dsl::Num> merge_ratios;  // i32 host values, one per merged leaf (see TmaAtom)
};

// `smem_swizzle`: the swizzle of a ComposedLayout smem layout (or none). Emits the descriptor's
// tma_encode op in the host program being traced.
// `internal_type`: null, or make_tiled_tma_atom's internal_type (refused with NOT_SUPPORTED
// unless it is the element type, TFloat32 over Float32, or an integer type wider than the
// element that the tile's contiguous innermost run recasts to, or an 8-bit integer over 4-bit
// elements: 16U4_ALIGN16B).
TmaAtomResult make_tiled_tma_atom(TmaKind kind, const Tensor& gmem, const layout::Layout& smem_outer,
                                  const std::optional<layout::Swizzle>& smem_swizzle, const layout::Tiler& cta_tiler,
                                  int num_multicast, ir::Type internal_type = nullptr);

// cute.copy with a TMA atom: src/dst are the global coordinate tile and the shared tile of one
// CTA (loads: global -> shared, completing on `mbar`; stores: shared -> global).
void tma_copy(const TmaAtom& atom, const dsl::Num& descriptor, const Tensor& src, const Tensor& dst,
              const std::optional<dsl::Num>& mbar, const std::optional<dsl::Num>& mcast_mask,
              const std::vector<dsl::Num>& merge_ratios = {});

// The generic copy atom of a TMA table, carrying the descriptor value of the trace it is used in
// (the host program's, or the kernel parameter it became) and the merged dimension's ratios.
CopyAtom make_tma_copy_atom(const TmaAtom& atom, const dsl::Num& descriptor, const std::vector<dsl::Num>& merge_ratios);
// cute.copy with a TMA copy atom (algorithm/copy.cpp): tma_copy with the call's mbarrier, its
// multicast mask (required by, and only passed to, multicast loads) and descriptor override.
void copy_sm90(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const CopyOperands& operands);

// cpasync.prefetch_descriptor / fence_tma_desc_acquire, cp_async_bulk_commit_group / wait_group.
void tma_descriptor_op(const dsl::Num& descriptor, bool prefetch);
void bulk_commit_group();
void bulk_wait_group(int64_t n, bool read);

}  // namespace opencute::cute
