// Bindings of the layout algebra. Python objects become IntTuples here (ints are static leaves,
// DSL integer proxies dynamic ones, None is `_`), the C++ algebra runs, and the results come
// back as ints / tuples / DSL integers / Layout objects. No algebra lives in this file.
#include "bindings/layout_bindings.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "dsl/num.h"
#include "dsl/printf_format.h"
#include "dsl/tracer.h"
#include "layout/layout.h"
#include "layout/print.h"
#include "layout/print_latex.h"

namespace nb = nanobind;

#include "bindings/layout_convert.h"
#include "bindings/python_errors.h"

namespace opencute::bindings {
namespace {

namespace L = opencute::layout;
using dsl::Num;

// ---- printf ----------------------------------------------------------------------------------
// True when `h` is printed through printf_form rather than as one scalar.
bool printf_structured(nb::handle h, std::string& out, std::vector<ir::Value*>& vals) {
  if (is_layout(h)) {
    out += L::printf_form(as_layout(h), vals);
  } else if (is_composed(h)) {
    out += L::printf_form(as_composed(h), vals);
  } else if (is_swizzle(h)) {
    out += L::to_string(nb::cast<L::Swizzle>(h));
  } else if (is_seq(h) || nb::isinstance<L::ScaledBasis>(h)) {
    out += L::printf_form(to_tuple(h), vals);
  } else {
    return false;
  }
  return true;
}

ir::Value* printf_scalar(nb::handle h) {
  if (nb::isinstance<Num>(h)) return dsl::materialize(nb::cast<Num>(h));
  throw nb::type_error(("unsupported argument type in printf, got " + py_type_name(h)).c_str());
}

// cute.printf with layouts, tuples and scalars: `{}` of an algebra value expands to its text
// with one `{}` per dynamic leaf; the result goes through the scalar printf's formatter.
void layout_printf(const std::string& fmt, nb::list args) {
  dsl::Tracer& tracer = dsl::Tracer::require("printf");
  Scope scope;
  std::string out;
  std::vector<ir::Value*> vals;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size();) {
    char c = fmt[i];
    if ((c == '{' || c == '}' || c == '%') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += fmt.substr(i, 2);
      i += 2;
      continue;
    }
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      i += 2;
      if (next >= args.size()) {
        out += "{}";  // the formatter reports the missing argument
        continue;
      }
      nb::handle a = args[next++];
      if (!printf_structured(a, out, vals)) {
        out += "{}";
        vals.push_back(printf_scalar(a));
      }
      continue;
    }
    if (c == '%') {
      size_t j = i + 1;
      while (j < fmt.size() && std::strchr("-+ #0123456789.*lhzjt", fmt[j])) ++j;
      if (j < fmt.size() && std::strchr("diouxXeEfFgGaAcsp", fmt[j])) {
        out += fmt.substr(i, j - i + 1);
        if (next < args.size()) {
          nb::handle a = args[next++];
          std::string ignored;
          std::vector<ir::Value*> ignored_vals;
          if (printf_structured(a, ignored, ignored_vals))
            throw dsl::UserError("PRINTF_FORMAT", "printf conversion '" + fmt.substr(i, j - i + 1) +
                                                      "' needs a scalar; use {} for layouts and tuples");
          vals.push_back(printf_scalar(a));
        }
        i = j + 1;
        continue;
      }
    }
    out += c;
    ++i;
  }
  for (; next < args.size(); ++next) vals.push_back(printf_scalar(args[next]));  // reported below
  std::vector<ir::Type> types;
  for (auto* v : vals) types.push_back(v->type);
  tracer.builder().printf(dsl::to_c_format(out, types), vals);
}

// Runs `f`, making sure a LayoutError names the function the user called (the algebra may
// report it from a function it calls, e.g. zipped_divide from logical_divide).
template <class F>
auto named(const char* fn, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const L::LayoutError& e) {
    std::string what = e.what();
    if (what.rfind(std::string(fn) + ":", 0) == 0) throw;
    throw L::LayoutError(std::string(fn) + ": " + what);
  }
}

// ---- dispatch helpers --------------------------------------------------------------------------

