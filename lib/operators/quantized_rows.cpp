// VKDML_OPERATOR_GATHER_QUANTIZED_ROWS and VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS: validation and
// lowering (dml.h states the shapes).
//
// The gather is one Dequantize pass (operator.h): its plan walks OutputTensor's rows, the index
// dimensions, and innermost each row's groups of 4 values; the one index component addresses
// InputTensor's rows, its stride being the row stride in bytes. glsl/dequantize_rows.comp finds
// a group's block and place in it from the group's number within the row.
// The scatter is a copy of the table (skipped in place), a Claim pass over the update rows and a
// Quantize pass over their blocks (glsl/quantize_rows.comp).
#include "operators/error.h"
#include "operators/operator.h"

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

Result CheckQuantizedFormat(VKDML_QUANTIZED_FORMAT format) {
  if (!QuantizedBlockBytes(format))
    return Fail(Status::InvalidArgument, "Format is ", UINT(format),
                ", expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or VKDML_QUANTIZED_FORMAT_Q4_0 (2)");
  return {};
}

Result CheckLastStride(const Tensor& t, const char* why) {
  const UINT last = t.dims - 1;
  if (t.strides[last] != 1)
    return Fail(Status::InvalidArgument, t.field, ".Strides[", last, "] is ", t.strides[last],
                ", expected 1 (", why, ")");
  return {};
}

Result CheckQuantizedTable(const Tensor& input, VKDML_QUANTIZED_FORMAT format) {
  const UINT dims = input.dims, row = dims - 2, last = dims - 1;
  if (dims < 2)
    return Fail(Status::InvalidArgument, "InputTensor.DimensionCount is 1, expected 2 to ",
                kMaxDims, " (its last two dimensions are the table's rows and bytes per row)");
  if (input.type != DML_TENSOR_DATA_TYPE_UINT8)
    return Fail(Status::InvalidArgument, "InputTensor.DataType is ", DataTypeName(input.type),
                ", expected UINT8 (the table's ", QuantizedFormatName(format), " blocks)");
  for (UINT d = 0; d < row; ++d)
    if (input.sizes[d] != 1)
      return Fail(Status::InvalidArgument, "InputTensor.Sizes[", d, "] is ", input.sizes[d],
                  ", expected 1 (only the last two dimensions, the table's rows and bytes per "
                  "row, may be larger)");
  const UINT blockBytes = QuantizedBlockBytes(format), rowBytes = input.sizes[last];
  if (rowBytes % blockBytes)
    return Fail(Status::InvalidArgument, "InputTensor.Sizes[", last, "] is ", rowBytes,
                ", expected a multiple of ", blockBytes, " (the bytes of a ",
                QuantizedFormatName(format), " block of 32 values)");
  return CheckLastStride(input, "a row's bytes are consecutive");
}

namespace {

// IndicesTensor {n0, ..., 1}, and a row tensor (the gather's output, the scatter's updates) of
// sizes {n0, ..., values}, its values consecutive.
Result CheckRows(const Tensor& indices, const Tensor& rows, UINT values, UINT blockBytes) {
  const UINT last = indices.dims - 1;
  if (indices.sizes[last] != 1)
    return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", last, "] is ", indices.sizes[last],
                ", expected 1 (one row index per ",
                rows.field == std::string("OutputTensor") ? "output" : "update", " row)");
  UINT expected[kMaxDims];
  std::string what[kMaxDims];
  for (UINT d = 0; d < last; ++d) {
    expected[d] = indices.sizes[d];
    what[d] = Str("IndicesTensor.Sizes[", d, "]");
  }
  expected[last] = values;
  what[last] = Str("32 values per ", blockBytes, "-byte block of an InputTensor row");
  return CheckSizes(rows, indices.dims, expected, what);
}

// A plan over the index dimensions (those past 1; at least one dimension), each with its
// `direct` stride from `rows`, its IndicesTensor stride and row-major position.
Plan IndexLoop(const Tensor& indices, const Tensor& rows) {
  Plan plan;
  UINT position[kMaxDims];
  PackedStrides(indices.dims, indices.sizes, position);
  for (UINT d = 0; d + 1 < indices.dims; ++d)
    if (indices.sizes[d] > 1)
      plan.AddDim(indices.sizes[d], rows.strides[d], 0, indices.strides[d], position[d]);
  if (plan.rank == 0) plan.AddDim(1, 0, 0, 0, 0);
  return plan;
}

}  // namespace

