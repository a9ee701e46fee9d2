// DML_OPERATOR_SCATTER_ELEMENTS: validation and lowering (a copy of the input, then the scatter).
#include "error.h"
#include "operator.h"

namespace vkdml::detail {

Result BuildScatterElements(const DML_SCATTER_OPERATOR_DESC& desc, OperatorImpl* op) {
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
  const UINT dims = input.dims, axis = desc.Axis;
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "Axis is ", axis, ", expected less than ", dims,
                " (OutputTensor.DimensionCount)");

  VKDML_TRY(CheckSameSizes(output, input));
  VKDML_TRY(CheckSameSizes(indices, input, axis));
  VKDML_TRY(CheckSameSizes(updates, indices));

  Pass copy;
  copy.skipInPlace = true;
  for (UINT d = 0; d < dims; ++d)
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], 0, 0);

  Pass scatter;
  scatter.kind = Pass::Kind::Scatter;
  UINT position = 1;
  for (UINT d = 0; d < dims; ++d) position *= indices.sizes[d];
  for (UINT d = 0; d < dims; ++d) {
    position /= indices.sizes[d];
    scatter.plan.AddDim(indices.sizes[d], updates.strides[d], d == axis ? 0 : output.strides[d],
                        indices.strides[d], position);
  }
  scatter.plan.AddComponent(output.sizes[axis], output.strides[axis]);
  // With Axis innermost, the last dimension walks a line of the output, and the others name
  // disjoint lines (OutputTensor does not overlap itself): Plan::Lines checks what is left of
  // that after Simplify.
  scatter.lines = true;
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, scatter};
  op->componentSizes = {output.sizes[axis]};
  return {};
}

}  // namespace vkdml::detail
