#include "operators/plan.h"

#include <algorithm>

namespace vkdml::detail {

void Plan::AddDim(UINT size, UINT directStride, UINT indexedStride, UINT indicesStride,
                  UINT positionStride) {
  sizes[rank] = size;
  direct[rank] = directStride;
  indexed[rank] = indexedStride;
  indices[rank] = indicesStride;
  position[rank] = positionStride;
  ++rank;
  count *= size;
}

void Plan::AddComponent(UINT size, UINT stride) {
  tupleSize[tuple] = size;
  tupleStride[tuple] = stride;
  ++tuple;
}

void Plan::Simplify() {
  Plan p = *this;
  rank = 0;
  count = 1;
  for (UINT d = 0; d < p.rank; ++d) {
    if (p.sizes[d] == 1) continue;
    if (rank > 0) {
      const UINT o = rank - 1, n = p.sizes[d];
      const auto next = [n](UINT stride) { return UINT64(stride) * n; };
      const bool merge = UINT64(sizes[o]) * n <= 0xFFFFFFFFu && direct[o] == next(p.direct[d]) &&
                         indexed[o] == next(p.indexed[d]) && indices[o] == next(p.indices[d]) &&
                         position[o] == next(p.position[d]);
      if (merge) {
        sizes[o] *= n;
        direct[o] = p.direct[d];
        indexed[o] = p.indexed[d];
        indices[o] = p.indices[d];
        position[o] = p.position[d];
        count *= n;
        continue;
      }
    }
    AddDim(p.sizes[d], p.direct[d], p.indexed[d], p.indices[d], p.position[d]);
  }
}

bool Plan::Widen(UINT elemSize, UINT vecBytes, Plan* out) const {
  if (rank == 0 || vecBytes % elemSize) return false;
  const UINT per = vecBytes / elemSize, last = rank - 1;
  if (direct[last] != 1 || indexed[last] != 1 || indices[last] != 0 || position[last] != 0 ||
      sizes[last] % per)
    return false;
  for (UINT d = 0; d < last; ++d)
    if (direct[d] % per || indexed[d] % per) return false;
  for (UINT j = 0; j < tuple; ++j)
    if (tupleStride[j] % per) return false;
  Plan w = *this;
  w.sizes[last] /= per;
  w.count /= per;
  for (UINT d = 0; d < last; ++d) {
    w.direct[d] /= per;
    w.indexed[d] /= per;
  }
  for (UINT j = 0; j < tuple; ++j) w.tupleStride[j] /= per;
  *out = w;
  return true;
}

bool Plan::Stripe(UINT elemSize, Plan* out) const {
  constexpr UINT64 kMaxStripeBytes = 4u << 20;        // input rows one stripe touches: fits in L2
  const UINT width = std::max(32u, 128u / elemSize);  // >= one warp, >= one 128-byte line
  if (rank < 2 || rank >= kMaxDims || tuple == 0) return false;  // the stripe adds a dimension
  const UINT last = rank - 1;
  if (direct[last] != 1 || indexed[last] != 1 || indices[last] == 0 || sizes[last] <= width ||
      sizes[last] % width)
    return false;
  UINT64 stripeBytes = UINT64(width) * elemSize;
  for (UINT j = 0; j < tuple; ++j) {
    if (tupleStride[j] < sizes[last]) return false;  // the index moves within the stripe's row
    stripeBytes *= tupleSize[j];
  }
  if (stripeBytes > kMaxStripeBytes) return false;
  Plan p;
  p.AddDim(sizes[last] / width, width, width, indices[last] * width, position[last] * width);
  for (UINT d = 0; d < last; ++d)
    p.AddDim(sizes[d], direct[d], indexed[d], indices[d], position[d]);
  p.AddDim(width, 1, 1, indices[last], position[last]);
  for (UINT j = 0; j < tuple; ++j) p.AddComponent(tupleSize[j], tupleStride[j]);
  p.componentStride = componentStride;
  *out = p;
  return true;
}

bool Plan::LineShaped() const {
  return rank >= 1 && tuple == 1 && indexed[rank - 1] == 0;
}

bool Plan::LinesPay() const {
  constexpr UINT kMinLength = 256;
  constexpr UINT kMinLines = 64;
  const UINT length = tupleSize[0], perLine = sizes[rank - 1];
  return length >= kMinLength && UINT64(perLine) * 4 >= length && count / perLine >= kMinLines;
}

bool Plan::Lines(UINT elemSize, UINT64 maxLineBytes, bool anyShape) const {
  if (!LineShaped()) return false;
  const UINT64 slotBytes = elemSize <= 4 ? 4 : 8;  // glsl/scatter_lines.comp: one V per element
  if (tupleSize[0] * slotBytes > maxLineBytes) return false;
  return anyShape || LinesPay();
}

}  // namespace vkdml::detail
