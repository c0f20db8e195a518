// dsl::fast_divisor_prepare / fast_floordiv on static values (the arithmetic folds while tracing,
// with the IR's scalar semantics): the quotient is floor(x / d) for every Int32 x, against C++'s
// 64-bit division, over divisors at the shift's edges (powers of two and their neighbours, d - 1
// that f32 would round up) and dividends at Int32's ends.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dsl/fast_divmod.h"
#include "dsl/num.h"

using namespace opencute;
using dsl::Num;

namespace {

int64_t floor_div(int64_t x, int64_t d) { return x / d - ((x % d != 0) && ((x < 0) != (d < 0))); }

std::vector<int64_t> divisors() {
  std::vector<int64_t> ds = {1, 3, 5, 6, 7, 9, 10, 49, 100, 641, 1000003, 2147483647};
  for (int k = 1; k <= 30; ++k) {
    int64_t p = int64_t(1) << k;
    ds.insert(ds.end(), {p - 1, p, p + 1});
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) ds.push_back(1 + int64_t(rng() % 2147483647));
  return ds;
}

std::vector<int64_t> dividends() {
  std::vector<int64_t> xs = {0, 1, -1, 2, -2, 2147483647, -2147483647 - 1, -2147483647, 2147483646};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) xs.push_back(int64_t(int32_t(uint32_t(rng()))));
  return xs;
}

}  // namespace

TEST(FastDivmod, FloorQuotientForEveryInt32Dividend) {
  std::vector<int64_t> xs = dividends();
  for (int64_t d : divisors()) {
    Num prepared = dsl::fast_divisor_prepare(Num::of_int(ir::i32(), d));
    ASSERT_TRUE(prepared.is_static);
    ASSERT_EQ(dsl::fast_divisor_value(prepared).s.i, d);
    std::vector<int64_t> near = {d - 1, d, d + 1, -d - 1, -d, -d + 1, 2 * d - 1, -2 * d + 1};
    for (const std::vector<int64_t>* set : {&xs, &near}) {
      for (int64_t x : *set) {
        if (x < INT32_MIN || x > INT32_MAX) continue;
        Num q = dsl::fast_floordiv(Num::of_int(ir::i32(), x), prepared);
        ASSERT_TRUE(q.is_static);
        ASSERT_EQ(q.s.i, floor_div(x, d)) << x << " // " << d;
      }
    }
  }
}
