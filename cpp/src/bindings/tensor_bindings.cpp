// Bindings of the tensor layer. Arguments are converted (layouts and tuples through
// layout_convert, scalars through num_convert), the C++ in cpp/src/cute does the work, and
// results come back as tensors, pointers, DSL scalars or tuples.
#include "bindings/tensor_bindings.h"

#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/layout_convert.h"
#include "bindings/num_convert.h"
#include "cute/atom/bulk_copy_sm90.h"
#include "cute/atom/copy_sm80.h"
#include "cute/carry.h"
#include "cute/algorithm/copy.h"
#include "cute/atom/tiled_copy.h"
#include "cute/pointer.h"
#include "cute/print_tensor.h"
#include "cute/tensor.h"
#include "cute/atom/mma_sm103.h"
#include "cute/tensor_ssa.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

namespace L = opencute::layout;
using cute::Tensor;
using dsl::Num;

// A traced pointer value (cute.Pointer inside a trace).
struct PointerValue {
  ir::Value* value = nullptr;
  std::optional<L::Swizzle> swizzle;  // a byte-address swizzle (CuTe's swizzle_ptr)
};

std::string pointer_text(const PointerValue& p) {
  std::string s = cute::pointer_string(p.value->type);
  if (p.swizzle) s = s.substr(0, s.size() - 1) + ", " + L::to_string(*p.swizzle) + ">";
  return s;
}

struct ThrCopy {
  cute::TiledCopy tiled;
  L::Int thr_index;
  nb::object thr_index_py;
};

bool is_tensor(nb::handle h) { return nb::isinstance<Tensor>(h); }
Tensor as_tensor(nb::handle h, const char* fn) {
  if (!is_tensor(h))
    throw nb::type_error((std::string(fn) + ": expected a Tensor, got " + py_type_name(h)).c_str());
  return nb::cast<Tensor>(h);
}

L::Layout tensor_layout_arg(nb::handle h) {
  if (is_composed(h)) {
    L::ComposedLayout c = as_composed(h);
    if (c.inner_is_swizzle() && c.swizzle().is_identity() && c.offset.is_int() && c.offset.as_int().is_static_value(0))
      return c.outer;
    throw dsl::UserError("NOT_SUPPORTED", "register and coordinate tensors take a plain layout, got the composed layout " +
                                              L::to_string(c));
  }
  return layout_or_shape(h);
}

// A memory tensor over `layout`: a plain layout (or shape), or a swizzled composed layout; a
// pointer that carries a swizzle takes a plain layout.
Tensor memory_tensor(const PointerValue& p, nb::handle layout) {
  if (p.swizzle) {
    if (is_composed(layout))
      throw dsl::UserError("TYPE_MISMATCH", "a swizzled pointer (" + pointer_text(p) +
                                                ") takes a plain layout, got the composed layout " +
                                                L::to_string(as_composed(layout)));
    return cute::make_address_swizzled_tensor(p.value, *p.swizzle, layout_or_shape(layout));
  }
  if (is_composed(layout)) return cute::make_tensor(p.value, as_composed(layout));
  return cute::make_tensor(p.value, layout_or_shape(layout));
}

// The DSL's tiler_mn: a tuple of layouts, one per mode (libraries read `tiler_mn[0].shape`).
nb::object tiler_mn_py(const cute::TiledCopy& tc) {
  nb::list out;
  for (L::Layout& l : cute::tiler_mn_layouts(tc)) out.append(py(std::move(l)));
  return nb::tuple(out);
}

// Python's view of a tensor's layout: the composed layout when the swizzle is in the layout.
nb::object tensor_layout(const Tensor& t) {
  if (t.is_swizzled() && !t.swizzle_in_address) return py(t.composed_layout());
  return py(t.layout);
}

// With --enable-assertions, element accesses are checked at run time; the failure names the
// user's line (found only then, so unchecked indexing costs nothing extra).
void bounds_check(const Tensor& t, const L::IntTuple& coord) {
  dsl::Tracer* tracer = dsl::Tracer::current();
  if (!tracer || !tracer->assertions_enabled()) return;
  nb::tuple where = nb::cast<nb::tuple>(nb::module_::import_("cutlass._dsl.errors").attr("user_location")());
  std::string file = where[0].is_none() ? "" : nb::cast<std::string>(where[0]);
  int line = where[1].is_none() ? 0 : nb::cast<int>(where[1]);
  cute::check_bounds(t, coord, file, line);
}

