// DML_OPERATOR_GATHER_ELEMENTS: validation and lowering.
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

Result BuildGatherElements(const DML_GATHER_ELEMENTS_OPERATOR_DESC& desc, OperatorImpl* op) {
  OperatorTensors t;
  VKDML_TRY(ValidateOperatorTensors(desc.InputTensor, desc.IndicesTensor, false, nullptr,
                                    desc.OutputTensor, &t));
  const Tensor &input = t.input, &indices = t.indices, &output = t.output;
  const UINT dims = input.dims, axis = desc.Axis;
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "Axis is ", axis, ", expected less than ", dims,
                " (InputTensor.DimensionCount)");

  VKDML_TRY(CheckSameSizes(indices, input, axis));
  VKDML_TRY(CheckSameSizes(output, indices));

  Pass gather;
  UINT position[kMaxDims];  // row-major strides in IndicesTensor
  PackedStrides(dims, indices.sizes, position);
  for (UINT d = 0; d < dims; ++d)
    gather.plan.AddDim(indices.sizes[d], output.strides[d], d == axis ? 0 : input.strides[d],
                       indices.strides[d], position[d]);
  gather.plan.AddComponent(input.sizes[axis], input.strides[axis]);
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {gather};
  op->componentSizes = {input.sizes[axis]};
  return {};
}

}  // namespace vkdml::detail
