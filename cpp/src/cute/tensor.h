// CuTe tensors while tracing: an engine (a typed pointer, or a coordinate for the counting
// iterator of identity tensors) composed with a layout. Slicing, element access, loads and
// stores emit IR through the current builder; everything static folds.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "dsl/num.h"
#include "layout/layout.h"

namespace opencute::cute {

// The builder tensor operations emit through: the layout algebra's current one, else the active
// trace's (`what` names the operation in the error raised outside a trace).
ir::Builder& trace_builder(const char* what);

struct Tensor {
  // Memory tensors: `ptr` is a pointer-typed IR value. Coordinate tensors: `ptr` is null and
  // `coord` is the iterator's coordinate (a tuple of integers).
  ir::Value* ptr = nullptr;
  layout::IntTuple coord;
  layout::Layout layout;
  // Swizzled memory tensors (CuTe's ComposedLayout `swizzle o offset o layout`, the shared-memory
  // layouts of tensor-core kernels): element c lives at ptr + swizzle(swizzle_offset + layout(c)),
  // `layout` being the outer layout that every partitioning operation transforms.
  std::optional<layout::Swizzle> swizzle;
  layout::Int swizzle_offset = 0;
  // The swizzle on the pointer instead (the CuTe DSL's `recast_ptr(p, swizzle)` and
  // `get_tensor(layout, swizzle=)`, CuTe's swizzle_ptr): it acts on the byte address of each
  // element, ptr + layout(c), so it is in bytes and depends on where the tensor lies.
  bool swizzle_in_address = false;
  // A shared-memory descriptor tensor (make_fragment_A/B of a wgmma or tcgen05 TiledMma over an
  // smem tensor, tcgen05.get_s2t_smem_desc_tensor; CuTe's GMMA/UMMA DescriptorIterator tensors):
  // `ptr` is the start address of the descriptor at the origin, mode 0 of `layout` is 1:0 (one
  // descriptor per atom) and `desc_tile` is the layout, in elements, of the tile that each
  // descriptor describes (cute/atom/mma_sm90.h). As in CuTe, which recasts the smem layout to
  // uint128_t, `layout` counts in 16-byte units (the descriptor's start-address unit), so kernels
  // that build descriptors by hand from crd2idx on it (FlashAttention-4) get CuTe's offsets.
  std::optional<layout::Layout> desc_tile;
  // A tcgen05 descriptor encoded in full by tcgen05.make_umma_smem_desc (the tile in the bytes of
  // the tensor's own element type, sm_103's absolute "next buffer" address included): the MMA
  // takes this 64-bit value as it is (cute/atom/mma_sm103.h).
  ir::Value* desc_value = nullptr;