nb::object layout_eq(const L::Layout& a, nb::handle other) {
  if (!is_layout(other)) return nb::bool_(false);
  L::Layout b = as_layout(other);
  if (a.is_static() && b.is_static()) return nb::bool_(a == b);
  if (!L::congruent(a.shape, b.shape) || !L::congruent(a.stride, b.stride)) return nb::bool_(false);
  Scope scope;
  L::Int r = 1;
  auto fa = L::flatten_to_vector(a.shape), fb = L::flatten_to_vector(b.shape);
  auto sa = L::flatten_to_vector(a.stride), sb = L::flatten_to_vector(b.stride);
  for (size_t i = 0; i < fa.size(); ++i) r = L::logical_and(r, L::eq(fa[i].as_int(), fb[i].as_int()));
  for (size_t i = 0; i < sa.size(); ++i) {
    if (!sa[i].is_int() || !sb[i].is_int()) {
      if (!(sa[i] == sb[i])) return nb::bool_(false);
      continue;
    }
    r = L::logical_and(r, L::eq(sa[i].as_int(), sb[i].as_int()));
  }
  return to_bool(r);
}

nb::object call_layout(const L::Layout& l, nb::handle coord) {
  Scope scope;
  L::IntTuple c = to_tuple(coord);
  if (L::has_underscore(c)) return py(L::slice(c, l));
  return to_py(l(c));
}

nb::object apply_tiler_op(nb::handle x, nb::handle tiler, const char* fn,
                          L::Layout (*lf)(const L::Layout&, const L::Tiler&),
                          L::ComposedLayout (*cf)(const L::ComposedLayout&, const L::Tiler&)) {
  Scope scope;
  if (is_layout(x)) return named(fn, [&] { return py(lf(as_layout(x), to_tiler(tiler))); });
  if (cf && is_composed(x)) return named(fn, [&] { return py(cf(as_composed(x), to_tiler(tiler))); });
  throw nb::type_error((std::string(fn) + ": expected a Layout" + (cf ? " or ComposedLayout" : "") + ", got " +
                        py_type_name(x)).c_str());
}

// A tuple with a Layout among its leaves is a tiler (a tile of layouts), not an IntTuple.
bool holds_a_layout(nb::handle h) {
  if (is_layout(h)) return true;
  if (is_seq(h))
    for (nb::handle e : h)
      if (holds_a_layout(e)) return true;
  return false;
}

void translate_layout_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const L::LayoutError& e) {
    raise_python_error(error_class(), e.what(), "LAYOUT_ALGEBRA", PyExc_ValueError);
  }
}

}  // namespace

