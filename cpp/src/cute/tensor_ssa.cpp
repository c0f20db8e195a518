#include "cute/tensor_ssa.h"

#include <optional>

#include "dsl/dtype.h"
#include "layout/print.h"

namespace opencute::cute {

using dsl::Num;
using layout::Int;
using layout::IntTuple;

namespace {

// ---- shapes ----------------------------------------------------------------------------------

void require_static_shape(const IntTuple& s, const IntTuple& whole) {
  if (s.is_tuple()) {
    for (auto& e : s.elems()) require_static_shape(e, whole);
    return;
  }
  if (!s.is_int())
    throw TensorSSAError("SSA_SHAPE", "a TensorSSA shape holds integers only, got " + python_shape_string(whole));
  if (s.as_int().is_dynamic())
    throw TensorSSAError("SSA_DYNAMIC_SHAPE", "a TensorSSA needs a static shape, got " + python_shape_string(whole));
  if (s.as_int().value() < 1)
    throw TensorSSAError("SSA_SHAPE", "TensorSSA extents must be positive, got shape " + python_shape_string(whole));
}

int64_t static_size(const IntTuple& shape) { return layout::product(shape).value(); }

bool is_static_one(const IntTuple& m) { return m.is_int() && m.as_int().is_static_value(1); }

IntTuple pad_to(const IntTuple& t, int rank) {
  IntTuple w = layout::wrap(t);
  while (w.rank() < rank) w.push_back(Int(1));
  return w;
}

// nullopt when the modes cannot broadcast.
// Modes of one size nested differently (4 against (2, 2)): their elements pair in colexicographic
// order, as the two values' vectors do (NVIDIA's mixed-input decode scales a K fragment by a scale
// fragment partitioned with another nesting); the result keeps the first operand's nesting.
bool same_size_renested(const IntTuple& a, const IntTuple& b) {
  return a != b && (a.is_tuple() || b.is_tuple()) && layout::product(a).is_static() &&
         layout::product(b).is_static() && static_size(a) == static_size(b) && static_size(a) > 1 &&
         (!a.is_tuple() || !b.is_tuple() || layout::wrap(a).rank() != layout::wrap(b).rank());
}


std::optional<IntTuple> broadcast_mode(const IntTuple& a, const IntTuple& b);

// Mode by mode, right-padded with 1s to one rank.
std::optional<IntTuple> broadcast_modes(const IntTuple& a, const IntTuple& b) {
  if (!a.is_tuple() && !b.is_tuple()) return std::nullopt;
  int rank = std::max(layout::wrap(a).rank(), layout::wrap(b).rank());
  IntTuple wa = pad_to(a, rank), wb = pad_to(b, rank);
  std::vector<IntTuple> out;
  for (int i = 0; i < rank; ++i) {
    auto m = broadcast_mode(wa[i], wb[i]);
    if (!m) return std::nullopt;
    out.push_back(*m);
  }
  return IntTuple(std::move(out));
}

std::optional<IntTuple> broadcast_mode(const IntTuple& a, const IntTuple& b) {
  if (a == b) return a;
  if (is_static_one(a)) return b;
  if (is_static_one(b)) return a;
  if (auto r = broadcast_modes(a, b)) return r;
  if (same_size_renested(a, b)) return a;
  return std::nullopt;
}

// Strides that read a source of shape `s` (compact strides `st`) at the coordinates of the
// broadcast shape `d`: the source's strides, 0 along broadcast modes.
IntTuple broadcast_strides(const IntTuple& s, const IntTuple& st, const IntTuple& d) {
  if (s == d) return st;
  if (is_static_one(s)) return layout::repeat_like(d, Int(0));
  if (!broadcast_modes(s, d) && same_size_renested(s, d)) {
    // A compact mode's elements are consecutive from its first stride: read them in order.
    const IntTuple flat = layout::flatten(st);
    return layout::compact_col_major(d, flat.is_tuple() ? flat[0].as_int() : flat.as_int());
  }
  IntTuple ws = layout::wrap(s), wst = layout::wrap(st), wd = layout::wrap(d);
  std::vector<IntTuple> out;
  for (int i = 0; i < wd.rank(); ++i)
    out.push_back(i < ws.rank() ? broadcast_strides(ws[i], wst[i], wd[i]) : layout::repeat_like(wd[i], Int(0)));
  return IntTuple(std::move(out));
}

// For each element of the broadcast shape `d`, the index of the source element it reads.
std::vector<int64_t> gather_indices(const IntTuple& s, const IntTuple& d) {
  IntTuple strides = broadcast_strides(s, layout::compact_col_major(s), d);
  int64_t n = static_size(d);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) idx[size_t(j)] = layout::crd2idx(Int(j), d, strides).as_int().value();
  return idx;
}

// ---- operands --------------------------------------------------------------------------------

const TensorSSA* tensor_of(const Operand& o) { return std::get_if<TensorSSA>(&o); }

ir::Type element_type(const Operand& o) {
  if (auto* t = tensor_of(o)) return t->element;
  return std::get<Num>(o).type;
}

// The operands' broadcast shape and, per operand, the element each result element reads
// (empty for scalars).
struct Broadcast {
  IntTuple shape;
  std::vector<std::vector<int64_t>> reads;

