// The index-tuple layout GatherND, GatherND1 and ScatterND share: which dimensions are batch,
// index and slice dimensions, the right-aligned result shape, and the plan over it.
#pragma once

#include <string>

#include "operators/plan.h"

namespace vkdml::detail {

struct NdLayout {
  UINT r = 0;  // InputDimensionCount
  UINT q = 0;  // IndicesDimensionCount
  UINT b = 0;  // BatchDimensionCount
  UINT k = 0;  // index tuple size: IndicesTensor's last size
  // indices.shape[:-1] + input.shape[b+k:] over the actual dimensions (at most 15).
  UINT resultRank = 0;
  UINT result[2 * kMaxDims] = {};
  std::string resultWhat[2 * kMaxDims];  // where each result size comes from
};

// Checks the dimension counts, leading ones, batch sizes and tuple size.
Result ValidateNdLayout(const Tensor& input, const Tensor& indices, UINT inputDimensionCount,
                        UINT indicesDimensionCount, UINT batchDimensionCount, NdLayout* out);

// The plan over the result shape. `input` gives the sizes of the indexed dimensions, `indexed`
// the strides they are addressed with (gather: InputTensor; scatter: OutputTensor), and
// `direct` the tensor shaped like the result (gather: OutputTensor; scatter: UpdatesTensor).
Plan NdPlan(const NdLayout& l, const Tensor& input, const Tensor& indexed, const Tensor& indices,
            const Tensor& direct);

}  // namespace vkdml::detail
