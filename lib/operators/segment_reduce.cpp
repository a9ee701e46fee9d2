// VKDML_OPERATOR_SEGMENT_REDUCE: validation and lowering (dml.h states the shapes and values).
//
// One Segment pass (glsl/segment_reduce.comp) walks OutputTensor, an invocation per element
// folding its segment's rows in row order; its plan's direct side is OutputTensor (bytes), its
// indexed side InputTensor's row 0 of the segment (bytes), its IndicesTensor offset the segment's
// first offset (offsets) or the batch's first id (sorted ids), and its `position` the segment.
// Checked mode first runs a SegmentCheck pass over IndicesTensor (the same module file, CHECK).
#include <cstring>

#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

namespace {

const char* const kFunctionNames[] = {"SUM", "MEAN", "MIN", "MAX", "PROD", "ARGMIN", "ARGMAX"};

bool IsIndexType(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_INT64 ||
         type == DML_TENSOR_DATA_TYPE_UINT32 || type == DML_TENSOR_DATA_TYPE_UINT64;
}

Result CheckOptions(const VKDML_SEGMENT_REDUCE_OPERATOR_DESC& desc) {
  if (desc.ReduceFunction > VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX)
    return Fail(Status::InvalidArgument, "ReduceFunction is ", UINT(desc.ReduceFunction),
                ", expected VKDML_SEGMENT_REDUCE_FUNCTION_SUM (0), _MEAN (1), _MIN (2), _MAX (3), "
                "_PROD (4), _ARGMIN (5) or _ARGMAX (6)");
  if (desc.SortedIndices != 0 && desc.SortedIndices != 1)
    return Fail(Status::InvalidArgument, "SortedIndices is ", desc.SortedIndices,
                ", expected 0 (offsets) or 1 (a sorted segment id per row)");
  if (desc.EmptyValue > VKDML_SEGMENT_EMPTY_INITIAL)
    return Fail(Status::InvalidArgument, "EmptyValue is ", UINT(desc.EmptyValue),
                ", expected VKDML_SEGMENT_EMPTY_SCATTER (0), _TORCH (1) or _INITIAL (2)");
  const bool arg = desc.ReduceFunction >= VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN;
  if (arg && desc.EmptyValue == VKDML_SEGMENT_EMPTY_INITIAL)
    return Fail(Status::InvalidArgument,
                "EmptyValue is VKDML_SEGMENT_EMPTY_INITIAL with "
                "ReduceFunction ",
                kFunctionNames[desc.ReduceFunction],
                ", expected _SCATTER or _TORCH: a row position has no initial value");
  return {};
}

// Bits of a value of `type` as the kernels fold it (glsl/segment_reduce.comp): 1- and 2-byte
// integers sign- or zero-extended to 32 bits, FLOAT16 as float32.
UINT64 Widened(DML_TENSOR_DATA_TYPE type, UINT64 bits) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_INT8:
      return UINT(int32_t(int8_t(bits)));
    case DML_TENSOR_DATA_TYPE_INT16:
      return UINT(int32_t(int16_t(bits)));
    case DML_TENSOR_DATA_TYPE_UINT8:
      return bits & 0xFF;
    case DML_TENSOR_DATA_TYPE_UINT16:
      return bits & 0xFFFF;
    case DML_TENSOR_DATA_TYPE_FLOAT16: {  // exact: every float16 is a float32
      const UINT h = UINT(bits & 0xFFFF), sign = (h & 0x8000) << 16, e = (h >> 10) & 31,
                 m = h & 0x3FF;
      if (e == 31) return sign | 0x7F800000u | (m << 13);
      if (e != 0) return sign | ((e + 112) << 23) | (m << 13);
      if (m == 0) return sign;
      float f = float(m) * (1.0f / 16777216.0f);  // m * 2^-24, exact
      UINT u;
      std::memcpy(&u, &f, 4);
      return sign | u;
    }
    case DML_TENSOR_DATA_TYPE_INT32:
    case DML_TENSOR_DATA_TYPE_UINT32:
    case DML_TENSOR_DATA_TYPE_FLOAT32:
      return bits & 0xFFFFFFFFu;
    default:
      return bits;
  }
}

