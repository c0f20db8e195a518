// Leaf arithmetic (static folding, dynamic IR emission with divisibility) and tuple utilities.
#include "layout/int_tuple.h"

#include <algorithm>
#include <numeric>

#include "layout/print.h"

namespace opencute::layout {

namespace {
thread_local ir::Builder* g_builder = nullptr;

ir::Builder* need_builder(const char* fn) {
  if (!g_builder) throw LayoutError(std::string(fn) + ": dynamic value used with no IR builder installed");
  return g_builder;
}

// The integer type two operands are computed in: the wider of the dynamic ones.
ir::Type common_type(const Int& a, const Int& b) {
  int w = 0;
  if (a.is_dynamic()) w = std::max(w, a.width());
  if (b.is_dynamic()) w = std::max(w, b.width());
  return w == 64 ? ir::i64() : w == 1 ? ir::bool_type() : ir::i32();
}

Int emit(ir::OpCode code, const Int& a, const Int& b, int64_t div) {
  ir::Builder* bld = need_builder(ir::opcode_name(code));
  ir::Type t = common_type(a, b);
  ir::Value* r = bld->binary(code, a.materialize(t), b.materialize(t));
  if (ir::is_constant(r)) return Int(ir::constant_int(r));
  return Int::dynamic(r, div);
}

Int emit_cmp(ir::CmpPredicate p, const Int& a, const Int& b) {
  ir::Builder* bld = need_builder("compare");
  ir::Type t = common_type(a, b);
  if (t->is_bool()) t = ir::i32();
  ir::Value* r = bld->cmp(p, a.materialize(t), b.materialize(t));
  if (ir::is_constant(r)) return Int(ir::constant_int(r) != 0 ? 1 : 0);
  return Int::dynamic(r, 1);
}

int64_t floor_div64(int64_t a, int64_t b) {
  int64_t q = a / b, m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

ir::Builder* current_builder() { return g_builder; }
BuilderScope::BuilderScope(ir::Builder* b) : prev_(g_builder) { g_builder = b; }
BuilderScope::~BuilderScope() { g_builder = prev_; }

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

Int Int::dynamic(ir::Value* v, int64_t divisibility) {
  if (!v || !v->type || !v->type->is_int())
    throw LayoutError("Int: a dynamic leaf must be an integer IR value");
  if (ir::is_constant(v)) return Int(ir::constant_int(v));
  Int r;
  r.value_ = v;
  r.div_ = divisibility < 1 ? 1 : divisibility;
  return r;
}

int64_t Int::value() const {
  if (value_) throw LayoutError("Int: static value required, got a dynamic leaf " + to_string(*this));
  return static_;
}
int64_t Int::divisibility() const { return value_ ? div_ : (static_ < 0 ? -static_ : static_); }
int Int::width() const { return value_ ? value_->type->width : 32; }
bool Int::same(const Int& o) const {
  if (is_static() != o.is_static()) return false;
  return is_static() ? static_ == o.static_ : value_ == o.value_;
}

ir::Value* Int::materialize(ir::Type t) const {
  ir::Builder* b = need_builder("Int");
  if (is_static()) return b->const_int(t, static_);
  if (value_->type == t) return value_;
  return b->cast(value_, t);
}

Int operator+(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() + b.value();
  if (a.is_static_value(0)) return b;
  if (b.is_static_value(0)) return a;
  return emit(ir::OpCode::Add, a, b, gcd64(a.divisibility(), b.divisibility()));
}
Int operator-(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() - b.value();
  if (b.is_static_value(0)) return a;
  if (a.same(b)) return 0;
  return emit(ir::OpCode::Sub, a, b, gcd64(a.divisibility(), b.divisibility()));
}
Int operator*(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() * b.value();
  if (a.is_static_value(0) || b.is_static_value(0)) return 0;
  if (a.is_static_value(1)) return b;
  if (b.is_static_value(1)) return a;
  return emit(ir::OpCode::Mul, a, b, a.divisibility() * b.divisibility());
}
Int operator/(const Int& a, const Int& b) {
  if (b.is_static_value(0)) throw LayoutError("floor_div: division by zero");
  if (a.is_static() && b.is_static()) return floor_div64(a.value(), b.value());
  if (b.is_static_value(1)) return a;
  if (a.is_static_value(0)) return 0;
  if (a.same(b)) return 1;
  int64_t div = 1;
  if (b.is_static() && b.value() > 0 && a.divisibility() % b.value() == 0) div = a.divisibility() / b.value();
  return emit(ir::OpCode::FloorDiv, a, b, div);
}
Int operator%(const Int& a, const Int& b) {
  if (b.is_static_value(0)) throw LayoutError("mod: division by zero");
  if (a.is_static() && b.is_static()) return a.value() % b.value();
  if (b.is_static_value(1) || a.is_static_value(0) || a.same(b)) return 0;
  if (b.is_static() && a.divisibility() % b.value() == 0) return 0;
  return emit(ir::OpCode::Rem, a, b, b.is_static() ? gcd64(a.divisibility(), b.value()) : 1);
}
Int min(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return std::min(a.value(), b.value());
  if (a.same(b)) return a;
  return emit(ir::OpCode::Min, a, b, gcd64(a.divisibility(), b.divisibility()));
}
Int max(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return std::max(a.value(), b.value());
  if (a.same(b)) return a;
  return emit(ir::OpCode::Max, a, b, gcd64(a.divisibility(), b.divisibility()));
}
Int ceil_div(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) {
    int64_t x = a.value(), y = b.value();
    if (y == 0) throw LayoutError("ceil_div: division by zero");
    return floor_div64(x + y - 1, y);
  }
  if (b.is_static_value(1)) return a;
  if (a.is_static_value(1) || a.same(b)) return 1;  // extents are positive
  if (a.is_static_value(0)) return 0;
  if (b.is_static() && b.value() > 0 && a.divisibility() % b.value() == 0) return a / b;
  return (a + (b - 1)) / b;
}
Int shape_div(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) {
    int64_t x = a.value(), y = b.value();
    if (y == 0) throw LayoutError("shape_div: division by zero");
    if (x % y != 0 && y % x != 0)
      throw LayoutError("shape_div: " + std::to_string(x) + " and " + std::to_string(y) + " do not divide each other");
    int64_t q = x / y;
    if (q != 0) return q;
    return ((x < 0) != (y < 0)) ? -1 : 1;
  }
  if (b.is_static_value(1)) return a;
  if (a.same(b)) return 1;
  if (b.is_static() && b.value() > 0 && a.divisibility() % b.value() == 0) return a / b;
  if (a.is_static_value(1)) return 1;
  // a/b, or 1 when b exceeds a (rounding away from zero for positive extents).
  return max(a / b, 1);
}
Int abs(const Int& a) {
  if (a.is_static()) return a.value() < 0 ? -a.value() : a.value();
  return a;  // dynamic extents and strides are taken as non-negative
}
Int lt(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() < b.value() ? 1 : 0;
  if (a.same(b)) return 0;
  return emit_cmp(ir::CmpPredicate::Lt, a, b);
}
Int le(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() <= b.value() ? 1 : 0;
  if (a.same(b)) return 1;
  return emit_cmp(ir::CmpPredicate::Le, a, b);
}
Int eq(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() == b.value() ? 1 : 0;
  if (a.same(b)) return 1;
  return emit_cmp(ir::CmpPredicate::Eq, a, b);
}
Int ne(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return a.value() != b.value() ? 1 : 0;
  if (a.same(b)) return 0;
  return emit_cmp(ir::CmpPredicate::Ne, a, b);
}
Int logical_and(const Int& a, const Int& b) {
  if (a.is_static()) return a.value() ? b : Int(0);
  if (b.is_static()) return b.value() ? a : Int(0);
  ir::Builder* bld = need_builder("logical_and");
  ir::Value* x = a.ir_value();
  ir::Value* y = b.ir_value();
  if (!x->type->is_bool()) x = bld->cmp(ir::CmpPredicate::Ne, x, bld->const_int(x->type, 0));
  if (!y->type->is_bool()) y = bld->cmp(ir::CmpPredicate::Ne, y, bld->const_int(y->type, 0));
  return Int::dynamic(bld->binary(ir::OpCode::And, x, y), 1);
}

// ---------------- IntTuple ----------------

const Int& IntTuple::as_int() const {
  if (kind_ != Kind::Int) throw LayoutError("IntTuple: expected an integer, got " + to_string(*this));
  return int_;
}
const ScaledBasis& IntTuple::as_basis() const {
  if (kind_ != Kind::Basis) throw LayoutError("IntTuple: expected a scaled basis, got " + to_string(*this));
  return basis_;
}
const IntTuple& IntTuple::operator[](int i) const {
  if (!is_tuple()) {
    if (i == 0) return *this;
  } else if (i >= 0 && i < int(elems_.size())) {
    return elems_[i];
  }
  throw LayoutError("get: mode " + std::to_string(i) + " out of range for " + to_string(*this));
}
void IntTuple::push_back(IntTuple t) {
  if (!is_tuple()) {
    IntTuple self = *this;
    *this = IntTuple(std::vector<IntTuple>{self});
  }
  elems_.push_back(std::move(t));
}
bool IntTuple::is_static() const {
  switch (kind_) {
    case Kind::Int: return int_.is_static();
    case Kind::Basis: return basis_.value.is_static();
    case Kind::Underscore: return true;
    case Kind::Tuple:
      for (auto& e : elems_)
        if (!e.is_static()) return false;
      return true;
  }
  return true;
}

bool operator==(const IntTuple& a, const IntTuple& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case IntTuple::Kind::Int: return a.as_int().same(b.as_int());
    case IntTuple::Kind::Basis:
      return a.as_basis().value.same(b.as_basis().value) && a.as_basis().mode == b.as_basis().mode;
    case IntTuple::Kind::Underscore: return true;
    case IntTuple::Kind::Tuple:
      if (a.rank() != b.rank()) return false;
      for (int i = 0; i < a.rank(); ++i)
        if (!(a[i] == b[i])) return false;
      return true;
  }
  return false;
}

