// CuTe print formats.
#include "layout/print.h"

namespace opencute::layout {

std::string to_string(const Int& v) {
  if (v.is_static()) return std::to_string(v.value());
  int w = v.width();
  int64_t d = v.divisibility();
  if (w == 32 || w == 1) return d > 1 ? "?{div=" + std::to_string(d) + "}" : "?";
  std::string s = "?{i" + std::to_string(w);
  if (d > 1) s += " div=" + std::to_string(d);
  return s + "}";
}

std::string to_string(const ScaledBasis& b) {
  std::string s = to_string(b.value);
  for (auto it = b.mode.rbegin(); it != b.mode.rend(); ++it) s += "@" + std::to_string(*it);
  return s;
}

std::string to_string(const IntTuple& t) {
  switch (t.kind()) {
    case IntTuple::Kind::Int: return to_string(t.as_int());
    case IntTuple::Kind::Basis: return to_string(t.as_basis());
    case IntTuple::Kind::Underscore: return "_";
    case IntTuple::Kind::Tuple: {
      std::string s = "(";
      for (int i = 0; i < t.rank(); ++i) {
        if (i) s += ",";
        s += to_string(t[i]);
      }
      return s + ")";
    }
  }
  return "";
}

std::string to_string(const Layout& l) { return to_string(l.shape) + ":" + to_string(l.stride); }

std::string to_string(const Swizzle& s) {
  return "S<" + std::to_string(s.bits) + "," + std::to_string(s.base) + "," + std::to_string(s.shift) + ">";
}

std::string to_string(const ComposedLayout& c) {
  std::string inner = c.inner_is_swizzle() ? to_string(c.swizzle()) : to_string(c.inner_layout());
  return inner + " o " + to_string(c.offset) + " o " + to_string(c.outer);
}

std::string to_string(const Tiler& t) {
  switch (t.kind) {
    case Tiler::Kind::Layout: return to_string(t.layout);
    case Tiler::Kind::Underscore: return "_";
    case Tiler::Kind::Tuple: {
      std::string s = "[";
      for (size_t i = 0; i < t.modes.size(); ++i) {
        if (i) s += ";";
        s += to_string(t.modes[i]);
      }
      return s + "]";
    }
  }
  return "";
}

namespace {

std::string printf_form(const Int& v, std::vector<ir::Value*>& args) {
  if (v.is_static()) return std::to_string(v.value());
  args.push_back(v.ir_value());
  return "{}";
}

}  // namespace

std::string printf_form(const IntTuple& t, std::vector<ir::Value*>& args) {
  switch (t.kind()) {
    case IntTuple::Kind::Int: return printf_form(t.as_int(), args);
    case IntTuple::Kind::Basis: {
      const ScaledBasis& b = t.as_basis();
      std::string s = printf_form(b.value, args);
      for (auto it = b.mode.rbegin(); it != b.mode.rend(); ++it) s += "@" + std::to_string(*it);
      return s;
    }
    case IntTuple::Kind::Underscore: return "_";
    case IntTuple::Kind::Tuple: {
      std::string s = "(";
      for (int i = 0; i < t.rank(); ++i) {
        if (i) s += ",";
        s += printf_form(t[i], args);
      }
      return s + ")";
    }
  }
  return "";
}

std::string printf_form(const Layout& l, std::vector<ir::Value*>& args) {
  std::string s = printf_form(l.shape, args);
  return s + ":" + printf_form(l.stride, args);
}

std::string printf_form(const ComposedLayout& c, std::vector<ir::Value*>& args) {
  std::string s = c.inner_is_swizzle() ? to_string(c.swizzle()) : printf_form(c.inner_layout(), args);
  s += " o " + printf_form(c.offset, args);
  return s + " o " + printf_form(c.outer, args);
}

}  // namespace opencute::layout