nb::object element_or_slice(const Tensor& t, nb::handle key) {
  Scope scope;
  L::IntTuple coord = to_tuple(key);
  if (L::has_underscore(coord)) return nb::cast(cute::slice(t, coord));
  bounds_check(t, coord);
  if (!t.is_memory()) return to_py(cute::coordinate_at(t, coord));
  return wrap_num(cute::load_element(t, coord));
}

std::vector<Num> nums_of(nb::handle values) {
  std::vector<Num> out;
  for (nb::handle v : values) out.push_back(to_num(v));
  return out;
}

// The tensor's IR values (pointer, dynamic layout leaves) and the tensor rebuilt from new ones:
// the same flattening that carries tensors through control flow (cute/carry).
nb::list extract_values(const Tensor& t) {
  nb::list out;
  for (auto& v : cute::tensor_values(t)) out.append(v);
  return out;
}

Tensor from_values(const Tensor& t, nb::handle values) { return cute::tensor_with_values(t, nums_of(values)); }

std::optional<Tensor> optional_tensor(nb::handle h, const char* fn) {
  if (h.is_none()) return std::nullopt;
  return as_tensor(h, fn);
}

}  // namespace

void bind_tensors(nb::module_& root) {
  nb::module_ m = root.def_submodule("cute", "CuTe tensors, pointers and copies");

  nb::class_<PointerValue>(m, "_Pointer")
      .def_prop_ro("value_type", [](const PointerValue& p) { return dtype_class(p.value->type->element); })
      .def_prop_ro("dtype", [](const PointerValue& p) { return dtype_class(p.value->type->element); })
      .def_prop_ro("_memspace", [](const PointerValue& p) { return int(p.value->type->space); })
      .def_prop_ro("alignment", [](const PointerValue& p) { return p.value->type->align; })
      // The alignment the address is known to have (FA4 re-makes offset pointers with it); a
      // pointer's type records only that one.
      .def_prop_ro("max_alignment", [](const PointerValue& p) { return p.value->type->align; })
      .def_prop_ro("_value", [](const PointerValue& p) { return Num::of_value(p.value); })
      .def_prop_ro("swizzle", [](const PointerValue& p) -> nb::object {
        if (!p.swizzle) return nb::none();
        return nb::cast(*p.swizzle);
      })
      .def("__add__", [](const PointerValue& p, nb::handle offset) {
        Scope scope;
        return PointerValue{cute::offset_pointer(cute::trace_builder("pointer arithmetic"), p.value, to_int(offset)),
                            p.swizzle};
      })
      .def("__radd__", [](const PointerValue& p, nb::handle offset) {
        Scope scope;
        return PointerValue{cute::offset_pointer(cute::trace_builder("pointer arithmetic"), p.value, to_int(offset)),
                            p.swizzle};
      })
      .def("__sub__", [](const PointerValue& p, nb::handle offset) {
        Scope scope;
        return PointerValue{cute::offset_pointer(cute::trace_builder("pointer arithmetic"), p.value,
                                                 L::Int(0) - to_int(offset)), p.swizzle};
      })
      .def("align", [](const PointerValue& p, int min_align) {
        // Rounds the address up to `min_align` bytes: (addr + a - 1) & -a, typed with that alignment.
        if (min_align <= 0 || (min_align & (min_align - 1)) != 0)
          throw dsl::UserError("VALUE_INVALID", "Pointer.align: alignment must be a positive power of two, got " +
                                                    std::to_string(min_align));
        ir::Type pt = p.value->type;
        if (pt->align >= min_align) return p;
        ir::Builder& b = cute::trace_builder("Pointer.align");
        ir::Value* addr = b.create(ir::OpCode::PtrToInt, {p.value}, {ir::i64()})->result();
        addr = b.binary(ir::OpCode::Add, addr, b.const_int(ir::i64(), min_align - 1));
        addr = b.binary(ir::OpCode::And, addr, b.const_int(ir::i64(), -int64_t(min_align)));
        ir::Type want = ir::pointer_type(pt->element, pt->space, min_align);
        return PointerValue{b.create(ir::OpCode::IntToPtr, {addr}, {want})->result(), p.swizzle};
      }, nb::arg("min_align"))
      .def("toint", [](const PointerValue& p) {
        ir::Builder& b = cute::trace_builder("Pointer.toint");
        if (p.value->type->space == ir::AddrSpace::Tmem)  // a tensor-memory address is 32 bits
          return wrap_num(Num::of_value(b.create(ir::OpCode::PtrToInt, {p.value}, {ir::i32()})->result()));
        return wrap_num(Num::of_value(b.bitcast(p.value, ir::i64())));
      })
      .def("__extract_mlir_values__", [](const PointerValue& p) {
        nb::list out;
        out.append(Num::of_value(p.value));
        return out;
      })
      .def("__new_from_mlir_values__", [](const PointerValue& p, nb::handle values) {
        return PointerValue{nums_of(values).at(0).value, p.swizzle};
      })
      .def("__str__", &pointer_text)
      .def("__repr__", &pointer_text);

  m.def("pointer_from_value", [](const Num& n) {
    if (n.is_static || !n.type->is_pointer()) throw nb::type_error("expected a traced pointer value");
    return PointerValue{n.value, std::nullopt};
  });
  m.def("make_ptr", [](nb::handle dtype, nb::handle address, int space, int align) {
    ir::Type e = dtype_of(dtype);
    ir::Builder& b = cute::trace_builder("make_ptr");
    ir::Value* addr = dsl::materialize(dsl::convert(to_num(address), ir::i64()));
    return PointerValue{b.bitcast(addr, ir::pointer_type(e, ir::AddrSpace(space), align > 0 ? align : e->min_align())),
                        std::nullopt};
  });
  m.def("recast_ptr", [](const PointerValue& p, nb::handle swizzle, nb::handle dtype) {
    // The result carries `swizzle` (None: no swizzle), as the CuTe DSL's recast_ptr(ptr, swizzle_, dtype).
    PointerValue r{p.value, std::nullopt};
    if (!swizzle.is_none()) {
      if (!nb::isinstance<L::Swizzle>(swizzle))
        throw nb::type_error(("recast_ptr: swizzle_ must be a Swizzle, got " + py_type_name(swizzle)).c_str());
      if (p.value->type->space != ir::AddrSpace::Smem)
        throw dsl::UserError("NOT_SUPPORTED", "recast_ptr: only shared-memory pointers can carry a swizzle, got " +
                                                  pointer_text(p));
      r.swizzle = nb::cast<L::Swizzle>(swizzle);
    }
    if (!dtype.is_none()) r.value = cute::recast_pointer(cute::trace_builder("recast_ptr"), p.value, dtype_of(dtype));
    return r;
  }, nb::arg("ptr"), nb::arg("swizzle").none(), nb::arg("dtype").none());

  nb::class_<Tensor>(m, "_Tensor")
      .def_prop_ro("layout", &tensor_layout)
      .def_prop_ro("shape", [](const Tensor& t) { return to_py(t.layout.shape); })
      .def_prop_ro("stride", [](const Tensor& t) { return to_py(t.layout.stride); })
      .def_prop_ro("element_type", [](const Tensor& t) -> nb::object {
        if (!t.is_memory()) return nb::none();
        return dtype_class(t.element());
      })
      .def_prop_ro("iterator", [](const Tensor& t) -> nb::object {
        if (t.is_memory()) {
          PointerValue p{t.ptr, std::nullopt};
          if (t.swizzle_in_address) p.swizzle = t.swizzle;
          return nb::cast(p);
        }
        return to_py(t.coord);
      })
      .def_prop_ro("_memspace", [](const Tensor& t) { return t.is_memory() ? int(t.space()) : -1; })
      .def_prop_ro("type", [](const Tensor& t) { return cute::type_string(t); })
      .def_prop_ro("is_memory", &Tensor::is_memory)
      .def("__getitem__", &element_or_slice, nb::arg("key").none())
      .def("__setitem__", [](const Tensor& t, nb::handle key, nb::handle value) {
        Scope scope;
        L::IntTuple coord = to_tuple(key);
        if (L::has_underscore(coord)) {  // t[slice] = v stores the TensorSSA v into the slice
          if (!nb::isinstance<cute::TensorSSA>(value))
            throw dsl::UserError("TYPE_MISMATCH", "assigning to a slice of a tensor needs a TensorSSA value, got " +
                                                      py_type_name(value));
          cute::store(cute::slice(t, coord), nb::cast<const cute::TensorSSA&>(value).values);
          return;
        }
        bounds_check(t, coord);
        cute::store_element(t, coord, to_num(value));
      }, nb::arg("key").none(), nb::arg("value"))
      .def("_load_values", [](const Tensor& t) {
        Scope scope;
        nb::list out;
        for (const Num& n : cute::load(t)) out.append(wrap_num(n));
        return out;
      })
      .def("_store_values", [](const Tensor& t, nb::handle values) {
        Scope scope;
        cute::store(t, nums_of(values));
      })
      .def("fill", [](const Tensor& t, nb::handle value) {
        Scope scope;
        cute::fill(t, to_num(value));
      })
      .def("_with_layout", [](const Tensor& t, nb::handle l) {
        Scope scope;
        // A composed layout replaces the whole (swizzle, offset, outer); a plain one the outer
        // layout of a swizzled tensor (what the divides and compositions of its layout give).
        if (is_composed(l)) return cute::with_composed_layout(t, as_composed(l));
        return cute::with_layout(t, layout_or_shape(l));
      })
      .def("__extract_mlir_values__", &extract_values)
      .def("__new_from_mlir_values__", &from_values)
      .def("__str__", [](const Tensor& t) { return cute::to_string(t); })
      .def("__repr__", [](const Tensor& t) { return cute::to_string(t); });

  m.def("layout_dynamic_values", [](const L::Layout& l) {
    nb::list out;
    for (const L::IntTuple* t : {&l.shape, &l.stride})
      for (auto& v : cute::tuple_values(*t)) out.append(v);
    return out;
  });
  m.def("layout_with_values", [](const L::Layout& l, nb::handle values) {
    std::vector<Num> vals = nums_of(values);
    size_t next = 0;
    L::IntTuple shape = cute::tuple_with_values(l.shape, vals, next);
    L::IntTuple stride = cute::tuple_with_values(l.stride, vals, next);
    return L::Layout(shape, stride);
  });

  m.def("make_tensor", [](nb::handle iterator, nb::handle layout) {
    Scope scope;
    if (nb::isinstance<PointerValue>(iterator)) return memory_tensor(nb::cast<PointerValue>(iterator), layout);
    if (nb::isinstance<Tensor>(iterator) && nb::cast<const Tensor&>(iterator).desc_value)  // make_umma_smem_desc's
      return cute::with_layout(nb::cast<Tensor>(iterator), tensor_layout_arg(layout));
    if (nb::isinstance<Num>(iterator) || nb::hasattr(iterator, "_n")) {
      Num n = to_num(iterator);
      if (!n.is_static && n.type->is_pointer()) return memory_tensor(PointerValue{n.value, std::nullopt}, layout);
    }
    return cute::make_coord_tensor(to_tuple(iterator), tensor_layout_arg(layout));
  });
  // tcgen05.make_umma_smem_desc(src, layout, major, next_src): cute/atom/mma_sm103.h.
  m.def("make_umma_smem_desc", [](nb::handle src, nb::handle layout, int major, nb::handle next) {
    Scope scope;
    auto pointer = [](nb::handle p, const char* which) {
      if (!nb::isinstance<PointerValue>(p))
        throw dsl::UserError("TYPE_MISMATCH", std::string("make_umma_smem_desc: ") + which +
                                                  " must be a shared-memory pointer (a tensor's .iterator)");
      return nb::cast<PointerValue>(p);
    };
    Tensor t = memory_tensor(pointer(src, "src"), layout);
    if (next.is_none()) return cute::make_umma_smem_desc(t, cute::OperandMajor(major), nullptr);
    Tensor n = memory_tensor(pointer(next, "next_src"), nb::int_(1));
    return cute::make_umma_smem_desc(t, cute::OperandMajor(major), &n);
  });
  m.def("domain_offset", [](nb::handle coord, nb::handle t) {
    Scope scope;
    return cute::domain_offset(to_tuple(coord), as_tensor(t, "domain_offset"));
  });
  m.def("recast_tensor", [](nb::handle t, nb::handle dtype) {
    Scope scope;
    return cute::recast_tensor(as_tensor(t, "recast_tensor"), dtype_of(dtype));
  });
  m.def("make_identity_tensor", [](nb::handle shape) {
    Scope scope;
    return cute::make_identity_tensor(to_tuple(shape));
  });
  m.def("make_rmem_tensor", [](nb::handle layout, nb::handle dtype) {
    Scope scope;
    return cute::make_rmem_tensor(tensor_layout_arg(layout), dtype_of(dtype));
  });
  m.def("make_fragment_like", [](nb::handle src, nb::handle dtype) -> nb::object {
    Scope scope;
    if (is_tensor(src)) {
      Tensor t = nb::cast<Tensor>(src);
      ir::Type e = dtype.is_none() ? t.element() : dtype_of(dtype);
      if (!e) throw dsl::UserError("TYPE_MISMATCH", "make_fragment_like of a coordinate tensor needs a dtype");
      return nb::cast(cute::make_rmem_tensor(cute::fragment_like_layout(t.layout), e));
    }
    return py(cute::fragment_like_layout(tensor_layout_arg(src)));
  }, nb::arg("src"), nb::arg("dtype").none());
  m.def("local_tile", [](nb::handle t, nb::handle tiler, nb::handle coord, nb::handle proj) {
    Scope scope;
    Tensor x = as_tensor(t, "local_tile");
    if (proj.is_none()) return cute::local_tile(x, to_tiler(tiler), to_tuple(coord));
    return cute::local_tile(x, to_tuple(tiler), to_tuple(coord), to_tuple(proj));
  }, nb::arg("t"), nb::arg("tiler"), nb::arg("coord"), nb::arg("proj").none());
  m.def("local_partition", [](nb::handle t, nb::handle thr_layout, nb::handle index, nb::handle proj) {
    Scope scope;
    Tensor x = as_tensor(t, "local_partition");
    L::Layout tl = require_layout(thr_layout, "local_partition");
    if (proj.is_none()) return cute::local_partition(x, tl, to_int(index));
    return cute::local_partition(x, tl, to_int(index), to_tuple(proj));
  }, nb::arg("t"), nb::arg("thr_layout"), nb::arg("index"), nb::arg("proj").none());

  nb::class_<cute::CopyAtom>(m, "CopyAtom")
      .def_prop_ro("value_type", [](const cute::CopyAtom& a) { return dtype_class(a.value_type); })
      .def_prop_ro("num_bits_per_copy", [](const cute::CopyAtom& a) { return a.num_bits; })
      .def_prop_ro("thr_id", [](const cute::CopyAtom& a) { return py(a.thr_id()); })
      .def_prop_ro("layout_src_tv", [](const cute::CopyAtom& a) { return py(a.layout_src_tv()); })
      .def_prop_ro("layout_dst_tv", [](const cute::CopyAtom& a) { return py(a.layout_dst_tv()); })
      .def_prop_ro("op_name", [](const cute::CopyAtom& a) { return a.op_name; })
      .def_prop_ro("num_matrices", [](const cute::CopyAtom& a) { return a.num_matrices; })
      .def_prop_ro("transpose", [](const cute::CopyAtom& a) { return a.transpose; })
      .def("__str__", [](const cute::CopyAtom& a) { return cute::to_string(a); })
      .def("__repr__", [](const cute::CopyAtom& a) { return cute::to_string(a); });
  m.def("make_copy_atom", [](const std::string& op, nb::handle dtype, int num_bits) {
    return cute::make_copy_atom(op, dtype_of(dtype), num_bits);
  });

  nb::class_<cute::TiledCopy>(m, "TiledCopy")
      .def_prop_ro("tiler_mn", [](const cute::TiledCopy& t) { return tiler_mn_py(t); })
      .def_prop_ro("layout_tv_tiled", [](const cute::TiledCopy& t) { return py(t.layout_tv); })
      .def_prop_ro("layout_src_tv_tiled", [](const cute::TiledCopy& t) { return py(cute::tiled_layout_tv(t, true)); })
      .def_prop_ro("layout_dst_tv_tiled", [](const cute::TiledCopy& t) { return py(cute::tiled_layout_tv(t, false)); })
      .def_prop_ro("size", [](const cute::TiledCopy& t) { return to_py(t.size()); })
      .def_prop_ro("value_type", [](const cute::TiledCopy& t) { return dtype_class(t.atom.value_type); })
      .def_prop_ro("atom", [](const cute::TiledCopy& t) { return t.atom; })
      .def("get_slice", [](const cute::TiledCopy& t, nb::handle thr) {
        Scope scope;
        return ThrCopy{t, to_int(thr), nb::borrow(thr)};
      })
      .def("retile", [](const cute::TiledCopy& t, nb::handle x) {
        Scope scope;
        return cute::retile(t, as_tensor(x, "retile"));
      })
      .def("__str__", [](const cute::TiledCopy& t) { return cute::to_string(t); })
      .def("__repr__", [](const cute::TiledCopy& t) { return cute::to_string(t); });
  m.def("make_tiled_copy", [](const cute::CopyAtom& atom, nb::handle layout_tv, nb::handle tiler_mn) {
    Scope scope;
    L::Layout tv = require_layout(layout_tv, "make_tiled_copy");
    if (is_seq(tiler_mn) && tiler_has_layout(tiler_mn)) {  // another copy's tiler_mn
      std::vector<L::Layout> modes;
      for (nb::handle m : tiler_mn) modes.push_back(layout_or_shape(m));
      return cute::make_tiled_copy(atom, tv, modes);
    }
    return cute::make_tiled_copy(atom, tv, to_tuple(tiler_mn));
  });
  // SM80 atoms (cute/atom/copy_sm80): cp.async, ldmatrix, stmatrix.
  m.def("make_bulk_copy_g2s_atom", [](nb::handle dtype) { return cute::make_bulk_copy_g2s_atom(dtype_of(dtype)); });
  m.def("make_cp_async_atom", [](nb::handle dtype, int num_bits, int cache_mode) {
    return cute::make_cp_async_atom(dtype_of(dtype), num_bits, cache_mode);
  });
  m.def("make_ldmatrix_atom", [](nb::handle dtype, int num, bool transpose, bool eight_bit, int unpack_bits) {
    return cute::make_ldmatrix_atom(dtype_of(dtype), num, transpose, eight_bit, unpack_bits);
  }, nb::arg("dtype"), nb::arg("num"), nb::arg("transpose"), nb::arg("eight_bit"), nb::arg("unpack_bits") = 0);
  m.def("make_ldmatrix16x16_atom", [](nb::handle dtype, int num, bool transpose) {
    return cute::make_ldmatrix16x16_atom(dtype_of(dtype), num, transpose);
  });
  m.def("make_stmatrix_atom", [](nb::handle dtype, int num, bool transpose) {
    return cute::make_stmatrix_atom(dtype_of(dtype), num, transpose);
  });
  m.def("cp_async_commit_group", &cute::cp_async_commit_group);
  m.def("cp_async_wait_group", [](int64_t n) { cute::cp_async_wait_group(n); });
  m.def("make_tiled_copy_S", [](const cute::CopyAtom& atom, const cute::TiledCopy& tc) {
    return cute::make_tiled_copy_S(atom, tc);
  });
  m.def("make_tiled_copy_D", [](const cute::CopyAtom& atom, const cute::TiledCopy& tc) {
    return cute::make_tiled_copy_D(atom, tc);
  });
  // A thread's slice stands for its tiled copy (a ThrCopy is a TiledCopy in the CuTe DSL:
  // FlashAttention-4's SM100 epilogue passes one).
  m.def("make_tiled_copy_S", [](const cute::CopyAtom& atom, const ThrCopy& thr) {
    return cute::make_tiled_copy_S(atom, thr.tiled);
  });
  m.def("make_tiled_copy_D", [](const cute::CopyAtom& atom, const ThrCopy& thr) {
    return cute::make_tiled_copy_D(atom, thr.tiled);
  });
  m.def("make_cotiled_copy", [](const cute::CopyAtom& atom, nb::handle atom_tv, nb::handle data_layout) {
    Scope scope;
    return cute::make_cotiled_copy(atom, require_layout(atom_tv, "make_cotiled_copy"),
                                   require_layout(data_layout, "make_cotiled_copy"));
  });
  m.def("make_tiled_copy_tv", [](const cute::CopyAtom& atom, nb::handle thr, nb::handle val) {
    Scope scope;
    return cute::make_tiled_copy_tv(atom, require_layout(thr, "make_tiled_copy_tv"),
                                    require_layout(val, "make_tiled_copy_tv"));
  });

  nb::class_<ThrCopy>(m, "ThrCopy")
      .def_prop_ro("thr_idx", [](const ThrCopy& c) { return c.thr_index_py; })
      .def_prop_ro("tiler_mn", [](const ThrCopy& c) { return tiler_mn_py(c.tiled); })
      .def_prop_ro("layout_tv_tiled", [](const ThrCopy& c) { return py(c.tiled.layout_tv); })
      // loc= / ip= (MLIR source locations in CuTe DSL signatures; quack passes them) are accepted and unused.
      .def("partition_S", [](const ThrCopy& c, nb::handle x, nb::handle, nb::handle) {
        Scope scope;
        return cute::partition(c.tiled, as_tensor(x, "partition_S"), c.thr_index);
      }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("partition_D", [](const ThrCopy& c, nb::handle x, nb::handle, nb::handle) {
        Scope scope;
        return cute::partition(c.tiled, as_tensor(x, "partition_D"), c.thr_index, false);
      }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("retile", [](const ThrCopy& c, nb::handle x, nb::handle, nb::handle) {
        Scope scope;
        return cute::retile(c.tiled, as_tensor(x, "retile"));
      }, nb::arg("x"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      // A thread's slice is also its tiled copy (CuTe's ThrCopy derives from TiledCopy):
      // FlashAttention-4 slices a slice again (gmem_thr_copy.get_slice(0)).
      .def("get_slice", [](const ThrCopy& c, nb::handle thr) {
        Scope scope;
        return ThrCopy{c.tiled, to_int(thr), nb::borrow(thr)};
      })
      .def_prop_ro("size", [](const ThrCopy& c) { return to_py(c.tiled.size()); })
      .def_prop_ro("value_type", [](const ThrCopy& c) { return dtype_class(c.tiled.atom.value_type); })
      .def_prop_ro("atom", [](const ThrCopy& c) { return c.tiled.atom; })
      .def_prop_ro("layout_src_tv_tiled", [](const ThrCopy& c) { return py(cute::tiled_layout_tv(c.tiled, true)); })
      .def_prop_ro("layout_dst_tv_tiled", [](const ThrCopy& c) { return py(cute::tiled_layout_tv(c.tiled, false)); });

  // cute.copy: any atom (a copy atom, a tiled copy, a thread's slice, or a Python atom that wraps
  // a C++ one as `_copy_atom`, as the TMA atoms do), with all the operands a call may name; the
  // atom's op picks the implementation in C++ (algorithm/copy.cpp).
  m.def("copy", [](nb::handle atom, nb::handle src, nb::handle dst, nb::handle pred, nb::handle mbar,
                   nb::handle mcast_mask, nb::handle descriptor, const std::string& file, int line) {
    Scope scope;
    cute::CopyAtom a;
    if (nb::isinstance<cute::TiledCopy>(atom)) a = nb::cast<cute::TiledCopy>(atom).atom;
    else if (nb::isinstance<ThrCopy>(atom)) a = nb::cast<ThrCopy>(atom).tiled.atom;
    else if (nb::isinstance<cute::CopyAtom>(atom)) a = nb::cast<cute::CopyAtom>(atom);
    else {
      nb::object inner = nb::getattr(atom, "_copy_atom", nb::none());
      a = nb::cast<cute::CopyAtom>(inner.is_none() ? nb::borrow(atom) : inner);
    }
    cute::CopyOperands operands;
    operands.pred = optional_tensor(pred, "copy");
    if (!mbar.is_none()) operands.mbar = to_num(mbar);
    if (!mcast_mask.is_none()) operands.mcast_mask = to_num(mcast_mask);
    if (!descriptor.is_none()) operands.descriptor = to_num(descriptor);
    operands.file = file;
    operands.line = line;
    cute::copy(a, as_tensor(src, "copy"), as_tensor(dst, "copy"), operands);
  }, nb::arg("atom"), nb::arg("src"), nb::arg("dst"), nb::arg("pred").none(), nb::arg("mbar").none() = nb::none(),
     nb::arg("mcast_mask").none() = nb::none(), nb::arg("descriptor").none() = nb::none(), nb::arg("file") = "",
     nb::arg("line") = 0);
  m.def("print_tensor", [](nb::handle x, bool verbose) {
    Scope scope;
    if (nb::isinstance<cute::TensorSSA>(x)) cute::print_tensor(nb::cast<cute::TensorSSA>(x), verbose);
    else cute::print_tensor(as_tensor(x, "print_tensor"), verbose);
  }, nb::arg("tensor"), nb::arg("verbose") = false);
}

}  // namespace opencute::bindings
