#include "operators/tensor.h"

#include <algorithm>
#include <string>

#include "operators/error.h"

namespace vkdml {

using detail::Fail;

UINT DataTypeSize(DML_TENSOR_DATA_TYPE type) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_UINT8:
    case DML_TENSOR_DATA_TYPE_INT8:
      return 1;
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_UINT16:
    case DML_TENSOR_DATA_TYPE_INT16:
      return 2;
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_UINT32:
    case DML_TENSOR_DATA_TYPE_INT32:
      return 4;
    case DML_TENSOR_DATA_TYPE_FLOAT64:
    case DML_TENSOR_DATA_TYPE_UINT64:
    case DML_TENSOR_DATA_TYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

const char* DataTypeName(DML_TENSOR_DATA_TYPE type) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_FLOAT32:
      return "FLOAT32";
    case DML_TENSOR_DATA_TYPE_FLOAT16:
      return "FLOAT16";
    case DML_TENSOR_DATA_TYPE_UINT32:
      return "UINT32";
    case DML_TENSOR_DATA_TYPE_UINT16:
      return "UINT16";
    case DML_TENSOR_DATA_TYPE_UINT8:
      return "UINT8";
    case DML_TENSOR_DATA_TYPE_INT32:
      return "INT32";
    case DML_TENSOR_DATA_TYPE_INT16:
      return "INT16";
    case DML_TENSOR_DATA_TYPE_INT8:
      return "INT8";
    case DML_TENSOR_DATA_TYPE_FLOAT64:
      return "FLOAT64";
    case DML_TENSOR_DATA_TYPE_UINT64:
      return "UINT64";
    case DML_TENSOR_DATA_TYPE_INT64:
      return "INT64";
    default:
      return "UNKNOWN";
  }
}

namespace {

__extension__ typedef unsigned __int128 u128;

// (dot(sizes-1, strides)+1) * elemSize rounded up to 4, or 0 when it does not fit 64 bits.
UINT64 RequiredBytes(UINT elemSize, UINT dims, const UINT* sizes, const UINT* strides) {
  u128 last = 0;
  for (UINT i = 0; i < dims; ++i) last += u128(sizes[i] - 1) * strides[i];
  u128 bytes = (last + 1) * elemSize;
  bytes = (bytes + 3) / 4 * 4;
  return bytes > u128(UINT64(-1)) ? 0 : UINT64(bytes);
}

constexpr UINT64 kMaxElements = 0xFFFFFFFFull;  // DirectML's limit; packed strides fit 32 bits
constexpr UINT64 kMaxLargeElements = UINT64(1) << 56;  // VKDML_TENSOR_FLAG_LARGE's

// The product of the sizes, or cap + 1 when it passes cap; 0 if a size is 0.
UINT64 CappedElementCount(UINT dims, const UINT* sizes, UINT64 cap) {
  u128 count = 1;
  for (UINT i = 0; i < dims; ++i) {
    count *= sizes[i];
    if (count > cap) return cap + 1;
  }
  return UINT64(count);
}

// Whether the row-major packed strides of sizes all fit 32 bits.
bool PackedStridesFit(UINT dims, const UINT* sizes) {
  UINT64 s = 1;
  for (UINT i = dims; i-- > 1;) {
    s *= sizes[i];
    if (s > 0xFFFFFFFFu) return false;
  }
  return true;
}

UINT64 TensorSize(DML_TENSOR_DATA_TYPE type, UINT dimensionCount, const UINT* sizes,
                  const UINT* strides, UINT64 maxElements) {
  UINT elemSize = DataTypeSize(type);
  if (elemSize == 0 || dimensionCount < 1 || dimensionCount > detail::kMaxDims || !sizes) return 0;
  const UINT64 count = CappedElementCount(dimensionCount, sizes, maxElements);
  if (count == 0 || count > maxElements) return 0;
  UINT packed[detail::kMaxDims];
  if (!strides) {
    if (!PackedStridesFit(dimensionCount, sizes)) return 0;
    detail::PackedStrides(dimensionCount, sizes, packed);
    strides = packed;
  }
  return RequiredBytes(elemSize, dimensionCount, sizes, strides);
}

}  // namespace

UINT64 CalcBufferTensorSize(DML_TENSOR_DATA_TYPE type, UINT dimensionCount, const UINT* sizes,
                            const UINT* strides) {
  return TensorSize(type, dimensionCount, sizes, strides, kMaxElements);
}

UINT64 CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE type, UINT dimensionCount, const UINT* sizes,
                                 const UINT* strides) {
  return TensorSize(type, dimensionCount, sizes, strides, kMaxLargeElements);
}

