// An independent CPU reference for vkdml's operators, written from the operator pages in
// shared/spec and test/SEMANTICS.md (not from the library). It works on raw bytes: every tensor is
// a byte image of TotalTensorSizeInBytes with element strides, and only element bytes are read or
// written (padding is left exactly as it was). Clarity over speed: nested coordinate loops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vkdml/dml.h"

namespace ref {

using vkdml::DML_TENSOR_DATA_TYPE;
using Coord = std::vector<uint32_t>;

// Element size in bytes, from the type's name (1, 2, 4 or 8); 0 for anything else.
uint32_t ElementSize(DML_TENSOR_DATA_TYPE type);
bool IsIndexType(DML_TENSOR_DATA_TYPE type);
bool IsSignedIndexType(DML_TENSOR_DATA_TYPE type);

// Row-major packed strides (in elements).
std::vector<uint32_t> PackedStrides(const std::vector<uint32_t>& sizes);

struct Tensor {
  DML_TENSOR_DATA_TYPE type = vkdml::DML_TENSOR_DATA_TYPE_UNKNOWN;
  std::vector<uint32_t> sizes;
  std::vector<uint32_t> strides;  // same length as sizes; empty means packed

  Tensor() = default;
  Tensor(DML_TENSOR_DATA_TYPE t, std::vector<uint32_t> s, std::vector<uint32_t> st = {});

