// tile_of_cta_v_map: the tile make_tiled_tma_atom reads off CuTe's cta_v_map,
// composition(make_identity_layout(gmem.shape), tile), built here as the DSL builds it.
#include <gtest/gtest.h>

#include <string>

#include "cute/atom/tma_cta_v_map_sm90.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace {

using namespace opencute;
using namespace opencute::layout;

Layout cta_v_map(const IntTuple& gmem_shape, const Tiler& tile) {
  return composition(make_identity_layout(gmem_shape), tile);
}

std::string refusal(const Layout& map, int smem_rank, const IntTuple& gmem_shape) {
  try {
    cute::tile_of_cta_v_map(map, smem_rank, gmem_shape);
  } catch (const dsl::UserError& e) {
    EXPECT_EQ(e.code, "NOT_SUPPORTED");
    return e.what();
  }
  return "<accepted>";
}

TEST(TmaCtaVMap, FlatModesGiveTheirExtents) {
  const IntTuple g{64, 128};
  EXPECT_EQ(to_string(cta_v_map(g, Tiler::from_shape(IntTuple{8, 32}))), "(8,32):(1@0,1@1)");
  EXPECT_EQ(to_string(cute::tile_of_cta_v_map(cta_v_map(g, Tiler::from_shape(IntTuple{8, 32})), 2, g)), "[8:1;32:1]");
}

TEST(TmaCtaVMap, ModesPastTheSmemRankAreDropped) {
  // quack's epilogue store: (m, n, l) with the batch mode in the map, a 2-mode smem tile.
  const IntTuple g{16, 64, 2};
  const Layout map = cta_v_map(g, Tiler::from_shape(IntTuple{8, 32}));
  EXPECT_EQ(to_string(map), "(8,32,2):(1@0,1@1,1@2)");
  EXPECT_EQ(to_string(cute::tile_of_cta_v_map(map, 2, g)), "[8:1;32:1]");
  EXPECT_EQ(to_string(cute::tile_of_cta_v_map(map, 3, g)), "[8:1;32:1;2:1]");
}

TEST(TmaCtaVMap, SubModesOfAHierarchicalModeBecomeCoordinateOffsets) {
  // FlashAttention-4's packed GQA: gmem ((heads 4, seqlen 64), d 128, batch 2); the tile's first
  // mode is (4 heads, 32 rows) over (heads, seqlen): positions -> offsets 1 (heads), 4 (seqlen).
  const IntTuple g{IntTuple{4, 64}, 128, 2};
  const Layout map = cta_v_map(g, Tiler(std::vector<Tiler>{Tiler(make_layout(IntTuple{4, 32})),
                                                           Tiler::from_shape(IntTuple(64))}));
  EXPECT_EQ(to_string(map), "((4,32),64,2):((1@0@0,1@1@0),1@1,1@2)");
  EXPECT_EQ(to_string(cute::tile_of_cta_v_map(map, 2, g)), "[(4,32):(1,4);64:1]");
}

TEST(TmaCtaVMap, OtherLayoutsAreRefused) {
  const IntTuple g{64, 128};
  // Modes swapped: mode 0 maps to gmem mode 1.
  const Layout swapped = make_layout(IntTuple{8, 32}, IntTuple{ScaledBasis{1, {1}}, ScaledBasis{1, {0}}});
  std::string why = refusal(swapped, 2, g);
  EXPECT_NE(why.find("a cta_v_map layout must map mode 0 to gmem mode 0 with unit stride"), std::string::npos) << why;
  // A stride of 2 along the mode.
  const Layout strided = make_layout(IntTuple{8, 32}, IntTuple{ScaledBasis{1, {0}}, ScaledBasis{2, {1}}});
  why = refusal(strided, 2, g);
  EXPECT_NE(why.find("must map mode 1 to gmem mode 1"), std::string::npos) << why;
  // An integer layout is no cta_v_map.
  EXPECT_NE(refusal(make_layout(IntTuple{8, 32}), 2, g).find("must map mode 0"), std::string::npos);
  // Sub-modes over a gmem mode that is not hierarchical.
  const Layout sub = make_layout(IntTuple{IntTuple{4, 2}, 32},
                                 IntTuple{IntTuple{ScaledBasis{1, {0, 0}}, ScaledBasis{1, {0, 1}}}, ScaledBasis{1, {1}}});
  EXPECT_NE(refusal(sub, 2, g).find("must map mode 0"), std::string::npos);
  EXPECT_EQ(to_string(cute::tile_of_cta_v_map(sub, 2, IntTuple{IntTuple{4, 16}, 128})), "[(4,2):(1,4);32:1]");
}

}  // namespace