  Num at(const std::vector<Operand>& ops, size_t k, int64_t j) const {
    if (auto* t = tensor_of(ops[k])) return t->values[size_t(reads[k][size_t(j)])];
    return std::get<Num>(ops[k]);
  }
};

Broadcast broadcast_all(const std::vector<Operand>& ops, const char* what) {
  std::optional<IntTuple> shape;
  for (auto& o : ops) {
    auto* t = tensor_of(o);
    if (!t) continue;
    if (!shape) {
      shape = t->shape;
      continue;
    }
    auto r = broadcast_mode(*shape, t->shape);
    if (!r)
      throw TensorSSAError("SSA_BROADCAST", std::string(what) + ": cannot broadcast shapes " +
                                                python_shape_string(*shape) + " and " +
                                                python_shape_string(t->shape));
    shape = *r;
  }
  if (!shape) throw TensorSSAError("SSA_NO_TENSOR", std::string(what) + ": needs at least one TensorSSA operand");
  Broadcast b;
  b.shape = *shape;
  for (auto& o : ops) {
    auto* t = tensor_of(o);
    b.reads.push_back(t ? gather_indices(t->shape, b.shape) : std::vector<int64_t>{});
  }
  return b;
}

template <class F>
TensorSSA elementwise(const std::vector<Operand>& ops, const char* what, F&& f) {
  Broadcast b = broadcast_all(ops, what);
  int64_t n = static_size(b.shape);
  TensorSSA r;
  r.shape = b.shape;
  std::vector<Num> args(ops.size());
  for (int64_t j = 0; j < n; ++j) {
    for (size_t k = 0; k < ops.size(); ++k) args[k] = b.at(ops, k, j);
    r.values.push_back(f(args));
  }
  r.element = r.values.front().type;
  return r;
}

template <class F>
TensorSSA map(const TensorSSA& t, F&& f) {
  TensorSSA r;
  r.shape = t.shape;
  for (auto& v : t.values) r.values.push_back(f(v));
  r.element = r.values.front().type;
  return r;
}

// ---- coordinates -----------------------------------------------------------------------------

std::string key_string(const IntTuple& key) { return python_shape_string(key); }

// Static coordinates must lie inside their modes (an integer on a nested mode is a 1-D index
// into it); dynamic ones are the program's responsibility, as in CuTe.
void check_coordinate(const IntTuple& c, const IntTuple& s, const IntTuple& key, const IntTuple& shape) {
  auto mismatch = [&] {
    return TensorSSAError("SSA_INDEX", "coordinate " + key_string(key) + " does not match the TensorSSA shape " +
                                           python_shape_string(shape));
  };
  if (c.is_underscore()) return;
  if (c.is_tuple()) {
    if (!s.is_tuple() || s.rank() != c.rank()) throw mismatch();
    for (int i = 0; i < c.rank(); ++i) check_coordinate(c[i], s[i], key, shape);
    return;
  }
  if (!c.is_int()) throw mismatch();
  const Int& v = c.as_int();
  if (v.is_static() && (v.value() < 0 || v.value() >= static_size(s)))
    throw TensorSSAError("SSA_INDEX", "coordinate " + key_string(key) + " is out of range for the TensorSSA shape " +
                                          python_shape_string(shape));
}

// Installs the trace's builder for layout arithmetic on dynamic coordinates.
struct LayoutBuilder {
  std::optional<layout::BuilderScope> scope;
  LayoutBuilder() {
    if (auto* t = dsl::Tracer::current()) scope.emplace(&t->builder());
  }
};

Num as_num(const Int& i) {
  if (i.is_static()) return Num::of_int(ir::i32(), i.value());
  return Num::of_value(i.ir_value());
}

// values[k] for the k whose key equals `index`: a run-time choice when `index` is dynamic.
Num select_by_key(const TensorSSA& t, const std::vector<int64_t>& keys, const Num& index) {
  if (index.is_static) {
    for (size_t k = 0; k < keys.size(); ++k)
      if (keys[k] == index.s.i) return t.values[k];
    throw TensorSSAError("SSA_INDEX", "index " + std::to_string(index.s.i) + " is out of range for the TensorSSA shape " +
                                          python_shape_string(t.shape));
  }
  size_t last = keys.size() - 1;
  Num r = t.values[last];
  for (size_t k = last; k-- > 0;) {
    Num hit = dsl::compare(ir::CmpPredicate::Eq, index, Num::of_int(index.type, keys[k]));
    r = dsl::select(hit, t.values[k], r);
  }
  return r;
}

// Row-major position (last flattened mode fastest) of each element, in element order.
std::vector<int64_t> row_major_positions(const IntTuple& shape) {
  std::vector<int64_t> extents;
  for (auto& e : layout::flatten_to_vector(shape)) extents.push_back(e.as_int().value());
  int64_t n = static_size(shape);
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = k, p = 0, row_stride = 1;
    std::vector<int64_t> coord;
    for (int64_t e : extents) {
      coord.push_back(rest % e);
      rest /= e;
    }
    for (size_t m = extents.size(); m-- > 0;) {
      p += coord[m] * row_stride;
      row_stride *= extents[m];
    }
    pos[size_t(k)] = p;
  }
  return pos;
}

