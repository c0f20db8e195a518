#include "cute/atom/copy_sm90.h"
#include "cute/atom/tma_shared_sm90.h"

#include <algorithm>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/mbarrier.h"
#include "dsl/tracer.h"
#include "ir/source_line.h"
#include "layout/print.h"

namespace opencute::cute {
namespace L = layout;
using tma_detail::op_name;
using tma_detail::refuse_kernel_encoded;
using tma_detail::require_sm90;
using tma_detail::same_tile_offsets;

namespace {

[[noreturn]] void tma_error(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }

// The (extent, stride) runs of a static layout's leaves sorted by stride, adjacent runs merged:
// two layouts with the same runs cover the same offsets in the same order of strides, whatever
// the order of their modes (the (M, K) tile a TMA atom fills and the MMA-partitioned
// ((atom M, atom K), rest M, rest K) view of the same shared memory).
std::vector<std::pair<int64_t, int64_t>> sorted_runs(const L::Layout& l) {
  std::vector<std::pair<int64_t, int64_t>> runs;  // (stride, extent)
  std::vector<L::IntTuple> shapes = L::flatten_to_vector(l.shape), strides = L::flatten_to_vector(l.stride);
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!shapes[k].is_int() || !strides[k].is_int() || !shapes[k].as_int().is_static() ||
        !strides[k].as_int().is_static())
      return {};
    const int64_t n = shapes[k].as_int().value(), d = strides[k].as_int().value();
    if (n > 1 && d != 0) runs.push_back({d, n});  // a broadcast leaf adds no offsets (filter_zeros views match)
  }
  std::stable_sort(runs.begin(), runs.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (auto [d, n] : runs) {
    if (!merged.empty() && merged.back().first * merged.back().second == d)
      merged.back().second *= n;
    else
      merged.push_back({d, n});
  }
  return merged;
}

}  // namespace

namespace tma_detail {

bool same_tile_offsets(const L::Layout& a, const L::Layout& b) {
  if (L::coalesce(a) == L::coalesce(b)) return true;
  std::vector<std::pair<int64_t, int64_t>> ra = sorted_runs(a);
  return !ra.empty() && ra == sorted_runs(b);
}

const char* op_name(TmaKind k) {
  switch (k) {
    case TmaKind::Load: return "CopyBulkTensorTileG2SOp";
    case TmaKind::LoadMulticast: return "CopyBulkTensorTileG2SMulticastOp";
    case TmaKind::Store: return "CopyBulkTensorTileS2GOp";
  }
  return "?";
}

// A descriptor a kernel encoded (make_tiled_tma_atom in a kernel) exists on the GPU only once
// copy_tensormap wrote it to memory: TMA instructions and prefetches name that slot instead.
void refuse_kernel_encoded(const dsl::Num& descriptor, const std::string& what) {
  const ir::Value* v = descriptor.value;
  if (v && v->def && v->def->code == ir::OpCode::TmaEncode && v->type->space != ir::AddrSpace::Param)
    tma_error("TMA_COPY", what + ": the atom was made in the kernel, where its descriptor exists only once "
                                 "cpasync.copy_tensormap wrote it to a 128-byte slot; name that slot with tma_desc_ptr=");
}

void require_sm90(const std::string& what) {
  const support::Arch& arch = dsl::Tracer::current_target_arch();
  if (arch.older_than(90))
    tma_error("UNSUPPORTED_ARCH", what + " needs sm_90 or newer (TMA), but the program is compiled for " + arch.name);
}

}  // namespace tma_detail

