// CuTe integer tuples whose leaves are static integers or dynamic IR values.
//
// An `Int` is either a static int64 or an `ir::Value*` (i32 or i64; i1 for the results of
// comparisons) together with a known divisibility. Arithmetic on two static leaves folds in C++;
// anything involving a dynamic leaf emits IR exactly once through the builder installed for the
// current thread (`BuilderScope`). Identities (x*1, x+0, x*0, x/1, x%1) never emit IR.
//
// An `IntTuple` is a leaf (Int, ScaledBasis, or Underscore) or a vector of IntTuples. The same
// type serves as Shape, Stride, Coord and (integer) Tile.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace opencute::layout {

// Every error of the layout algebra. The message starts with the function's name, e.g.
// "logical_divide: ...", and names the offending layouts / tuples.
struct LayoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The builder through which dynamic leaf arithmetic emits IR on this thread (null when none).
ir::Builder* current_builder();
// Installs a builder for the current thread for the scope's lifetime (nests; restores the
// previous one on destruction).
class BuilderScope {
 public:
  explicit BuilderScope(ir::Builder* b);
  ~BuilderScope();
  BuilderScope(const BuilderScope&) = delete;
  BuilderScope& operator=(const BuilderScope&) = delete;

 private:
  ir::Builder* prev_;
};

// A leaf integer: static value or dynamic IR value with known divisibility.
class Int {
 public:
  Int() = default;
  Int(int64_t v) : static_(v) {}  // NOLINT: implicit on purpose
  Int(int v) : static_(v) {}      // NOLINT
  // A dynamic leaf. `v` must be an integer value (i32, i64, or i1 for predicates).
  // divisibility >= 1.
  static Int dynamic(ir::Value* v, int64_t divisibility = 1);

  bool is_static() const { return value_ == nullptr; }
  bool is_dynamic() const { return value_ != nullptr; }
  // The static value; throws LayoutError for a dynamic leaf.
  int64_t value() const;
  ir::Value* ir_value() const { return value_; }
  // Largest known divisor: |v| for a static leaf (0 for static 0, meaning "divisible by
  // anything"), the tracked divisibility for a dynamic one.
  int64_t divisibility() const;
  // Bit width: 32 for static leaves, the IR type's width for dynamic ones.
  int width() const;
  // The leaf as an IR value of integer type `t` (constants for static leaves, casts when the
  // width differs). Needs a current builder.
  ir::Value* materialize(ir::Type t) const;

  bool is_static_value(int64_t v) const { return is_static() && static_ == v; }
  // Structural identity: equal static values, or the same IR value (no IR emitted).
  bool same(const Int& o) const;

 private:
  int64_t static_ = 0;
  ir::Value* value_ = nullptr;
  int64_t div_ = 1;
};

// Arithmetic. Folds when static; otherwise emits IR through current_builder().
Int operator+(const Int& a, const Int& b);
Int operator-(const Int& a, const Int& b);
Int operator*(const Int& a, const Int& b);
Int operator/(const Int& a, const Int& b);  // floor division
Int operator%(const Int& a, const Int& b);  // remainder (operands are non-negative in the algebra)
Int min(const Int& a, const Int& b);
Int max(const Int& a, const Int& b);
Int ceil_div(const Int& a, const Int& b);   // (a + b - 1) / b
Int shape_div(const Int& a, const Int& b);  // a/b when b divides a, else 1 when a < b (CuTe)
Int abs(const Int& a);
// Comparisons return a static 0/1 or a dynamic i1 leaf.
Int lt(const Int& a, const Int& b);
Int le(const Int& a, const Int& b);
Int eq(const Int& a, const Int& b);
Int ne(const Int& a, const Int& b);
Int logical_and(const Int& a, const Int& b);
int64_t gcd64(int64_t a, int64_t b);

struct Underscore {};

// A basis element `value@mode`: `mode` is the hierarchical path, top-level mode first
// (E({1,0}) is mode 0 of mode 1). Printed innermost-first, as CuTe does: value@0@1 for path {1,0}.
struct ScaledBasis {
  Int value = 1;
  std::vector<int> mode;
};

class IntTuple {
 public:
  enum class Kind : uint8_t { Int, Basis, Underscore, Tuple };

  IntTuple() : kind_(Kind::Tuple) {}                // the empty tuple ()
  IntTuple(Int v) : kind_(Kind::Int), int_(v) {}     // NOLINT
  IntTuple(int64_t v) : kind_(Kind::Int), int_(v) {} // NOLINT
  IntTuple(int v) : kind_(Kind::Int), int_(v) {}     // NOLINT
  IntTuple(ScaledBasis b) : kind_(Kind::Basis), basis_(std::move(b)) {}  // NOLINT
  IntTuple(Underscore) : kind_(Kind::Underscore) {}  // NOLINT
  IntTuple(std::vector<IntTuple> elems) : kind_(Kind::Tuple), elems_(std::move(elems)) {}  // NOLINT
  IntTuple(std::initializer_list<IntTuple> elems) : kind_(Kind::Tuple), elems_(elems) {}
  static IntTuple tuple(std::vector<IntTuple> elems) { return IntTuple(std::move(elems)); }
  static IntTuple underscore() { return IntTuple(Underscore{}); }