Result BuildGatherQuantizedRows(const VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC& desc,
                                OperatorImpl* op) {
  VKDML_TRY(CheckQuantizedFormat(desc.Format));
  const UINT blockBytes = QuantizedBlockBytes(desc.Format);
  Tensor input, indices, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(output, input));
  VKDML_TRY(CheckQuantizedTable(input, desc.Format));
  if (output.type != DML_TENSOR_DATA_TYPE_FLOAT32 && output.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, "OutputTensor.DataType is ", DataTypeName(output.type),
                ", expected FLOAT32 or FLOAT16");
  const UINT dims = input.dims, last = dims - 1;
  const UINT rows = input.sizes[dims - 2], values = input.sizes[last] / blockBytes * 32;
  VKDML_TRY(CheckRows(indices, output, values, blockBytes));
  VKDML_TRY(CheckNoOverlap(output));
  VKDML_TRY(CheckLastStride(output, "a row's values are consecutive"));
  if (output.elemSize == 2)
    for (UINT d = 0; d < last; ++d)
      if (output.sizes[d] > 1 && output.strides[d] % 2)
        return Fail(Status::InvalidArgument, "OutputTensor.Strides[", d, "] is ", output.strides[d],
                    ", expected an even stride (FLOAT16 rows start on 4-byte words)");

  Pass gather;
  gather.kind = Pass::Kind::Dequantize;
  gather.plan = IndexLoop(indices, output);
  gather.plan.AddDim(values / 4, 4, 0, 0, 0);
  gather.plan.AddComponent(rows, input.strides[dims - 2]);
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {gather};
  op->componentSizes = {rows};
  op->format = desc.Format;
  return {};
}

Result BuildScatterQuantizedRows(const VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC& desc,
                                 OperatorImpl* op) {
  VKDML_TRY(CheckQuantizedFormat(desc.Format));
  const UINT blockBytes = QuantizedBlockBytes(desc.Format);
  Tensor input, indices, updates, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.UpdatesTensor, "UpdatesTensor", TensorRole::Data, &updates));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(updates, input));
  VKDML_TRY(CheckSameRank(output, input));
  VKDML_TRY(CheckQuantizedTable(input, desc.Format));
  if (updates.type != DML_TENSOR_DATA_TYPE_FLOAT32)
    return Fail(Status::InvalidArgument, "UpdatesTensor.DataType is ", DataTypeName(updates.type),
                ", expected FLOAT32");
  VKDML_TRY(CheckSameType(output, input));
  VKDML_TRY(CheckSameSizes(output, input));
  VKDML_TRY(CheckNoOverlap(output));
  VKDML_TRY(CheckLastStride(output, "a row's bytes are consecutive"));
  const UINT dims = input.dims, last = dims - 1;
  const UINT rows = input.sizes[dims - 2], values = input.sizes[last] / blockBytes * 32;
  VKDML_TRY(CheckRows(indices, updates, values, blockBytes));
  VKDML_TRY(CheckLastStride(updates, "a row's values are consecutive"));

  Pass copy;  // the table, then the rows the updates claim
  copy.skipInPlace = true;
  for (UINT d = 0; d < dims; ++d)
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], 0, 0);
  Pass claim;
  claim.kind = Pass::Kind::Claim;
  claim.plan = IndexLoop(indices, updates);
  claim.plan.AddComponent(rows, 1);
  Pass quantize;
  quantize.kind = Pass::Kind::Quantize;
  quantize.plan = IndexLoop(indices, updates);
  quantize.plan.AddDim(values / 32, 32, blockBytes, 0, 0);  // indexed: the block's first byte
  quantize.plan.AddComponent(rows, output.strides[dims - 2]);
  op->inputs = {input, indices, updates};
  op->outputs = {output};
  op->passes = {copy, claim, quantize};
  op->componentSizes = {rows};
  op->format = desc.Format;
  op->slots = rows;  // a scatter: in place allowed, DROP its out-of-range mode
  return {};
}

}  // namespace vkdml::detail
