// The kernel plan's transformations (lib/operators/plan.h), on random plans and on the CPU:
// Simplify and Widen must visit the same elements in the same order, Stripe the same elements in
// another order, and none may leave the plan's arrays. Every operator's correctness rests on these;
// the GPU tests reach only the shapes their operators produce.
#include <algorithm>
#include <array>
#include <sstream>

#include "operators/plan.h"
#include "test_util.h"

using namespace vt;
using vkdml::detail::kMaxDims;
using vkdml::detail::Plan;

namespace {

// Loop element i of a plan: offsets on the direct and indexed sides (before index components),
// in IndicesTensor, and its row-major position there.
using Element = std::array<uint64_t, 4>;

std::vector<Element> Walk(const Plan& p) {
  std::vector<Element> out;
  out.reserve(p.count);
  for (UINT i = 0; i < p.count; ++i) {
    Element e{};
    UINT rest = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const UINT c = d > 0 ? rest % p.sizes[d] : rest;
      rest = d > 0 ? rest / p.sizes[d] : 0;
      e[0] += uint64_t(c) * p.direct[d];
      e[1] += uint64_t(c) * p.indexed[d];
      e[2] += uint64_t(c) * p.indices[d];
      e[3] += uint64_t(c) * p.position[d];
    }
    out.push_back(e);
  }
  return out;
}

std::string Describe(const Plan& p) {
  std::ostringstream s;
  s << "rank " << p.rank << ", count " << p.count << ", tuple " << p.tuple << "; dims";
  for (UINT d = 0; d < p.rank; ++d)
    s << " {" << p.sizes[d] << ": " << p.direct[d] << " " << p.indexed[d] << " " << p.indices[d]
      << " " << p.position[d] << "}";
  for (UINT j = 0; j < p.tuple; ++j)
    s << " [" << p.tupleSize[j] << " x " << p.tupleStride[j] << "]";
  return s.str();
}

bool SameComponents(const Plan& a, const Plan& b, UINT strideScale = 1) {
  if (a.tuple != b.tuple || a.componentStride != b.componentStride) return false;
  for (UINT j = 0; j < a.tuple; ++j)
    if (a.tupleSize[j] != b.tupleSize[j] || a.tupleStride[j] != b.tupleStride[j] * strideScale)
      return false;
  return true;
}

enum class Shape { Any, Striped, Widened };

// A random plan of at most 40000 elements, often 8-dimensional. Striped: the last dimension
// walks contiguous elements that share no index (GatherElements off the last axis); Widened: a
// contiguous run of `per`-element vectors that share one index (a gather of whole slices).
Plan RandomPlan(Rng& rng, Shape shape, UINT per) {
  Plan p;
  const UINT rank = rng.P(0.4) ? kMaxDims : rng.Ui(1, kMaxDims);
  const std::vector<UINT> wide = {64, 96, 128, 256};
  UINT lastSize = rng.P(0.3) ? 1 : rng.Ui(2, 3);
  if (shape == Shape::Striped) lastSize = rng.Pick(wide);
  if (shape == Shape::Widened) lastSize = per * rng.Ui(1, 4);
  uint64_t budget = 40000 / lastSize;
  for (UINT d = 0; d < rank; ++d) {
    const bool last = d + 1 == rank;
    UINT size = lastSize;
    if (!last) {
      size = rng.P(rank == kMaxDims ? 0.05 : 0.3) ? 1 : rng.P(0.8) ? 2 : 3;
      if (size > budget) size = 1;
      budget /= size;
    }
    auto stride = [&] { return rng.P(0.2) ? 0 : rng.Ui(1, 700); };
    UINT direct = stride(), indexed = stride(), indices = stride(), position = stride();
    if (last && shape != Shape::Any) direct = indexed = 1;
    if (last && shape == Shape::Striped) indices = rng.Ui(1, 3);
    if (last && shape == Shape::Widened) indices = position = 0;
    if (!last && shape == Shape::Widened && rng.P(0.8)) {
      direct = direct / per * per;
      indexed = indexed / per * per;
    }
    // Sometimes the strides of a packed tensor, which Simplify merges.
    if (d > 0 && rng.P(0.25) && !(last && shape != Shape::Any)) {
      p.direct[d - 1] = direct * size;
      p.indexed[d - 1] = indexed * size;
      p.indices[d - 1] = indices * size;
      p.position[d - 1] = position * size;
    }
    p.AddDim(size, direct, indexed, indices, position);
  }
  const UINT tuple = shape == Shape::Any && rng.P(0.2) ? 0 : rng.Ui(1, 3);
  for (UINT j = 0; j < tuple; ++j) {
    UINT stride = rng.Ui(0, 2000);
    if (shape == Shape::Striped) stride += p.sizes[rank - 1];
    if (shape == Shape::Widened && rng.P(0.8)) stride = stride / per * per;
    p.AddComponent(rng.Ui(1, 9), stride);
  }
  p.componentStride = rng.Ui(0, 5);
  return p;
}

}  // namespace

