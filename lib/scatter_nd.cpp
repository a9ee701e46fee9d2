// DML_OPERATOR_SCATTER_ND: validation and lowering (a copy of the input, then the scatter).
#include "error.h"
#include "nd_layout.h"
#include "operator.h"

namespace vkdml::detail {

Result BuildScatterND(const DML_SCATTER_ND_OPERATOR_DESC& desc, OperatorImpl* op) {
  Tensor input, indices, updates, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.UpdatesTensor, "UpdatesTensor", TensorRole::Data, &updates));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(updates, input));
  VKDML_TRY(CheckSameRank(output, input));
  VKDML_TRY(CheckSameType(updates, input));
  VKDML_TRY(CheckSameType(output, input));
  VKDML_TRY(CheckNoOverlap(output));

  std::string what[kMaxDims];
  for (UINT i = 0; i < input.dims; ++i) what[i] = Str("InputTensor.Sizes[", i, "]");
  VKDML_TRY(CheckSizes(output, input.dims, input.sizes, what));

  NdLayout l;
  VKDML_TRY(ValidateNdLayout(input, indices, desc.InputDimensionCount, desc.IndicesDimensionCount,
                             0, &l));
  VKDML_TRY(CheckSizes(updates, l.resultRank, l.result, l.resultWhat));

  Pass copy;
  copy.skipInPlace = true;
  for (UINT d = 0; d < input.dims; ++d)
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], 0, 0);
  Pass scatter;
  scatter.kind = Pass::Kind::Scatter;
  scatter.plan = NdPlan(l, input, output, indices, updates);
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, scatter};
  for (UINT j = 0; j < l.k; ++j) op->componentSizes.push_back(input.ActualSize(l.r, j));
  return {};
}

}  // namespace vkdml::detail