void check_profile(const IntTuple& p, const IntTuple& s, const IntTuple& profile, const IntTuple& shape) {
  if (p.is_underscore()) return;
  if (p.is_tuple()) {
    if (!s.is_tuple() || s.rank() != p.rank())
      throw TensorSSAError("SSA_REDUCTION_PROFILE", "reduction_profile " + python_shape_string(profile) +
                                                        " does not match the TensorSSA shape " + python_shape_string(shape));
    for (int i = 0; i < p.rank(); ++i) check_profile(p[i], s[i], profile, shape);
    return;
  }
  if (!p.is_int() || p.as_int().is_dynamic())
    throw TensorSSAError("SSA_REDUCTION_PROFILE", "reduction_profile must hold static integers and None, got " +
                                                      python_shape_string(profile));
}

Num combine(ReductionOp op, const Num& acc, const Num& x, ir::Type element) {
  dsl::BinOp b = op == ReductionOp::Add ? dsl::BinOp::Add
               : op == ReductionOp::Mul ? dsl::BinOp::Mul
               : op == ReductionOp::Max ? dsl::BinOp::Max
                                        : dsl::BinOp::Min;
  return dsl::convert(dsl::binary(b, acc, x), element);
}

}  // namespace

// ---- construction --------------------------------------------------------------------------

TensorSSA TensorSSA::from_values(IntTuple shape, ir::Type element, std::vector<Num> values) {
  require_static_shape(shape, shape);
  if (!element || !element->is_scalar())
    throw TensorSSAError("SSA_DTYPE", "a TensorSSA element type must be a numeric type");
  int64_t n = static_size(shape);
  if (int64_t(values.size()) != n)
    throw TensorSSAError("SSA_SHAPE", "a TensorSSA of shape " + python_shape_string(shape) + " holds " +
                                          std::to_string(n) + " elements, got " + std::to_string(values.size()) +
                                          " values");
  TensorSSA t;
  t.shape = std::move(shape);
  t.element = element;
  t.values.reserve(values.size());
  for (auto& v : values) t.values.push_back(dsl::convert(v, element));
  return t;
}

TensorSSA TensorSSA::full(const IntTuple& shape, const Num& fill, ir::Type element) {
  require_static_shape(shape, shape);
  return from_values(shape, element, std::vector<Num>(size_t(static_size(shape)), fill));
}

std::string TensorSSA::vector_type() const { return ir::to_string(ir::vector_type(element, int(size()))); }

