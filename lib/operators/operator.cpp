#include "operators/operator.h"

#include <cstring>

#include "operators/error.h"

namespace vkdml::detail {

#define VKDML_OPERATOR_LIST                                                                  \
  "DML_OPERATOR_GATHER (67), DML_OPERATOR_SCATTER_ELEMENTS (94), "                           \
  "DML_OPERATOR_GATHER_ELEMENTS (107), "                                                     \
  "DML_OPERATOR_GATHER_ND (108), DML_OPERATOR_SCATTER_ND (109), DML_OPERATOR_GATHER_ND1 "    \
  "(140), VKDML_OPERATOR_SCATTER_ND_REDUCE (65537), "                                        \
  "VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE (65538), VKDML_OPERATOR_OUT_OF_RANGE (65539), "    \
  "VKDML_OPERATOR_GATHER_QUANTIZED_ROWS (65540), VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS "     \
  "(65541), VKDML_OPERATOR_EMBEDDING_BAG (65542), VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED "    \
  "(65543), VKDML_OPERATOR_PAGED_CACHE_WRITE (65544), VKDML_OPERATOR_PAGED_GATHER (65545), " \
  "VKDML_OPERATOR_MOE_PERMUTE (65552), VKDML_OPERATOR_MOE_UNPERMUTE (65553) or "             \
  "VKDML_OPERATOR_SEGMENT_REDUCE (65560)"

Result ValidateOperatorTensors(const DML_TENSOR_DESC* input, const DML_TENSOR_DESC* indices,
                               bool hasUpdates, const DML_TENSOR_DESC* updates,
                               const DML_TENSOR_DESC* output, OperatorTensors* out) {
  OperatorTensors& t = *out;
  VKDML_TRY(ValidateTensor(input, "InputTensor", TensorRole::Data, &t.input));
  VKDML_TRY(ValidateTensor(indices, "IndicesTensor", TensorRole::Indices, &t.indices));
  if (hasUpdates) VKDML_TRY(ValidateTensor(updates, "UpdatesTensor", TensorRole::Data, &t.updates));
  VKDML_TRY(ValidateTensor(output, "OutputTensor", TensorRole::Data, &t.output));
  VKDML_TRY(CheckSameRank(t.indices, t.input));
  if (hasUpdates) VKDML_TRY(CheckSameRank(t.updates, t.input));
  VKDML_TRY(CheckSameRank(t.output, t.input));
  if (hasUpdates) VKDML_TRY(CheckSameType(t.updates, t.input));
  VKDML_TRY(CheckSameType(t.output, t.input));
  return CheckNoOverlap(t.output);
}

namespace {

Result CheckReduceFunction(VKDML_REDUCE_FUNCTION f, BOOL excludeSelf) {
  if (f > VKDML_REDUCE_FUNCTION_MEAN)
    return Fail(Status::InvalidArgument, "ReduceFunction is ", UINT(f),
                ", expected VKDML_REDUCE_FUNCTION_NONE (0), _ADD (1), _MULTIPLY (2), _MAX (3), "
                "_MIN (4) or _MEAN (5)");
  if (excludeSelf != 0 && excludeSelf != 1)
    return Fail(Status::InvalidArgument, "ExcludeSelf is ", excludeSelf, ", expected 0 or 1");
  if (excludeSelf && f == VKDML_REDUCE_FUNCTION_NONE)
    return Fail(Status::InvalidArgument,
                "ExcludeSelf is 1 with ReduceFunction VKDML_REDUCE_FUNCTION_NONE: it applies to "
                "a reduction (without one, every target is its last update anyway)");
  return {};
}

// The identity of reduction f on elements of type t, its bytes repeated over 16 (OperatorImpl::
// fill): f(identity, u) is u.
shader::uvec4 Identity(DML_TENSOR_DATA_TYPE t, VKDML_REDUCE_FUNCTION f) {
  const UINT size = DataTypeSize(t);
  const bool isFloat = t == DML_TENSOR_DATA_TYPE_FLOAT16 || t == DML_TENSOR_DATA_TYPE_FLOAT32 ||
                       t == DML_TENSOR_DATA_TYPE_FLOAT64;
  const bool isSigned = t == DML_TENSOR_DATA_TYPE_INT8 || t == DML_TENSOR_DATA_TYPE_INT16 ||
                        t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
  const int bits = int(size) * 8;
  const uint64_t ones = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  const uint64_t sign = uint64_t(1) << (bits - 1);
  // Floats: 1.0 and +infinity as bits (the exponent all ones, or its bias).
  const int mantissa = size == 2 ? 10 : size == 4 ? 23 : 52;
  const uint64_t exponent = (ones >> 1) & ~((uint64_t(1) << mantissa) - 1);  // all ones
  const uint64_t one = (exponent >> 1) & exponent;                           // the bias
  uint64_t v = 0;
  switch (f) {
    case VKDML_REDUCE_FUNCTION_MULTIPLY:
      v = isFloat ? one : 1;
      break;
    case VKDML_REDUCE_FUNCTION_MAX:  // the least value
      v = isFloat ? sign | exponent : isSigned ? sign : 0;
      break;
    case VKDML_REDUCE_FUNCTION_MIN:  // the greatest
      v = isFloat ? exponent : isSigned ? ones >> 1 : ones;
      break;
    default:  // ADD: +0
      break;
  }
  uint8_t bytes[16];
  for (UINT b = 0; b < 16; ++b) bytes[b] = uint8_t(v >> (8 * (b % size)));
  shader::uvec4 out;
  std::memcpy(&out, bytes, sizeof bytes);
  return out;
}

// MEAN runs as its sum, ADD, then a count and a division; ExcludeSelf starts the targets from
// the (summed) reduction's identity.
Result ApplyReduceOptions(BOOL excludeSelf, OperatorImpl* op) {
  op->mean = op->reduce == VKDML_REDUCE_FUNCTION_MEAN;
  if (op->mean) op->reduce = VKDML_REDUCE_FUNCTION_ADD;
  op->excludeSelf = excludeSelf != 0;
  if (op->excludeSelf) op->fill = Identity(op->inputs[0].type, op->reduce);
  return {};
}

const char* const kModeNames[] = {"CLAMP", "FILL", "DROP", "ERROR"};

// The mode against the operator it wraps (already built into op), and FillValue's bytes.
Result ApplyOutOfRange(const VKDML_OUT_OF_RANGE_OPERATOR_DESC& d, OperatorImpl* op) {
  if (d.Mode > VKDML_OUT_OF_RANGE_MODE_ERROR)
    return Fail(Status::InvalidArgument, "Mode is ", UINT(d.Mode),
                ", expected VKDML_OUT_OF_RANGE_MODE_CLAMP (0), _FILL (1), _DROP (2) or _ERROR (3)");
  if (op->moe)
    return Fail(Status::InvalidArgument,
                "VKDML_OPERATOR_OUT_OF_RANGE does not wrap it: it defines its out-of-range ids "
                "(dropped entries, -1 rows)");
  if (op->segment)
    return Fail(Status::InvalidArgument,
                "Operator is VKDML_OPERATOR_SEGMENT_REDUCE, which has no out-of-range index: "
                "its offsets are clamped into the rows (checked mode reports bad ones)");
  if (d.Mode == VKDML_OUT_OF_RANGE_MODE_FILL && op->IsScatter())
    return Fail(Status::InvalidArgument,
                "Mode is VKDML_OUT_OF_RANGE_MODE_FILL, which is for gathers: a scatter skips its "
                "out-of-range updates with VKDML_OUT_OF_RANGE_MODE_DROP (2)");
  if (d.Mode == VKDML_OUT_OF_RANGE_MODE_DROP && !op->IsScatter() && !op->bag)
    return Fail(Status::InvalidArgument,
                "Mode is VKDML_OUT_OF_RANGE_MODE_DROP, which is for scatters and embedding bags: a "
                "gather writes a "
                "value for its out-of-range indices with VKDML_OUT_OF_RANGE_MODE_FILL (1)");
  if (d.Mode == VKDML_OUT_OF_RANGE_MODE_CLAMP && op->paged && op->IsScatter())
    return Fail(Status::InvalidArgument,
                "Mode is VKDML_OUT_OF_RANGE_MODE_CLAMP, which a cache write refuses: a slot past "
                "the cache is skipped, with VKDML_OUT_OF_RANGE_MODE_DROP (2) or _ERROR (3)");
  const UINT size = d.Mode == VKDML_OUT_OF_RANGE_MODE_FILL ? op->outputs[0].elemSize : 0;
  for (UINT b = size; b < 8; ++b)
    if (d.FillValue.Bytes[b] != 0)
      return Fail(Status::InvalidArgument, "FillValue.Bytes[", b, "] is ",
                  UINT(d.FillValue.Bytes[b]), ", expected 0: ",
                  size ? Str("OutputTensor's DataType, ", DataTypeName(op->outputs[0].type),
                             ", is ", size, size == 1 ? " byte" : " bytes", " wide")
                       : Str("Mode ", kModeNames[d.Mode], " writes no value"));
  op->outOfRange = d.Mode;
  if (!size) return {};  // a scatter's fill (ExcludeSelf's identity) stays
  uint8_t bytes[16];
  for (UINT b = 0; b < 16; ++b) bytes[b] = d.FillValue.Bytes[b % size];
  std::memcpy(&op->fill, bytes, sizeof bytes);
  return {};
}

}  // namespace

bool KnownOperatorType(DML_OPERATOR_TYPE type) {
  switch (type) {
    case DML_OPERATOR_GATHER:
    case DML_OPERATOR_SCATTER_ELEMENTS:
    case DML_OPERATOR_GATHER_ELEMENTS:
    case DML_OPERATOR_GATHER_ND:
    case DML_OPERATOR_SCATTER_ND:
    case DML_OPERATOR_GATHER_ND1:
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
    case VKDML_OPERATOR_OUT_OF_RANGE:
    case VKDML_OPERATOR_GATHER_QUANTIZED_ROWS:
    case VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS:
    case VKDML_OPERATOR_EMBEDDING_BAG:
    case VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED:
    case VKDML_OPERATOR_MOE_PERMUTE:
    case VKDML_OPERATOR_MOE_UNPERMUTE:
    case VKDML_OPERATOR_PAGED_CACHE_WRITE:
    case VKDML_OPERATOR_PAGED_GATHER:
    case VKDML_OPERATOR_SEGMENT_REDUCE:
      return true;
    default:
      return false;
  }
}

const char* OperatorTypeList() {
  return VKDML_OPERATOR_LIST;
}

Result BuildOperator(const DML_OPERATOR_DESC& desc, OperatorImpl* op) {
  if (!desc.Desc) return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Desc is null");
  Result r;
  op->type = desc.Type;
  if (desc.Type != VKDML_OPERATOR_OUT_OF_RANGE) op->base = desc.Type;
  switch (desc.Type) {
    case DML_OPERATOR_GATHER:
      op->name = "GATHER";
      r = BuildGather(*static_cast<const DML_GATHER_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      op->name = "GATHER_ELEMENTS";
      r = BuildGatherElements(*static_cast<const DML_GATHER_ELEMENTS_OPERATOR_DESC*>(desc.Desc),
                              op);
      break;
    case DML_OPERATOR_GATHER_ND: {
      op->name = "GATHER_ND";
      const auto& nd = *static_cast<const DML_GATHER_ND_OPERATOR_DESC*>(desc.Desc);
      DML_GATHER_ND1_OPERATOR_DESC nd1{nd.InputTensor,           nd.IndicesTensor,
                                       nd.OutputTensor,          nd.InputDimensionCount,
                                       nd.IndicesDimensionCount, 0};
      r = BuildGatherND(nd1, false, op);
      break;
    }
    case DML_OPERATOR_GATHER_ND1:
      op->name = "GATHER_ND1";
      r = BuildGatherND(*static_cast<const DML_GATHER_ND1_OPERATOR_DESC*>(desc.Desc), true, op);
      break;
    case DML_OPERATOR_SCATTER_ND:
      op->name = "SCATTER_ND";
      r = BuildScatterND(*static_cast<const DML_SCATTER_ND_OPERATOR_DESC*>(desc.Desc),
                         VKDML_REDUCE_FUNCTION_NONE, op);
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      op->name = "SCATTER_ELEMENTS";
      r = BuildScatterElements(*static_cast<const DML_SCATTER_OPERATOR_DESC*>(desc.Desc),
                               VKDML_REDUCE_FUNCTION_NONE, op);
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE: {
      op->name = "SCATTER_ND_REDUCE";
      const auto& d = *static_cast<const VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC*>(desc.Desc);
      const DML_SCATTER_ND_OPERATOR_DESC nd{d.InputTensor,         d.IndicesTensor,
                                            d.UpdatesTensor,       d.OutputTensor,
                                            d.InputDimensionCount, d.IndicesDimensionCount};
      r = CheckReduceFunction(d.ReduceFunction, d.ExcludeSelf);
      if (r.ok()) r = BuildScatterND(nd, d.ReduceFunction, op);
      if (r.ok()) r = ApplyReduceOptions(d.ExcludeSelf, op);
      break;
    }
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: {
      op->name = "SCATTER_ELEMENTS_REDUCE";
      const auto& d = *static_cast<const VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC*>(desc.Desc);
      const DML_SCATTER_OPERATOR_DESC se{d.InputTensor, d.IndicesTensor, d.UpdatesTensor,
                                         d.OutputTensor, d.Axis};
      r = CheckReduceFunction(d.ReduceFunction, d.ExcludeSelf);
      if (r.ok()) r = BuildScatterElements(se, d.ReduceFunction, op);
      if (r.ok()) r = ApplyReduceOptions(d.ExcludeSelf, op);
      break;
    }
    case VKDML_OPERATOR_GATHER_QUANTIZED_ROWS:
      op->name = "GATHER_QUANTIZED_ROWS";
      r = BuildGatherQuantizedRows(
          *static_cast<const VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS:
      op->name = "SCATTER_QUANTIZED_ROWS";
      r = BuildScatterQuantizedRows(
          *static_cast<const VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_EMBEDDING_BAG:
      op->name = "EMBEDDING_BAG";
      r = BuildEmbeddingBag(*static_cast<const VKDML_EMBEDDING_BAG_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED:
      op->name = "GATHER_BLOCK_QUANTIZED";
      r = BuildGatherBlockQuantized(
          *static_cast<const VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_MOE_PERMUTE:
      op->name = "MOE_PERMUTE";
      r = BuildMoePermute(*static_cast<const VKDML_MOE_PERMUTE_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_MOE_UNPERMUTE:
      op->name = "MOE_UNPERMUTE";
      r = BuildMoeUnpermute(*static_cast<const VKDML_MOE_UNPERMUTE_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_PAGED_CACHE_WRITE:
      op->name = "PAGED_CACHE_WRITE";
      r = BuildPagedCacheWrite(
          *static_cast<const VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_PAGED_GATHER:
      op->name = "PAGED_GATHER";
      r = BuildPagedGather(*static_cast<const VKDML_PAGED_GATHER_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case VKDML_OPERATOR_SEGMENT_REDUCE:
      op->name = "SEGMENT_REDUCE";
      r = BuildSegmentReduce(*static_cast<const VKDML_SEGMENT_REDUCE_OPERATOR_DESC*>(desc.Desc),
                             op);
      break;
    case VKDML_OPERATOR_OUT_OF_RANGE: {
      const auto& d = *static_cast<const VKDML_OUT_OF_RANGE_OPERATOR_DESC*>(desc.Desc);
      if (!d.Operator) return Fail(Status::InvalidArgument, "OUT_OF_RANGE: Operator is null");
      if (d.Operator->Type == VKDML_OPERATOR_OUT_OF_RANGE)
        return Fail(Status::InvalidArgument,
                    "OUT_OF_RANGE: Operator is itself VKDML_OPERATOR_OUT_OF_RANGE; wrap the "
                    "gather or scatter directly");
      VKDML_TRY(BuildOperator(*d.Operator, op));  // prefixed with the operator's name
      op->type = VKDML_OPERATOR_OUT_OF_RANGE;
      r = ApplyOutOfRange(d, op);
      break;
    }
    default:
      return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Type is ", UINT(desc.Type),
                  ", expected an operator vkdml implements: " VKDML_OPERATOR_LIST);
  }
  if (!r.ok()) r.message = Str(op->name, ": ", r.message);
  return r;
}

}  // namespace vkdml::detail
