// DML_OPERATOR_GATHER_ELEMENTS: validation and lowering.
#include "error.h"
#include "operator.h"

namespace vkdml::detail {

Result BuildGatherElements(const DML_GATHER_ELEMENTS_OPERATOR_DESC& desc, OperatorImpl* op) {
  Tensor input, indices, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(output, input));
  VKDML_TRY(CheckSameType(output, input));
  VKDML_TRY(CheckNoOverlap(output));
  const UINT dims = input.dims, axis = desc.Axis;
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "Axis is ", axis, ", expected less than ", dims,
                " (InputTensor.DimensionCount)");

  VKDML_TRY(CheckSameSizes(indices, input, axis));
  VKDML_TRY(CheckSameSizes(output, indices));

  Pass gather;
  UINT position = 1;
  for (UINT d = 0; d < dims; ++d) position *= indices.sizes[d];
  for (UINT d = 0; d < dims; ++d) {
    position /= indices.sizes[d];
    gather.plan.AddDim(indices.sizes[d], output.strides[d], d == axis ? 0 : input.strides[d],
                       indices.strides[d], position);
  }
  gather.plan.AddComponent(input.sizes[axis], input.strides[axis]);
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {gather};
  op->componentSizes = {input.sizes[axis]};
  return {};
}

}  // namespace vkdml::detail
