// DML_OPERATOR_SCATTER_ELEMENTS and VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: validation and
// lowering (a copy of the input, then the scatter).
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

Result BuildScatterElements(const DML_SCATTER_OPERATOR_DESC& desc, VKDML_REDUCE_FUNCTION reduce,
                            OperatorImpl* op) {
  OperatorTensors t;
  VKDML_TRY(ValidateOperatorTensors(desc.InputTensor, desc.IndicesTensor, true, desc.UpdatesTensor,
                                    desc.OutputTensor, &t));
  const Tensor &input = t.input, &indices = t.indices, &updates = t.updates, &output = t.output;
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
  UINT position[kMaxDims];  // row-major strides in IndicesTensor
  PackedStrides(dims, indices.sizes, position);
  for (UINT d = 0; d < dims; ++d)
    scatter.plan.AddDim(indices.sizes[d], updates.strides[d], d == axis ? 0 : output.strides[d],
                        indices.strides[d], position[d]);
  scatter.plan.AddComponent(output.sizes[axis], output.strides[axis]);
  // With Axis innermost, the last dimension walks a line of the output, and the others name
  // disjoint lines (OutputTensor does not overlap itself): Plan::Lines checks what is left of
  // that after Simplify.
  scatter.lines = true;
  // Each update element is a unit; its slot is its target's row-major position in OutputTensor.
  op->keys = scatter.plan;
  UINT packed[kMaxDims];
  PackedStrides(dims, output.sizes, packed);
  for (UINT d = 0; d < dims; ++d) {
    op->keys.indexed[d] = d == axis ? 0 : packed[d];
    op->slotWalk.AddDim(output.sizes[d], output.strides[d], 0, packed[d], 0);
  }
  op->keys.tupleStride[0] = packed[axis];
  op->reduce = reduce;
  op->unit = 1;
  op->slots = output.Count();
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, scatter};
  op->componentSizes = {output.sizes[axis]};
  return {};
}

}  // namespace vkdml::detail