int depth(const IntTuple& t) {
  if (t.is_leaf()) return 0;
  int d = 0;
  for (auto& e : t.elems()) d = std::max(d, depth(e));
  return d + 1;
}

static void flatten_into(const IntTuple& t, std::vector<IntTuple>& out) {
  if (t.is_leaf()) {
    out.push_back(t);
    return;
  }
  for (auto& e : t.elems()) flatten_into(e, out);
}
std::vector<IntTuple> flatten_to_vector(const IntTuple& t) {
  std::vector<IntTuple> out;
  flatten_into(t, out);
  return out;
}
IntTuple flatten(const IntTuple& t) {
  if (t.is_leaf()) return t;
  return IntTuple(flatten_to_vector(t));
}

static IntTuple unflatten_rec(const std::vector<IntTuple>& flat, size_t& pos, const IntTuple& profile) {
  if (profile.is_leaf()) {
    if (pos >= flat.size()) throw LayoutError("unflatten: too few elements for profile " + to_string(profile));
    return flat[pos++];
  }
  std::vector<IntTuple> out;
  for (auto& e : profile.elems()) out.push_back(unflatten_rec(flat, pos, e));
  return IntTuple(std::move(out));
}
IntTuple unflatten(const std::vector<IntTuple>& flat, const IntTuple& profile) {
  size_t pos = 0;
  IntTuple r = unflatten_rec(flat, pos, profile);
  if (pos != flat.size()) throw LayoutError("unflatten: too many elements for profile " + to_string(profile));
  return r;
}
IntTuple wrap(const IntTuple& t) { return t.is_tuple() ? t : IntTuple(std::vector<IntTuple>{t}); }
IntTuple unwrap(const IntTuple& t) { return (t.is_tuple() && t.rank() == 1) ? unwrap(t[0]) : t; }