  uint32_t Dims() const { return static_cast<uint32_t>(sizes.size()); }
  uint32_t ElemSize() const { return ElementSize(type); }
  uint64_t ElementCount() const;
  // Byte offset of the element at coord (coord has Dims() entries).
  uint64_t ByteOffset(const Coord& coord) const;
  // round_up((dot(sizes - 1, strides) + 1) * elementSize, 4), DirectML's minimum size.
  uint64_t RequiredBytes() const;
};

// Calls f(coord) for every coordinate of sizes, in row-major order (last dimension fastest).
void ForEachCoord(const std::vector<uint32_t>& sizes, const std::function<void(const Coord&)>& f);

// One index element as read from the indices tensor.
struct IndexValue {
  bool isSigned = false;
  int64_t s = 0;   // valid when isSigned
  uint64_t u = 0;  // valid when !isSigned
};
IndexValue ReadIndex(const Tensor& indices, const uint8_t* bytes, const Coord& coord);
// Encodes v as the index type into 4 or 8 little-endian bytes at dst (truncating as a C cast).
void WriteIndex(DML_TENSOR_DATA_TYPE type, uint8_t* dst, int64_t v);
void WriteIndexU(DML_TENSOR_DATA_TYPE type, uint8_t* dst, uint64_t v);
// test/SEMANTICS.md: clamp into [-n, n-1] (signed) or [0, n-1] (unsigned), then negative + n.
uint32_t ClampIndex(const IndexValue& v, uint32_t n);
bool IndexInRange(const IndexValue& v, uint32_t n);

// The first index element that is outside its valid range, in row-major order of the indices
// tensor (over all its dimensions), with the message the checked mode reports.
struct IndexError {
  bool found = false;
  Coord coord;
  std::string message;  // "IndicesTensor[0,3,1] is 7, outside the valid range [-5, 4]"
};

// The first out-of-range element of indices; rangeOf(coord) is n, the size that element indexes.
IndexError FirstError(const Tensor& indices, const uint8_t* idx,
                      const std::function<uint32_t(const Coord&)>& rangeOf);

// The gathers take `fill` (VKDML_OUT_OF_RANGE_MODE_FILL: an element's bytes): an output element
// whose index tuple has a component out of range is then fill, not the clamped element. The
// scatters take `drop` (VKDML_OUT_OF_RANGE_MODE_DROP): such an update element is skipped.

// GatherND1 (GatherND is BatchDimensionCount = 0). r = InputDimensionCount,
// q = IndicesDimensionCount, b = BatchDimensionCount. Writes output's elements into out.
IndexError GatherND(const Tensor& input, const uint8_t* in, const Tensor& indices,
                    const uint8_t* idx, const Tensor& output, uint8_t* out, uint32_t r, uint32_t q,
                    uint32_t b, const uint8_t* fill = nullptr);

// Gather (DML_GATHER_OPERATOR_DESC): the output is the input with its axis dimension replaced
// by the indices' last m (IndexDimensions) dimensions; output[...] = input[..., index, ...] with
// index the clamped indices element at the output's coordinates in those dimensions.
IndexError Gather(const Tensor& input, const uint8_t* in, const Tensor& indices, const uint8_t* idx,
                  const Tensor& output, uint8_t* out, uint32_t axis, uint32_t m,
                  const uint8_t* fill = nullptr);

IndexError GatherElements(const Tensor& input, const uint8_t* in, const Tensor& indices,
                          const uint8_t* idx, const Tensor& output, uint8_t* out, uint32_t axis,
                          const uint8_t* fill = nullptr);

// One step of a scatter's reduction on element bytes of the type: *acc = f(*acc, *u), computed
// in the type itself (integers wrap; float16 with the compiler's _Float16; MAX and MIN as
// NumPy's maximum and minimum: acc stays if it is NaN or >= u (<= u), else u). NONE copies u.
void Reduce(DML_TENSOR_DATA_TYPE type, vkdml::VKDML_REDUCE_FUNCTION f, uint8_t* acc,
            const uint8_t* u);

// output = input (element-wise), then every update element is combined with its target by
// Reduce, one at a time in row-major order of the updates tensor (without a reduction the last
// colliding one wins). excludeSelf (PyTorch's include_self=False): each target an update reaches
// starts from f's identity instead.
IndexError ScatterND(const Tensor& input, const uint8_t* in, const Tensor& indices,
                     const uint8_t* idx, const Tensor& updates, const uint8_t* upd,
                     const Tensor& output, uint8_t* out, uint32_t r, uint32_t q,
                     vkdml::VKDML_REDUCE_FUNCTION f = vkdml::VKDML_REDUCE_FUNCTION_NONE,
                     bool drop = false, bool excludeSelf = false);

// Where each update element of ScatterND lands: byte offsets in the output (its index tuple
// clamped) and in updates, and whether the tuple was in range.
struct ScatterWrite {
  uint64_t outOffset;
  uint64_t updOffset;
  bool inRange = true;
};
std::vector<ScatterWrite> ScatterNDWrites(const Tensor& input, const Tensor& indices,
                                          const uint8_t* idx, const Tensor& updates,
                                          const Tensor& output, uint32_t r, uint32_t q);

// ScatterElements (DML_SCATTER_OPERATOR_DESC): output = input, then updates[c] goes to c with
// c[axis] replaced by the clamped index at c, in row-major order of updates (last one wins here).
IndexError ScatterElements(const Tensor& input, const uint8_t* in, const Tensor& indices,
                           const uint8_t* idx, const Tensor& updates, const uint8_t* upd,
                           const Tensor& output, uint8_t* out, uint32_t axis,
                           vkdml::VKDML_REDUCE_FUNCTION f = vkdml::VKDML_REDUCE_FUNCTION_NONE,
                           bool drop = false, bool excludeSelf = false);
std::vector<ScatterWrite> ScatterElementsWrites(const Tensor& input, const Tensor& indices,
                                                const uint8_t* idx, const Tensor& updates,
                                                const Tensor& output, uint32_t axis);

// The size formula of the GatherND / GatherND1 / ScatterND pages: indices.shape[:-1] +
// input.shape[b+k:], right-aligned into D dimensions with leading 1s. Empty when it does not
// fit into D dimensions.
std::vector<uint32_t> GatherNDOutputSizes(const std::vector<uint32_t>& inputSizes,
                                          const std::vector<uint32_t>& indicesSizes, uint32_t r,
                                          uint32_t q, uint32_t b);

// The size formula of DML_GATHER_OPERATOR_DESC: input.sizes[0..axis) + indices.sizes[D-m..D) +
// input.sizes[axis+1..D), right-aligned into D dimensions: leading 1s added when it is shorter;
// when it is longer, leading entries dropped, which must be 1s of the input (before axis: the
// dimensions beyond its original rank). Empty when it does not fit into D dimensions.
std::vector<uint32_t> GatherOutputSizes(const std::vector<uint32_t>& inputSizes,
                                        const std::vector<uint32_t>& indicesSizes, uint32_t axis,
                                        uint32_t m);

}  // namespace ref
