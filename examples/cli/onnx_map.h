// The ONNX operators (Gather, GatherND, GatherElements, ScatterElements, ScatterND, with NumPy
// shapes, negative indices and ONNX's reductions) on strided host arrays, mapped onto DirectML
// descriptors: what `vkdml run` (run.cpp) and the Python module (examples/python) share, so the
// two give the same results and the same messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npy.h"
#include "vkdml/vkdml.h"

namespace cli {

// A DirectML buffer tensor in host memory, in the form Device::Run takes.
class HostTensor {
 public:
  vkdml::DML_TENSOR_DATA_TYPE type = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32;
  std::vector<vkdml::UINT> sizes;
  std::vector<vkdml::UINT> strides;  // elements; empty: packed
  // The tensor's bytes: `data` where set (memory that outlives the run, such as a mapped .npy
  // file, readable for TotalTensorSizeInBytes), else `bytes`, padded to that size by RunPrepared.
  const void* data = nullptr;
  std::vector<uint8_t> bytes;

  // Fills and returns the tensor's desc (valid while this object lives and is not changed).
  const vkdml::DML_TENSOR_DESC* Desc();
  const void* Data() const { return data ? data : bytes.data(); }

 private:
  vkdml::DML_BUFFER_TENSOR_DESC buffer_{};
  vkdml::DML_TENSOR_DESC desc_{};
};

// The data type an array of NumPy dtype t moves as (bool as UINT8).
vkdml::DML_TENSOR_DATA_TYPE DataType(npy::DType t);

using Shape = std::vector<uint64_t>;

// A strided host array, as the mapping reads it.
struct ArrayRef {
  std::string name;  // what messages call it: a path, or an argument's name
  npy::DType dtype = npy::DType::Float32;
  Shape shape;                // empty for a 0-d array
  Shape strides;              // in elements, one per dimension
  bool fortranOrder = false;  // column-major (said in messages)
  // The first element; readable for `readable` bytes. Null: descriptors only (device tensors).
  const uint8_t* data = nullptr;
  uint64_t readable = 0;

