// DML_OPERATOR_SCATTER_ND: validation and lowering (a copy of the input, then the scatter).
#include "error.h"
#include "nd_layout.h"
#include "operator.h"

namespace vkdml::detail {

// ScatterND skips copying the slices it overwrites when a slice is at least this large (below,
// the mask costs about what it saves).
constexpr UINT64 kMinSkippedSliceBytes = 128;

Result BuildScatterND(const DML_SCATTER_ND_OPERATOR_DESC& desc, OperatorImpl* op) {
  OperatorTensors t;
  VKDML_TRY(ValidateOperatorTensors(desc.InputTensor, desc.IndicesTensor, true, desc.UpdatesTensor,
                                    desc.OutputTensor, &t));
  const Tensor &input = t.input, &indices = t.indices, &updates = t.updates, &output = t.output;

  std::string what[kMaxDims];
  for (UINT i = 0; i < input.dims; ++i) what[i] = Str("InputTensor.Sizes[", i, "]");
  VKDML_TRY(CheckSizes(output, input.dims, input.sizes, what));

  NdLayout l;
  VKDML_TRY(ValidateNdLayout(input, indices, desc.InputDimensionCount, desc.IndicesDimensionCount,
                             0, &l));
  VKDML_TRY(CheckSizes(updates, l.resultRank, l.result, l.resultWhat));

  // Slices the scatter overwrites need no copy. When they are large enough for that to pay, a
  // Mark pass sets a bit per targeted slice (its slot: row-major over the indexed dimensions)
  // and the copy skips marked slices.
  UINT64 slots = 1, sliceBytes = input.elemSize;
  UINT slotStride[kMaxDims] = {};
  for (UINT j = l.k; j-- > 0;) {
    slotStride[j] = UINT(slots);
    slots *= input.ActualSize(l.r, j);
  }
  for (UINT a = l.k; a < l.r; ++a) sliceBytes *= input.ActualSize(l.r, a);
  const bool skipTargets = sliceBytes >= kMinSkippedSliceBytes;

  Pass copy;
  copy.skipInPlace = true;
  copy.maskSkip = skipTargets;
  const UINT lead = input.dims - l.r;
  for (UINT d = 0; d < input.dims; ++d) {
    UINT slot = skipTargets && d >= lead && d < lead + l.k ? slotStride[d - lead] : 0;
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], slot, 0);
  }
  Pass scatter;
  scatter.kind = Pass::Kind::Scatter;
  scatter.plan = NdPlan(l, input, output, indices, updates);
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, scatter};
  if (skipTargets) {
    Pass mark;
    mark.kind = Pass::Kind::Mark;
    mark.skipInPlace = true;
    Tensor slotView = input;  // the indexed dimensions addressed by slot
    for (UINT j = 0; j < l.k; ++j) slotView.strides[lead + j] = slotStride[j];
    mark.plan = NdPlan(l, input, slotView, indices, updates);
    mark.plan.rank = l.q - 1;  // one element per index tuple: no slice dimensions
    mark.plan.count = 1;
    for (UINT d = 0; d < mark.plan.rank; ++d) {
      mark.plan.direct[d] = 0;
      mark.plan.count *= mark.plan.sizes[d];
    }
    op->passes.insert(op->passes.begin(), mark);
    op->maskWords = (slots + 31) / 32;
  }
  for (UINT j = 0; j < l.k; ++j) op->componentSizes.push_back(input.ActualSize(l.r, j));
  return {};
}

}  // namespace vkdml::detail