bool congruent(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf() || b.is_leaf()) return a.is_leaf() && b.is_leaf();
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!congruent(a[i], b[i])) return false;
  return true;
}
bool weakly_congruent(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf()) return true;
  if (b.is_leaf()) return false;
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!weakly_congruent(a[i], b[i])) return false;
  return true;
}
bool has_underscore(const IntTuple& t) {
  if (t.is_underscore()) return true;
  if (t.is_tuple())
    for (auto& e : t.elems())
      if (has_underscore(e)) return true;
  return false;
}
bool has_basis(const IntTuple& t) {
  if (t.is_basis()) return true;
  if (t.is_tuple())
    for (auto& e : t.elems())
      if (has_basis(e)) return true;
  return false;
}

const IntTuple& get(const IntTuple& t, const std::vector<int>& path) {
  const IntTuple* cur = &t;
  for (int i : path) {
    if (i < 0 || i >= cur->rank())
      throw LayoutError("get: mode " + std::to_string(i) + " out of range for " + to_string(*cur));
    cur = &(*cur)[i];
  }
  return *cur;
}
IntTuple select(const IntTuple& t, const std::vector<int>& modes) {
  std::vector<IntTuple> out;
  for (int i : modes) {
    if (i < 0 || i >= t.rank())
      throw LayoutError("select: mode " + std::to_string(i) + " out of range for " + to_string(t));
    out.push_back(t[i]);
  }
  return IntTuple(std::move(out));
}
IntTuple take(const IntTuple& t, int begin, int end) {
  std::vector<IntTuple> out;
  for (int i = begin; i < end; ++i) out.push_back(t[i]);
  return IntTuple(std::move(out));
}
IntTuple group_modes(const IntTuple& t, int begin, int end) {
  IntTuple w = wrap(t);
  int r = w.rank();
  if (begin < 0) begin += r;
  if (end < 0) end += r;
  if (begin < 0 || end > r || begin >= end)
    throw LayoutError("group_modes: invalid range [" + std::to_string(begin) + "," + std::to_string(end) +
                      ") for " + to_string(t));
  std::vector<IntTuple> out;
  for (int i = 0; i < begin; ++i) out.push_back(w[i]);
  out.push_back(take(w, begin, end));
  for (int i = end; i < r; ++i) out.push_back(w[i]);
  return IntTuple(std::move(out));
}
IntTuple prepend(const IntTuple& t, const IntTuple& x, int up_to_rank) {
  IntTuple w = wrap(t);
  int n = up_to_rank < 0 ? 1 : up_to_rank - w.rank();
  std::vector<IntTuple> out;
  for (int i = 0; i < n; ++i) out.push_back(x);
  for (auto& e : w.elems()) out.push_back(e);
  return IntTuple(std::move(out));
}
IntTuple append(const IntTuple& t, const IntTuple& x, int up_to_rank) {
  IntTuple w = wrap(t);
  int n = up_to_rank < 0 ? 1 : up_to_rank - w.rank();
  std::vector<IntTuple> out = w.elems();
  for (int i = 0; i < n; ++i) out.push_back(x);
  return IntTuple(std::move(out));
}