namespace detail {

namespace {

bool IsDataType(DML_TENSOR_DATA_TYPE t) {
  return DataTypeSize(t) != 0;
}

bool IsIndexType(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_UINT32 ||
         t == DML_TENSOR_DATA_TYPE_INT64 || t == DML_TENSOR_DATA_TYPE_UINT64;
}

std::string TypeString(DML_TENSOR_DATA_TYPE t) {
  return IsDataType(t) ? std::string(DataTypeName(t)) : Str(UINT(t), " (not a data type)");
}

}  // namespace

void PackedStrides(UINT dims, const UINT* sizes, UINT* strides) {
  UINT64 s = 1;
  for (UINT i = dims; i-- > 0;) {
    strides[i] = s > 0xFFFFFFFFu ? 0xFFFFFFFFu : UINT(s);  // only reached past 2^32 elements
    s *= sizes[i];
  }
}

bool IsSignedIndexType(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_INT64;
}

Result ValidateTensor(const DML_TENSOR_DESC* desc, const char* field, TensorRole role,
                      Tensor* out) {
  if (!desc) return Fail(Status::InvalidArgument, field, " is null");
  if (desc->Type != DML_TENSOR_TYPE_BUFFER)
    return Fail(Status::InvalidArgument, field, ".Type is ", UINT(desc->Type),
                ", expected DML_TENSOR_TYPE_BUFFER (1)");
  if (!desc->Desc) return Fail(Status::InvalidArgument, field, ".Desc is null");
  const auto& b = *static_cast<const DML_BUFFER_TENSOR_DESC*>(desc->Desc);

  if (role == TensorRole::Indices ? !IsIndexType(b.DataType) : !IsDataType(b.DataType))
    return Fail(Status::InvalidArgument, field, ".DataType is ", TypeString(b.DataType),
                role == TensorRole::Indices
                    ? ", expected INT32, UINT32, INT64 or UINT64"
                    : ", expected FLOAT32, FLOAT16, FLOAT64, INT8, INT16, INT32, INT64, UINT8, "
                      "UINT16, UINT32 or UINT64");
  if (b.DimensionCount < 1 || b.DimensionCount > kMaxDims)
    return Fail(Status::InvalidArgument, field, ".DimensionCount is ", b.DimensionCount,
                ", expected 1 to ", kMaxDims);
  if (!b.Sizes) return Fail(Status::InvalidArgument, field, ".Sizes is null");

  Tensor t;
  t.field = field;
  t.type = b.DataType;
  t.elemSize = DataTypeSize(b.DataType);
  t.dims = b.DimensionCount;
  t.totalBytes = b.TotalTensorSizeInBytes;
  t.alignment = b.GuaranteedBaseOffsetAlignment;
  for (UINT i = 0; i < t.dims; ++i) {
    t.sizes[i] = b.Sizes[i];
    if (t.sizes[i] == 0)
      return Fail(Status::InvalidArgument, field, ".Sizes[", i, "] is 0, expected at least 1");
  }
  const bool large = (b.Flags & VKDML_TENSOR_FLAG_LARGE) != 0;
  const UINT64 maxElements = large ? kMaxLargeElements : kMaxElements;
  if (CappedElementCount(t.dims, t.sizes, maxElements) > maxElements) {
    std::string all;
    for (UINT i = 0; i < t.dims; ++i) all += Str(i ? "x" : "", t.sizes[i]);
    return Fail(Status::InvalidArgument, field, " has more than ", maxElements, " elements (Sizes ",
                all, "), expected at most ", maxElements,
                large ? "" : " (DirectML's limit; VKDML_TENSOR_FLAG_LARGE allows more)");
  }
  if (b.Strides) {
    std::copy(b.Strides, b.Strides + t.dims, t.strides);
  } else if (!PackedStridesFit(t.dims, t.sizes)) {
    return Fail(Status::InvalidArgument, field,
                ".Strides is null, but the packed strides of its Sizes pass 4294967295 elements, "
                "which 32-bit Strides cannot hold: give Strides");
  } else {
    PackedStrides(t.dims, t.sizes, t.strides);
  }

  UINT64 required = RequiredBytes(t.elemSize, t.dims, t.sizes, t.strides);
  if (required == 0)
    return Fail(Status::InvalidArgument, field, ".Strides span more than 2^64 bytes");
  if (t.totalBytes < required)
    return Fail(Status::InvalidArgument, field, ".TotalTensorSizeInBytes is ", t.totalBytes,
                ", expected at least ", required, " (from Sizes, Strides and DataType)");
  if (t.alignment & (t.alignment - 1))
    return Fail(Status::InvalidArgument, field, ".GuaranteedBaseOffsetAlignment is ", t.alignment,
                ", expected 0 or a power of two");
  *out = t;
  return {};
}

Result CheckNoOverlap(const Tensor& t) {
  // Sort dims by stride; each stride must step past everything the smaller ones span.
  UINT order[kMaxDims];
  UINT n = 0;
  for (UINT i = 0; i < t.dims; ++i) {
    if (t.sizes[i] == 1) continue;
    if (t.strides[i] == 0)
      return Fail(Status::InvalidArgument, t.field, ".Strides[", i,
                  "] is 0, expected a non-zero stride: an output cannot broadcast");
    order[n++] = i;
  }
  for (UINT j = 1; j < n; ++j)  // insertion sort: at most 8 dims
    for (UINT m = j; m > 0 && t.strides[order[m]] < t.strides[order[m - 1]]; --m)
      std::swap(order[m], order[m - 1]);
  UINT64 span = 0;  // highest offset reachable with the dims so far
  for (UINT j = 0; j < n; ++j) {
    UINT i = order[j];
    if (t.strides[i] <= span)
      return Fail(Status::InvalidArgument, t.field, ".Strides[", i, "] is ", t.strides[i],
                  ", expected more than ", span,
                  ": output elements would overlap (each output element needs its own address)");
    span += UINT64(t.sizes[i] - 1) * t.strides[i];
  }
  return {};
}

Result CheckPacked(const Tensor& t, const char* why) {
  UINT packed[kMaxDims];
  PackedStrides(t.dims, t.sizes, packed);
  for (UINT d = 0; d < t.dims; ++d)
    if (t.sizes[d] > 1 && t.strides[d] != packed[d])
      return Fail(Status::InvalidArgument, t.field, ".Strides[", d, "] is ", t.strides[d],
                  ", expected ", packed[d], " (", why, ": Strides null or row-major)");
  return {};
}

bool FillsAllBytes(const Tensor& t) {
  return t.Count() * t.elemSize == t.totalBytes;
}

Result CheckLeadingOnes(const Tensor& t, UINT actual, const char* countField) {
  for (UINT i = 0; i + actual < t.dims; ++i)
    if (t.sizes[i] != 1)
      return Fail(Status::InvalidArgument, t.field, ".Sizes[", i, "] is ", t.sizes[i],
                  ", expected 1 (leading dimension outside ", countField, " = ", actual, ")");
  return {};
}

Result CheckSameRank(const Tensor& t, const Tensor& reference) {
  if (t.dims != reference.dims)
    return Fail(Status::InvalidArgument, t.field, ".DimensionCount is ", t.dims, ", expected ",
                reference.dims, " (", reference.field, ".DimensionCount)");
  return {};
}

Result CheckSameType(const Tensor& t, const Tensor& reference) {
  if (t.type != reference.type)
    return Fail(Status::InvalidArgument, t.field, ".DataType is ", DataTypeName(t.type),
                ", expected ", DataTypeName(reference.type), " (", reference.field, ".DataType)");
  return {};
}

Result CheckSizes(const Tensor& t, UINT expectedCount, const UINT* expected,
                  const std::string* what) {
  if (expectedCount > t.dims) {
    std::string shape;
    for (UINT i = 0; i < expectedCount; ++i) shape += Str(i ? "," : "", expected[i]);
    return Fail(Status::InvalidArgument, t.field, " would need ", expectedCount,
                " dimensions (sizes {", shape, "}), but its DimensionCount is ", t.dims);
  }
  UINT lead = t.dims - expectedCount;
  for (UINT i = 0; i < t.dims; ++i) {
    UINT want = i < lead ? 1 : expected[i - lead];
    if (t.sizes[i] != want)
      return Fail(Status::InvalidArgument, t.field, ".Sizes[", i, "] is ", t.sizes[i],
                  ", expected ", want, i < lead ? " (leading dimension)" : "",
                  i < lead ? "" : Str(" (", what[i - lead], ")"));
  }
  return {};
}

Result CheckSameSizes(const Tensor& t, const Tensor& reference, UINT axis) {
  for (UINT d = 0; d < t.dims; ++d)
    if (d != axis && t.sizes[d] != reference.sizes[d])
      return Fail(Status::InvalidArgument, t.field, ".Sizes[", d, "] is ", t.sizes[d],
                  ", expected ", reference.sizes[d], " (", reference.field, ".Sizes[", d, "]",
                  axis < kMaxDims ? ": only the Axis dimension may differ)" : ")");
  return {};
}

}  // namespace detail
}  // namespace vkdml