namespace {

int64_t static_int(const L::IntTuple& t, const std::string& what) {
  if (!t.is_int() || !t.as_int().is_static()) tma_error("TMA_LAYOUT", what + " must be a static integer");
  return t.as_int().value();
}

struct Run {
  int mode;
  int64_t size, sstride, tile_stride;  // tile_stride: coordinate step in the mode, then in the leaf
  int leaf = -1;                       // the global layout's flattened leaf this dimension addresses
  int64_t pos_stride = 0;              // position stride in the tile mode
  bool folded = false;  // an outer run of a leaf kept whole: extent 1, stepped through by the copies
  std::vector<std::pair<int, int64_t>> parts = {};  // a merged dimension's further leaves and their scales (TmaAtom::parts)
};

// log2 of a power of two.
int log2_of(int64_t x) {
  int l = 0;
  while ((int64_t(1) << l) < x) ++l;
  return l;
}

// The leaves of mode i of a static smem layout, each a run of positions in the tile mode, taken to
// global coordinates through the CTA tiler's mode `tile` (positions -> coordinate offsets): one
// run per contiguous piece. A plain extent n is n:1 and keeps each leaf whole; an epilogue tile
// that interleaves the warps' columns, (32,2):(1,64), breaks a 64-position leaf into 32 columns
// and then the 32 columns 64 further on.
void mode_runs(const L::Layout& s, int i, const L::Layout& tile, const std::string& name, std::vector<Run>& out) {
  L::Layout m = s[i];
  std::vector<L::IntTuple> shapes = L::flatten_to_vector(m.shape), strides = L::flatten_to_vector(m.stride);
  int64_t pos = 1;
  for (size_t k = 0; k < shapes.size(); ++k) {
    int64_t n = static_int(shapes[k], "the smem layout's shape");
    int64_t sstride = static_int(strides[k], "the smem layout's stride");
    // A broadcast leaf (stride 0: the block-scale factors' vector mode) holds one element for all
    // its positions: TMA loads its first position only, as CuTe C++'s right_inverse of the smem
    // layout drops such modes from the box.
    if (n > 1 && sstride != 0) {
      L::Layout coords;
      try {
        coords = L::coalesce(L::composition(tile, L::Layout(n, pos)));
      } catch (const L::LayoutError&) {
        tma_error("TMA_LAYOUT", name + ": mode " + std::to_string(i) + " of the CTA tiler, " + L::to_string(tile) +
                                    ", cannot be split along the smem layout's runs of that mode");
      }
      std::vector<L::IntTuple> cs = L::flatten_to_vector(coords.shape), cd = L::flatten_to_vector(coords.stride);
      int64_t p = pos, sd = sstride;
      for (size_t j = 0; j < cs.size(); ++j) {
        const int64_t cn = static_int(cs[j], "the CTA tiler's shape"), step = static_int(cd[j], "the CTA tiler's stride");
        if (cn == 1) continue;
        if (step <= 0)
          tma_error("TMA_LAYOUT", name + ": mode " + std::to_string(i) + " of the CTA tiler, " + L::to_string(tile) +
                                      ", must take increasing global coordinates (positive strides)");
        out.push_back({i, cn, sd, step, -1, p});
        p *= cn;
        sd *= cn;
      }
    }
    pos *= n;
  }
}

// CuTe's coalesce_256 of the tile's global strides: consecutive tile dimensions (smem order) whose
// global strides continue each other merge into one tensor-map dimension while its box stays
// within `dim0_limit` elements (dimension 0) or 256. Only whole boxes merge (dimensions below the
// split one, or the split one when a single box holds its slice), each a leaf's only run, read
// from coordinate step 1, with a static stride, every leaf but the last whole: the merged
// coordinate is then a fixed combination of the leaves' coordinates, and its extent CuTe's
// recurrence sum((extent_j - 1) * scale_j) + 1. `split` follows its dimension (and `split_box`, merged).
void merge_contiguous_dims(std::vector<Run>& dims, int& split, int64_t& split_box, int num_multicast,
                           const std::vector<L::IntTuple>& flat_shape, const std::vector<L::IntTuple>& flat_stride,
                           int64_t dim0_limit) {
  if (split < 0) return;
  auto mergeable = [&](size_t k, int64_t* gstride) {
    const Run& d = dims[k];
    if (d.folded || d.tile_stride != 1 || int(k) > split) return false;
    if (int(k) == split && (split_box != d.size || num_multicast != 1)) return false;
    if (std::count_if(dims.begin(), dims.end(), [&](const Run& o) { return o.leaf == d.leaf; }) != 1) return false;
    const L::IntTuple& st = flat_stride[size_t(d.leaf)];
    if (!st.is_int() || !st.as_int().is_static() || st.as_int().value() <= 0) return false;
    *gstride = st.as_int().value();
    return true;
  };
  std::vector<Run> out;
  bool open = false;  // out.back() may take the next dimension
  int64_t first_gstride = 0, last_size = 0;
  int last_leaf = -1, merges = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t gs = 0;
    const bool ok = mergeable(k, &gs);
    if (open && ok) {
      Run& g = out.back();
      const L::IntTuple& whole = flat_shape[size_t(last_leaf)];
      const int64_t limit = out.size() == 1 ? dim0_limit : 256;
      if (whole.is_int() && whole.as_int().is_static_value(last_size) && gs == first_gstride * g.size &&
          g.size * dims[k].size <= limit && int(g.parts.size()) < TmaAtom::kMaxParts) {
        g.parts.push_back({dims[k].leaf, g.size});
        g.size *= dims[k].size;
        last_size = dims[k].size;
        last_leaf = dims[k].leaf;
        ++merges;
        continue;
      }
    }
    out.push_back(dims[k]);
    open = ok;
    first_gstride = gs;
    last_size = dims[k].size;
    last_leaf = dims[k].leaf;
  }
  split -= merges;
  dims = std::move(out);
  if (!dims[size_t(split)].parts.empty()) split_box = dims[size_t(split)].size;  // a whole box, merged
}

}  // namespace

