// The tile a TMA copy takes, read off CuTe's cta_v_map: make_tiled_tma_atom's cta_tiler may be
// the layout composition(make_identity_layout(gmem.shape), tile), which maps the tile's
// coordinates to the gmem modes 1@0, 1@1 ... in order, as CuTe C++'s make_tma_copy takes it.
//   - a mode of stride 1@i is the extent of gmem mode i;
//   - a mode whose sub-modes map onto the sub-modes of a hierarchical gmem mode (1@i@j: the
//     packed-GQA output of FlashAttention-4, ((heads, seqlen), d, ...)) becomes the layout from its
//     positions to the gmem mode's colexicographic coordinate offsets: sub-mode j's stride is the
//     product of the gmem sub-extents below j (static ones only);
//   - modes past the smem layout's rank (the batch mode quack keeps) are outside the box: extent 1
//     there, so they are dropped.
#pragma once

#include "layout/layout.h"

namespace opencute::cute {

// The tiler make_tiled_tma_atom uses for the cta_v_map layout `cta_v_map` (one mode per tile
// mode, then any batch modes), for an smem layout of `smem_rank` modes over a gmem tensor of
// shape `gmem_shape`. Errors (dsl::UserError NOT_SUPPORTED): a mode that is not one of the forms
// above.
layout::Tiler tile_of_cta_v_map(const layout::Layout& cta_v_map, int smem_rank, const layout::IntTuple& gmem_shape);

}  // namespace opencute::cute