std::string TensorSSA::str() const { return "tensor_value<" + vector_type() + " o " + python_shape_string(shape) + ">"; }

std::string python_shape_string(const IntTuple& s) {
  switch (s.kind()) {
    case IntTuple::Kind::Int: return s.as_int().is_static() ? std::to_string(s.as_int().value()) : "?";
    case IntTuple::Kind::Underscore: return "None";
    case IntTuple::Kind::Basis: return layout::to_string(s);
    case IntTuple::Kind::Tuple: break;
  }
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + python_shape_string(s[i]);
  return out + (s.rank() == 1 ? ",)" : ")");
}

// ---- shapes ------------------------------------------------------------------------------------

IntTuple broadcast_shape(const IntTuple& a, const IntTuple& b) {
  auto r = broadcast_mode(a, b);
  if (!r)
    throw TensorSSAError("SSA_BROADCAST", "cannot broadcast shapes " + python_shape_string(a) + " and " +
                                              python_shape_string(b));
  return *r;
}

TensorSSA broadcast_to(const TensorSSA& t, const IntTuple& target) {
  require_static_shape(target, target);
  auto r = broadcast_mode(t.shape, target);
  if (!r || static_size(*r) != static_size(target) || layout::wrap(*r) != layout::wrap(target))
    throw TensorSSAError("SSA_BROADCAST", "cannot broadcast a TensorSSA of shape " + python_shape_string(t.shape) +
                                              " to " + python_shape_string(target) +
                                              " (each mode must be 1 or equal to the target's)");
  TensorSSA out;
  out.shape = target;
  out.element = t.element;
  for (int64_t k : gather_indices(t.shape, *r)) out.values.push_back(t.values[size_t(k)]);
  return out;
}

TensorSSA reshape(const TensorSSA& t, const IntTuple& target) {
  require_static_shape(target, target);
  if (static_size(target) != t.size())
    throw TensorSSAError("SSA_RESHAPE", "cannot reshape a TensorSSA of shape " + python_shape_string(t.shape) + " (" +
                                            std::to_string(t.size()) + " elements) to " + python_shape_string(target) +
                                            " (" + std::to_string(static_size(target)) + " elements)");
  TensorSSA out = t;
  out.shape = target;
  return out;
}

// ---- element-wise ------------------------------------------------------------------------------

TensorSSA binary(dsl::BinOp op, const Operand& a, const Operand& b) {
  bool boolean_sum = (op == dsl::BinOp::Add || op == dsl::BinOp::Sub) && element_type(a)->is_bool() &&
                     element_type(b)->is_bool();
  return elementwise({a, b}, "TensorSSA arithmetic", [&](const std::vector<Num>& x) {
    Num r = dsl::binary(op, x[0], x[1]);
    return boolean_sum ? dsl::to_boolean(r) : r;
  });
}

TensorSSA compare(ir::CmpPredicate p, const Operand& a, const Operand& b) {
  return elementwise({a, b}, "TensorSSA comparison",
                     [&](const std::vector<Num>& x) { return dsl::compare(p, x[0], x[1]); });
}

TensorSSA negate(const TensorSSA& t) { return map(t, [](const Num& v) { return dsl::negate(v); }); }
TensorSSA absolute(const TensorSSA& t) { return map(t, [](const Num& v) { return dsl::absolute(v); }); }
TensorSSA invert(const TensorSSA& t) { return map(t, [](const Num& v) { return dsl::invert(v); }); }

TensorSSA convert(const TensorSSA& t, ir::Type to) {
  if (!to || !to->is_scalar()) throw TensorSSAError("SSA_DTYPE", "TensorSSA.to needs a numeric type");
  return map(t, [&](const Num& v) { return dsl::convert(v, to); });
}

TensorSSA math(const std::string& fn, const std::vector<Operand>& args) {
  return elementwise(args, ("cute.math." + fn).c_str(), [&](const std::vector<Num>& x) { return dsl::math(fn, x); });
}

