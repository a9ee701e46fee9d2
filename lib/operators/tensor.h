// The one place that owns DML_BUFFER_TENSOR_DESC arithmetic: validation, element sizes, packed
// strides, required sizes, and the right-aligned views the operators use.
#pragma once

#include "interface.h"
#include "vkdml/vkdml.h"

namespace vkdml::detail {

constexpr UINT kMaxDims = VKDML_MAX_DIMS;

// A validated buffer tensor with explicit strides (packed strides filled in when omitted).
struct Tensor {
  const char* field = "";  // "InputTensor", ...: names the descriptor field in messages
  DML_TENSOR_DATA_TYPE type = DML_TENSOR_DATA_TYPE_UNKNOWN;
  UINT elemSize = 0;
  UINT dims = 0;
  UINT sizes[kMaxDims] = {};
  UINT strides[kMaxDims] = {};
  UINT64 totalBytes = 0;  // TotalTensorSizeInBytes
  UINT alignment = 0;     // GuaranteedBaseOffsetAlignment

  UINT64 Count() const {  // elements
    UINT64 n = 1;
    for (UINT i = 0; i < dims; ++i) n *= sizes[i];
    return n;
  }
  // Elements from the first to the last, inclusive: 1 + dot(sizes - 1, strides).
  UINT64 Span() const {
    UINT64 last = 0;
    for (UINT i = 0; i < dims; ++i) last += UINT64(sizes[i] - 1) * strides[i];
    return last + 1;
  }
  // Size and stride of dimension a of the trailing `actual` dimensions (right alignment).
  UINT ActualSize(UINT actual, UINT a) const { return sizes[dims - actual + a]; }
  UINT ActualStride(UINT actual, UINT a) const { return strides[dims - actual + a]; }
};

enum class TensorRole { Data, Indices };

// Checks desc against DirectML's rules for a tensor in the given role.
Result ValidateTensor(const DML_TENSOR_DESC* desc, const char* field, TensorRole role, Tensor* out);

// Outputs may not broadcast or place two elements at one address.
Result CheckNoOverlap(const Tensor& t);

// The leading dims - actual sizes must be 1. countField names the count ("InputDimensionCount").
Result CheckLeadingOnes(const Tensor& t, UINT actual, const char* countField);

// a.DimensionCount == b.DimensionCount, a.DataType == b.DataType.
Result CheckSameRank(const Tensor& t, const Tensor& reference);
Result CheckSameType(const Tensor& t, const Tensor& reference);

// t's sizes equal `expected` right-aligned with leading 1s. `what[i]` explains expected[i]
// ("InputTensor.Sizes[3]"); expectedCount may not exceed t.dims (checked, with a message).
Result CheckSizes(const Tensor& t, UINT expectedCount, const UINT* expected,
                  const std::string* what);

// t.Sizes == reference.Sizes (same DimensionCount, checked before), except dimension `axis`
// when it is below kMaxDims ("only the Axis dimension may differ").
Result CheckSameSizes(const Tensor& t, const Tensor& reference, UINT axis = kMaxDims);

// t's strides are row-major for its sizes (Strides null, or the same values): else
// InvalidArgument naming the first that is not; `why` says what needs it.
Result CheckPacked(const Tensor& t, const char* why);

// Whether an output's elements, which CheckNoOverlap keeps apart, fill every byte of its
// TotalTensorSizeInBytes: no gaps between strided elements, no rounding, no spare bytes.
bool FillsAllBytes(const Tensor& t);

bool IsSignedIndexType(DML_TENSOR_DATA_TYPE type);

// Row-major packed strides of `dims` sizes (the last dimension 1); strides past 2^32 are capped
// (only a tensor of 2^32 or more elements has them, and validation refuses it).
void PackedStrides(UINT dims, const UINT* sizes, UINT* strides);

}  // namespace vkdml::detail