void bind_layouts(nb::module_& root) {
  nb::register_exception_translator(&translate_layout_error);
  nb::module_ m = root.def_submodule("layout", "CuTe layout algebra");
  m.def("_set_int_wrapper", [](nb::object f) { int_wrapper() = f; });
  m.def("_set_error_class", [](nb::object c) { error_class() = c; });

  // ---- types ----
  nb::class_<L::ScaledBasis>(m, "ScaledBasis")
      .def("__init__", [](L::ScaledBasis* self, nb::handle value, nb::handle mode) {
        Scope scope;
        new (self) L::ScaledBasis{to_int(value), to_mode(mode)};
      }, nb::arg("value"), nb::arg("mode"))
      .def_prop_ro("value", [](const L::ScaledBasis& b) { return to_py(b.value); })
      .def_prop_ro("mode", [](const L::ScaledBasis& b) { return b.mode; })
      .def("is_static", [](const L::ScaledBasis& b) { return b.value.is_static(); })
      .def("__mul__", [](const L::ScaledBasis& b, nb::handle k) {
        Scope scope;
        return L::ScaledBasis{b.value * to_int(k), b.mode};
      }, nb::is_operator())
      .def("__rmul__", [](const L::ScaledBasis& b, nb::handle k) {
        Scope scope;
        return L::ScaledBasis{to_int(k) * b.value, b.mode};
      }, nb::is_operator())
      .def("__eq__", [](const L::ScaledBasis& a, nb::handle o) {
        if (!nb::isinstance<L::ScaledBasis>(o)) return false;
        return L::IntTuple(a) == L::IntTuple(nb::cast<L::ScaledBasis>(o));
      })
      .def("__hash__", [](const L::ScaledBasis& b) { return std::hash<std::string>()(L::to_string(b)); })
      .def("__str__", [](const L::ScaledBasis& b) { return L::to_string(b); })
      .def("__repr__", [](const L::ScaledBasis& b) { return L::to_string(b); });

  nb::class_<L::Swizzle>(m, "Swizzle")
      .def_prop_ro("num_bits", [](const L::Swizzle& s) { return s.bits; })
      .def_prop_ro("num_base", [](const L::Swizzle& s) { return s.base; })
      .def_prop_ro("num_shift", [](const L::Swizzle& s) { return s.shift; })
      .def_prop_ro("type", [](const L::Swizzle& s) { return "!cute.swizzle<\"" + L::to_string(s) + "\">"; })
      .def("__call__", [](const L::Swizzle& s, nb::handle x) {
        Scope scope;
        return to_py(s(to_int(x)));
      })
      .def("__eq__", [](const L::Swizzle& a, nb::handle o) {
        return nb::isinstance<L::Swizzle>(o) && a == nb::cast<L::Swizzle>(o);
      })
      .def("__hash__", [](const L::Swizzle& s) { return (s.bits * 64 + s.base) * 64 + s.shift; })
      .def("__str__", [](const L::Swizzle& s) { return L::to_string(s); })
      .def("__repr__", [](const L::Swizzle& s) { return L::to_string(s); });

  nb::class_<L::Layout>(m, "Layout")
      .def_prop_ro("shape", [](const L::Layout& l) { return to_py(l.shape); })
      .def_prop_ro("stride", [](const L::Layout& l) { return to_py(l.stride); })
      .def_prop_ro("type", [](const L::Layout& l) { return "!cute.layout<\"" + L::to_string(l) + "\">"; })
      .def_prop_ro("max_alignment", [](const L::Layout& l) { return L::max_alignment(l); })
      .def("is_static", &L::Layout::is_static)
      // CuTe's Layout::get_hier_coord / get_flat_coord / get_1d_coord: the coordinate whose image
      // is the index `idx` (each leaf (idx / stride) % shape), then flattened within each mode.
      .def("get_hier_coord", [](const L::Layout& l, nb::handle idx, nb::kwargs) {
        Scope scope;
        return to_py(L::idx2crd(to_tuple(idx), l.shape, l.stride));
      })
      .def("get_flat_coord", [](const L::Layout& l, nb::handle idx, nb::kwargs) {
        Scope scope;
        L::IntTuple hier = L::idx2crd(to_tuple(idx), l.shape, l.stride);
        if (!l.shape.is_tuple()) return to_py(hier);
        std::vector<L::IntTuple> out;
        for (int i = 0; i < l.rank(); ++i) out.push_back(L::crd2idx(hier[i], l.shape[i]));
        return to_py(L::IntTuple(out));
      })
      .def("get_1d_coord", [](const L::Layout& l, nb::handle idx, nb::kwargs) {
        Scope scope;
        return to_py(L::crd2idx(L::idx2crd(to_tuple(idx), l.shape, l.stride), l.shape));
      })
      .def("__call__", &call_layout, nb::arg("coord"))
      .def("__getitem__", [](const L::Layout& l, int i) { return L::get(l, {i}); })
      .def("__len__", [](const L::Layout& l) { return l.rank(); })
      .def("__iter__", [](const L::Layout& l) {
        nb::list modes;
        for (int i = 0; i < l.rank(); ++i) modes.append(nb::cast(l[i]));
        return nb::iter(modes);
      })
      .def("__eq__", &layout_eq)
      .def("__ne__", [](const L::Layout& a, nb::handle o) -> nb::object {
        nb::object r = layout_eq(a, o);
        if (PyBool_Check(r.ptr())) return nb::bool_(r.ptr() == Py_False);
        return r.attr("__invert__")();
      })
      .def("__hash__", [](const L::Layout& l) { return std::hash<std::string>()(L::to_string(l)); })
      .def("__str__", [](const L::Layout& l) { return L::to_string(l); })
      .def("__repr__", [](const L::Layout& l) { return L::to_string(l); });

  nb::class_<L::ComposedLayout>(m, "ComposedLayout")
      .def_prop_ro("inner", [](const L::ComposedLayout& c) -> nb::object {
        if (c.inner_is_swizzle()) return nb::cast(c.swizzle());
        return nb::cast(c.inner_layout());
      })
      .def_prop_ro("offset", [](const L::ComposedLayout& c) { return to_py(c.offset); })
      .def_prop_ro("outer", [](const L::ComposedLayout& c) { return c.outer; })
      .def_prop_ro("shape", [](const L::ComposedLayout& c) { return to_py(c.shape()); })
      .def_prop_ro("is_normal", [](const L::ComposedLayout& c) { return !c.inner_is_swizzle(); })
      .def_prop_ro("type", [](const L::ComposedLayout& c) {
        return "!cute.composed_layout<\"" + L::to_string(c) + "\">";
      })
      .def("__call__", [](const L::ComposedLayout& c, nb::handle coord) {
        Scope scope;
        return to_py(c(to_tuple(coord)));
      }, nb::arg("coord"))
      .def("__eq__", [](const L::ComposedLayout& a, nb::handle o) {
        return is_composed(o) && a == as_composed(o);
      })
      .def("__hash__", [](const L::ComposedLayout& c) { return std::hash<std::string>()(L::to_string(c)); })
      .def("__str__", [](const L::ComposedLayout& c) { return L::to_string(c); })
      .def("__repr__", [](const L::ComposedLayout& c) { return L::to_string(c); });

  // ---- construction ----
  m.def("make_layout", [](nb::handle shape, nb::handle stride) {
    Scope scope;
    if (is_seq(shape) && nb::len(shape) > 0) {
      bool all_layouts = true;
      for (nb::handle e : shape) all_layouts = all_layouts && is_layout(e);
      if (all_layouts) {
        std::vector<L::Layout> modes;
        for (nb::handle e : shape) modes.push_back(as_layout(e));
        return L::make_layout(modes);
      }
    }
    if (stride.is_none()) return L::make_layout(to_tuple(shape));
    return L::make_layout(to_tuple(shape), to_tuple(stride));
  }, nb::arg("shape"), nb::arg("stride") = nb::none());
  m.def("make_ordered_layout", [](nb::handle shape, nb::handle order) {
    Scope scope;
    return L::make_ordered_layout(to_tuple(shape), to_tuple(order));
  });
  m.def("make_identity_layout", [](nb::handle shape) {
    Scope scope;
    return L::make_identity_layout(to_tuple(shape));
  });
  m.def("make_swizzle", &L::make_swizzle);
  m.def("make_composed_layout", [](nb::handle inner, nb::handle offset, nb::handle outer) {
    Scope scope;
    L::Layout o = require_layout(outer, "make_composed_layout");
    if (is_swizzle(inner)) return L::make_composed_layout(nb::cast<L::Swizzle>(inner), to_tuple(offset), o);
    if (is_layout(inner)) return L::make_composed_layout(as_layout(inner), to_tuple(offset), o);
    throw nb::type_error(("make_composed_layout: inner must be a Swizzle or a Layout, got " + py_type_name(inner)).c_str());
  });
  m.def("latex", [](nb::handle layout) {
    Scope scope;
    if (is_composed(layout)) return named("print_latex", [&] { return L::latex(as_composed(layout)); });
    return named("print_latex", [&] { return L::latex(require_layout(layout, "print_latex")); });
  });
  m.def("latex_tv", [](nb::handle layout_tv, nb::handle tile_mn) {
    Scope scope;
    return named("print_latex_tv", [&] {
      return L::latex_tv(require_layout(layout_tv, "print_latex_tv"), to_tuple(tile_mn));
    });
  });
  m.def("make_layout_tv", [](nb::handle thr, nb::handle val) {
    Scope scope;
    auto r = named("make_layout_tv", [&] {
      return L::make_layout_tv(require_layout(thr, "make_layout_tv"), require_layout(val, "make_layout_tv"));
    });
    return nb::make_tuple(to_py(r.first), py(r.second));
  });
  m.def("tile_to_shape", [](nb::handle atom, nb::handle shape, nb::handle order) -> nb::object {
    Scope scope;
    L::IntTuple o = order.is_none() ? L::IntTuple() : to_tuple(order);
    return named("tile_to_shape", [&] {
      if (is_composed(atom)) return py(L::tile_to_shape(as_composed(atom), to_tuple(shape), o));
      return py(L::tile_to_shape(require_layout(atom, "tile_to_shape"), to_tuple(shape), o));
    });
  }, nb::arg("atom"), nb::arg("trg_shape"), nb::arg("order") = nb::none());
  m.def("recast_layout", [](int new_bits, int old_bits, nb::handle src) -> nb::object {
    Scope scope;
    if (is_composed(src)) return py(L::recast_layout(new_bits, old_bits, as_composed(src)));
    return py(L::recast_layout(new_bits, old_bits, require_layout(src, "recast_layout")));
  });

  // ---- queries ----
  m.def("size", [](nb::handle x, nb::handle mode) {
    Scope scope;
    if (is_layout(x)) return to_py(L::size(as_layout(x), to_mode(mode)));
    if (is_composed(x)) return to_py(L::size(as_composed(x), to_mode(mode)));
    return to_py(L::size(to_tuple(x), to_mode(mode)));
  }, nb::arg("a"), nb::arg("mode") = nb::none());
  m.def("cosize", [](nb::handle x, nb::handle mode) {
    Scope scope;
    if (is_composed(x)) return to_py(L::cosize(as_composed(x), to_mode(mode)));
    return to_py(L::cosize(require_layout(x, "cosize"), to_mode(mode)));
  }, nb::arg("a"), nb::arg("mode") = nb::none());
  m.def("rank", [](nb::handle x, nb::handle mode) {
    Scope scope;
    if (is_layout(x)) return L::rank(as_layout(x), to_mode(mode));
    if (is_composed(x)) return L::rank(as_composed(x).outer, to_mode(mode));
    return L::rank(to_tuple(x), to_mode(mode));
  }, nb::arg("a"), nb::arg("mode") = nb::none());
  m.def("depth", [](nb::handle x) {
    Scope scope;
    if (is_layout(x)) return L::depth(as_layout(x));
    if (is_composed(x)) return L::depth(as_composed(x).outer);
    return L::depth(to_tuple(x));
  });
  // CuTe's congruence compares profiles: a layout's is its shape's, a tuple's its own.
  auto profile = [](nb::handle x) {
    if (is_layout(x)) return as_layout(x).shape;
    if (is_composed(x)) return as_composed(x).outer.shape;
    return to_tuple(x);
  };
  m.def("is_congruent", [profile](nb::handle a, nb::handle b) {
    Scope scope;
    return L::congruent(profile(a), profile(b));
  });
  m.def("is_weakly_congruent", [profile](nb::handle a, nb::handle b) {
    Scope scope;
    return L::weakly_congruent(profile(a), profile(b));
  });
  m.def("shape", [](nb::handle x, nb::handle mode) {
    Scope scope;
    if (is_layout(x)) return to_py(L::shape(as_layout(x), to_mode(mode)));
    if (is_composed(x)) return to_py(L::shape(as_composed(x).outer, to_mode(mode)));
    if (holds_a_layout(x)) return to_py(L::shape(to_tiler(x), to_mode(mode)));
    return to_py(L::get(to_tuple(x), to_mode(mode)));
  }, nb::arg("x"), nb::arg("mode") = nb::none());
  m.def("get", [](nb::handle x, nb::handle mode) -> nb::object {
    Scope scope;
    if (is_layout(x)) return py(L::get(as_layout(x), to_mode(mode)));
    if (is_composed(x)) {  // the inner function and offset stay; the outer layout's mode is taken
      L::ComposedLayout c = as_composed(x);
      c.outer = L::get(c.outer, to_mode(mode));
      return py(c);
    }
    return to_py(L::get(to_tuple(x), to_mode(mode)));
  }, nb::arg("x"), nb::arg("mode"));
  m.def("select", [](nb::handle x, nb::handle mode) -> nb::object {
    Scope scope;
    if (is_layout(x)) return py(L::select(as_layout(x), to_mode(mode)));
    if (is_composed(x)) {
      L::ComposedLayout c = as_composed(x);
      c.outer = L::select(c.outer, to_mode(mode));
      return py(c);
    }
    return to_py(L::select(to_tuple(x), to_mode(mode)));
  }, nb::arg("x"), nb::arg("mode"));
  m.def("group_modes", [](nb::handle x, int begin, nb::handle end) -> nb::object {
    Scope scope;
    if (is_layout(x)) {
      L::Layout l = as_layout(x);
      return py(L::group_modes(l, begin, end.is_none() ? l.rank() : nb::cast<int>(end)));
    }
    if (is_composed(x)) {  // regrouping the outer layout keeps the function: inner and offset stay
      L::ComposedLayout c = as_composed(x);
      c.outer = L::group_modes(c.outer, begin, end.is_none() ? c.outer.rank() : nb::cast<int>(end));
      return py(c);
    }
    L::IntTuple t = to_tuple(x);
    return to_py(L::group_modes(t, begin, end.is_none() ? t.rank() : nb::cast<int>(end)));
  }, nb::arg("x"), nb::arg("begin"), nb::arg("end") = nb::none());
  m.def("slice_", [](nb::handle x, nb::handle coord) -> nb::object {
    Scope scope;
    if (is_layout(x)) return py(L::slice(to_tuple(coord), as_layout(x)));
    return to_py(L::slice(to_tuple(coord), to_tuple(x)));
  });
  m.def("dice", [](nb::handle x, nb::handle coord) -> nb::object {
    Scope scope;
    if (is_layout(x)) return py(L::dice(to_tuple(coord), as_layout(x)));
    return to_py(L::dice(to_tuple(coord), to_tuple(x)));
  });
  m.def("prepend", [](nb::handle x, nb::handle elem, nb::handle up_to_rank) -> nb::object {
    Scope scope;
    int r = up_to_rank.is_none() ? -1 : nb::cast<int>(up_to_rank);
    if (is_layout(x)) return py(L::prepend(as_layout(x), elem.is_none() ? L::Layout() : require_layout(elem, "prepend"), r));
    if (is_composed(x)) {  // the new mode goes to the outer layout: it too passes through inner and offset
      L::ComposedLayout c = as_composed(x);
      c.outer = L::prepend(c.outer, elem.is_none() ? L::Layout() : require_layout(elem, "prepend"), r);
      return py(c);
    }
    return to_py(L::prepend(to_tuple(x), to_tuple(elem), r));
  }, nb::arg("x"), nb::arg("elem") = nb::none(), nb::arg("up_to_rank") = nb::none());
  m.def("append", [](nb::handle x, nb::handle elem, nb::handle up_to_rank) -> nb::object {
    Scope scope;
    int r = up_to_rank.is_none() ? -1 : nb::cast<int>(up_to_rank);
    if (is_layout(x)) return py(L::append(as_layout(x), elem.is_none() ? L::Layout() : require_layout(elem, "append"), r));
    if (is_composed(x)) {  // the new mode goes to the outer layout: it too passes through inner and offset
      L::ComposedLayout c = as_composed(x);
      c.outer = L::append(c.outer, elem.is_none() ? L::Layout() : require_layout(elem, "append"), r);
      return py(c);
    }
    return to_py(L::append(to_tuple(x), to_tuple(elem), r));
  }, nb::arg("x"), nb::arg("elem") = nb::none(), nb::arg("up_to_rank") = nb::none());
  m.def("flatten", [](nb::handle x) -> nb::object {
    Scope scope;
    if (is_layout(x)) return py(L::flatten(as_layout(x)));
    if (is_composed(x)) {
      L::ComposedLayout c = as_composed(x);
      c.outer = L::flatten(c.outer);
      return py(c);
    }
    return to_py(L::flatten(to_tuple(x)));
  });
  m.def("crd2idx", [](nb::handle coord, nb::handle x) {
    Scope scope;
    if (is_layout(x)) return to_py(L::crd2idx(to_tuple(coord), as_layout(x)));
    return to_py(L::crd2idx(to_tuple(coord), to_tuple(x)));
  });
  m.def("idx2crd", [](nb::handle idx, nb::handle x) {
    Scope scope;
    if (is_layout(x)) return to_py(L::idx2crd(to_tuple(idx), as_layout(x)));
    return to_py(L::idx2crd(to_tuple(idx), to_tuple(x)));
  });

  // ---- tuple arithmetic ----
  m.def("product", [](nb::handle x) { Scope s; return to_py(L::product(to_tuple(x))); });
  m.def("product_each", [](nb::handle x) { Scope s; return to_py(L::product_each(to_tuple(x))); });
  m.def("product_like", [](nb::handle x, nb::handle p) { Scope s; return to_py(L::product_like(to_tuple(x), to_tuple(p))); });
  m.def("inner_product", [](nb::handle a, nb::handle b) { Scope s; return to_py(L::inner_product(to_tuple(a), to_tuple(b))); });
  m.def("shape_div", [](nb::handle a, nb::handle b) { Scope s; return to_py(L::shape_div(to_tuple(a), to_tuple(b))); });
  m.def("ceil_div", [](nb::handle a, nb::handle b) {
    Scope s;
    L::IntTuple rhs = is_layout(b) ? L::product_each(as_layout(b).shape) : to_tuple(b);
    return to_py(L::ceil_div(to_tuple(a), rhs));
  });
  m.def("round_up", [](nb::handle a, nb::handle b) { Scope s; return to_py(L::round_up(to_tuple(a), to_tuple(b))); });
  m.def("offset_add", [](nb::handle a, nb::handle b) { Scope s; return to_py(L::offset_add(to_tuple(a), to_tuple(b))); });
  m.def("elem_less", [](nb::handle a, nb::handle b) { Scope s; return to_bool(L::elem_less(to_tuple(a), to_tuple(b))); });
  // None when no mode has a static unit stride; an int for a top-level mode; a path tuple below it.
  m.def("leading_dim", [](nb::handle shape, nb::handle stride) -> nb::object {
    Scope s;
    std::vector<int> path = L::leading_dim(to_tuple(shape), to_tuple(stride));
    if (path.empty()) return nb::none();
    if (path.size() == 1) return nb::int_(path[0]);
    nb::list out;
    for (int i : path) out.append(i);
    return nb::tuple(out);
  });
  m.def("assume", [](nb::handle x, int64_t divby) {
    Scope s;
    L::Int v = to_int(x);
    if (v.is_static()) return to_py(v);
    if (divby < 1) throw dsl::UserError("LAYOUT_ALGEBRA", "assume: divby must be >= 1");
    return to_py(L::Int::dynamic(v.ir_value(), divby));
  }, nb::arg("x"), nb::arg("divby") = 1);
  m.def("int_str", [](nb::handle x) { Scope s; return L::to_string(to_int(x)); });
  m.def("pretty_str", [](nb::handle x) -> std::string {
    Scope s;
    if (is_layout(x)) return L::to_string(as_layout(x));
    if (is_composed(x)) return L::to_string(as_composed(x));
    if (is_swizzle(x)) return L::to_string(nb::cast<L::Swizzle>(x));
    if (tiler_has_layout(x)) return L::to_string(to_tiler(x));
    return L::to_string(to_tuple(x));
  });

  // ---- algebra ----
  m.def("coalesce", [](nb::handle x, nb::handle profile) -> nb::object {
    Scope s;
    if (is_composed(x)) {  // CuTe: inner o offset o coalesce(outer)
      L::ComposedLayout c = as_composed(x);
      c.outer = profile.is_none() ? L::coalesce(c.outer) : L::coalesce(c.outer, to_tuple(profile));
      return py(c);
    }
    L::Layout l = require_layout(x, "coalesce");
    return py(profile.is_none() ? L::coalesce(l) : L::coalesce(l, to_tuple(profile)));
  }, nb::arg("x"), nb::arg("target_profile") = nb::none());
  m.def("filter_zeros", [](nb::handle x, nb::handle profile) {
    Scope s;
    L::Layout l = require_layout(x, "filter_zeros");
    return profile.is_none() ? L::filter_zeros(l) : L::filter_zeros(l, to_tuple(profile));
  }, nb::arg("x"), nb::arg("target_profile") = nb::none());
  m.def("filter", [](nb::handle x) { Scope s; return L::filter(require_layout(x, "filter")); });
  m.def("composition", [](nb::handle lhs, nb::handle rhs) -> nb::object {
    Scope s;
    return named("composition", [&] {
      if (is_swizzle(lhs)) return py(L::composition(nb::cast<L::Swizzle>(lhs), layout_or_shape(rhs)));
      if (is_composed(lhs)) return py(L::composition(as_composed(lhs), to_tiler(rhs)));
      L::Layout l = require_layout(lhs, "composition");
      if (is_layout(rhs)) return py(L::composition(l, as_layout(rhs)));
      return py(L::composition(l, to_tiler(rhs)));
    });
  }, nb::arg("lhs"), nb::arg("rhs"));
  m.def("complement", [](nb::handle x, nb::handle cotarget) {
    Scope s;
    L::Layout l = require_layout(x, "complement");
    if (cotarget.is_none()) return L::complement(l);
    if (is_layout(cotarget)) return L::complement(l, as_layout(cotarget).shape);
    return L::complement(l, to_tuple(cotarget));
  }, nb::arg("input"), nb::arg("cotarget") = nb::none());
  m.def("right_inverse", [](nb::handle x) { Scope s; return L::right_inverse(require_layout(x, "right_inverse")); });
  m.def("left_inverse", [](nb::handle x) { Scope s; return L::left_inverse(require_layout(x, "left_inverse")); });
  m.def("logical_divide", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "logical_divide", &L::logical_divide, &L::logical_divide);
  }, nb::arg("target"), nb::arg("tiler"));
  m.def("zipped_divide", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "zipped_divide", &L::zipped_divide, &L::zipped_divide);
  }, nb::arg("target"), nb::arg("tiler"));
  m.def("tiled_divide", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "tiled_divide", &L::tiled_divide, &L::tiled_divide);
  }, nb::arg("target"), nb::arg("tiler"));
  m.def("flat_divide", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "flat_divide", &L::flat_divide, &L::flat_divide);
  }, nb::arg("target"), nb::arg("tiler"));
  m.def("logical_product", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "logical_product", &L::logical_product, nullptr);
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("zipped_product", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "zipped_product", &L::zipped_product, nullptr);
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("tiled_product", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "tiled_product", &L::tiled_product, nullptr);
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("flat_product", [](nb::handle x, nb::handle t) {
    return apply_tiler_op(x, t, "flat_product", &L::flat_product, nullptr);
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("blocked_product", [](nb::handle x, nb::handle t) -> nb::object {
    Scope s;
    return named("blocked_product", [&] {
      if (is_composed(x)) return py(L::blocked_product(as_composed(x), layout_or_shape(t)));
      return py(L::blocked_product(require_layout(x, "blocked_product"), layout_or_shape(t)));
    });
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("raked_product", [](nb::handle x, nb::handle t) -> nb::object {
    Scope s;
    return named("raked_product", [&] {
      if (is_composed(x)) return py(L::raked_product(as_composed(x), layout_or_shape(t)));
      return py(L::raked_product(require_layout(x, "raked_product"), layout_or_shape(t)));
    });
  }, nb::arg("block"), nb::arg("tiler"));
  m.def("max_common_layout", [](nb::handle a, nb::handle b) {
    Scope s;
    return L::max_common_layout(require_layout(a, "max_common_layout"), require_layout(b, "max_common_layout"));
  });
  m.def("max_common_vector", [](nb::handle a, nb::handle b) {
    Scope s;
    return to_py(L::max_common_vector(require_layout(a, "max_common_vector"), require_layout(b, "max_common_vector")));
  });

  m.def("printf", &layout_printf);
}

}  // namespace opencute::bindings