// The bits of one, +inf, -inf, NaN, the lowest and the highest value of `type` (widened).
enum class Special { Zero, One, PlusInf, MinusInf, NaN };
UINT64 SpecialValue(DML_TENSOR_DATA_TYPE type, UINT elemSize, Special s) {
  const bool isFloat = type == DML_TENSOR_DATA_TYPE_FLOAT16 ||
                       type == DML_TENSOR_DATA_TYPE_FLOAT32 || type == DML_TENSOR_DATA_TYPE_FLOAT64;
  const bool isSigned = type == DML_TENSOR_DATA_TYPE_INT8 || type == DML_TENSOR_DATA_TYPE_INT16 ||
                        type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_INT64;
  const bool wide = elemSize == 8;
  if (s == Special::Zero) return 0;
  if (isFloat) {
    const UINT64 one = wide ? 0x3FF0000000000000ull : 0x3F800000u;
    const UINT64 inf = wide ? 0x7FF0000000000000ull : 0x7F800000u;
    const UINT64 sign = wide ? 0x8000000000000000ull : 0x80000000u;
    switch (s) {
      case Special::One:
        return one;
      case Special::PlusInf:
        return inf;
      case Special::MinusInf:
        return inf | sign;
      default:
        return wide ? 0x7FF8000000000000ull : 0x7FC00000u;
    }
  }
  if (s == Special::One) return 1;
  if (s == Special::NaN) return 0;  // an integer mean of nothing: 0
  const UINT bits = 8 * elemSize;
  const UINT64 mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  UINT64 v;
  if (isSigned)
    v = s == Special::PlusInf ? mask >> 1 : (mask >> 1) + 1;  // highest, lowest
  else
    v = s == Special::PlusInf ? mask : 0;
  return Widened(type, v);
}

}  // namespace