// Slicing concatenates the kept pieces of each mode (CuTe filter_tuple).
static void slice_into(const IntTuple& c, const IntTuple& t, std::vector<IntTuple>& out, bool keep_under) {
  if (c.is_underscore()) {
    if (keep_under) out.push_back(t);
    return;
  }
  if (c.is_tuple()) {
    if (!t.is_tuple() || t.rank() != c.rank())
      throw LayoutError(std::string(keep_under ? "slice" : "dice") + ": coordinate " + to_string(c) +
                        " does not match " + to_string(t));
    for (int i = 0; i < c.rank(); ++i) slice_into(c[i], t[i], out, keep_under);
    return;
  }
  if (!keep_under) out.push_back(t);
}
IntTuple slice(const IntTuple& coord, const IntTuple& t) {
  if (!coord.is_tuple()) return coord.is_underscore() ? t : IntTuple();
  std::vector<IntTuple> out;
  slice_into(coord, t, out, true);
  return IntTuple(std::move(out));
}
IntTuple dice(const IntTuple& coord, const IntTuple& t) {
  if (!coord.is_tuple()) return coord.is_underscore() ? IntTuple() : t;
  std::vector<IntTuple> out;
  slice_into(coord, t, out, false);
  return IntTuple(std::move(out));
}
IntTuple repeat_like(const IntTuple& t, const IntTuple& x) {
  if (t.is_leaf()) return x;
  std::vector<IntTuple> out;
  for (auto& e : t.elems()) out.push_back(repeat_like(e, x));
  return IntTuple(std::move(out));
}

