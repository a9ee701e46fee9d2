// DML_OPERATOR_GATHER: validation and lowering.
//
// The output is InputTensor with its Axis dimension replaced by the last IndexDimensions
// dimensions of IndicesTensor: input.Sizes[:Axis] + indices.Sizes[D-IndexDimensions:] +
// input.Sizes[Axis+1:], right-aligned into OutputTensor. That list has D - 1 + IndexDimensions
// entries; the input's leading 1s before Axis (dimensions beyond its original rank) are dropped
// to make it fit, and it must then fit into D dimensions.
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

Result LowerGather(const Tensor& input, const Tensor& indices, const Tensor& output, UINT axis,
                   UINT m, Pass* result) {
  const UINT dims = input.dims;
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "Axis is ", axis, ", expected less than ", dims,
                " (InputTensor.DimensionCount)");
  if (m > dims)
    return Fail(Status::InvalidArgument, "IndexDimensions is ", m, ", expected 0 to ", dims,
                " (IndicesTensor.DimensionCount)");
  VKDML_TRY(CheckLeadingOnes(indices, m, "IndexDimensions"));

  // The input's original rank: its dimensions from the first one before Axis that is not 1.
  UINT first = 0;
  while (first < axis && input.sizes[first] == 1) ++first;
  const UINT rank = dims - first;
  if (rank - 1 + m > dims) {
    std::string shape;
    auto add = [&](UINT size) { shape += Str(shape.empty() ? "" : ",", size); };
    for (UINT d = first; d < axis; ++d) add(input.sizes[d]);
    for (UINT d = dims - m; d < dims; ++d) add(indices.sizes[d]);
    for (UINT d = axis + 1; d < dims; ++d) add(input.sizes[d]);
    return Fail(Status::InvalidArgument, "OutputTensor would need ", rank - 1 + m,
                " dimensions (sizes {", shape, "}: InputTensor's original rank ", rank,
                " + IndexDimensions ", m, " - 1), but its DimensionCount is ", dims);
  }

  UINT expected[kMaxDims];
  std::string what[kMaxDims];
  UINT count = 0;
  auto expect = [&](UINT size, const char* field, UINT d) {
    what[count] = Str(field, ".Sizes[", d, "]");
    expected[count++] = size;
  };
  for (UINT d = first; d < axis; ++d) expect(input.sizes[d], input.field, d);
  for (UINT d = dims - m; d < dims; ++d) expect(indices.sizes[d], "IndicesTensor", d);
  for (UINT d = axis + 1; d < dims; ++d) expect(input.sizes[d], input.field, d);
  VKDML_TRY(CheckSizes(output, count, expected, what));

  // One loop dimension per entry of that list, on OutputTensor's last `count` dimensions; the
  // one index component addresses the Axis dimension.
  Pass gather;
  UINT out = dims - count;
  for (UINT d = first; d < axis; ++d)
    gather.plan.AddDim(input.sizes[d], output.strides[out++], input.strides[d], 0, 0);
  UINT position[kMaxDims];  // row-major strides in IndicesTensor
  PackedStrides(dims, indices.sizes, position);
  for (UINT d = dims - m; d < dims; ++d)
    gather.plan.AddDim(indices.sizes[d], output.strides[out++], 0, indices.strides[d], position[d]);
  for (UINT d = axis + 1; d < dims; ++d)
    gather.plan.AddDim(input.sizes[d], output.strides[out++], input.strides[d], 0, 0);
  gather.plan.AddComponent(input.sizes[axis], input.strides[axis]);
  *result = gather;
  return {};
}

Result BuildGather(const DML_GATHER_OPERATOR_DESC& desc, OperatorImpl* op) {
  OperatorTensors t;
  VKDML_TRY(ValidateOperatorTensors(desc.InputTensor, desc.IndicesTensor, false, nullptr,
                                    desc.OutputTensor, &t));
  Pass gather;
  VKDML_TRY(LowerGather(t.input, t.indices, t.output, desc.Axis, desc.IndexDimensions, &gather));
  op->inputs = {t.input, t.indices};
  op->outputs = {t.output};
  op->passes = {gather};
  op->componentSizes = {t.input.sizes[desc.Axis]};
  return {};
}

}  // namespace vkdml::detail