  bool is_memory() const { return ptr != nullptr; }
  bool is_swizzled() const { return swizzle.has_value(); }
  // The tensor's layout as the CuTe DSL shows it: `S<b,m,s> o offset o outer` when swizzled.
  layout::ComposedLayout composed_layout() const;
  ir::Type element() const { return ptr ? ptr->type->element : nullptr; }
  ir::AddrSpace space() const { return ptr->type->space; }
};

Tensor make_tensor(ir::Value* ptr, layout::Layout layout);
// A tensor over a composed layout whose inner function is a swizzle. The part of the offset that
// lies above every swizzled bit moves into the pointer (it commutes with the swizzle).
Tensor make_tensor(ir::Value* ptr, const layout::ComposedLayout& layout);
Tensor make_coord_tensor(layout::IntTuple coord, layout::Layout layout);
// Coordinates over `shape`, starting at zero: element c is c itself.
Tensor make_identity_tensor(const layout::IntTuple& shape);
// A register tensor (a per-thread local array sized to the layout's cosize).
Tensor make_rmem_tensor(const layout::Layout& layout, ir::Type element);
// CuTe's make_fragment_like: a compact layout of the same shape whose first mode keeps the
// input's stride order (so vector accesses line up) and whose other modes follow in order.
layout::Layout fragment_like_layout(const layout::Layout& l);

// The same engine with another layout (what the divides and compositions of tensors do): for a
// swizzled tensor `l` replaces the outer layout and the swizzle stays.
Tensor with_layout(const Tensor& t, layout::Layout l);
// A tensor whose pointer carries a byte-address swizzle (see Tensor::swizzle_in_address).
Tensor make_address_swizzled_tensor(ir::Value* ptr, const layout::Swizzle& swizzle, layout::Layout layout);
// `ptr` with the byte-address swizzle applied (CuTe's swizzle_ptr dereference).
ir::Value* swizzle_address(ir::Builder& b, ir::Value* ptr, const layout::Swizzle& swizzle);
// The same pointer with a whole new composed layout (swizzle, offset and outer).
Tensor with_composed_layout(const Tensor& t, const layout::ComposedLayout& l);
// The address of element `coord` (a full coordinate or a linear index) of a memory tensor.
ir::Value* element_address(const Tensor& t, const layout::IntTuple& coord);
// The address `coord` has before the tensor's swizzle moves it (the address itself for an
// unswizzled tensor): what an instruction that swizzles by address itself takes (a TMA copy's
// shared-memory tile), so that it lands where the swizzled tensor reads it whatever the tile's
// alignment.
ir::Value* unswizzled_element_address(const Tensor& t, const layout::IntTuple& coord);
// CuTe's recast_tensor: the same bytes seen as elements of `element` (layout and swizzle recast).
Tensor recast_tensor(const Tensor& t, ir::Type element);

// A descriptor tensor over the smem tensor `smem` (see Tensor::desc_tile): mode 0 becomes `vec`,
// the other modes are recast to 16-byte units (CuTe's replace<0>(recast<uint128_t>(layout), vec)).
Tensor make_descriptor_tensor(const Tensor& smem, layout::Layout vec, layout::Layout tile);
// `ptr` moved by `units` 16-byte descriptor units (CuTe's DescriptorIterator + offset).
ir::Value* advance_descriptor(ir::Builder& b, ir::Value* ptr, const layout::Int& units);

// CuTe's domain_offset: the same layout over an engine moved by layout(coord), so that element c
// is the old element coord + c.
Tensor domain_offset(const layout::IntTuple& coord, const Tensor& t);
// tensor[coord] where coord holds underscores: the sub-tensor over the `_` modes.
Tensor slice(const Tensor& t, const layout::IntTuple& coord);
// Element access with a full coordinate (or a linear index): memory tensors load / store;
// coordinate tensors return the coordinate.
// With assertions enabled (--enable-assertions) the coordinate is checked against the shape at
// run time; `file`/`line` name the user's indexing expression in the failure message.
void check_bounds(const Tensor& t, const layout::IntTuple& coord, const std::string& file, int line);
dsl::Num load_element(const Tensor& t, const layout::IntTuple& coord);
void store_element(const Tensor& t, const layout::IntTuple& coord, const dsl::Num& value);
layout::IntTuple coordinate_at(const Tensor& t, const layout::IntTuple& coord);

// All elements in the layout's linear (colexicographic) order, with the widest vector
// accesses that the layout and the pointer's alignment allow (at most 16 bytes).
std::vector<dsl::Num> load(const Tensor& t);
void store(const Tensor& t, const std::vector<dsl::Num>& values);
void fill(const Tensor& t, const dsl::Num& value);

// `_` for each top-level mode of `shape` (one `_` for a leaf): CuTe's repeat<rank>(_).
layout::IntTuple underscores_like(const layout::IntTuple& shape);

// CuTe's partitioning: the tile of `t` at `coord` (inner) and a thread's elements (outer).
Tensor local_tile(const Tensor& t, const layout::Tiler& tiler, const layout::IntTuple& coord);
Tensor local_tile(const Tensor& t, const layout::IntTuple& tiler, const layout::IntTuple& coord,
                  const layout::IntTuple& proj);
Tensor local_partition(const Tensor& t, const layout::Layout& thr_layout, const layout::Int& thr_index);
Tensor local_partition(const Tensor& t, const layout::Layout& thr_layout, const layout::Int& thr_index,
                       const layout::IntTuple& proj);

// Printing: tensor<ptr<f32, gmem> o (4,3):(3,1)> and the MLIR-like `.type` text
// !cute.memref<f32, gmem, align<16>, "(4,3):(3,1)"> / !cute.coord_tensor<"(0,0)", "(8,4):(1@0,1@1)">.
std::string to_string(const Tensor& t);
std::string type_string(const Tensor& t);

// Whether the code being traced may use vector loads and stores: kernels may; host functions
// run on the host interpreter, which moves one scalar at a time.
bool vector_access_allowed();

// The largest number of consecutive elements (in linear order, a power of two, at most
// `max_bytes`) that every vector access of `t` can move at once, given its layout and pointer
// alignment.
int vector_width(const Tensor& t, int max_bytes = 16);
// The same for vectors that stay inside mode 0 of `layout` (the value mode of a partition).
int mode0_vector_width(ir::Type ptr_type, const layout::Layout& layout, int max_bytes = 16);
// The same for mode 0 of a tensor's layout, taking its swizzle into account (vectors never cross
// the swizzle's 2^M-element runs).
int mode0_vector_width(const Tensor& t, int max_bytes = 16);

}  // namespace opencute::cute