Int product(const IntTuple& t) {
  if (t.is_int()) return t.as_int();
  if (t.is_tuple()) {
    Int p = 1;
    for (auto& e : t.elems()) p = p * product(e);
    return p;
  }
  throw LayoutError("product: not an integer tuple: " + to_string(t));
}
IntTuple product_each(const IntTuple& t) {
  if (t.is_leaf()) return product(t);
  std::vector<IntTuple> out;
  for (auto& e : t.elems()) out.push_back(product(e));
  return IntTuple(std::move(out));
}
IntTuple product_like(const IntTuple& t, const IntTuple& profile) {
  if (profile.is_leaf()) return product(t);
  if (!t.is_tuple() || t.rank() != profile.rank())
    throw LayoutError("product_like: " + to_string(t) + " does not match profile " + to_string(profile));
  std::vector<IntTuple> out;
  for (int i = 0; i < t.rank(); ++i) out.push_back(product_like(t[i], profile[i]));
  return IntTuple(std::move(out));
}
Int inner_product(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple() && b.is_tuple() && a.rank() == b.rank()) {
    Int s = 0;
    for (int i = 0; i < a.rank(); ++i) s = s + inner_product(a[i], b[i]);
    return s;
  }
  if (a.is_int() && b.is_int()) return a.as_int() * b.as_int();
  throw LayoutError("inner_product: " + to_string(a) + " and " + to_string(b) + " are not congruent");
}

// Fold `b` through the modes of tuple `a` (CuTe's tuple-by-int division).
template <class F, class G>
static IntTuple fold_div(const IntTuple& a, const Int& b, F elem, G rest) {
  std::vector<IntTuple> out;
  IntTuple r = b;
  for (auto& ai : a.elems()) {
    out.push_back(elem(ai, r));
    r = rest(r, ai);
  }
  return IntTuple(std::move(out));
}

IntTuple shape_div(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    if (b.is_tuple()) {
      if (a.rank() != b.rank())
        throw LayoutError("shape_div: rank mismatch " + to_string(a) + " / " + to_string(b));
      std::vector<IntTuple> out;
      for (int i = 0; i < a.rank(); ++i) out.push_back(shape_div(a[i], b[i]));
      return IntTuple(std::move(out));
    }
    return fold_div(
        a, b.as_int(), [](const IntTuple& ai, const IntTuple& r) { return shape_div(ai, r); },
        [](const IntTuple& r, const IntTuple& ai) { return shape_div(r, ai); });
  }
  if (b.is_tuple()) return shape_div(a, IntTuple(product(b)));
  return layout::shape_div(a.as_int(), b.as_int());
}
IntTuple round_up(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple() && b.is_tuple()) {
    if (a.rank() < b.rank()) throw LayoutError("round_up: rank mismatch " + to_string(a) + " and " + to_string(b));
    std::vector<IntTuple> out;
    for (int i = 0; i < a.rank(); ++i) out.push_back(i < b.rank() ? round_up(a[i], b[i]) : a[i]);
    return IntTuple(std::move(out));
  }
  if (!a.is_int() || !b.is_int())
    throw LayoutError("round_up: " + to_string(a) + " and " + to_string(b) + " are not both integers or both tuples");
  const Int& x = a.as_int();
  const Int& y = b.as_int();
  if (y.is_static() && y.value() < 1) throw LayoutError("round_up: the multiple must be positive, got " + to_string(b));
  return ((x + y - Int(1)) / y) * y;
}

IntTuple ceil_div(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    if (b.is_tuple()) {
      if (a.rank() < b.rank())
        throw LayoutError("ceil_div: rank mismatch " + to_string(a) + " / " + to_string(b));
      std::vector<IntTuple> out;
      for (int i = 0; i < a.rank(); ++i) out.push_back(i < b.rank() ? ceil_div(a[i], b[i]) : a[i]);
      return IntTuple(std::move(out));
    }
    return fold_div(
        a, b.as_int(), [](const IntTuple& ai, const IntTuple& r) { return ceil_div(ai, r); },
        [](const IntTuple& r, const IntTuple& ai) { return ceil_div(r, ai); });
  }
  if (b.is_tuple()) return ceil_div(a, IntTuple(product(b)));
  return layout::ceil_div(a.as_int(), b.as_int());
}
IntTuple shape_min(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple() && b.is_tuple()) {
    std::vector<IntTuple> out;
    for (int i = 0; i < a.rank(); ++i) out.push_back(shape_min(a[i], b[i]));
    return IntTuple(std::move(out));
  }
  return layout::min(product(a), product(b));
}
IntTuple elem_scale(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    std::vector<IntTuple> out;
    for (int i = 0; i < a.rank(); ++i) out.push_back(elem_scale(a[i], b[i]));
    return IntTuple(std::move(out));
  }
  return stride_scale(product(b), a);
}

