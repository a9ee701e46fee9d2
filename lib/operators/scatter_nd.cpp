// DML_OPERATOR_SCATTER_ND and VKDML_OPERATOR_SCATTER_ND_REDUCE: validation and lowering (a copy
// of the input, then the scatter).
#include "operators/error.h"
#include "operators/nd_layout.h"
#include "operators/operator.h"

namespace vkdml::detail {

// ScatterND skips copying the slices it overwrites when a slice is at least this large (below,
// the mask costs about what it saves).
constexpr UINT64 kMinSkippedSliceBytes = 128;

Result BuildScatterND(const DML_SCATTER_ND_OPERATOR_DESC& desc, VKDML_REDUCE_FUNCTION reduce,
                      OperatorImpl* op) {
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

  // An index tuple's target slot: row-major over the indexed dimensions. Slices the scatter
  // overwrites (without a reduction) need no copy: when they are large enough for that to pay,
  // a Mark pass sets a bit per targeted slot and the copy skips marked slices.
  UINT64 slots = 1, sliceElements = 1;
  UINT slotStride[kMaxDims] = {};
  for (UINT j = l.k; j-- > 0;) {
    slotStride[j] = UINT(slots);
    slots *= input.ActualSize(l.r, j);
  }
  for (UINT a = l.k; a < l.r; ++a) sliceElements *= input.ActualSize(l.r, a);
  const bool skipTargets = reduce == VKDML_REDUCE_FUNCTION_NONE &&
                           sliceElements * input.elemSize >= kMinSkippedSliceBytes;

  Pass copy;
  copy.skipInPlace = true;
  copy.maskSkip = skipTargets;
  const UINT lead = input.dims - l.r;
  for (UINT d = 0; d < input.dims; ++d) {
    const UINT slot = d >= lead && d < lead + l.k ? slotStride[d - lead] : 0;
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], skipTargets ? slot : 0,
                     0);
    op->slotWalk.AddDim(output.sizes[d], output.strides[d], 0, slot, 0);
  }
  Pass scatter;
  scatter.kind = Pass::Kind::Scatter;
  scatter.plan = NdPlan(l, input, output, indices, updates);
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, scatter};
  // One element per index tuple (no slice dimensions), its indexed offset the tuple's slot.
  Tensor slotView = input;
  for (UINT j = 0; j < l.k; ++j) slotView.strides[lead + j] = slotStride[j];
  op->keys = NdPlan(l, input, slotView, indices, updates);
  op->keys.rank = l.q - 1;
  op->keys.count = 1;
  for (UINT d = 0; d < op->keys.rank; ++d) {
    op->keys.direct[d] = 0;
    op->keys.count *= op->keys.sizes[d];
  }
  op->reduce = reduce;
  op->unit = UINT(sliceElements);  // an update tensor's count: below 2^32
  op->slots = slots;
  if (skipTargets) {
    Pass mark;
    mark.kind = Pass::Kind::Mark;
    mark.skipInPlace = true;
    mark.plan = op->keys;
    op->passes.insert(op->passes.begin(), mark);
    op->maskWords = (slots + 31) / 32;
  }
  for (UINT j = 0; j < l.k; ++j) op->componentSizes.push_back(input.ActualSize(l.r, j));
  return {};
}

}  // namespace vkdml::detail