  Kind kind() const { return kind_; }
  bool is_tuple() const { return kind_ == Kind::Tuple; }
  bool is_leaf() const { return kind_ != Kind::Tuple; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_basis() const { return kind_ == Kind::Basis; }
  bool is_underscore() const { return kind_ == Kind::Underscore; }

  // Leaf accessors; throw LayoutError on the wrong kind.
  const Int& as_int() const;
  const ScaledBasis& as_basis() const;
  const std::vector<IntTuple>& elems() const { return elems_; }
  std::vector<IntTuple>& elems() { return elems_; }

  // Rank: number of top-level elements (1 for a leaf).
  int rank() const { return is_tuple() ? int(elems_.size()) : 1; }
  // Top-level element i (a leaf is its own element 0). Throws LayoutError when out of range.
  const IntTuple& operator[](int i) const;
  void push_back(IntTuple t);

  // True when every leaf is static (Int static, basis with static value, underscore).
  bool is_static() const;

 private:
  Kind kind_;
  Int int_;
  ScaledBasis basis_;
  std::vector<IntTuple> elems_;
};

using Shape = IntTuple;
using Stride = IntTuple;
using Coord = IntTuple;
using Tile = IntTuple;

// Structural equality (static values equal, dynamic leaves are the same IR value).
bool operator==(const IntTuple& a, const IntTuple& b);
inline bool operator!=(const IntTuple& a, const IntTuple& b) { return !(a == b); }

// ---- tuple utilities (CuTe int_tuple.hpp) ----
int depth(const IntTuple& t);               // leaf 0, () 1, (1,2) 1, ((1,2),3) 2
IntTuple flatten(const IntTuple& t);        // leaves, in order, as a tuple (leaf stays a leaf)
std::vector<IntTuple> flatten_to_vector(const IntTuple& t);
// Rebuild `flat` (a flat tuple/vector of leaves) with the nesting of `profile`.
IntTuple unflatten(const std::vector<IntTuple>& flat, const IntTuple& profile);
IntTuple wrap(const IntTuple& t);           // leaf x -> (x); tuple unchanged
IntTuple unwrap(const IntTuple& t);         // (x) -> unwrap(x)
bool congruent(const IntTuple& a, const IntTuple& b);
bool weakly_congruent(const IntTuple& a, const IntTuple& b);  // a's profile is a prefix-profile of b
bool has_underscore(const IntTuple& t);
bool has_basis(const IntTuple& t);
// Hierarchical access along a mode path; empty path = t itself.
const IntTuple& get(const IntTuple& t, const std::vector<int>& path);
IntTuple select(const IntTuple& t, const std::vector<int>& modes);
IntTuple group_modes(const IntTuple& t, int begin, int end);  // negatives count from the end
IntTuple take(const IntTuple& t, int begin, int end);
IntTuple prepend(const IntTuple& t, const IntTuple& x, int up_to_rank = -1);
IntTuple append(const IntTuple& t, const IntTuple& x, int up_to_rank = -1);
IntTuple slice(const IntTuple& coord, const IntTuple& t);  // keep modes where coord is _
IntTuple dice(const IntTuple& coord, const IntTuple& t);   // keep modes where coord is not _
IntTuple repeat_like(const IntTuple& t, const IntTuple& x);

// Products and division of shapes.
Int product(const IntTuple& t);
IntTuple product_each(const IntTuple& t);
IntTuple product_like(const IntTuple& t, const IntTuple& profile);
Int inner_product(const IntTuple& a, const IntTuple& b);
IntTuple shape_div(const IntTuple& a, const IntTuple& b);
IntTuple ceil_div(const IntTuple& a, const IntTuple& b);
// Element-wise ceil(a / b) * b (b padded with 1s to a's rank; CuTe's round_up).
IntTuple round_up(const IntTuple& a, const IntTuple& b);
IntTuple shape_min(const IntTuple& a, const IntTuple& b);
IntTuple elem_scale(const IntTuple& a, const IntTuple& b);
IntTuple prefix_product(const IntTuple& t);  // exclusive, congruent to t
// Element-wise a < b on congruent coordinates, AND-reduced: static 0/1 or dynamic i1.
Int elem_less(const IntTuple& a, const IntTuple& b);
// The position (a path of mode indices, outermost first) of the first leaf, in colexicographic
// order, whose stride is static 1 and whose shape is not static 1: the tensor's leading dimension.
// Empty when there is none. Throws LayoutError when shape and stride are not congruent.
std::vector<int> leading_dim(const IntTuple& shape, const IntTuple& stride);
// Compact column-major strides for a shape: prefix products, except that static size-1 modes
// get stride 0 (as CuTe).
IntTuple compact_col_major(const IntTuple& shape, const Int& start = 1);

// Stride arithmetic, where strides may be ScaledBasis: c * stride and the sum of two offsets.
// A sum involving bases becomes a tuple coordinate ((2@0 + 3@1) == (2,3)).
IntTuple stride_scale(const Int& c, const IntTuple& stride);
IntTuple offset_add(const IntTuple& a, const IntTuple& b);

// ---- coordinates ----
// Colexicographic index -> hierarchical coordinate congruent to `shape`.
IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape);
IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape, const IntTuple& stride);
// Coordinate -> index for a shape (compact column-major) or an explicit stride. An integer
// coordinate on a tuple shape is a 1-D (colexicographic) index. Underscores count as 0.
IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape, const IntTuple& stride);
IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape);

}  // namespace opencute::layout