TEST_CASE("Plan: Simplify visits the same elements in the same order", "[plan]") {
  Rng rng(BaseSeed() ^ 0x91A4);
  for (int n = 0; n < 3000; ++n) {
    const Shape shape = Shape(n % 3);
    Plan p = RandomPlan(rng, shape, 1u << rng.Ui(0, 3));
    INFO("case " << n << ": " << Describe(p));
    Plan s = p;
    s.Simplify();
    INFO("simplified: " << Describe(s));
    REQUIRE(s.rank <= p.rank);
    CHECK(s.count == p.count);
    for (UINT d = 0; d < s.rank; ++d) CHECK(s.sizes[d] > 1);
    CHECK(SameComponents(s, p));
    CHECK(Walk(s) == Walk(p));
  }
}

TEST_CASE("Plan: Stripe visits the same elements, striped, within the plan's dimensions",
          "[plan]") {
  Rng rng(BaseSeed() ^ 0x57A1);
  int striped = 0, eightDims = 0;
  for (int n = 0; n < 3000; ++n) {
    const UINT elemSize = 1u << rng.Ui(0, 3);
    Plan p = RandomPlan(rng, n % 4 ? Shape::Striped : Shape::Any, 1);
    p.Simplify();  // as the library does before it stripes
    INFO("case " << n << ", element size " << elemSize << ": " << Describe(p));
    eightDims += p.rank == kMaxDims;
    Plan s;
    if (!p.Stripe(elemSize, &s)) {
      // Every plan shaped for it whose extra dimension fits, with whole stripes of a working set
      // small enough, takes it.
      if (p.rank < 2) continue;
      const UINT last = p.rank - 1, width = std::max(32u, 128u / elemSize);
      uint64_t stripeBytes = uint64_t(width) * elemSize;
      bool indexOutside = true;
      for (UINT j = 0; j < p.tuple; ++j) {
        stripeBytes *= p.tupleSize[j];
        indexOutside = indexOutside && p.tupleStride[j] >= p.sizes[last];
      }
      const bool fits = p.rank < kMaxDims && p.tuple > 0 && p.direct[last] == 1 &&
                        p.indexed[last] == 1 && p.indices[last] != 0 && p.sizes[last] > width &&
                        p.sizes[last] % width == 0 && indexOutside && stripeBytes <= (4u << 20);
      CHECK_FALSE(fits);
      continue;
    }
    ++striped;
    INFO("striped: " << Describe(s));
    REQUIRE(s.rank <= kMaxDims);
    CHECK(s.rank == p.rank + 1);
    CHECK(s.count == p.count);
    CHECK(SameComponents(s, p));
    std::vector<Element> a = Walk(s), b = Walk(p);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
  // The sweep reached the shapes that matter.
  CHECK(striped > 500);
  CHECK(eightDims > 100);
}

TEST_CASE("Plan: Widen visits the same elements in vectors", "[plan]") {
  Rng rng(BaseSeed() ^ 0x3D1E);
  int widened = 0;
  for (int n = 0; n < 3000; ++n) {
    const UINT elemSize = 1u << rng.Ui(0, 3), per = 16 / elemSize;
    Plan p = RandomPlan(rng, n % 4 ? Shape::Widened : Shape::Any, per);
    p.Simplify();
    INFO("case " << n << ", element size " << elemSize << ": " << Describe(p));
    Plan w;
    if (!p.Widen(elemSize, 16, &w)) continue;
    ++widened;
    INFO("widened: " << Describe(w));
    REQUIRE(w.rank == p.rank);
    CHECK(uint64_t(w.count) * per == p.count);
    CHECK(SameComponents(p, w, per));
    // Each vector element stands for `per` consecutive elements that share its index.
    std::vector<Element> expanded;
    for (const Element& e : Walk(w))
      for (UINT k = 0; k < per; ++k)
        expanded.push_back({e[0] * per + k, e[1] * per + k, e[2], e[3]});
    CHECK(expanded == Walk(p));
  }
  CHECK(widened > 500);
}
