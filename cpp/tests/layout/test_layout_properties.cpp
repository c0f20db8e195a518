// Property tests of the static layout algebra over generated layouts (fixed seeds).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "layout/layout.h"
#include "layout/print.h"

using namespace opencute::layout;

namespace {
int64_t at(const Layout& l, int64_t i) { return l(IntTuple(i)).as_int().value(); }
int64_t sz(const Layout& l) { return size(l).value(); }

struct Gen {
  std::mt19937 rng;
  explicit Gen(unsigned seed) : rng(seed) {}
  int64_t pick(std::initializer_list<int64_t> xs) {
    std::vector<int64_t> v(xs);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  // A shape tuple of rank 1..3 with an occasional nested mode.
  IntTuple shape(std::initializer_list<int64_t> extents = {1, 2, 3, 4, 6, 8}) {
    int r = uniform(1, 3);
    std::vector<IntTuple> modes;
    for (int i = 0; i < r; ++i) {
      if (uniform(0, 4) == 0) modes.push_back(IntTuple{pick(extents), pick(extents)});
      else modes.push_back(pick(extents));
    }
    return r == 1 && modes[0].is_leaf() ? modes[0] : IntTuple(modes);
  }
  // Any layout: arbitrary small strides, zeros included.
  Layout any_layout() {
    IntTuple s = shape();
    std::vector<IntTuple> d;
    for (size_t i = 0; i < flatten_to_vector(s).size(); ++i) d.push_back(pick({0, 1, 2, 3, 4, 8, 12}));
    return make_layout(s, unflatten(d, s));
  }
  // An injective layout whose strides divide each other: a compact layout of a random order,
  // with some modes dropped (gaps in the image).
  Layout injective_layout(bool gaps = true) {
    IntTuple s = shape({2, 3, 4, 8});
    std::vector<IntTuple> leaves = flatten_to_vector(s);
    std::vector<size_t> order(leaves.size() + 1);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    int64_t gap = gaps ? pick({1, 2, 3}) : 1;  // an extra invisible mode creating a hole
    std::vector<int64_t> ext(leaves.size() + 1);
    for (size_t i = 0; i < leaves.size(); ++i) ext[i] = leaves[i].as_int().value();
    ext[leaves.size()] = gap;
    std::vector<IntTuple> d(leaves.size());
    int64_t acc = 1;
    for (size_t k : order) {
      if (k < leaves.size()) d[k] = acc;
      acc *= ext[k];
    }
    return make_layout(s, unflatten(d, s));
  }
};

std::multiset<int64_t> image(const Layout& l) {
  std::multiset<int64_t> out;
  for (int64_t i = 0; i < sz(l); ++i) out.insert(at(l, i));
  return out;
}
}  // namespace

TEST(LayoutProperties, CoalesceKeepsTheFunction) {
  Gen g(1);
  for (int n = 0; n < 300; ++n) {
    Layout a = g.any_layout();
    Layout c = coalesce(a);
    ASSERT_EQ(sz(c), sz(a)) << to_string(a);
    ASSERT_LE(depth(c), 1) << to_string(c);
    for (int64_t i = 0; i < sz(a); ++i) ASSERT_EQ(at(c, i), at(a, i)) << to_string(a) << " -> " << to_string(c);
    Layout p = coalesce(a, repeat_like(wrap(a.shape), IntTuple(1)));
    for (int64_t i = 0; i < sz(a); ++i) ASSERT_EQ(at(p, i), at(a, i)) << to_string(a) << " -> " << to_string(p);
    Layout f = filter(a);
    std::set<int64_t> ia, iff;
    for (int64_t v : image(a)) ia.insert(v);
    for (int64_t v : image(f)) iff.insert(v);
    ASSERT_EQ(ia, iff) << to_string(a) << " filter " << to_string(f);
  }
}

TEST(LayoutProperties, CompositionIsFunctionComposition) {
  Gen g(2);
  int defined = 0;
  for (int n = 0; n < 1500; ++n) {
    Layout a = g.any_layout();
    Layout b = g.uniform(0, 1) ? g.injective_layout() : g.any_layout();
    if (cosize(b).value() > sz(a)) continue;  // b must map into a's domain
    Layout c;
    try {
      c = composition(a, b);
    } catch (const LayoutError&) {
      continue;
    }
    // By-mode composition is only meaningful when A adds up over B's modes (CuTe's
    // admissibility); B with one mode always qualifies.
    bool additive = true;
    Layout fb = flatten(b);
    for (int64_t i = 0; i < sz(b) && additive; ++i) {
      IntTuple crd = idx2crd(IntTuple(i), fb.shape);
      int64_t sum = 0;
      for (int j = 0; j < fb.rank(); ++j) sum += a(IntTuple(crd[j].as_int().value() * fb.stride[j].as_int().value())).as_int().value();
      additive = sum == a(IntTuple(at(b, i))).as_int().value();
    }
    if (!additive) continue;
    ++defined;
    ASSERT_EQ(sz(c), sz(b));
    ASSERT_TRUE(weakly_congruent(b.shape, c.shape)) << to_string(b) << " vs " << to_string(c);
    for (int64_t i = 0; i < sz(b); ++i)
      ASSERT_EQ(at(c, i), a(IntTuple(at(b, i))).as_int().value())
          << to_string(a) << " o " << to_string(b) << " = " << to_string(c) << " at " << i;
  }
  EXPECT_GT(defined, 100);
}

TEST(LayoutProperties, ComplementCompletesTheImage) {
  Gen g(3);
  for (int n = 0; n < 300; ++n) {
    Layout a = g.injective_layout();
    int64_t m = cosize(a).value() * g.pick({1, 2, 3, 4});
    Layout c = complement(a, m);
    Layout ac = make_layout({a, c});
    std::multiset<int64_t> img = image(ac);
    ASSERT_GE(int64_t(img.size()), m) << to_string(a) << " complement " << to_string(c);
    int64_t k = 0;
    for (int64_t v : img) ASSERT_EQ(v, k++) << to_string(a) << " complement " << to_string(c);
    // disjoint: c's image meets a's image only at 0
    std::set<int64_t> ia;
    for (int64_t v : image(a)) ia.insert(v);
    for (int64_t i = 1; i < sz(c); ++i) ASSERT_EQ(ia.count(at(c, i)), 0u);
  }
}

TEST(LayoutProperties, InversesComposeToIdentity) {
  Gen g(4);
  for (int n = 0; n < 300; ++n) {
    Layout a = g.injective_layout(n % 2 == 0);
    Layout r = right_inverse(a);
    for (int64_t i = 0; i < sz(r); ++i)
      ASSERT_EQ(at(a, at(r, i)), i) << to_string(a) << " right_inverse " << to_string(r);
    if (n % 2 == 1) {
      ASSERT_EQ(sz(r), sz(a)) << to_string(a);
    }
    Layout l = left_inverse(a);
    for (int64_t i = 0; i < sz(a); ++i)
      ASSERT_EQ(at(l, at(a, i)), i) << to_string(a) << " left_inverse " << to_string(l);
  }
}

TEST(LayoutProperties, DividesKeepSizeAndImage) {
  Gen g(5);
  int defined = 0;
  for (int n = 0; n < 400; ++n) {
    Layout a = g.any_layout();
    // a tiler whose size divides size(a): a compact layout of a factor of it
    Layout t = g.injective_layout(false);
    Tiler tiler(t);
    if (n % 3 == 0) {
      std::vector<Tiler> modes;
      for (int i = 0; i < a.rank(); ++i) modes.push_back(Tiler(make_layout(g.pick({1, 2, 4}), g.pick({1, 2}))));
      tiler = Tiler(modes);
    }
    for (int kind = 0; kind < 4; ++kind) {
      Layout d;
      try {
        d = kind == 0 ? logical_divide(a, tiler)
                      : kind == 1 ? zipped_divide(a, tiler) : kind == 2 ? tiled_divide(a, tiler) : flat_divide(a, tiler);
      } catch (const LayoutError&) {
        continue;
      }
      if (sz(d) != sz(a)) continue;  // the tiler does not divide a: CuTe leaves this undefined
      ++defined;
      ASSERT_EQ(image(d), image(a)) << to_string(a) << " / " << to_string(tiler) << " = " << to_string(d);
    }
  }
  EXPECT_GT(defined, 200);
}

TEST(LayoutProperties, ProductsKeepSizeAndBlock) {
  Gen g(6);
  for (int n = 0; n < 300; ++n) {
    Layout a = g.injective_layout(false);
    Layout b = g.injective_layout(false);
    Layout p = logical_product(a, Tiler(b));
    ASSERT_EQ(sz(p), sz(a) * sz(b));
    ASSERT_EQ(p[0], a);
    std::multiset<int64_t> img = image(p);
    ASSERT_EQ(std::set<int64_t>(img.begin(), img.end()).size(), img.size()) << to_string(p);  // injective
    for (auto* f : {&zipped_product, &tiled_product, &flat_product}) {
      Layout q = (*f)(a, Tiler(b));
      ASSERT_EQ(image(q), img) << to_string(q);
    }
    if (a.rank() == b.rank()) {
      ASSERT_EQ(image(blocked_product(a, b)), image(raked_product(a, b)));
      ASSERT_EQ(sz(blocked_product(a, b)), sz(a) * sz(b));
    }
  }
}

TEST(LayoutProperties, Idx2CrdInvertsCrd2Idx) {
  Gen g(7);
  for (int n = 0; n < 200; ++n) {
    IntTuple s = g.shape();
    int64_t total = product(s).value();
    for (int64_t i = 0; i < total; ++i) {
      IntTuple c = idx2crd(IntTuple(i), s);
      ASSERT_TRUE(congruent(c, s) || s.is_leaf());
      ASSERT_EQ(crd2idx(c, s).as_int().value(), i) << to_string(s);
      ASSERT_EQ(crd2idx(IntTuple(i), s).as_int().value(), i);
    }
  }
}
