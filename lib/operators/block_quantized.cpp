// VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED: validation and lowering (dml.h states the shapes).
//
// Vulkan guarantees 4 storage buffers a stage, and the gather reads InputTensor, IndicesTensor,
// ScaleTensor and ZeroPointTensor, writes OutputTensor, and checked mode needs the scratch: so a
// Scales pass first copies each block's scale (as float32) and its type's zero point into the
// scratch, and a ZeroPoints pass (with ZeroPointTensor) overwrites the zero points. The Blocks
// pass is then DML_OPERATOR_GATHER's over InputTensor's values (LowerGather), an invocation per
// output value finding its block from the value's row-major number (glsl/dequantize_blocks.comp).
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

bool FourBit(VKDML_BLOCK_QUANTIZED_TYPE type) {
  return type != VKDML_BLOCK_QUANTIZED_TYPE_UINT8;
}

namespace {

Result CheckOptions(const VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC& desc) {
  if (desc.ValueType < VKDML_BLOCK_QUANTIZED_TYPE_INT4 ||
      desc.ValueType > VKDML_BLOCK_QUANTIZED_TYPE_UINT8)
    return Fail(Status::InvalidArgument, "ValueType is ", UINT(desc.ValueType),
                ", expected VKDML_BLOCK_QUANTIZED_TYPE_INT4 (1), _UINT4 (2), _UINT8_BITS4 (3) or "
                "_UINT8 (4)");
  if (desc.BlockSize < 16 || (desc.BlockSize & (desc.BlockSize - 1)))
    return Fail(Status::InvalidArgument, "BlockSize is ", desc.BlockSize,
                ", expected a power of 2, at least 16 (as ONNX Runtime's block_size)");
  if (desc.ValueSizes && desc.ValueType != VKDML_BLOCK_QUANTIZED_TYPE_INT4 &&
      desc.ValueType != VKDML_BLOCK_QUANTIZED_TYPE_UINT4)
    return Fail(Status::InvalidArgument, "ValueSizes is given, expected null for ValueType ",
                UINT(desc.ValueType),
                ": only INT4 (1) and UINT4 (2) values are packed whole; InputTensor's sizes give "
                "the others'");
  return {};
}

// A UINT8 tensor of packed bytes (`what` says what they hold).
Result CheckPackedBytes(const Tensor& t, const char* what) {
  if (t.type != DML_TENSOR_DATA_TYPE_UINT8)
    return Fail(Status::InvalidArgument, t.field, ".DataType is ", DataTypeName(t.type),
                ", expected UINT8 (", what, ")");
  return CheckPacked(t, Str(what, " are packed").c_str());
}

// t holds 4-bit values of `sizes` packed whole, as ONNX's int4 and uint4 tensors (value n,
// row-major, in byte n / 2): sizes {1, ..., 1, ceil(count / 2)}, or where the last size is even,
// `sizes` with it halved (the same bytes). `what` explains each of `sizes`; `values` names them
// ("zero points") and `last` says where their last size comes from.
Result CheckPackedWhole(const Tensor& t, VKDML_BLOCK_QUANTIZED_TYPE type, const UINT* sizes,
                        const std::string* what, const char* values, const std::string& last) {
  const UINT dims = t.dims, l = dims - 1;
  UINT64 count = 1;
  for (UINT d = 0; d < dims; ++d) count *= sizes[d];
  const UINT64 bytes = (count + 1) / 2;
  bool flat = t.sizes[l] == bytes;
  for (UINT d = 0; d < l; ++d) flat = flat && t.sizes[d] == 1;
  if (flat) return {};
  if (sizes[l] % 2)
    return Fail(
        Status::InvalidArgument, t.field, ".Sizes[", l, "] is ", t.sizes[l], ", expected ", bytes,
        " with every other size 1: ", type == VKDML_BLOCK_QUANTIZED_TYPE_INT4 ? "INT4 " : "UINT4 ",
        values, " are packed whole, as ONNX's tensors of that type, and ", last, " (", sizes[l],
        ") is odd, so their rows do not start on a byte");
  UINT halved[kMaxDims];
  std::string halvedWhat[kMaxDims];
  for (UINT d = 0; d < dims; ++d) {
    halved[d] = d == l ? sizes[d] / 2 : sizes[d];
    halvedWhat[d] = d == l ? Str(what[d], ", 2 ", values, " a byte") : what[d];
  }
  return CheckSizes(t, dims, halved, halvedWhat);
}

}  // namespace

