#include "operators/nd_layout.h"

#include <algorithm>

#include "operators/error.h"

namespace vkdml::detail {

Result ValidateNdLayout(const Tensor& input, const Tensor& indices, UINT inputDimensionCount,
                        UINT indicesDimensionCount, UINT batchDimensionCount, NdLayout* out) {
  const UINT dims = input.dims;
  NdLayout l;
  l.r = inputDimensionCount;
  l.q = indicesDimensionCount;
  l.b = batchDimensionCount;
  if (l.r < 1 || l.r > dims)
    return Fail(Status::InvalidArgument, "InputDimensionCount is ", l.r, ", expected 1 to ", dims,
                " (InputTensor.DimensionCount)");
  if (l.q < 1 || l.q > dims)
    return Fail(Status::InvalidArgument, "IndicesDimensionCount is ", l.q, ", expected 1 to ", dims,
                " (IndicesTensor.DimensionCount)");
  VKDML_TRY(CheckLeadingOnes(input, l.r, "InputDimensionCount"));
  VKDML_TRY(CheckLeadingOnes(indices, l.q, "IndicesDimensionCount"));
  if (l.b >= std::min(l.r, l.q))
    return Fail(Status::InvalidArgument, "BatchDimensionCount is ", l.b, ", expected less than ",
                std::min(l.r, l.q),
                " (the smaller of InputDimensionCount and IndicesDimensionCount)");
  l.k = indices.sizes[dims - 1];
  if (l.k > l.r - l.b)
    return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", dims - 1, "] is ", l.k,
                " (the index tuple size), expected at most ", l.r - l.b,
                " (InputDimensionCount - BatchDimensionCount)");
  for (UINT a = 0; a < l.b; ++a)
    if (indices.ActualSize(l.q, a) != input.ActualSize(l.r, a))
      return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", dims - l.q + a, "] is ",
                  indices.ActualSize(l.q, a), ", expected ", input.ActualSize(l.r, a),
                  " (InputTensor.Sizes[", dims - l.r + a, "], batch dimension ", a, ")");
  for (UINT a = 0; a + 1 < l.q; ++a) {
    l.resultWhat[l.resultRank] = Str("IndicesTensor.Sizes[", dims - l.q + a, "]");
    l.result[l.resultRank++] = indices.ActualSize(l.q, a);
  }
  for (UINT a = l.b + l.k; a < l.r; ++a) {
    l.resultWhat[l.resultRank] = Str("InputTensor.Sizes[", dims - l.r + a, "]");
    l.result[l.resultRank++] = input.ActualSize(l.r, a);
  }
  *out = l;
  return {};
}

Plan NdPlan(const NdLayout& l, const Tensor& input, const Tensor& indexed, const Tensor& indices,
            const Tensor& direct) {
  Plan p;
  UINT position[kMaxDims];  // row-major strides in IndicesTensor of its actual dimensions
  PackedStrides(l.q, indices.sizes + indices.dims - l.q, position);
  for (UINT a = 0; a + 1 < l.q; ++a)
    p.AddDim(indices.ActualSize(l.q, a), direct.ActualStride(l.resultRank, a),
             a < l.b ? indexed.ActualStride(l.r, a) : 0, indices.ActualStride(l.q, a), position[a]);
  for (UINT a = l.q - 1; a < l.resultRank; ++a) {
    UINT d = l.b + l.k + (a - (l.q - 1));
    p.AddDim(input.ActualSize(l.r, d), direct.ActualStride(l.resultRank, a),
             indexed.ActualStride(l.r, d), 0, 0);
  }
  for (UINT j = 0; j < l.k; ++j)
    p.AddComponent(input.ActualSize(l.r, l.b + j), indexed.ActualStride(l.r, l.b + j));
  p.componentStride = indices.ActualStride(l.q, l.q - 1);
  return p;
}

}  // namespace vkdml::detail