static IntTuple prefix_rec(const IntTuple& t, Int& acc) {
  if (t.is_leaf()) {
    Int here = acc;
    acc = acc * t.as_int();
    return here;
  }
  std::vector<IntTuple> out;
  for (auto& e : t.elems()) out.push_back(prefix_rec(e, acc));
  return IntTuple(std::move(out));
}
IntTuple prefix_product(const IntTuple& t) {
  Int acc = 1;
  return prefix_rec(t, acc);
}
// As CuTe's compact strides: a mode of static size 1 is never stepped through, so it gets
// stride 0 and the running stride passes it unchanged ((4,1) -> (1,0), (1,8) -> (0,1)).
static IntTuple compact_rec(const IntTuple& t, Int& acc) {
  if (t.is_leaf()) {
    if (t.as_int().is_static_value(1)) return Int(0);
    Int here = acc;
    acc = acc * t.as_int();
    return here;
  }
  std::vector<IntTuple> out;
  for (auto& e : t.elems()) out.push_back(compact_rec(e, acc));
  return IntTuple(std::move(out));
}
IntTuple compact_col_major(const IntTuple& shape, const Int& start) {
  Int acc = start;
  return compact_rec(shape, acc);
}

Int elem_less(const IntTuple& a, const IntTuple& b);
Int elem_less(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple() && b.is_tuple()) {
    if (a.rank() > b.rank())
      throw LayoutError("elem_less: " + to_string(a) + " and " + to_string(b) + " are not congruent");
    Int r = 1;
    for (int i = 0; i < a.rank(); ++i) r = logical_and(r, elem_less(a[i], b[i]));
    return r;
  }
  if (a.is_int() && b.is_int()) return lt(a.as_int(), b.as_int());
  throw LayoutError("elem_less: " + to_string(a) + " and " + to_string(b) + " are not congruent");
}

// ---- stride arithmetic with bases ----
IntTuple stride_scale(const Int& c, const IntTuple& stride) {
  switch (stride.kind()) {
    case IntTuple::Kind::Int: return c * stride.as_int();
    case IntTuple::Kind::Basis: {
      ScaledBasis b = stride.as_basis();
      b.value = c * b.value;
      return b;
    }
    case IntTuple::Kind::Tuple: {
      std::vector<IntTuple> out;
      for (auto& e : stride.elems()) out.push_back(stride_scale(c, e));
      return IntTuple(std::move(out));
    }
    default: throw LayoutError("stride_scale: invalid stride " + to_string(stride));
  }
}

// A basis as the tuple coordinate it denotes: value at its path, zero elsewhere (path modes
// below the length needed are padded with zeros).
static IntTuple basis_to_tuple(const ScaledBasis& b, size_t level = 0) {
  if (level == b.mode.size()) return b.value;
  int m = b.mode[level];
  std::vector<IntTuple> out(size_t(m) + 1, IntTuple(0));
  out[m] = basis_to_tuple(b, level + 1);
  return IntTuple(std::move(out));
}
static bool is_zero(const IntTuple& t) { return t.is_int() && t.as_int().is_static_value(0); }