Result BuildSegmentReduce(const VKDML_SEGMENT_REDUCE_OPERATOR_DESC& desc, OperatorImpl* op) {
  VKDML_TRY(CheckOptions(desc));
  Tensor input, indices, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(output, input));
  const UINT dims = input.dims, axis = desc.Axis;
  if (axis >= dims)
    return Fail(Status::InvalidArgument, "Axis is ", axis, ", expected below ", dims,
                " (InputTensor.DimensionCount)");
  if (!IsIndexType(indices.type))
    return Fail(Status::InvalidArgument, "IndicesTensor.DataType is ", DataTypeName(indices.type),
                ", expected INT32, INT64, UINT32 or UINT64");
  const auto f = desc.ReduceFunction;
  const bool arg = f >= VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN;
  if (arg) {
    if (!IsIndexType(output.type))
      return Fail(Status::InvalidArgument, "OutputTensor.DataType is ", DataTypeName(output.type),
                  ", expected INT32, INT64, UINT32 or UINT64 for ReduceFunction ",
                  kFunctionNames[f], " (a row position)");
  } else {
    VKDML_TRY(CheckSameType(output, input));
  }
  const bool sorted = desc.SortedIndices != 0;
  const UINT rows = input.sizes[axis];
  // IndicesTensor: InputTensor's sizes before Axis, then its own, then 1s.
  for (UINT d = 0; d < dims; ++d) {
    if (d < axis && indices.sizes[d] != input.sizes[d])
      return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", d, "] is ", indices.sizes[d],
                  ", expected ", input.sizes[d], " (InputTensor.Sizes[", d,
                  "]: a batch dimension before Axis)");
    if (d > axis && indices.sizes[d] != 1)
      return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", d, "] is ", indices.sizes[d],
                  ", expected 1 (a dimension after Axis)");
  }
  if (sorted && indices.sizes[axis] != rows)
    return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", axis, "] is ", indices.sizes[axis],
                ", expected ", rows,
                " (InputTensor.Sizes[Axis]: a segment id per row, with SortedIndices)");
  if (!sorted && indices.sizes[axis] < 1)
    return Fail(Status::InvalidArgument, "IndicesTensor.Sizes[", axis,
                "] is 0, expected the segments plus 1 (offsets: each segment's start and the "
                "last's end)");
  const UINT segments = sorted ? output.sizes[axis] : indices.sizes[axis] - 1;
  for (UINT d = 0; d < dims; ++d)
    if (output.sizes[d] != (d == axis ? segments : input.sizes[d]))
      return Fail(Status::InvalidArgument, "OutputTensor.Sizes[", d, "] is ", output.sizes[d],
                  ", expected ", d == axis ? segments : input.sizes[d],
                  d == axis ? " (the segments: IndicesTensor.Sizes[Axis] less 1)"
                            : Str(" (InputTensor.Sizes[", d, "])"));
  VKDML_TRY(CheckNoOverlap(output));

  // The fold: OutputTensor's elements, the segment's dimension's `position` stride 1.
  Pass fold;
  fold.kind = Pass::Kind::Segment;
  for (UINT d = 0; d < dims; ++d) {
    const bool seg = d == axis;
    if (!seg && output.sizes[d] == 1) continue;
    const UINT indexStride = d < axis         ? indices.strides[d]
                             : seg && !sorted ? indices.strides[d]
                                              : 0;
    fold.plan.AddDim(output.sizes[d], output.strides[d] * output.elemSize,
                     seg ? 0 : input.strides[d] * input.elemSize, indexStride, seg ? 1 : 0);
  }
  // The check: IndicesTensor's elements, row-major.
  Pass check;
  check.kind = Pass::Kind::SegmentCheck;
  {
    UINT position = 1;
    UINT positions[kMaxDims] = {};
    for (UINT d = dims; d-- > 0;) {
      positions[d] = position;
      position *= indices.sizes[d];
    }
    for (UINT d = 0; d <= axis; ++d)
      check.plan.AddDim(indices.sizes[d], 0, 0, indices.strides[d], positions[d]);
  }

  const DML_TENSOR_DATA_TYPE type = input.type;
  const UINT size = input.elemSize;
  UINT flags = (sorted ? VKDML_SEGMENT_COO : 0) |
               (f == VKDML_SEGMENT_REDUCE_FUNCTION_MEAN ? VKDML_SEGMENT_MEAN : 0) |
               (arg ? VKDML_SEGMENT_ARG : 0) |
               (arg && output.elemSize == 8 ? VKDML_SEGMENT_ARG64 : 0) |
               (desc.EmptyValue == VKDML_SEGMENT_EMPTY_INITIAL ? VKDML_SEGMENT_INITIAL : 0) |
               (type == DML_TENSOR_DATA_TYPE_FLOAT16 ? VKDML_SEGMENT_HALF : 0);
  // The fill: an empty segment's value (x, y) and the fold's start (z, w), as the kernel folds.
  const bool prod = f == VKDML_SEGMENT_REDUCE_FUNCTION_PROD;
  UINT64 start = SpecialValue(type, size, prod ? Special::One : Special::Zero), empty = start;
  if (desc.EmptyValue == VKDML_SEGMENT_EMPTY_INITIAL) {
    UINT64 bits = 0;
    std::memcpy(&bits, desc.InitialValue.Bytes, 8);
    if (size < 8) bits &= (1ull << (8 * size)) - 1;
    for (UINT b = size; b < 8; ++b)
      if (desc.InitialValue.Bytes[b] != 0)
        return Fail(Status::InvalidArgument, "InitialValue.Bytes[", b, "] is ",
                    UINT(desc.InitialValue.Bytes[b]), ", expected 0: InputTensor's DataType, ",
                    DataTypeName(type), ", is ", size, size == 1 ? " byte" : " bytes", " wide");
    start = empty = Widened(type, bits);
  } else if (desc.EmptyValue == VKDML_SEGMENT_EMPTY_TORCH) {
    empty = f == VKDML_SEGMENT_REDUCE_FUNCTION_MEAN  ? SpecialValue(type, size, Special::NaN)
            : f == VKDML_SEGMENT_REDUCE_FUNCTION_MAX ? SpecialValue(type, size, Special::MinusInf)
            : f == VKDML_SEGMENT_REDUCE_FUNCTION_MIN ? SpecialValue(type, size, Special::PlusInf)
                                                     : start;
  }
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {check, fold};
  op->componentSizes = {sorted ? segments : rows + 1};
  op->segment = true;
  op->segmentReduce = f;
  op->segmentParams[0] = {
      {rows, input.strides[axis] * input.elemSize, flags, indices.strides[axis]}};
  op->segmentParams[1] = {
      {sorted ? segments : rows, indices.sizes[axis], flags, indices.strides[axis]}};
  op->fill = {{UINT(empty), UINT(empty >> 32), UINT(start), UINT(start >> 32)}};
  return {};
}

}  // namespace vkdml::detail