Result BuildGatherBlockQuantized(const VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC& desc,
                                 OperatorImpl* op) {
  VKDML_TRY(CheckOptions(desc));
  const bool fourBit = FourBit(desc.ValueType), hasZeroPoints = desc.ZeroPointTensor != nullptr;
  Tensor input, indices, scales, zeroPoints, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.ScaleTensor, "ScaleTensor", TensorRole::Data, &scales));
  if (hasZeroPoints)
    VKDML_TRY(
        ValidateTensor(desc.ZeroPointTensor, "ZeroPointTensor", TensorRole::Data, &zeroPoints));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  for (const Tensor* t : {&indices, &scales, &output}) VKDML_TRY(CheckSameRank(*t, input));
  if (hasZeroPoints) VKDML_TRY(CheckSameRank(zeroPoints, input));
  VKDML_TRY(CheckPackedBytes(input, "the quantized values"));
  if (output.type != DML_TENSOR_DATA_TYPE_FLOAT32 && output.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, "OutputTensor.DataType is ", DataTypeName(output.type),
                ", expected FLOAT32 or FLOAT16");
  VKDML_TRY(CheckSameType(scales, output));
  VKDML_TRY(CheckNoOverlap(output));

  // The values: InputTensor's sizes, the last doubled for 4-bit types; or ValueSizes, which
  // InputTensor holds packed whole. Packed; numbered below 2^32 (glsl/dequantize_blocks.comp).
  const UINT dims = input.dims, last = dims - 1, axis = desc.QuantizeAxis;
  Tensor values = input;
  if (fourBit) values.field = "InputTensor's values";
  if (desc.ValueSizes) {
    std::string what[kMaxDims];
    for (UINT d = 0; d < dims; ++d) {
      if (desc.ValueSizes[d] == 0)
        return Fail(Status::InvalidArgument, "ValueSizes[", d, "] is 0, expected at least 1");
      values.sizes[d] = desc.ValueSizes[d];
      what[d] = Str("ValueSizes[", d, "]");
    }
    if (values.Count() > 0xFFFFFFFFu)
      return Fail(Status::InvalidArgument, "ValueSizes hold ", values.Count(),
                  " values, expected at most 4294967295");
    VKDML_TRY(CheckPackedWhole(input, desc.ValueType, values.sizes, what, "values",
                               Str("ValueSizes[", last, "]")));
  } else if (fourBit) {
    if (input.sizes[last] > 0x7FFFFFFFu || input.Count() * 2 > 0xFFFFFFFFu)
      return Fail(Status::InvalidArgument, "InputTensor holds ", input.Count() * 2,
                  " 4-bit values, expected at most 4294967295");
    values.sizes[last] *= 2;
  }
  PackedStrides(dims, values.sizes, values.strides);
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "QuantizeAxis is ", axis, ", expected less than ", dims,
                " (InputTensor.DimensionCount)");
  Pass blocks;
  VKDML_TRY(LowerGather(values, indices, output, desc.Axis, desc.IndexDimensions, &blocks));
  blocks.kind = Pass::Kind::Blocks;

  // ScaleTensor: the values' sizes, QuantizeAxis's in blocks.
  const UINT along = values.sizes[axis], perAxis = (along - 1) / desc.BlockSize + 1;
  UINT expected[kMaxDims];
  std::string what[kMaxDims];
  for (UINT d = 0; d < dims; ++d) {
    expected[d] = d == axis ? perAxis : values.sizes[d];
    what[d] = d == axis ? Str("blocks of ", desc.BlockSize, " of the ", along,
                              " values along QuantizeAxis ", axis)
                        : Str("the values' size ", d);
  }
  VKDML_TRY(CheckSizes(scales, dims, expected, what));
  // INT4 and UINT4 zero points are ONNX's int4 and uint4 tensors, packed whole (zero point n in
  // byte n / 2): sizes {1, ..., 1, bytes}, or ScaleTensor's with the last halved where that is
  // even (the same bytes). UINT8_BITS4's are ONNX Runtime's uint8 ones, each row of the last
  // dimension starting on a byte.
  const bool whole = fourBit && desc.ValueType != VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4;
  if (hasZeroPoints) {
    if (whole) {
      VKDML_TRY(CheckPackedWhole(zeroPoints, desc.ValueType, expected, what, "zero points",
                                 "ScaleTensor's last size"));
    } else {
      if (fourBit) {
        expected[last] = (expected[last] + 1) / 2;
        what[last] += ", 2 zero points a byte";
      }
      VKDML_TRY(CheckSizes(zeroPoints, dims, expected, what));
    }
    VKDML_TRY(CheckPackedBytes(zeroPoints, "the zero points"));
  }

  UINT blockAt[kMaxDims];  // a block's row-major number in the scratch
  PackedStrides(dims, scales.sizes, blockAt);
  Pass scale;
  scale.kind = Pass::Kind::Scales;
  for (UINT d = 0; d < dims; ++d)
    scale.plan.AddDim(scales.sizes[d], blockAt[d], scales.strides[d], 0, 0);
  Pass zeroPoint;
  zeroPoint.kind = Pass::Kind::ZeroPoints;
  for (UINT d = 0; hasZeroPoints && d < dims; ++d) {  // the zero point's number
    const UINT at = whole       ? blockAt[d]
                    : d == last ? 1
                    : fourBit   ? 2 * zeroPoints.strides[d]
                                : zeroPoints.strides[d];
    zeroPoint.plan.AddDim(scales.sizes[d], blockAt[d], at, 0, 0);
  }
  UINT inner = 1;
  for (UINT d = axis + 1; d < dims; ++d) inner *= values.sizes[d];

  op->inputs = {input, indices, scales};
  if (hasZeroPoints) op->inputs.push_back(zeroPoints);
  op->outputs = {output};
  op->passes = {scale};
  if (hasZeroPoints) op->passes.push_back(zeroPoint);
  op->passes.push_back(blocks);
  op->componentSizes = {values.sizes[desc.Axis]};
  op->blockType = desc.ValueType;
  op->blockParams = {{inner, along, perAxis, desc.BlockSize}};
  op->blocks = scales.Count();
  return {};
}

UINT BlockZeroPoint(VKDML_BLOCK_QUANTIZED_TYPE type) {
  return type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8         ? 128
         : type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4 ? 8
                                                          : 0;
}

}  // namespace vkdml::detail