IntTuple offset_add(const IntTuple& a, const IntTuple& b) {
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  if (a.is_int() && b.is_int()) return a.as_int() + b.as_int();
  if (a.is_basis() && b.is_basis() && a.as_basis().mode == b.as_basis().mode) {
    ScaledBasis r = a.as_basis();
    r.value = r.value + b.as_basis().value;
    return r;
  }
  IntTuple x = a.is_basis() ? basis_to_tuple(a.as_basis()) : a;
  IntTuple y = b.is_basis() ? basis_to_tuple(b.as_basis()) : b;
  if (x.is_tuple() && y.is_tuple()) {
    std::vector<IntTuple> out;
    int r = std::max(x.rank(), y.rank());
    for (int i = 0; i < r; ++i) {
      IntTuple xi = i < x.rank() ? x[i] : IntTuple(0);
      IntTuple yi = i < y.rank() ? y[i] : IntTuple(0);
      out.push_back(offset_add(xi, yi));
    }
    return IntTuple(std::move(out));
  }
  throw LayoutError("offset_add: cannot add " + to_string(a) + " and " + to_string(b));
}

// ---- coordinates ----
IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape, const IntTuple& stride) {
  if (idx.is_tuple()) {
    if (!shape.is_tuple() || shape.rank() != idx.rank())
      throw LayoutError("idx2crd: coordinate " + to_string(idx) + " does not match shape " + to_string(shape));
    std::vector<IntTuple> out;
    for (int i = 0; i < idx.rank(); ++i) out.push_back(idx2crd(idx[i], shape[i], stride[i]));
    return IntTuple(std::move(out));
  }
  if (shape.is_tuple()) {
    std::vector<IntTuple> out;
    for (int i = 0; i < shape.rank(); ++i) out.push_back(idx2crd(idx, shape[i], stride[i]));
    return IntTuple(std::move(out));
  }
  const Int& s = shape.as_int();
  if (s.is_static_value(1)) return Int(0);
  return (idx.as_int() / stride.as_int()) % s;
}
IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape) {
  if (idx.is_leaf() && shape.is_leaf()) return idx;
  return idx2crd(idx, shape, prefix_product(shape));
}

IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape, const IntTuple& stride) {
  if (coord.is_underscore()) return Int(0);
  if (coord.is_tuple()) {
    if (!shape.is_tuple() || shape.rank() != coord.rank())
      throw LayoutError("crd2idx: coordinate " + to_string(coord) + " does not match shape " + to_string(shape));
    IntTuple r = Int(0);
    for (int i = 0; i < coord.rank(); ++i) r = offset_add(r, crd2idx(coord[i], shape[i], stride[i]));
    return r;
  }
  if (!coord.is_int()) throw LayoutError("crd2idx: invalid coordinate " + to_string(coord));
  if (shape.is_tuple()) {
    // 1-D index into a multi-mode shape: split colexicographically; the last mode takes the rest.
    Int c = coord.as_int();
    IntTuple r = Int(0);
    int n = shape.rank();
    for (int i = 0; i < n; ++i) {
      if (i + 1 == n) {
        r = offset_add(r, crd2idx(c, shape[i], stride[i]));
      } else {
        Int si = product(shape[i]);
        r = offset_add(r, crd2idx(c % si, shape[i], stride[i]));
        c = c / si;
      }
    }
    return r;
  }
  return stride_scale(coord.as_int(), stride);
}
IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape) {
  return crd2idx(coord, shape, prefix_product(shape));
}

// ---- leading dimension (cute.leading_dim, Tensor.leading_dim) ----
namespace {
bool find_leading(const IntTuple& shape, const IntTuple& stride, std::vector<int>& path) {
  if (shape.is_tuple() != stride.is_tuple() || (shape.is_tuple() && shape.rank() != stride.rank()))
    throw LayoutError("leading_dim: shape " + to_string(shape) + " and stride " + to_string(stride) +
                      " are not congruent");
  if (!shape.is_tuple()) {
    const bool unit_stride = stride.is_int() && stride.as_int().is_static_value(1);
    const bool unit_extent = shape.is_int() && shape.as_int().is_static_value(1);
    return unit_stride && !unit_extent;
  }
  for (int i = 0; i < shape.rank(); ++i) {
    path.push_back(i);
    if (find_leading(shape[i], stride[i], path)) return true;
    path.pop_back();
  }
  return false;
}
}  // namespace

std::vector<int> leading_dim(const IntTuple& shape, const IntTuple& stride) {
  std::vector<int> path;
  if (!find_leading(shape, stride, path)) path.clear();
  return path;
}

}  // namespace opencute::layout