TensorSSA where(const Operand& cond, const Operand& x, const Operand& y) {
  if (!tensor_of(x) && !tensor_of(y))
    throw TensorSSAError("SSA_WHERE", "where: x or y must be a TensorSSA (a scalar is broadcast to its shape)");
  if (!element_type(cond)->is_bool())
    throw TensorSSAError("SSA_WHERE", "where: cond must be Boolean, got " + dsl::dtype_name(element_type(cond)));
  if (element_type(x) != element_type(y))
    throw TensorSSAError("SSA_WHERE", "where: x and y must have the same dtype, got " +
                                          dsl::dtype_name(element_type(x)) + " and " + dsl::dtype_name(element_type(y)) +
                                          " (convert one with .to(...) or build it with full_like)");
  return elementwise({cond, x, y}, "where",
                     [](const std::vector<Num>& v) { return dsl::select(v[0], v[1], v[2]); });
}

// ---- reductions --------------------------------------------------------------------------------

std::variant<TensorSSA, Num> reduce(const TensorSSA& t, ReductionOp op, const Num& init0, const IntTuple& profile0) {
  if (profile0.is_underscore()) return t;
  IntTuple shape = profile0.is_tuple() ? layout::wrap(t.shape) : t.shape;
  check_profile(profile0, shape, profile0, t.shape);
  Num init = dsl::convert(init0, t.element);
  IntTuple kept = profile0.is_tuple() ? layout::slice(profile0, shape) : IntTuple();
  if (kept.rank() == 0) {
    Num acc = init;
    for (auto& v : t.values) acc = combine(op, acc, v, t.element);
    return acc;
  }
  TensorSSA r;
  r.shape = kept;
  r.element = t.element;
  r.values.assign(size_t(static_size(kept)), init);
  for (int64_t j = 0; j < t.size(); ++j) {
    IntTuple kept_crd = layout::slice(profile0, layout::idx2crd(Int(j), shape));
    int64_t d = layout::crd2idx(kept_crd, kept).as_int().value();
    r.values[size_t(d)] = combine(op, r.values[size_t(d)], t.values[size_t(j)], t.element);
  }
  return r;
}

Num any(const TensorSSA& t) {
  Num acc = dsl::to_boolean(t.values.front());
  for (size_t k = 1; k < t.values.size(); ++k) acc = dsl::binary(dsl::BinOp::Or, acc, dsl::to_boolean(t.values[k]));
  return acc;
}

Num all(const TensorSSA& t) {
  Num acc = dsl::to_boolean(t.values.front());
  for (size_t k = 1; k < t.values.size(); ++k) acc = dsl::binary(dsl::BinOp::And, acc, dsl::to_boolean(t.values[k]));
  return acc;
}

// ---- indexing ----------------------------------------------------------------------------------

Num element_at(const TensorSSA& t, const IntTuple& key) {
  if (layout::has_underscore(key))
    throw TensorSSAError("SSA_INDEX", "element_at: coordinate " + key_string(key) + " has None modes; slice instead");
  if (key.is_int()) return select_by_key(t, row_major_positions(t.shape), as_num(key.as_int()));
  IntTuple shape = layout::wrap(t.shape);
  check_coordinate(key, shape, key, t.shape);
  LayoutBuilder scope;
  Int index = layout::crd2idx(key, shape).as_int();
  std::vector<int64_t> keys(size_t(t.size()));
  for (size_t k = 0; k < keys.size(); ++k) keys[k] = int64_t(k);
  return select_by_key(t, keys, as_num(index));
}

TensorSSA slice(const TensorSSA& t, const IntTuple& crd) {
  if (crd.is_underscore()) return t;
  if (!layout::has_underscore(crd))
    throw TensorSSAError("SSA_INDEX", "slice: coordinate " + key_string(crd) + " has no None mode; index instead");
  if (!crd.is_static())
    throw TensorSSAError("SSA_DYNAMIC_INDEX", "slicing a TensorSSA needs static coordinates, got " + key_string(crd));
  IntTuple shape = layout::wrap(t.shape);
  IntTuple c = layout::wrap(crd);
  check_coordinate(c, shape, crd, t.shape);
  IntTuple kept_shape = layout::slice(c, shape);
  IntTuple kept_strides = layout::slice(c, layout::compact_col_major(shape));
  int64_t offset = layout::crd2idx(c, shape).as_int().value();
  TensorSSA r;
  r.shape = kept_shape;
  r.element = t.element;
  for (int64_t j = 0, n = static_size(kept_shape); j < n; ++j)
    r.values.push_back(t.values[size_t(offset + layout::crd2idx(Int(j), kept_shape, kept_strides).as_int().value())]);
  return r;
}

}  // namespace opencute::cute
