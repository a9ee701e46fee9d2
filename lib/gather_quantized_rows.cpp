// VKDML_OPERATOR_GATHER_QUANTIZED_ROWS: validation and lowering (dml.h states the shapes).
//
// The one pass is a Dequantize (operator.h): its plan walks OutputTensor's rows, the index
// dimensions, and innermost each row's groups of 4 values; the one index component addresses
// InputTensor's rows, its stride being the row stride in bytes. glsl/dequantize_rows.comp finds
// a group's block and place in it from the group's number within the row.
#include "error.h"
#include "operator.h"

namespace vkdml::detail {

UINT QuantizedBlockBytes(VKDML_QUANTIZED_FORMAT format) {
  switch (format) {
    case VKDML_QUANTIZED_FORMAT_Q8_0:
      return 2 + 32;
    case VKDML_QUANTIZED_FORMAT_Q4_0:
      return 2 + 16;
  }
  return 0;
}

const char* QuantizedFormatName(VKDML_QUANTIZED_FORMAT format) {
  switch (format) {
    case VKDML_QUANTIZED_FORMAT_Q8_0:
      return "Q8_0";
    case VKDML_QUANTIZED_FORMAT_Q4_0:
      return "Q4_0";
  }
  return "UNKNOWN";
}

Result BuildGatherQuantizedRows(const VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC& desc,
                                OperatorImpl* op) {
  const UINT blockBytes = QuantizedBlockBytes(desc.Format);
  if (!blockBytes)
    return Fail(Status::InvalidArgument, "Format is ", UINT(desc.Format),
                ", expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or VKDML_QUANTIZED_FORMAT_Q4_0 (2)");
  Tensor input, indices, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(output, input));
  const UINT dims = input.dims, row = dims - 2, last = dims - 1;
  if (dims < 2)
    return Fail(Status::InvalidArgument, "InputTensor.DimensionCount is 1, expected 2 to ",
                kMaxDims, " (its last two dimensions are the table's rows and bytes per row)");
  if (input.type != DML_TENSOR_DATA_TYPE_UINT8)
    return Fail(Status::InvalidArgument, "InputTensor.DataType is ", DataTypeName(input.type),
                ", expected UINT8 (the table's ", QuantizedFormatName(desc.Format), " blocks)");
  if (output.type != DML_TENSOR_DATA_TYPE_FLOAT32 && output.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, "OutputTensor.DataType is ", DataTypeName(output.type),
                ", expected FLOAT32 or FLOAT16");
  for (UINT d = 0; d < row; ++d)
    if (input.sizes[d] != 1)
      return Fail(Status::InvalidArgument, "InputTensor.Sizes[", d, "] is ", input.sizes[d],
                  ", expected 1 (only the last two dimensions, the table's rows and bytes per "
                  "row, may be larger)");
  const UINT rows = input.sizes[row], rowBytes = input.sizes[last];
  if (rowBytes % blockBytes)
    return Fail(Status::InvalidArgument, "InputTensor.Sizes[", last, "] is ", rowBytes,
                ", expected a multiple of ", blockBytes, " (the bytes of a ",
                QuantizedFormatName(desc.Format), " block of 32 values)");
  if (input.strides[last] != 1)
    return Fail(Status::InvalidArgument, "InputTensor.Strides[", last, "] is ", input.strides[last],
                ", expected 1 (a row's bytes are consecutive)");
  if (indices.sizes[last] != 1)
    return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", last, "] is ", indices.sizes[last],
                ", expected 1 (one row index per output row)");
  UINT expected[kMaxDims];
  std::string what[kMaxDims];
  for (UINT d = 0; d < last; ++d) {
    expected[d] = indices.sizes[d];
    what[d] = Str("IndicesTensor.Sizes[", d, "]");
  }
  const UINT values = rowBytes / blockBytes * 32;
  expected[last] = values;
  what[last] = Str("32 values per ", blockBytes, "-byte block of an InputTensor row");
  VKDML_TRY(CheckSizes(output, dims, expected, what));
  VKDML_TRY(CheckNoOverlap(output));
  if (output.strides[last] != 1)
    return Fail(Status::InvalidArgument, "OutputTensor.Strides[", last, "] is ",
                output.strides[last], ", expected 1 (a row's values are consecutive)");
  if (output.elemSize == 2)
    for (UINT d = 0; d < last; ++d)
      if (output.sizes[d] > 1 && output.strides[d] % 2)
        return Fail(Status::InvalidArgument, "OutputTensor.Strides[", d, "] is ", output.strides[d],
                    ", expected an even stride (FLOAT16 rows start on 4-byte words)");

  Pass gather;
  gather.kind = Pass::Kind::Dequantize;
  UINT position[kMaxDims];  // row-major strides in IndicesTensor
  PackedStrides(dims, indices.sizes, position);
  for (UINT d = 0; d < last; ++d)
    if (indices.sizes[d] > 1)
      gather.plan.AddDim(indices.sizes[d], output.strides[d], 0, indices.strides[d], position[d]);
  gather.plan.AddDim(values / 4, 4, 0, 0, 0);
  gather.plan.AddComponent(rows, input.strides[row]);
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {gather};
  op->componentSizes = {rows};
  op->format = desc.Format;
  return {};
}

}  // namespace vkdml::detail
