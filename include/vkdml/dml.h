// vkdml: DirectML's descriptor structs and enums, with DirectML's names, fields, field order and
// numeric values. They live in namespace vkdml so a real directml.h can share the program.
// Porting code written against DirectML: change the include, add `using namespace vkdml;` (or
// qualify), and create a vkdml::Device instead of an IDMLDevice.
#pragma once

#include <cstdint>

#include <vulkan/vulkan_core.h>

namespace vkdml {

typedef uint32_t UINT;
typedef uint64_t UINT64;

enum DML_TENSOR_DATA_TYPE {
  DML_TENSOR_DATA_TYPE_UNKNOWN = 0,
  DML_TENSOR_DATA_TYPE_FLOAT32 = 1,
  DML_TENSOR_DATA_TYPE_FLOAT16 = 2,
  DML_TENSOR_DATA_TYPE_UINT32 = 3,
  DML_TENSOR_DATA_TYPE_UINT16 = 4,
  DML_TENSOR_DATA_TYPE_UINT8 = 5,
  DML_TENSOR_DATA_TYPE_INT32 = 6,
  DML_TENSOR_DATA_TYPE_INT16 = 7,
  DML_TENSOR_DATA_TYPE_INT8 = 8,
  DML_TENSOR_DATA_TYPE_FLOAT64 = 9,
  DML_TENSOR_DATA_TYPE_UINT64 = 10,
  DML_TENSOR_DATA_TYPE_INT64 = 11,
};

enum DML_TENSOR_FLAGS {
  DML_TENSOR_FLAG_NONE = 0x0,
  DML_TENSOR_FLAG_OWNED_BY_DML = 0x1,  // accepted and ignored: vkdml never owns tensor memory
};

// Strides are in elements and optional (nullptr = packed, row-major); a stride of 0 broadcasts.
// TotalTensorSizeInBytes must be at least the size the sizes and strides span (see
// vkdml::CalcBufferTensorSize), and GuaranteedBaseOffsetAlignment is 0 or a power of two that
// every binding offset of this tensor is a multiple of.
struct DML_BUFFER_TENSOR_DESC {
  DML_TENSOR_DATA_TYPE DataType;
  DML_TENSOR_FLAGS Flags;
  UINT DimensionCount;
  const UINT* Sizes;
  const UINT* Strides;
  UINT64 TotalTensorSizeInBytes;
  UINT GuaranteedBaseOffsetAlignment;
};

enum DML_TENSOR_TYPE {
  DML_TENSOR_TYPE_INVALID = 0,
  DML_TENSOR_TYPE_BUFFER = 1,
};

struct DML_TENSOR_DESC {
  DML_TENSOR_TYPE Type;
  const void* Desc;  // const DML_BUFFER_TENSOR_DESC*
};

// The operator types vkdml knows, with DirectML's values.
enum DML_OPERATOR_TYPE {
  DML_OPERATOR_INVALID = 0,
  DML_OPERATOR_GATHER = 67,
  DML_OPERATOR_SCATTER_ELEMENTS = 94,
  DML_OPERATOR_SCATTER = DML_OPERATOR_SCATTER_ELEMENTS,
  DML_OPERATOR_GATHER_ELEMENTS = 107,
  DML_OPERATOR_GATHER_ND = 108,
  DML_OPERATOR_SCATTER_ND = 109,
  DML_OPERATOR_GATHER_ND1 = 140,
};

struct DML_OPERATOR_DESC {
  DML_OPERATOR_TYPE Type;
  const void* Desc;  // the DML_*_OPERATOR_DESC matching Type
};

// DirectML's DML_OPERATOR_GATHER: output[...] = input[..., indices[...], ...] along Axis, the
// last IndexDimensions sizes of IndicesTensor taking the place of InputTensor's Axis dimension.
struct DML_GATHER_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
  UINT IndexDimensions;
};

struct DML_GATHER_ELEMENTS_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
};

struct DML_GATHER_ND_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
};

struct DML_GATHER_ND1_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
  UINT BatchDimensionCount;
};

struct DML_SCATTER_ND_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT InputDimensionCount;
  UINT IndicesDimensionCount;
};

// DirectML's DML_OPERATOR_SCATTER_ELEMENTS (alias DML_OPERATOR_SCATTER): output = input, then
// output[..., indices[i, j, ...], ...] = updates[i, j, ...] along Axis. The target of two update
// elements may coincide; then one of them is written, which one is unspecified.
struct DML_SCATTER_OPERATOR_DESC {
  const DML_TENSOR_DESC* InputTensor;
  const DML_TENSOR_DESC* IndicesTensor;
  const DML_TENSOR_DESC* UpdatesTensor;
  const DML_TENSOR_DESC* OutputTensor;
  UINT Axis;
};
typedef DML_SCATTER_OPERATOR_DESC DML_SCATTER_ELEMENTS_OPERATOR_DESC;

enum DML_EXECUTION_FLAGS {
  DML_EXECUTION_FLAG_NONE = 0,
  DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION = 0x1,  // accepted; vkdml only moves data
  DML_EXECUTION_FLAG_DISABLE_META_COMMANDS = 0x2,             // accepted and ignored
  DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE = 0x4,              // accepted and ignored
  // vkdml's own: check every index instead of clamping it. An execution that meets an
  // out-of-range index still clamps it (no out-of-bounds access), and BindingTable::IndexStatus
  // reports the first offending one afterwards.
  VKDML_EXECUTION_FLAG_CHECK_INDICES = 0x100,
};

// DirectML binds an ID3D12Resource; vkdml binds a VkBuffer. Offset and SizeInBytes are bytes.
struct DML_BUFFER_BINDING {
  VkBuffer Buffer;
  UINT64 Offset;
  UINT64 SizeInBytes;
};

}  // namespace vkdml
