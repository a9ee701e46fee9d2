// Operator descriptions for the tests and the fuzz targets: DirectML tensor descs that own their
// arrays (TensorDesc), an operator with its tensors in binding order (OpSpec), and the CPU
// reference applied to it. No test framework: test/fuzz uses it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference.h"
#include "vkdml/vkdml.h"

namespace vt {

using namespace vkdml;
using Bytes = std::vector<uint8_t>;

// A DML_BUFFER_TENSOR_DESC + DML_TENSOR_DESC that own their Sizes/Strides arrays. Copies fix up
// the pointers; call Fix() after changing `sizes`/`strides` by hand.
struct TensorDesc {
  std::vector<UINT> sizes;
  std::vector<UINT> strides;  // empty: Strides = nullptr (packed)
  DML_BUFFER_TENSOR_DESC buf{};
  DML_TENSOR_DESC desc{};

  TensorDesc() = default;
  // totalBytes 0: vkdml::CalcBufferTensorSize (past 2^32 - 1 elements: VKDML_TENSOR_FLAG_LARGE and
  // CalcLargeBufferTensorSize).
  TensorDesc(DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes, std::vector<UINT> strides = {},
             UINT64 totalBytes = 0, UINT alignment = 0);
  TensorDesc(const TensorDesc& o);
  TensorDesc& operator=(const TensorDesc& o);
  void Fix();
  const DML_TENSOR_DESC* Desc() { return &desc; }
  DML_TENSOR_DATA_TYPE Type() const { return buf.DataType; }
  UINT64 Total() const { return buf.TotalTensorSizeInBytes; }
  ref::Tensor Ref() const { return ref::Tensor(buf.DataType, sizes, strides); }
  std::string ToString() const;
};

// An operator description with its tensors, in binding order (inputs, then the output).
struct OpSpec {
  DML_OPERATOR_TYPE type = DML_OPERATOR_INVALID;
  std::vector<TensorDesc> tensors;  // GatherX: input, indices, output; ScatterX: + updates
  UINT r = 0, q = 0, b = 0, axis = 0;
  UINT indexDims = 0;  // Gather's IndexDimensions
  // Scatters: with a ReduceFunction, the operator is vkdml's VKDML_OPERATOR_SCATTER_*_REDUCE
  // (WithReduce), otherwise DirectML's.
  VKDML_REDUCE_FUNCTION reduce = VKDML_REDUCE_FUNCTION_NONE;
  BOOL excludeSelf = 0;  // the reduce operators' ExcludeSelf
  // Wrapped in VKDML_OPERATOR_OUT_OF_RANGE (WithOutOfRange), with its Mode and FillValue.
  bool wrapped = false;
  VKDML_OUT_OF_RANGE_MODE outOfRange = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  DML_SCALAR_UNION fill{};

  static OpSpec GatherND(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q);
  static OpSpec GatherND1(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q,
                          UINT b);
  static OpSpec Gather(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis,
                       UINT indexDimensions);
  static OpSpec GatherElements(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis);
  static OpSpec ScatterND(TensorDesc input, TensorDesc indices, TensorDesc updates,
                          TensorDesc output, UINT r, UINT q);
  static OpSpec ScatterElements(TensorDesc input, TensorDesc indices, TensorDesc updates,
                                TensorDesc output, UINT axis);

  // The same scatter as vkdml's operator with a reduction (f may be NONE: the reduce operator
  // without a reduction).
  OpSpec& WithReduce(VKDML_REDUCE_FUNCTION f);
  // The same operator wrapped in VKDML_OPERATOR_OUT_OF_RANGE.
  OpSpec& WithOutOfRange(VKDML_OUT_OF_RANGE_MODE mode, DML_SCALAR_UNION fillValue = {});
  bool IsScatter() const { return tensors.size() == 4; }
  // What Operator::Type() gives: `type`, or VKDML_OPERATOR_OUT_OF_RANGE where wrapped.
  DML_OPERATOR_TYPE OperatorType() const { return wrapped ? VKDML_OPERATOR_OUT_OF_RANGE : type; }

  UINT InputCount() const { return tensors.size() == 4 ? 3 : 2; }
  TensorDesc& Output() { return tensors.back(); }
  // Rebuilds and returns the DML_OPERATOR_DESC (valid while this OpSpec lives, unmoved): `op`, or
  // `outer` wrapping it.
  const DML_OPERATOR_DESC& Desc();
  std::string ToString() const;

  // The reference applied to the given input images; `outputs` holds the output's initial image
  // (poison) and receives the elements. Returns the first out-of-range index.
  ref::IndexError Reference(const std::vector<Bytes>& inputs, Bytes* output) const;
  // A scatter's: where each update element lands, for the given indices image.
  std::vector<ref::ScatterWrite> Writes(const Bytes& indices) const;

  // Filled by Desc(); validation tests change them afterwards and pass `op` directly.
  DML_GATHER_ND_OPERATOR_DESC gnd{};
  DML_GATHER_ND1_OPERATOR_DESC gnd1{};
  DML_GATHER_OPERATOR_DESC g{};
  DML_GATHER_ELEMENTS_OPERATOR_DESC ge{};
  DML_SCATTER_ND_OPERATOR_DESC snd{};
  DML_SCATTER_OPERATOR_DESC se{};
  VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC sndr{};
  VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC ser{};
  DML_OPERATOR_DESC op{};
  VKDML_OUT_OF_RANGE_OPERATOR_DESC oor{};
  DML_OPERATOR_DESC outer{};
  // The operator desc's pointer to tensor i (binding order), in the typed desc.
  const DML_TENSOR_DESC** TensorSlot(size_t i);
  // "GATHER_ND", ... (the prefix of vkdml's messages); "InputTensor", ... for tensor i.
  const char* Name() const;
  const char* TensorName(size_t i) const;
};

}  // namespace vt