TmaAtomResult make_tiled_tma_atom(TmaKind kind, const Tensor& gmem, const L::Layout& smem_outer,
                                  const std::optional<L::Swizzle>& smem_swizzle, const L::Tiler& cta_tiler,
                                  int num_multicast, ir::Type internal_type) {
  const std::string name = std::string("make_tiled_tma_atom(") + op_name(kind) + ")";
  dsl::Tracer& t = dsl::Tracer::require(name.c_str());
  // In a kernel (NVIDIA's MoE GEMMs build one per expert from run-time extents) the descriptor is
  // encoded by the kernel: its tma_encode op gives a generic pointer that cpasync.copy_tensormap
  // writes to a global or shared slot, which TMA copies then name (tma_desc_ptr=).
  const bool in_kernel = t.in_kernel();
  require_sm90(name);
  if (!gmem.is_memory() || gmem.space() == ir::AddrSpace::Smem || gmem.space() == ir::AddrSpace::Rmem)
    tma_error("TMA_LAYOUT", name + ": the tensor must be a global-memory tensor");
  if (num_multicast < 1) tma_error("INVALID_VALUE", name + ": num_multicast must be at least 1");
  if (kind != TmaKind::LoadMulticast && num_multicast != 1)
    tma_error("INVALID_VALUE", name + ": num_multicast=" + std::to_string(num_multicast) +
                                   " needs CopyBulkTensorTileG2SMulticastOp");
  // The tensor map's element type. CuTe recasts the tensor to its TmaInternalType: a wider
  // integer type packs runs of elements (block-scale factors travel as Int16 pairs of bytes), so
  // dimension 0 counts `recast` elements per map element. The same width is only a name (TFloat32
  // over Float32: the bytes move unchanged, the tf32 MMA drops the low mantissa bits; Uint8 over 8-bit floats).
  const ir::Type element = gmem.element();
  const int elem_bits = element->bit_size();
  ir::Type map_element = element;
  int64_t recast = 1;
  bool unpacked = false;
  if (internal_type && internal_type != element) {
    const int ib = internal_type->bit_size();
    const bool wider_int = internal_type->is_int() && !internal_type->is_bool() && ib > elem_bits && ib % elem_bits == 0 &&
                           !element->is_sub_byte();
    // Another type of the same width (Uint8 over Float8E8M0FNU factors, sm_103's GEMMs) names the
    // same bytes.
    const bool same_width = ib == elem_bits && !element->is_sub_byte() && !internal_type->is_bool();
    // An 8-bit integer over 4-bit elements: each value in a byte slot of shared memory (CUDA's
    // 16U4_ALIGN16B; sm_120's mixed FP4 x FP8 GEMMs, whose smem tile is Int8).
    unpacked = ib == 8 && elem_bits == 4 && internal_type->is_int() && !internal_type->is_bool();
    if (!(internal_type == ir::tf32() && element == ir::f32()) && !wider_int && !same_width && !unpacked)
      tma_error("NOT_SUPPORTED", "make_tiled_tma_atom: internal_type " + dsl::dtype_name(internal_type) + " over " +
                                     dsl::dtype_name(element) + " elements is not supported (only the tensor's own "
                                     "type, TFloat32 over Float32, or a wider integer type that the tile's "
                                     "contiguous bytes recast to)" +
                                     (element->is_sub_byte() ? "; 4-bit elements take Int8 or Uint8 (a byte slot "
                                                               "each in shared memory: CUDA's 16U4_ALIGN16B)" : ""));
    if (wider_int) {
      map_element = internal_type;
      recast = ib / elem_bits;
    }
    if (same_width) map_element = internal_type;  // shared tiles of either type take the bytes
  }
  if (unpacked && kind == TmaKind::Store)
    tma_error("NOT_SUPPORTED", name + ": TMA stores no " + dsl::dtype_name(element) + " elements unpacked in shared "
                                      "memory (internal_type " + dsl::dtype_name(internal_type) +
                                      "; CUDA's 16U4_ALIGN16B is a load format)");
  if (element->is_sub_byte() && elem_bits != 4)
    tma_error("TMA_LAYOUT", name + ": TMA moves " + dsl::dtype_name(element) + " (" + std::to_string(elem_bits) +
                                " bits) only unpacked in shared memory, which is not implemented; packed sub-byte "
                                "elements must be 4 bits");
  // The most elements of `element` one box holds along dimension `k` (256 map elements).
  auto box_limit = [&](size_t k) { return k == 0 ? 256 * recast : int64_t(256); };
  // The tiler's modes: extents (n:1) or layouts from tile positions to global coordinate offsets.
  std::vector<L::Layout> tile_modes;
  for (const L::Tiler& mode : cta_tiler.kind == L::Tiler::Kind::Tuple ? cta_tiler.modes : std::vector<L::Tiler>{cta_tiler}) {
    if (mode.kind != L::Tiler::Kind::Layout || !mode.layout.is_static())
      tma_error("TMA_LAYOUT", name + ": each mode of the CTA tiler must be a static extent or layout");
    tile_modes.push_back(mode.layout);
  }
  const int r = int(tile_modes.size());
  const L::Layout& g = gmem.layout;
  if (g.rank() < r)
    tma_error("TMA_LAYOUT", name + ": the CTA tiler has " + std::to_string(r) + " modes but the tensor only " +
                                std::to_string(g.rank()));
  // The smem layout of one tile: drop a trailing stage mode.
  L::Layout s = smem_outer;
  if (s.rank() == r + 1) {
    std::vector<L::Layout> modes;
    for (int i = 0; i < r; ++i) modes.push_back(s[i]);
    s = L::make_layout(modes);
  }
  if (s.rank() != r || !s.is_static())
    tma_error("TMA_LAYOUT", name + ": the smem layout must be static with one mode per tiler mode (plus an optional "
                                   "stage mode)");
  std::vector<Run> runs;
  int64_t tile_elems = 1;
  for (int i = 0; i < r; ++i) {
    int64_t want = L::size(tile_modes[size_t(i)]).value();
    int64_t have = L::size(s[i]).value();
    if (want != have)
      tma_error("TMA_LAYOUT", name + ": mode " + std::to_string(i) + " of the smem layout has " + std::to_string(have) +
                                  " elements but the CTA tiler asks for " + std::to_string(want));
    tile_elems *= want;
    mode_runs(s, i, tile_modes[size_t(i)], name, runs);
  }
  std::stable_sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.sstride < b.sstride; });
  // TMA writes a box densely, dimension 0 fastest: the smem layout must be such an arrangement.
  int64_t dense = 1;
  for (const Run& run : runs) {
    if (run.sstride != dense)
      tma_error("TMA_LAYOUT", name + ": the smem layout does not lay the tile out densely (a stride of " +
                                  std::to_string(run.sstride) + " where " + std::to_string(dense) +
                                  " was expected); TMA fills a box without gaps");
    dense *= run.size;
  }
  std::vector<Run> runs_by_mode;
  for (const Run& run : runs) {
    if (!runs_by_mode.empty() && runs_by_mode.back().mode == run.mode &&
        runs_by_mode.back().tile_stride * runs_by_mode.back().size == run.tile_stride &&
        runs_by_mode.back().pos_stride * runs_by_mode.back().size == run.pos_stride)
      runs_by_mode.back().size *= run.size;  // the next run of the same mode: one dimension
    else
      runs_by_mode.push_back(run);
  }
  // The global layout's leaves: a hierarchical mode outside the tile (fmha.py's ((h_r, h_k), b))
  // addresses one tensor-map dimension per leaf.
  const std::vector<L::IntTuple> flat_shape = L::flatten_to_vector(g.shape), flat_stride = L::flatten_to_vector(g.stride);
  std::vector<int> leaf_start(size_t(g.rank()) + 1, 0);
  for (int i = 0; i < g.rank(); ++i) leaf_start[size_t(i) + 1] = leaf_start[size_t(i)] + int(L::flatten_to_vector(g.shape[i]).size());
  auto unit_leaf = [&](int f) {
    const L::IntTuple& fs = flat_shape[size_t(f)];
    return fs.is_int() && fs.as_int().is_static_value(1);
  };
  // A run over a mode the tile spans: the leaves of that mode it crosses, one dimension each.
  // Positions p of a mode (h, s) are coordinates (p % h, p / h): a run of 128 positions over
  // (4, seqlen) is 4 along h and 32 along s (FlashAttention-4's packed-GQA query). Leaves of static
  // extent 1 never move; the last leaf that moves takes the rest of the run, whatever its extent.
  std::vector<Run> dims;
  for (const Run& d : runs_by_mode) {
    const std::string refused = name + ": mode " + std::to_string(d.mode) + " of the global tensor is hierarchical; "
                                       "a mode the tile spans needs one extent and stride";
    int last = -1;
    for (int f = leaf_start[size_t(d.mode)]; f < leaf_start[size_t(d.mode) + 1]; ++f)
      if (!unit_leaf(f)) last = f;
    if (last < 0) last = leaf_start[size_t(d.mode)];
    int64_t leaf_pos = 1;  // position stride of the leaf's coordinate inside the mode
    int64_t step = d.tile_stride, pos = d.pos_stride, rest = d.size, sstride = d.sstride;
    for (int f = leaf_start[size_t(d.mode)]; f <= last && rest > 1; ++f) {
      if (f != last && unit_leaf(f)) continue;
      const L::IntTuple& fs = flat_shape[size_t(f)];
      if (!fs.is_int() || !flat_stride[size_t(f)].is_int()) tma_error("TMA_LAYOUT", refused);
      if (f != last && !fs.as_int().is_static()) tma_error("TMA_LAYOUT", refused);
      const int64_t extent = f == last ? 0 : fs.as_int().value();
      if (f != last && step >= leaf_pos * extent) {  // the run steps over this leaf
        leaf_pos *= extent;
        continue;
      }
      if (step % leaf_pos != 0) tma_error("TMA_LAYOUT", refused);
      const int64_t c = step / leaf_pos;
      int64_t take = rest;
      if (f != last) {
        if (extent % c != 0) tma_error("TMA_LAYOUT", refused);
        const int64_t fits = extent / c;
        if (rest > fits) {
          if (rest % fits != 0) tma_error("TMA_LAYOUT", refused);
          take = fits;
        }
      }
      dims.push_back({d.mode, take, sstride, c, f, pos});
      rest /= take;
      step *= take;
      pos *= take;
      sstride *= take;
      if (f != last) leaf_pos *= extent;
    }
    if (rest != 1) tma_error("TMA_LAYOUT", refused);
  }
  const size_t tile_dims = dims.size();
  // A leaf the smem layout splits into runs (an MN-major swizzle atom tiled past its 64
  // elements) takes one dimension per run where its extent is known to be a multiple of the
  // outer run: one instruction then covers them all. Otherwise TMA could not clip the last,
  // partial run at the extent (it would read or write past it), so the leaf keeps one dimension
  // over its whole extent, addressed through its innermost run, and its outer runs become
  // dimensions of extent 1 that the copies step through, one instruction per position: CuTe's
  // make_tma_copy, which ends the box at the first run that is not the next one in gmem, does
  // the same for every such layout.
  int first_folded = -1;
  for (size_t k = 0; k < tile_dims; ++k) {
    const Run& d = dims[k];
    int64_t inner = d.tile_stride, outer = d.tile_stride;
    for (size_t j = 0; j < tile_dims; ++j) {
      if (dims[j].leaf != d.leaf) continue;
      outer = std::max(outer, dims[j].tile_stride);
      inner = std::min(inner, dims[j].tile_stride);
    }
    const L::IntTuple& gs = flat_shape[size_t(d.leaf)];
    if (d.tile_stride == inner || !gs.is_int() || gs.as_int().divisibility() % outer == 0) continue;
    dims[k].folded = true;  // the innermost run becomes the outermost: its coordinate is the whole quotient
    if (first_folded < 0) first_folded = int(k);
  }
  // One instruction per slice where TMA allows; else the box is whole below a split dimension,
  // a part of it there and 1 above, and each copy steps through the rest (CuTe's (TMA, TMA_Iter)).
  // Multicast: each CTA's slice is 1/num_multicast of the split dimension, which is the outermost
  // dimension that divides by num_multicast (CuTe's choice too when its box ends below: an
  // MN-major (64,3) tile multicast by 2 splits its 64 rows of K, three instructions each).
  int split = tile_dims == 0 ? -1 : int(tile_dims) - 1;
  for (size_t k = 0; k < tile_dims; ++k)
    if (dims[k].size > box_limit(k)) {
      split = int(k);
      break;
    }
  if (first_folded >= 0 && split > first_folded) split = first_folded;  // a folded run's box is 1
  if (num_multicast > 1) {
    while (split >= 0 && dims[size_t(split)].size % num_multicast != 0) --split;
    if (split < 0)
      tma_error("TMA_LAYOUT", name + ": the tile's outermost smem run (" +
                                  std::to_string(tile_dims ? dims.back().size : 1) + " elements of mode " +
                                  std::to_string(tile_dims ? dims.back().mode : 0) + ") cannot be split between " +
                                  std::to_string(num_multicast) + " CTAs");
  }
  int mcast_mode = -1;
  int64_t mcast_step = 0, split_box = 1, copies = 1;
  if (split >= 0) {
    const Run& sd = dims[size_t(split)];
    const int64_t slice = sd.size / num_multicast;
    split_box = sd.folded ? 1 : slice;
    while (split_box > box_limit(size_t(split)) || slice % split_box != 0) --split_box;
    copies = slice / split_box;
    for (size_t k = size_t(split) + 1; k < tile_dims; ++k) copies *= dims[k].size;
    if (num_multicast > 1) {
      mcast_mode = sd.mode;
      mcast_step = slice * sd.pos_stride;
    }
  }
  merge_contiguous_dims(dims, split, split_box, num_multicast, flat_shape, flat_stride, box_limit(0));
  const size_t tile_dims_merged = dims.size();
  // Tile modes of size 1 and global modes outside the tile: a dimension with a box of 1 per leaf,
  // except leaves that never move the address (static extent 1 or static stride 0), as CuTe does.
  for (int f = 0; f < leaf_start[size_t(g.rank())]; ++f) {
    if (std::any_of(dims.begin(), dims.end(), [&](const Run& d) {
          return d.leaf == f || std::any_of(d.parts.begin(), d.parts.end(), [&](const auto& p) { return p.first == f; });
        }))
      continue;
    const L::IntTuple& fs = flat_shape[size_t(f)];
    const L::IntTuple& fd = flat_stride[size_t(f)];
    if ((fs.is_int() && fs.as_int().is_static_value(1)) || (fd.is_int() && fd.as_int().is_static_value(0))) continue;
    if (!fs.is_int() || !fd.is_int())
      tma_error("TMA_LAYOUT", name + ": leaf " + std::to_string(f) + " of the global tensor is not an integer mode");
    int mode = 0;
    while (leaf_start[size_t(mode) + 1] <= f) ++mode;
    dims.push_back({mode, 1, 0, 1, f, 0});
  }
  // More than 5: the trailing box-1 dimensions become one (CuTe groups modes 4.. the same way).
  // Its stride is the first leaf's; each leaf's coordinate counts in multiples of it (ratio_j =
  // stride_j / stride_0, passed to the kernel with the descriptor), so the extent is
  // sum((extent_j - 1) * ratio_j) + 1.
  // The coordinate order of the TMA tensor (see TmaAtom::coord_of_leaf): the leaves in the order of
  // the first tensor-map dimension each feeds (a merged dimension's own leaf, then its parts'), then
  // the leaves no dimension reads; taken before the trailing dimensions merge.
  std::vector<int> leaf_order;
  auto order_leaf = [&](int f) {
    if (std::find(leaf_order.begin(), leaf_order.end(), f) == leaf_order.end()) leaf_order.push_back(f);
  };
  for (const Run& d : dims) {
    order_leaf(d.leaf);
    for (const auto& part : d.parts) order_leaf(part.first);
  }
  for (int f = 0; f < int(flat_shape.size()); ++f) order_leaf(f);
  std::vector<Run> merged;
  if (dims.size() > 5) {
    // (one by one: GCC 12's -Wnonnull misreads vector::assign of a sub-range at -O3)
    for (size_t i = 4; i < dims.size(); ++i) merged.push_back(dims[i]);
    if (size_t(merged.size()) > sizeof(TmaAtom::merged_leaf) / sizeof(int) ||
        std::any_of(merged.begin(), merged.end(), [](const Run& d) { return d.size != 1; }))
      tma_error("TMA_LAYOUT", name + ": the copy needs " + std::to_string(dims.size()) +
                                  " tensor-map dimensions; TMA has at most 5");
    dims.resize(5);
  }
  TmaAtomResult res;
  TmaAtom& a = res.atom;
  a.kind = kind;
  a.op_name = op_name(kind);
  a.element = element;
  a.map_element = map_element;
  a.recast = recast;
  a.unpacked = unpacked;
  a.rank = int(dims.size());
  a.smem_layout = s;
  a.tile_elems = tile_elems;
  a.num_multicast = num_multicast;
  a.mcast_mode = mcast_mode;
  a.mcast_step = mcast_step;
  a.split_dim = split;
  a.copies = copies;
  a.tile_rank = r;
  // Byte strides from element strides (packed 4-bit elements: half a byte each).
  auto bytes_of = [&](const L::Int& elems) { return elem_bits % 8 == 0 ? elems * L::Int(elem_bits / 8) : elems * L::Int(elem_bits) / L::Int(8); };
  // The swizzle must be TMA's byte swizzle S<B,4,3> (B = 1, 2, 3: 32, 64, 128 bytes), written in
  // bytes (a swizzle the smem pointer applies to byte addresses, as get_tensor(swizzle=) does) or
  // in elements (S<B, 7 - log2(element bits), 3> on element offsets: S<3,5,3> for 4-bit ones).
  if (smem_swizzle && !smem_swizzle->is_identity()) {
    const L::Swizzle& sw = *smem_swizzle;
    const int log2bits = log2_of(elem_bits);
    if (sw.shift != 3 || (sw.base != 4 && sw.base + log2bits != 7) || sw.bits < 1 || sw.bits > 3)
      tma_error("TMA_LAYOUT", name + ": the smem swizzle S<" + std::to_string(sw.bits) + "," + std::to_string(sw.base) +
                                  "," + std::to_string(sw.shift) + "> of " + dsl::dtype_name(a.element) +
                                  " elements is none of TMA's 32, 64 or 128-byte swizzles");
    a.swizzle_bytes = 16 << sw.bits;
  }
  if (unpacked) {
    // cuda.h's rules for 16U4_ALIGN16B: a box 128 values wide (128 bytes of shared memory), no
    // swizzle or the 128-byte one.
    const std::string what = " for " + dsl::dtype_name(element) + " elements unpacked in shared memory (internal_type " +
                             dsl::dtype_name(internal_type) + ", CUDA's 16U4_ALIGN16B)";
    if (a.rank < 1 || dims[0].size != 128 || !dims[0].parts.empty())
      tma_error("TMA_LAYOUT", name + ": the tile's innermost run must be 128 values, one box of TMA" + what + "; it has " +
                                  std::to_string(dims.empty() ? 0 : dims[0].size));
    if (a.swizzle_bytes != 0 && a.swizzle_bytes != 128)
      tma_error("TMA_LAYOUT", name + ": the smem swizzle must be none or 128 bytes" + what + ", not " +
                                  std::to_string(a.swizzle_bytes) + " bytes");
  }
  // Global extents and byte strides of each dimension (host values).
  std::vector<ir::Value*> extents, strides;
  std::vector<int64_t> last_run_stride(flat_shape.size(), 0);
  for (const Run& d : dims)
    if (!d.folded) last_run_stride[size_t(d.leaf)] = std::max(last_run_stride[size_t(d.leaf)], d.tile_stride);
  ir::Builder& b = t.builder();
  L::BuilderScope scope(&b);
  for (size_t k = 0; k < dims.size(); ++k) {
    const Run& d = dims[k];
    const L::IntTuple& gs = flat_shape[size_t(d.leaf)];
    const L::IntTuple& gd = flat_stride[size_t(d.leaf)];
    a.gmode[k] = d.leaf;
    a.parts[k] = int(d.parts.size());
    for (size_t j = 0; j < d.parts.size(); ++j) {
      a.part_leaf[k][j] = d.parts[j].first;
      a.part_scale[k][j] = d.parts[j].second;
    }
    if (k == 4 && !merged.empty()) {
      // The shared dimension's stride is that of its first leaf whose extent is not 1 (a leaf
      // of extent 1 never moves the address, whatever stride it was given: torch reports 1 for
      // size-1 modes); each leaf counts in multiples of it. All of extent 1: any valid stride.
      a.merged_leaves = int(merged.size());
      ir::Type i64 = ir::i64();
      ir::Value* base = b.const_int(i64, std::max<int64_t>(1, 128 / elem_bits));
      for (size_t j = merged.size(); j-- > 0;) {
        ir::Value* nj = flat_shape[size_t(merged[j].leaf)].as_int().materialize(i64);
        ir::Value* sj = flat_stride[size_t(merged[j].leaf)].as_int().materialize(i64);
        base = b.select(b.cmp(ir::CmpPredicate::Ne, nj, b.const_int(i64, 1)), sj, base);
      }
      ir::Value* divisor = b.select(b.cmp(ir::CmpPredicate::Eq, base, b.const_int(i64, 0)), b.const_int(i64, 1), base);
      ir::Value* extent = b.const_int(i64, 1);
      for (size_t j = 0; j < merged.size(); ++j) {
        a.merged_leaf[j] = merged[j].leaf;
        ir::Value* nj = flat_shape[size_t(merged[j].leaf)].as_int().materialize(i64);
        ir::Value* sj = flat_stride[size_t(merged[j].leaf)].as_int().materialize(i64);
        ir::Value* unit = b.cmp(ir::CmpPredicate::Eq, nj, b.const_int(i64, 1));
        ir::Value* multiple = b.cmp(ir::CmpPredicate::Eq, b.binary(ir::OpCode::Rem, sj, divisor), b.const_int(i64, 0));
        b.assertion(b.binary(ir::OpCode::Or, unit, multiple),
                    name + ": the tensor's trailing modes share one tensor-map dimension, so the stride of leaf " +
                        std::to_string(merged[j].leaf) + " must be a multiple of the first of them whose extent is not 1",
                    "", 0);
        ir::Value* ratio = b.select(unit, b.const_int(i64, 0), b.binary(ir::OpCode::Div, sj, divisor));
        extent = b.binary(ir::OpCode::Add, extent,
                          b.binary(ir::OpCode::Mul, b.binary(ir::OpCode::Sub, nj, b.const_int(i64, 1)), ratio));
        res.merge_ratios.push_back(dsl::Num::of_value(b.cast(ratio, ir::i32())));
      }
      a.tile_stride[k] = 1;
      a.box[k] = 1;
      a.run[k] = 1;
      a.wrap[k] = 1;
      a.tile_mode[k] = -1;
      a.outermost[k] = true;
      extents.push_back(extent);
      strides.push_back(bytes_of(L::Int::dynamic(base)).materialize(i64));
      continue;
    }
    a.tile_stride[k] = d.tile_stride;
    a.run[k] = d.size;
    // An inner run's dimension reaches up to the leaf's next run (whose coordinate step is a
    // multiple of this one's): the run itself when the tiler takes the leaf contiguously, more
    // when it skips coordinates (the box then covers the first `size` of them).
    int64_t next = 0;
    for (const Run& o : dims)
      if (o.leaf == d.leaf && !o.folded && o.tile_stride > d.tile_stride && (!next || o.tile_stride < next))
        next = o.tile_stride;
    if (next && (next % d.tile_stride != 0 || next / d.tile_stride < d.size))
      tma_error("TMA_LAYOUT", name + ": the CTA tiler takes coordinates of global leaf " + std::to_string(d.leaf) +
                                  " in runs that overlap or do not nest (" + std::to_string(d.size) + " at step " +
                                  std::to_string(d.tile_stride) + ", then step " + std::to_string(next) + ")");
    a.wrap[k] = next ? next / d.tile_stride : d.size;
    a.box[k] = int(k) < split ? d.size : int(k) == split ? split_box : 1;
    a.pos_stride[k] = d.pos_stride;
    a.tile_mode[k] = k < tile_dims_merged ? d.mode : -1;
    a.folded[k] = d.folded;
    a.outermost[k] = !d.folded && d.tile_stride == last_run_stride[size_t(d.leaf)];
    const int64_t run = last_run_stride[size_t(d.leaf)];
    if (a.outermost[k] && run > 1 && gs.as_int().divisibility() % run != 0) {
      // A split mode: the inner runs address whole runs, so the extent must be a multiple of
      // them (else the last run would read past the mode's end). Checked now when the extent is
      // static, else when the host program runs.
      const std::string msg = name + ": the smem layout splits mode " + std::to_string(d.mode) + " into runs of " +
                              std::to_string(run) + " elements, which must divide the tensor's extent there";
      if (gs.as_int().is_static()) tma_error("TMA_LAYOUT", msg);
      L::Int rem = gs.as_int() % L::Int(run);
      b.assertion(L::eq(rem, L::Int(0)).materialize(ir::bool_type()), msg, "", 0);
    }
    L::Int stride = gd.as_int() * L::Int(d.tile_stride);
    if (k == 0 && !stride.is_static_value(1))
      tma_error("TMA_LAYOUT", name + ": the smem tile's innermost run (mode " + std::to_string(d.mode) +
                                  ") is not contiguous in global memory; TMA needs its innermost box dimension to be");
    L::Int extent = d.folded ? L::Int(1) : a.outermost[k] ? L::ceil_div(gs.as_int(), L::Int(d.tile_stride))
                                                           : L::Int(a.wrap[k]);
    // A merged dimension reaches as far as its leaves do, each counted in its scale (CuTe's
    // recurrence; the leaves but the last are whole, so the box is the run of the first ones).
    for (const auto& [leaf, scale] : d.parts)
      extent = extent + (flat_shape[size_t(leaf)].as_int() - L::Int(1)) * L::Int(scale);
    if (k == 0 && recast > 1) {
      // Dimension 0 counts map elements: its box and extent hold whole ones.
      const std::string msg = name + ": the innermost run of " + std::to_string(d.size) + " " +
                              dsl::dtype_name(element) + " elements does not recast to whole " +
                              dsl::dtype_name(map_element) + " elements";
      if (d.size % recast != 0 || a.box[0] % recast != 0) tma_error("TMA_LAYOUT", msg);
      if (extent.is_static() && extent.value() % recast != 0) tma_error("TMA_LAYOUT", msg);
      if (!extent.is_static() && extent.divisibility() % recast != 0)
        b.assertion(L::eq(extent % L::Int(recast), L::Int(0)).materialize(ir::bool_type()), msg, "", 0);
      extent = extent / L::Int(recast);
      a.box[0] /= recast;
    }
    extents.push_back(extent.materialize(ir::i64()));
    if (element->is_sub_byte() && k > 0 && !d.folded && !extent.is_static_value(1) &&
        (stride.divisibility() * elem_bits) % 128 != 0) {
      // Packed elements: the byte stride must be whole (and TMA wants a multiple of 16 bytes),
      // unless the extent is 1 (the stride then never moves an address; see below).
      const std::string msg = name + ": the stride of mode " + std::to_string(d.mode) + " is not a whole number of " +
                              "16-byte units of packed " + dsl::dtype_name(element) + " elements";
      if (stride.is_static() && extent.is_static()) tma_error("TMA_LAYOUT", msg);
      ir::Value* whole = L::eq((stride * L::Int(elem_bits)) % L::Int(128), L::Int(0)).materialize(ir::bool_type());
      if (!extent.is_static())
        whole = b.binary(ir::OpCode::Or, whole, b.cmp(ir::CmpPredicate::Eq, extent.materialize(ir::i64()),
                                                      b.const_int(ir::i64(), 1)));
      b.assertion(whole, msg, "", 0);
    }
    // Dimension 0 is one element (checked above): its stride is the map's element size in bytes.
    ir::Value* byte_stride = k == 0 ? b.const_int(ir::i64(), std::max(1, map_element->bit_size() / 8))
                                    : bytes_of(stride).materialize(ir::i64());
    // A folded run (extent 1) is only read at coordinate 0: any stride TMA accepts will do.
    if (d.folded) byte_stride = b.const_int(ir::i64(), 16);
    if (k > 0 && d.size == 1 && !extent.is_static()) {
      // A mode outside the tile whose extent turns out to be 1 never moves the address; its
      // stride may be anything (torch reports 1 for size-1 modes), which TMA would refuse.
      ir::Value* unit = b.cmp(ir::CmpPredicate::Eq, extent.materialize(ir::i64()), b.const_int(ir::i64(), 1));
      byte_stride = b.select(unit, b.const_int(ir::i64(), 16), byte_stride);
    }
    strides.push_back(byte_stride);
  }
  std::vector<ir::Value*> ops = {gmem.ptr};
  ops.insert(ops.end(), extents.begin(), extents.end());
  ops.insert(ops.end(), strides.begin(), strides.end());
  ir::Op* op = b.create(ir::OpCode::TmaEncode, ops,
                        {ir::pointer_type(a.map_element, in_kernel ? ir::AddrSpace::Generic : ir::AddrSpace::Param, 64)});
  op->int_attr = a.rank;
  op->ints = {a.swizzle_bytes};
  for (int k = 0; k < a.rank; ++k) op->ints.push_back(a.box[k]);
  if (unpacked) op->ints.push_back(14);  // CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B
  res.descriptor = dsl::Num::of_value(op->result());
  res.tma_tensor = make_identity_tensor(g.shape);
  if (flat_shape.size() > 1) {
    // Coordinate j is leaf leaf_order[j]'s (a kernel that offsets a TMA tensor's iterator by hand
    // adds a column offset to the contiguous dimension's coordinate, component 0 for a K-major
    // operand). A broadcast leaf (static stride 0) is no tensor-map dimension: as in CuTe C++'s
    // make_tma_copy (stride 0 or extent 1: "no contribution to the TMA") its TMA-tensor stride is
    // 0, so filter_zeros drops it: a kernel stepping through the distinct k-granules of a
    // broadcast scale factor reads one granule per step, and a block-scaled GEMM's filtered
    // scale-factor tile holds the box's distinct positions (tma_copy takes either tile).
    a.coord_of_leaf.assign(flat_shape.size(), 0);
    for (size_t j = 0; j < leaf_order.size(); ++j) a.coord_of_leaf[size_t(leaf_order[j])] = int(j);
    std::vector<L::IntTuple> coord_strides, zeros;
    for (size_t f = 0; f < flat_shape.size(); ++f) {
      const bool broadcast = flat_stride[f].is_int() && flat_stride[f].as_int().is_static_value(0) &&
                             !(flat_shape[f].is_int() && flat_shape[f].as_int().is_static_value(1));
      coord_strides.push_back(broadcast ? L::IntTuple(0)
                                        : L::IntTuple(L::ScaledBasis{L::Int(1), {a.coord_of_leaf[f]}}));
      zeros.push_back(L::IntTuple(0));
    }
    res.tma_tensor = make_coord_tensor(L::IntTuple(std::move(zeros)),
                                       L::Layout(g.shape, L::unflatten(coord_strides, g.shape)));
  }
  return res;
}

}  // namespace opencute::cute