  uint64_t ElementCount() const;
  bool Packed() const;  // strides are row-major (C order) for shape
  std::string ShapeString() const { return npy::ShapeString(shape); }
};

// The array's strides for row-major (C) order.
Shape RowMajorStrides(const Shape& shape);
// Copies a's elements into dst in row-major order.
void CopyToCOrder(const ArrayRef& a, uint8_t* dst);

// The operator and its options, as `vkdml run` takes them.
struct OnnxOptions {
  // gather, gather-nd, gather-elements, scatter-elements, scatter-nd; or vkdml's
  // dequantize-rows (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS: the input a uint8 table of shape
  // (rows, bytes per row) in `format`, the output indices.shape + (values per row,) of `dtype`)
  // and quantize-rows (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS: the table with float32 updates of
  // shape indices.shape + (values per row,) quantized into it)
  std::string op;
  std::string format = "q8_0";             // dequantize-rows: q8_0 or q4_0
  npy::DType dtype = npy::DType::Float32;  // dequantize-rows: float32 or float16
  int64_t axis = 0, batchDims = 0;
  std::string reduction = "none";  // none, add, mul, max, min
  vkdml::BOOL excludeSelf = 0;     // with a reduction: PyTorch's include_self=False
  // What an out-of-range index does beyond DirectML's clamp: FILL (gathers: the output element
  // is fillValue, an element of the input's dtype) or DROP (scatters: the update is skipped).
  // (The checked mode is an execution flag.)
  vkdml::VKDML_OUT_OF_RANGE_MODE outOfRange = vkdml::VKDML_OUT_OF_RANGE_MODE_CLAMP;
  vkdml::DML_SCALAR_UNION fillValue{};
  // embedding-bag (VKDML_OPERATOR_EMBEDDING_BAG, PyTorch's embedding_bag with 1-D indices and
  // offsets): the mode (sum, mean, max), include_last_offset and padding_idx (negative: from the
  // end, as PyTorch's); a uint8 table takes `format` and `dtype` as dequantize-rows does.
  std::string mode = "sum";
  bool includeLastOffset = false, hasPadding = false;
  int64_t paddingIdx = 0;
  // gather-block-quantized (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, ONNX Runtime's
  // GatherBlockQuantized; `axis` is its gather_axis): the data's type (int4, uint4 or uint8)
  // and bits (4 or 8, for uint8), quantize_axis and block_size, with ONNX Runtime's defaults.
  std::string blockType = "uint8";
  int64_t bits = 4, quantizeAxis = 1, blockSize = 128;
  // int4 and uint4: ONNX's data shape in values (any last size), the data then their bytes
  // packed whole (1-D, or the shape with an even last size halved). Empty: the data's shape,
  // its last size counting bytes.
  Shape valuesShape;
  // segment-csr, segment-coo and segment-reduce (VKDML_OPERATOR_SEGMENT_REDUCE): `reduction`
  // is sum, mean, min, max, prod, argmin or argmax; segment-coo's output has dimSize segments
  // (-1: the largest id plus 1, read from the host array); segment-reduce gives empty segments
  // torch.segment_reduce's values, or with hasInitial starts every fold from `initial` (an
  // element of the input's dtype).
  int64_t dimSize = -1;
  bool hasInitial = false;
  vkdml::DML_SCALAR_UNION initial{};
  // How messages name things: the operator, and its axis and batch-dims options.
  std::string opLabel, axisLabel = "--axis", batchDimsLabel = "--batch-dims";
  const std::string& Label() const { return opLabel.empty() ? op : opLabel; }
};

// The reduce function ONNX's reduction ("add", "mul", "max", "min"), or PyTorch's "mean", is on
// elements of dtype t: bool's add and mul are NumPy's or and and (MAX and MIN), and it has no
// mean. False for any other name.
bool ReduceFunction(const std::string& reduction, npy::DType t, vkdml::VKDML_REDUCE_FUNCTION* out);

// The ONNX operator, mapped onto DirectML: tensors in binding order and the output's ONNX shape.
struct OnnxMapping {
  std::vector<HostTensor> inputs;
  HostTensor output;
  Shape outputShape;
  Shape outputView;  // a scatter's OutputTensor sizes, the input's view (empty: outputShape)
  size_t D = 1;
  vkdml::DML_GATHER_OPERATOR_DESC gather{};
  vkdml::DML_GATHER_ND1_OPERATOR_DESC gatherNd{};
  vkdml::DML_GATHER_ELEMENTS_OPERATOR_DESC gatherElements{};
  vkdml::DML_SCATTER_ND_OPERATOR_DESC scatterNd{};
  vkdml::DML_SCATTER_OPERATOR_DESC scatterElements{};
  vkdml::VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC scatterNdReduce{};
  vkdml::VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC scatterElementsReduce{};
  vkdml::VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC quantizedRows{};
  vkdml::VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC quantizingRows{};
  vkdml::VKDML_EMBEDDING_BAG_OPERATOR_DESC embeddingBag{};
  vkdml::VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC blockQuantized{};
  vkdml::VKDML_SEGMENT_REDUCE_OPERATOR_DESC segmentReduce{};
  std::vector<vkdml::UINT> valueSizes;           // blockQuantized.ValueSizes
  npy::DType outputDType = npy::DType::Float32;  // the output array's (the input's but for
                                                 // dequantize-rows)
  vkdml::DML_OPERATOR_DESC inner{};  // desc's operator, where desc wraps it (out of range)
  vkdml::VKDML_OUT_OF_RANGE_OPERATOR_DESC outOfRange{};
  vkdml::DML_OPERATOR_DESC desc{};
  bool skipDevice = false;  // the output is empty, a copy of the input, or (zeroOutput) zeros
  bool zeroOutput = false;  // embedding-bag without entries: every bag empty
  bool outputStartsAsInput = false;  // a view: the output is the input outside it
  uint64_t outputBytes = 0;          // the output array's
};

// Checks the arrays against the ONNX operator and fills the mapping (o.op must be one of the
// five). Returns "" or the error. An input whose bytes are fewer than its tensor's
// TotalTensorSizeInBytes (which rounds up to 4) is copied into its HostTensor's `bytes`.
std::string MapOnnxOperator(const OnnxOptions& o, const ArrayRef& in, const ArrayRef& idx,
                            const ArrayRef* upd, OnnxMapping* m);

// embedding-bag: the table (2-D: float32 or float16 values, or uint8 blocks of o.format),
// 1-D indices and offsets of one integer dtype, and optional 1-D per-sample weights of the
// output's dtype, checked and mapped as MapOnnxOperator does the others ("" or the error). The
// output is (bags, values per row).
std::string MapEmbeddingBag(const OnnxOptions& o, const ArrayRef& table, const ArrayRef& idx,
                            const ArrayRef& offsets, const ArrayRef* weights, OnnxMapping* m);

// segment-csr, segment-coo and segment-reduce: src of any dtype and rank, and integer indices
// of rank k (1 to src's) whose sizes before the last are src's: offsets (csr and reduce: the
// last size the segments plus 1) or a sorted segment id per row (coo: src's size there),
// reducing along axis k - 1 (pytorch_scatter's rule). The output is src's shape with the
// segments along that axis (argmin and argmax: int64 rows).
std::string MapSegmentReduce(const OnnxOptions& o, const ArrayRef& src, const ArrayRef& idx,
                             OnnxMapping* m);
bool IsSegmentOp(const std::string& op);

// gather-block-quantized: data (uint8 bytes, C order: the values' shape, the last dimension in
// bytes for 4-bit types, two values a byte, the first in the low nibble), indices of an index
// dtype, scales (float32 or float16: the output's dtype; data's values' shape with
// ceil(size / block_size) on quantize_axis) and optional zero points (uint8, C order: the
// scales' shape, the last dimension in bytes for uint8 with bits 4, each row starting on a byte;
// for int4 and uint4 ONNX's packing, whole: 1-D, or the scales' shape where its last is even),
// checked and mapped as MapOnnxOperator does the others ("" or the error). The output is
// ONNX's Gather shape over the values.
std::string MapGatherBlockQuantized(const OnnxOptions& o, const ArrayRef& data, const ArrayRef& idx,
                                    const ArrayRef& scales, const ArrayRef* zeroPoints,
                                    OnnxMapping* m);

// For work that needs no device (an empty output or no updates), with checked indices: the
// first index in C order outside its range, in the words of the device's check. "" if none.
std::string CheckIndicesOnHost(const OnnxOptions& o, const ArrayRef& in, const ArrayRef& idx);

// A checked execution's message over D padded dimensions ("...: IndicesTensor[0,0,3,1] is 7,
// ..."), said of the q-dimensional indices array `name` ("name: indices[3,1] is 7, ...";
// "indices[()]" for a 0-d array, NumPy's way to index it).
// trailingOnes: the indices' q dimensions come first in IndicesTensor, then D - q of size 1
// (segment-csr, -coo and -reduce).
std::string IndexMessage(const std::string& message, size_t D, size_t q, const std::string& name,
                         bool trailingOnes = false);

}  // namespace cli
