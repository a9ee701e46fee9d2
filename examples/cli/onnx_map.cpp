#include "onnx_map.h"

#include <algorithm>
#include <cstring>

namespace cli {

using namespace vkdml;

const DML_TENSOR_DESC* HostTensor::Desc() {
  // Past DirectML's 2^32 - 1 elements, vkdml's VKDML_TENSOR_FLAG_LARGE and the size it gives. 0
  // where the library refuses the tensor: CreateOperator then says why. No memory is taken
  // here: an output's comes after validation.
  const UINT count = static_cast<UINT>(sizes.size());
  const UINT* given = strides.empty() ? nullptr : strides.data();
  UINT64 total = CalcBufferTensorSize(type, count, sizes.data(), given);
  DML_TENSOR_FLAGS flags = DML_TENSOR_FLAG_NONE;
  if (total == 0 && CalcLargeBufferTensorSize(type, count, sizes.data(), given) != 0) {
    total = CalcLargeBufferTensorSize(type, count, sizes.data(), given);
    flags = VKDML_TENSOR_FLAG_LARGE;
  }
  buffer_ = {type, flags, count, sizes.data(), given, total, 0};
  desc_ = {DML_TENSOR_TYPE_BUFFER, &buffer_};
  return &desc_;
}

DML_TENSOR_DATA_TYPE DataType(npy::DType t) {
  switch (t) {
    case npy::DType::Bool:
    case npy::DType::UInt8:
      return DML_TENSOR_DATA_TYPE_UINT8;
    case npy::DType::Int8:
      return DML_TENSOR_DATA_TYPE_INT8;
    case npy::DType::Int16:
      return DML_TENSOR_DATA_TYPE_INT16;
    case npy::DType::Int32:
      return DML_TENSOR_DATA_TYPE_INT32;
    case npy::DType::Int64:
      return DML_TENSOR_DATA_TYPE_INT64;
    case npy::DType::UInt16:
      return DML_TENSOR_DATA_TYPE_UINT16;
    case npy::DType::UInt32:
      return DML_TENSOR_DATA_TYPE_UINT32;
    case npy::DType::UInt64:
      return DML_TENSOR_DATA_TYPE_UINT64;
    case npy::DType::Float16:
      return DML_TENSOR_DATA_TYPE_FLOAT16;
    case npy::DType::Float32:
      return DML_TENSOR_DATA_TYPE_FLOAT32;
    case npy::DType::Float64:
      return DML_TENSOR_DATA_TYPE_FLOAT64;
  }
  return DML_TENSOR_DATA_TYPE_UNKNOWN;
}

uint64_t ArrayRef::ElementCount() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

Shape RowMajorStrides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool ArrayRef::Packed() const {
  const Shape packed = RowMajorStrides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1 && strides[d] != packed[d]) return false;
  return true;
}

void CopyToCOrder(const ArrayRef& a, uint8_t* dst) {
  const size_t size = npy::ItemSize(a.dtype), rank = a.shape.size();
  const uint64_t count = a.ElementCount();
  Shape pos(rank, 0);
  uint64_t at = 0;  // the element's offset in a, in elements
  for (uint64_t e = 0; e < count; ++e, dst += size) {
    std::memcpy(dst, a.data + at * size, size);
    for (size_t d = rank; d-- > 0;) {
      at += a.strides[d];
      if (++pos[d] < a.shape[d]) break;
      at -= a.strides[d] * pos[d];
      pos[d] = 0;
    }
  }
}

bool ReduceFunction(const std::string& reduction, npy::DType t, VKDML_REDUCE_FUNCTION* out) {
  // bool moves as UINT8: NumPy's bool add is or (max), its mul and (min).
  const bool b = t == npy::DType::Bool;
  if (reduction == "add")
    *out = b ? VKDML_REDUCE_FUNCTION_MAX : VKDML_REDUCE_FUNCTION_ADD;
  else if (reduction == "mul")
    *out = b ? VKDML_REDUCE_FUNCTION_MIN : VKDML_REDUCE_FUNCTION_MULTIPLY;
  else if (reduction == "max")
    *out = VKDML_REDUCE_FUNCTION_MAX;
  else if (reduction == "min")
    *out = VKDML_REDUCE_FUNCTION_MIN;
  else if (reduction == "mean" && !b)  // PyTorch's scatter_reduce mean (no bool: it divides)
    *out = VKDML_REDUCE_FUNCTION_MEAN;
  else
    return false;
  return true;
}

namespace {

Shape Slice(const Shape& s, size_t begin, size_t end) {
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(std::min(begin, s.size())),
               s.begin() + static_cast<std::ptrdiff_t>(std::min(end, s.size())));
}

Shape Concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// DirectML's sizes and strides are 32-bit: v as a UINT, or false.
bool Fits(uint64_t v, UINT* out) {
  *out = static_cast<UINT>(v);
  return v <= UINT32_MAX;
}

// The tensor for an array seen with `view` sizes (the array's own shape unless a GatherElements
// view) and the array's strides, right-aligned into D dimensions; its bytes are the array's
// (mapped, not copied), unless fewer than TotalTensorSizeInBytes are readable there. "" or the
// error: a stride DirectML's 32 bits cannot hold.
std::string ToTensor(const ArrayRef& a, const Shape& view, size_t D, HostTensor* t) {
  t->type = DataType(a.dtype);
  size_t lead = D - view.size();
  t->sizes.assign(lead, 1);
  // Any stride will do for a dimension of size 1.
  t->strides.assign(lead, static_cast<UINT>(std::min<uint64_t>(a.ElementCount(), UINT32_MAX)));
  for (size_t i = 0; i < view.size(); ++i) {
    UINT size, stride;
    if (!Fits(view[i], &size) || (!Fits(a.strides[i], &stride) && view[i] > 1))
      return a.name + ": the stride of dimension " + std::to_string(i) + " (shape " +
             a.ShapeString() + (a.fortranOrder ? ", Fortran order" : "") + ") is " +
             std::to_string(a.strides[i]) +
             " elements, more than DirectML's strides hold (4294967295)";
    t->sizes.push_back(size);
    t->strides.push_back(view[i] > 1 ? stride : 1);
  }
  if (view == a.shape && a.Packed()) t->strides.clear();
  if (!a.data) return "";
  const UINT64 total =
      t->Desc()->Desc
          ? static_cast<const DML_BUFFER_TENSOR_DESC*>(t->Desc()->Desc)->TotalTensorSizeInBytes
          : 0;
  if (total <= a.readable) {
    t->data = a.data;
  } else {  // e.g. 3 bytes of UINT8, which DirectML's size rounds up to 4
    t->bytes.assign(a.data, a.data + a.readable);
    t->bytes.resize(total, 0);
  }
  return "";
}

// Wraps m's operator in VKDML_OPERATOR_OUT_OF_RANGE where o asks for FILL or DROP.
void WrapOutOfRange(const OnnxOptions& o, OnnxMapping* m) {
  if (o.outOfRange == VKDML_OUT_OF_RANGE_MODE_CLAMP) return;
  m->inner = m->desc;
  m->outOfRange = {&m->inner, o.outOfRange, o.fillValue};
  m->desc = {VKDML_OPERATOR_OUT_OF_RANGE, &m->outOfRange};
}

// An axis option of an array of rank r, from the end when negative: "" or the error.
std::string Axis(int64_t value, const std::string& label, const ArrayRef& a, size_t* out) {
  const int64_t r = int64_t(a.shape.size()), axis = value < 0 ? value + r : value;
  if (axis < 0 || axis >= r)
    return label + " is " + std::to_string(value) + ", expected " + std::to_string(-r) + " to " +
           std::to_string(r - 1) + " (" + a.name + " has rank " + std::to_string(r) + ")";
  *out = size_t(axis);
  return "";
}

// "" when idx has an index dtype, else the error.
std::string CheckIndexType(const ArrayRef& idx) {
  const npy::DType it = idx.dtype;
  if (it != npy::DType::Int32 && it != npy::DType::Int64 && it != npy::DType::UInt32 &&
      it != npy::DType::UInt64)
    return idx.name + ": dtype is " + npy::DTypeName(it) +
           ", expected an index type: int32, int64, uint32 or uint64";
  return "";
}

// The byte size of `count` elements of `shape` of itemSize bytes, or false past 2^64.
bool ByteSize(const Shape& shape, uint64_t itemSize, uint64_t* bytes) {
  *bytes = itemSize;
  for (uint64_t d : shape)
    if (d == 0) {
      *bytes = 0;
      return true;
    }
  for (uint64_t d : shape) {
    if (*bytes > UINT64_MAX / d) return false;
    *bytes *= d;
  }
  return true;
}

}  // namespace

// "GATHER_ND1: IndicesTensor[0,0,3,1] is 7, ..." over D padded dims -> "<path>: indices[3,1] is
// 7, ..." over the array's own dims ("indices[()]" for a 0-d array, NumPy's way to index it).
std::string IndexMessage(const std::string& message, size_t D, size_t q, const std::string& path,
                         bool trailingOnes) {
  const std::string key = "IndicesTensor[";
  size_t at = message.find(key), close = message.find(']', at);
  if (at == std::string::npos || close == std::string::npos) return path + ": " + message;
  if (q == 0) return path + ": indices[()" + message.substr(close);
  std::string coords = message.substr(at + key.size(), close - at - key.size());
  size_t drop = D - q;
  if (trailingOnes) {  // the indices' dimensions first, then D - q dimensions of size 1
    size_t end = 0;
    for (size_t i = 0; i < q && end != std::string::npos; ++i)
      end = coords.find(',', i ? end + 1 : 0);
    if (end != std::string::npos) coords.erase(end);
    drop = 0;
  }
  for (size_t i = 0; i < drop; ++i) {
    size_t comma = coords.find(',');
    if (comma == std::string::npos) return path + ": " + message;
    coords.erase(0, comma + 1);
  }
  return path + ": indices[" + coords + message.substr(close);
}

namespace {

// A uint8 table of o.format's blocks, (rows, bytes per row), and (withDType: a gather's) the
// float dtype its values come out as: "" and its values per row, or the error.
std::string CheckBlockTable(const OnnxOptions& o, const ArrayRef& table, bool withDType,
                            uint64_t* values) {
  if (o.format != "q8_0" && o.format != "q4_0")
    return "format is '" + o.format + "', expected q8_0 or q4_0";
  if (withDType && o.dtype != npy::DType::Float32 && o.dtype != npy::DType::Float16)
    return std::string("dtype is ") + npy::DTypeName(o.dtype) + ", expected float32 or float16";
  if (table.dtype != npy::DType::UInt8)
    return table.name + ": dtype is " + npy::DTypeName(table.dtype) +
           ", expected uint8 (the table's " + o.format + " blocks)";
  if (table.shape.size() != 2)
    return table.name + ": rank is " + std::to_string(table.shape.size()) + " (shape " +
           table.ShapeString() + "), expected 2: (rows, bytes per row)";
  const uint64_t block = o.format == "q8_0" ? 34 : 18;
  if (table.shape[1] % block || table.shape[1] == 0)
    return table.name + ": shape is " + table.ShapeString() + ", expected (rows, a multiple of " +
           std::to_string(block) + " bytes): whole " + o.format + " blocks of 32 values";
  *values = table.shape[1] / block * 32;
  return "";
}

// dequantize-rows and quantize-rows: the checks of their arrays and options, the output, D and
// descriptor. `idx` is the indices with a trailing dimension of 1 (DirectML's IndicesTensor).
std::string MapQuantizedRows(const OnnxOptions& a, const ArrayRef& in, const ArrayRef& idx,
                             const ArrayRef* upd, OnnxMapping* m) {
  const bool scatter = a.op == "quantize-rows";
  uint64_t values = 0;
  const std::string error = CheckBlockTable(a, in, !scatter, &values);
  if (!error.empty()) return error;
  Shape rows = Slice(idx.shape, 0, idx.shape.size() - 1);
  rows.push_back(values);
  m->D = std::max<size_t>(2, idx.shape.size());
  const auto format =
      a.format == "q8_0" ? VKDML_QUANTIZED_FORMAT_Q8_0 : VKDML_QUANTIZED_FORMAT_Q4_0;
  if (!scatter) {
    m->outputShape = rows;
    m->outputDType = a.dtype;
    m->quantizedRows.Format = format;
    m->desc = {VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, &m->quantizedRows};
    return "";
  }
  if (a.reduction != "none") return "reduction does not apply to " + a.Label();
  if (upd->dtype != npy::DType::Float32)
    return upd->name + ": dtype is " + npy::DTypeName(upd->dtype) + ", expected float32";
  if (upd->shape != rows)
    return upd->name + ": shape is " + upd->ShapeString() + ", expected " + npy::ShapeString(rows) +
           " (indices.shape + (32 values per block,))";
  m->outputShape = in.shape;
  m->quantizingRows.Format = format;
  m->desc = {VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, &m->quantizingRows};
  return "";
}

}  // namespace

std::string MapOnnxOperator(const OnnxOptions& a, const ArrayRef& in, const ArrayRef& idxArray,
                            const ArrayRef* upd, OnnxMapping* m) {
  // dequantize-rows takes one index per output row: DirectML's IndicesTensor has a last
  // dimension of 1.
  const bool quantized = a.op == "dequantize-rows" || a.op == "quantize-rows";
  ArrayRef rowIndices;
  if (quantized) {
    rowIndices = idxArray;
    rowIndices.shape.push_back(1);
    rowIndices.strides.push_back(1);
  }
  const ArrayRef& idx = quantized ? rowIndices : idxArray;
  m->outputDType = in.dtype;
  for (const ArrayRef* n : {&in, &idxArray, upd}) {
    if (!n) continue;
    if (n->shape.size() > 8)
      return n->name + ": rank is " + std::to_string(n->shape.size()) + " (shape " +
             n->ShapeString() +
             "), expected at most 8 (DirectML tensors have at most 8 dimensions)";
    // More than 2^32-1 elements is for the library to refuse (or, one day, run).
    for (size_t i = 0; i < n->shape.size(); ++i)
      if (n->shape[i] > UINT32_MAX)
        return n->name + ": shape[" + std::to_string(i) + "] is " + std::to_string(n->shape[i]) +
               ", expected at most 4294967295";
  }
  std::string error = CheckIndexType(idx);
  if (!error.empty()) return error;
  if (upd && upd->dtype != in.dtype && !quantized)
    return upd->name + ": dtype is " + npy::DTypeName(upd->dtype) + ", expected " +
           npy::DTypeName(in.dtype) + " (the dtype of " + in.name + ")";

  size_t r = in.shape.size(), q = idx.shape.size();
  const Shape& is = in.shape;
  const Shape& xs = idx.shape;
  Shape inView = is;
  if (quantized) {
    error = MapQuantizedRows(a, in, idx, upd, m);
    if (!error.empty()) return error;
  } else if (a.op == "gather") {
    // DML_OPERATOR_GATHER with IndexDimensions q: input.shape[:axis] + indices.shape +
    // input.shape[axis+1:], rank r - 1 + q; the input is padded to D dimensions with leading 1s
    // (which DirectML drops again), so Axis moves by D - r.
    if (r < 1) return in.name + ": rank is 0, expected at least 1 for " + a.Label();
    size_t A = 0;
    if (!(error = Axis(a.axis, a.axisLabel, in, &A)).empty()) return error;
    m->outputShape = Concat(Concat(Slice(is, 0, A), xs), Slice(is, A + 1, r));
    if (m->outputShape.size() > 8)
      return "the output would have rank " + std::to_string(m->outputShape.size()) + " (shape " +
             npy::ShapeString(m->outputShape) + "), expected at most 8 (DirectML's limit)";
    m->D = std::max({r, q, m->outputShape.size(), size_t(1)});
    m->gather.Axis = static_cast<UINT>(A + (m->D - r));
    m->gather.IndexDimensions = static_cast<UINT>(q);
    m->desc = {DML_OPERATOR_GATHER, &m->gather};
  } else if (a.op == "gather-elements" || a.op == "scatter-elements") {
    if (r < 1) return in.name + ": rank is 0, expected at least 1 for " + a.Label();
    if (q != r)
      return idx.name + ": rank is " + std::to_string(q) + " (shape " + idx.ShapeString() +
             "), expected " + std::to_string(r) + " (the rank of " + in.name + ")";
    size_t A = 0;
    if (!(error = Axis(a.axis, a.axisLabel, in, &A)).empty()) return error;
    for (size_t d = 0; d < r; ++d) {
      if (d != A && xs[d] > is[d])
        return idx.name + ": shape[" + std::to_string(d) + "] is " + std::to_string(xs[d]) +
               ", expected at most " + std::to_string(is[d]) + " (shape[" + std::to_string(d) +
               "] of " + in.name + ")";
      if (d != A) inView[d] = xs[d];  // ONNX allows smaller: a strided view
    }
    m->D = r;
    if (upd) {
      if (upd->shape != xs)
        return upd->name + ": shape is " + upd->ShapeString() + ", expected " + idx.ShapeString() +
               " (the shape of " + idx.name + ")";
      // DirectML's output has the input's sizes: with smaller indices both are the view of the
      // input that the indices cover, and the output starts as a copy of the whole input (set
      // below), whose elements outside the view Device::Run keeps.
      m->outputShape = is;
      m->outputView = inView;
      m->scatterElements.Axis = static_cast<UINT>(A);
      m->desc = {DML_OPERATOR_SCATTER_ELEMENTS, &m->scatterElements};
    } else {
      m->outputShape = xs;
      m->gatherElements.Axis = static_cast<UINT>(A);
      m->desc = {DML_OPERATOR_GATHER_ELEMENTS, &m->gatherElements};
    }
  } else {
    bool scatter = upd != nullptr;
    int64_t b = scatter ? 0 : a.batchDims;
    if (r < 1) return in.name + ": rank is 0, expected at least 1 for " + a.Label();
    if (q < 1)
      return idx.name +
             ": rank is 0, expected at least 1 (index tuples lie along the "
             "last axis)";
    uint64_t k = xs[q - 1];
    if (b < 0 || b >= int64_t(std::min(q, r)))
      return a.batchDimsLabel + " is " + std::to_string(b) + ", expected 0 to " +
             std::to_string(int64_t(std::min(q, r)) - 1) + " (less than the ranks of " + in.name +
             " and " + idx.name + ")";
    size_t B = static_cast<size_t>(b);
    if (k < 1 || k > r - B)
      return idx.name + ": shape[-1] (the index tuple size) is " + std::to_string(k) +
             ", expected 1 to " + std::to_string(r - B) + " (the rank of " + in.name +
             (B ? " minus " + a.batchDimsLabel + ")" : ")");
    for (size_t d = 0; d < B; ++d)
      if (xs[d] != is[d])
        return idx.name + ": shape[" + std::to_string(d) + "] is " + std::to_string(xs[d]) +
               ", expected " + std::to_string(is[d]) + " (a batch dimension: shape[" +
               std::to_string(d) + "] of " + in.name + ")";
    Shape slices = Concat(Slice(xs, 0, q - 1), Slice(is, B + k, r));
    m->D = std::max({r, q, slices.size(), size_t(1)});
    if (scatter) {
      if (upd->shape != slices)
        return upd->name + ": shape is " + upd->ShapeString() + ", expected " +
               npy::ShapeString(slices) + " (indices.shape[:-1] + input.shape[indices.shape[-1]:])";
      m->outputShape = is;
      m->scatterNd.InputDimensionCount = static_cast<UINT>(r);
      m->scatterNd.IndicesDimensionCount = static_cast<UINT>(q);
      m->desc = {DML_OPERATOR_SCATTER_ND, &m->scatterNd};
    } else {
      if (slices.size() > 8)
        return "the output would have rank " + std::to_string(slices.size()) + " (shape " +
               npy::ShapeString(slices) + "), expected at most 8 (DirectML's limit)";
      m->outputShape = slices;
      m->gatherNd.InputDimensionCount = static_cast<UINT>(r);
      m->gatherNd.IndicesDimensionCount = static_cast<UINT>(q);
      m->gatherNd.BatchDimensionCount = static_cast<UINT>(B);
      m->desc = {DML_OPERATOR_GATHER_ND1, &m->gatherNd};
    }
  }
  if (m->D > 8)
    return "the operator needs " + std::to_string(m->D) +
           " dimensions, expected at most 8 (DirectML's limit)";

  // DirectML has no empty tensors: a gather with an empty output needs no device, and neither
  // does a scatter without updates. Otherwise an empty input means that no index can be valid.
  if (!ByteSize(m->outputShape, npy::ItemSize(m->outputDType), &m->outputBytes))
    return "the output would have shape " + npy::ShapeString(m->outputShape) + " of " +
           npy::DTypeName(m->outputDType) + ", more than 2^64 bytes";
  const uint64_t outCount = m->outputBytes / npy::ItemSize(m->outputDType);
  if (upd ? upd->ElementCount() == 0 : outCount == 0) {
    m->skipDevice = true;
    return "";
  }
  for (const ArrayRef* n : {&in, &idx})
    if (n->ElementCount() == 0)
      return n->name + ": has no elements (shape " + n->ShapeString() +
             "), so no index into it is valid";

  m->inputs.resize(upd ? 3 : 2);
  error = ToTensor(in, inView, m->D, &m->inputs[0]);
  if (error.empty()) error = ToTensor(idx, xs, m->D, &m->inputs[1]);
  if (error.empty() && upd) error = ToTensor(*upd, upd->shape, m->D, &m->inputs[2]);
  if (!error.empty()) return error;
  m->output.type = DataType(m->outputDType);
  m->output.sizes.assign(m->D - m->outputShape.size(), 1);
  if (m->outputView.empty() || m->outputView == m->outputShape) {
    for (uint64_t d : m->outputShape) m->output.sizes.push_back(static_cast<UINT>(d));
  } else {
    // A view of the row-major output: the view's sizes, the whole output's strides. The output
    // starts as a copy of the input (RunMain writes it).
    m->output.strides.assign(m->D - m->outputShape.size(),
                             static_cast<UINT>(std::min<uint64_t>(outCount, UINT32_MAX)));
    uint64_t stride = outCount;
    for (size_t d = 0; d < m->outputShape.size(); ++d) {
      stride /= m->outputShape[d];
      UINT s32 = 1;
      if (m->outputView[d] > 1 && !Fits(stride, &s32))
        return "the output's stride of dimension " + std::to_string(d) + " (shape " +
               npy::ShapeString(m->outputShape) + ") is " + std::to_string(stride) +
               " elements, more than DirectML's strides hold (4294967295)";
      m->output.sizes.push_back(static_cast<UINT>(m->outputView[d]));
      m->output.strides.push_back(s32);
    }
    m->outputStartsAsInput = true;
  }
  const DML_TENSOR_DESC* descs[4];
  for (size_t i = 0; i < m->inputs.size(); ++i) descs[i] = m->inputs[i].Desc();
  const DML_TENSOR_DESC* out = m->output.Desc();
  m->gather.InputTensor = m->gatherNd.InputTensor = m->gatherElements.InputTensor =
      m->scatterNd.InputTensor = m->scatterElements.InputTensor = descs[0];
  m->gather.IndicesTensor = m->gatherNd.IndicesTensor = m->gatherElements.IndicesTensor =
      m->scatterNd.IndicesTensor = m->scatterElements.IndicesTensor = descs[1];
  if (upd) m->scatterNd.UpdatesTensor = m->scatterElements.UpdatesTensor = descs[2];
  m->gather.OutputTensor = m->gatherNd.OutputTensor = m->gatherElements.OutputTensor =
      m->scatterNd.OutputTensor = m->scatterElements.OutputTensor = out;
  m->quantizedRows.InputTensor = descs[0];
  m->quantizedRows.IndicesTensor = descs[1];
  m->quantizedRows.OutputTensor = out;
  m->quantizingRows = {descs[0], descs[1], upd ? descs[2] : nullptr, out, m->quantizingRows.Format};
  if (a.reduction != "none") {  // vkdml's reduce operators, with the same tensors
    VKDML_REDUCE_FUNCTION f = VKDML_REDUCE_FUNCTION_MIN;
    if (!ReduceFunction(a.reduction, in.dtype, &f))
      return "reduction is '" + a.reduction + "', expected none, add, mul, max, min or mean" +
             (a.reduction == "mean" ? " (mean divides: not on bool)" : "");
    const auto& nd = m->scatterNd;
    const auto& se = m->scatterElements;
    m->scatterNdReduce = {nd.InputTensor,
                          nd.IndicesTensor,
                          nd.UpdatesTensor,
                          nd.OutputTensor,
                          nd.InputDimensionCount,
                          nd.IndicesDimensionCount,
                          f,
                          a.excludeSelf};
    m->scatterElementsReduce = {se.InputTensor,  se.IndicesTensor, se.UpdatesTensor,
                                se.OutputTensor, se.Axis,          f,
                                a.excludeSelf};
    m->desc =
        m->desc.Type == DML_OPERATOR_SCATTER_ND
            ? DML_OPERATOR_DESC{VKDML_OPERATOR_SCATTER_ND_REDUCE, &m->scatterNdReduce}
            : DML_OPERATOR_DESC{VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE, &m->scatterElementsReduce};
  }
  WrapOutOfRange(a, m);
  return "";
}

std::string MapEmbeddingBag(const OnnxOptions& o, const ArrayRef& table, const ArrayRef& idx,
                            const ArrayRef& offsets, const ArrayRef* weights, OnnxMapping* m) {
  VKDML_EMBEDDING_BAG_MODE mode = VKDML_EMBEDDING_BAG_MODE_SUM;
  if (o.mode == "mean")
    mode = VKDML_EMBEDDING_BAG_MODE_MEAN;
  else if (o.mode == "max")
    mode = VKDML_EMBEDDING_BAG_MODE_MAX;
  else if (o.mode != "sum")
    return "mode is '" + o.mode + "', expected sum, mean or max";
  const bool quantized = table.dtype == npy::DType::UInt8;
  if (table.shape.size() != 2 && !quantized)
    return table.name + ": rank is " + std::to_string(table.shape.size()) + " (shape " +
           table.ShapeString() + "), expected 2: (rows, values per row)";
  uint64_t width = quantized ? 0 : table.shape[1];
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT(0);
  if (quantized) {  // blocks, as dequantize-rows' table
    const std::string error = CheckBlockTable(o, table, true, &width);
    if (!error.empty()) return error;
    format = o.format == "q8_0" ? VKDML_QUANTIZED_FORMAT_Q8_0 : VKDML_QUANTIZED_FORMAT_Q4_0;
    m->outputDType = o.dtype;
  } else if (table.dtype == npy::DType::Float32 || table.dtype == npy::DType::Float16) {
    m->outputDType = table.dtype;
  } else {
    return table.name + ": dtype is " + npy::DTypeName(table.dtype) +
           ", expected float32 or float16 (or uint8 blocks with a format)";
  }
  for (const ArrayRef* a : {&idx, &offsets, weights}) {
    if (!a) continue;
    if (a->shape.size() != 1)
      return a->name + ": rank is " + std::to_string(a->shape.size()) + " (shape " +
             a->ShapeString() + "), expected 1";
    if (a->shape[0] > UINT32_MAX)
      return a->name + ": shape[0] is " + std::to_string(a->shape[0]) +
             ", expected at most 4294967295";
  }
  const npy::DType it = idx.dtype;
  std::string error = CheckIndexType(idx);
  if (!error.empty()) return error;
  if (offsets.dtype != it)
    return offsets.name + ": dtype is " + npy::DTypeName(offsets.dtype) + ", expected " +
           npy::DTypeName(it) + " (the dtype of " + idx.name + ")";
  if (weights) {
    if (mode != VKDML_EMBEDDING_BAG_MODE_SUM)
      return "per-sample weights (" + weights->name + ") apply to mode sum only, not " + o.mode;
    if (weights->dtype != m->outputDType)
      return weights->name + ": dtype is " + npy::DTypeName(weights->dtype) + ", expected " +
             npy::DTypeName(m->outputDType) + " (the output's)";
    if (weights->shape != idx.shape)
      return weights->name + ": shape is " + weights->ShapeString() + ", expected " +
             idx.ShapeString() + " (the shape of " + idx.name + ")";
  }
  const uint64_t rows = table.shape[0], entries = idx.shape[0], bounds = offsets.shape[0];
  UINT padding = 0;
  if (o.hasPadding) {
    const int64_t p = o.paddingIdx < 0 ? o.paddingIdx + int64_t(rows) : o.paddingIdx;
    if (p < 0 || uint64_t(p) >= rows)
      return "padding_idx is " + std::to_string(o.paddingIdx) + ", expected " +
             std::to_string(-int64_t(rows)) + " to " + std::to_string(int64_t(rows) - 1) + " (" +
             table.name + " has " + std::to_string(rows) + " rows)";
    padding = UINT(p);
  }
  const uint64_t bags = o.includeLastOffset ? (bounds ? bounds - 1 : 0) : bounds;
  m->outputShape = {bags, width};
  m->D = 2;
  if (!ByteSize(m->outputShape, npy::ItemSize(m->outputDType), &m->outputBytes))
    return "the output would have shape " + npy::ShapeString(m->outputShape) +
           ", more than 2^64 "
           "bytes";
  if (m->outputBytes == 0 || entries == 0) {  // no bags or no values; or every bag empty: zeros
    m->skipDevice = true;
    m->zeroOutput = m->outputBytes != 0;
    return "";
  }
  if (rows == 0)
    return table.name + ": has no rows (shape " + table.ShapeString() +
           "), so no index into it is valid";

  m->inputs.resize(weights ? 4 : 3);
  error = ToTensor(table, table.shape, 2, &m->inputs[0]);
  if (error.empty()) error = ToTensor(idx, idx.shape, 2, &m->inputs[1]);
  if (error.empty()) error = ToTensor(offsets, offsets.shape, 2, &m->inputs[2]);
  if (error.empty() && weights) error = ToTensor(*weights, weights->shape, 2, &m->inputs[3]);
  if (!error.empty()) return error;
  m->output.type = DataType(m->outputDType);
  m->output.sizes = {UINT(bags), UINT(width)};
  m->embeddingBag = {m->inputs[0].Desc(),
                     m->inputs[1].Desc(),
                     m->inputs[2].Desc(),
                     weights ? m->inputs[3].Desc() : nullptr,
                     m->output.Desc(),
                     mode,
                     format,
                     o.includeLastOffset ? 1 : 0,
                     o.hasPadding ? 1 : 0,
                     padding};
  m->desc = {VKDML_OPERATOR_EMBEDDING_BAG, &m->embeddingBag};
  WrapOutOfRange(o, m);
  return "";
}

bool IsSegmentOp(const std::string& op) {
  return op == "segment-csr" || op == "segment-coo" || op == "segment-reduce";
}

std::string MapSegmentReduce(const OnnxOptions& o, const ArrayRef& src, const ArrayRef& idx,
                             OnnxMapping* m) {
  static const std::pair<const char*, VKDML_SEGMENT_REDUCE_FUNCTION> kFunctions[] = {
      {"sum", VKDML_SEGMENT_REDUCE_FUNCTION_SUM},
      {"add", VKDML_SEGMENT_REDUCE_FUNCTION_SUM},
      {"mean", VKDML_SEGMENT_REDUCE_FUNCTION_MEAN},
      {"min", VKDML_SEGMENT_REDUCE_FUNCTION_MIN},
      {"max", VKDML_SEGMENT_REDUCE_FUNCTION_MAX},
      {"prod", VKDML_SEGMENT_REDUCE_FUNCTION_PROD},
      {"mul", VKDML_SEGMENT_REDUCE_FUNCTION_PROD},
      {"argmin", VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN},
      {"argmax", VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX}};
  const auto* f = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                               [&](const auto& k) { return o.reduction == k.first; });
  if (f == std::end(kFunctions))
    return "reduction is '" + o.reduction +
           "', expected sum, mean, min, max, prod, argmin or argmax";
  const bool coo = o.op == "segment-coo", torch = o.op == "segment-reduce";
  const bool arg = f->second >= VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN;
  const size_t r = src.shape.size(), k = idx.shape.size();
  if (r < 1 || r > 8) return src.name + ": rank is " + std::to_string(r) + ", expected 1 to 8";
  if (k < 1 || k > r)
    return idx.name + ": rank is " + std::to_string(k) + " (shape " + idx.ShapeString() +
           "), expected 1 to " + std::to_string(r) + " (the rank of " + src.name +
           "): its last dimension is the reduced axis";
  std::string error = CheckIndexType(idx);
  if (!error.empty()) return error;
  const size_t axis = k - 1;
  for (size_t d = 0; d < axis; ++d)
    if (idx.shape[d] != src.shape[d])
      return idx.name + ": shape is " + idx.ShapeString() + ", expected " + src.name +
             "'s sizes before the reduced axis " + std::to_string(axis) + " (" + src.ShapeString() +
             ")";
  uint64_t segments = 0;
  if (coo) {
    if (idx.shape[axis] != src.shape[axis])
      return idx.name + ": shape[" + std::to_string(axis) + "] is " +
             std::to_string(idx.shape[axis]) + ", expected " + std::to_string(src.shape[axis]) +
             " (a segment id per row of " + src.name + ")";
    if (o.dimSize >= 0) {
      segments = uint64_t(o.dimSize);
    } else if (idx.data) {  // the largest id plus 1
      const bool wide = npy::ItemSize(idx.dtype) == 8;
      const bool isSigned = idx.dtype == npy::DType::Int32 || idx.dtype == npy::DType::Int64;
      const uint64_t n = idx.ElementCount();
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t at = 0, rest = i;
        for (size_t d = k; d-- > 0;) {
          at += (rest % idx.shape[d]) * idx.strides[d];
          rest /= idx.shape[d];
        }
        int64_t v = 0;
        if (wide) {
          std::memcpy(&v, idx.data + at * 8, 8);
        } else {
          uint32_t w;
          std::memcpy(&w, idx.data + at * 4, 4);
          v = isSigned ? int64_t(int32_t(w)) : int64_t(w);
        }
        if (v >= 0 && uint64_t(v) + 1 > segments) segments = uint64_t(v) + 1;
      }
    } else {
      return "dim_size is needed for " + idx.name + " on the device";
    }
  } else {
    if (idx.shape[axis] < 1)
      return idx.name + ": shape[" + std::to_string(axis) +
             "] is 0, expected the segments plus 1 (offsets: each start and the last end)";
    segments = idx.shape[axis] - 1;
  }
  m->outputDType = arg ? npy::DType::Int64 : src.dtype;
  m->outputShape = src.shape;
  m->outputShape[axis] = segments;
  m->D = r;
  if (!ByteSize(m->outputShape, npy::ItemSize(m->outputDType), &m->outputBytes))
    return "the output would have shape " + npy::ShapeString(m->outputShape) +
           ", more than 2^64 bytes";
  if (m->outputBytes == 0) {
    m->skipDevice = true;
    return "";
  }
  if (src.ElementCount() == 0)
    return src.name + ": has no rows (shape " + src.ShapeString() +
           "), expected at least one along the reduced axis";
  ArrayRef full = idx;  // IndicesTensor: the sizes after the axis 1
  full.shape.resize(r, 1);
  full.strides.resize(r, 1);
  m->inputs.resize(2);
  error = ToTensor(src, src.shape, r, &m->inputs[0]);
  if (error.empty()) error = ToTensor(full, full.shape, r, &m->inputs[1]);
  if (!error.empty()) return error;
  m->output.type = DataType(m->outputDType);
  m->output.sizes.clear();
  for (uint64_t size : m->outputShape) {
    UINT u;
    if (!Fits(size, &u))
      return "the output's shape " + npy::ShapeString(m->outputShape) +
             " has a size past 4294967295";
    m->output.sizes.push_back(u);
  }
  const VKDML_SEGMENT_EMPTY empty = !torch         ? VKDML_SEGMENT_EMPTY_SCATTER
                                    : o.hasInitial ? VKDML_SEGMENT_EMPTY_INITIAL
                                                   : VKDML_SEGMENT_EMPTY_TORCH;
  m->segmentReduce = {m->inputs[0].Desc(),
                      m->inputs[1].Desc(),
                      m->output.Desc(),
                      UINT(axis),
                      f->second,
                      coo ? 1 : 0,
                      empty,
                      o.initial};
  m->desc = {VKDML_OPERATOR_SEGMENT_REDUCE, &m->segmentReduce};
  return "";
}

namespace {

// A uint8 array of the given shape, in C order (the library takes packed bytes).
std::string CheckPackedBytes(const ArrayRef& a, const Shape& shape, const std::string& why) {
  if (a.dtype != npy::DType::UInt8)
    return a.name + ": dtype is " + npy::DTypeName(a.dtype) + ", expected uint8 (" + why + ")";
  if (a.shape != shape)
    return a.name + ": shape is " + a.ShapeString() + ", expected " + npy::ShapeString(shape) +
           " (" + why + ")";
  if (!a.Packed())
    return a.name + ": expected a C-contiguous array (" + why + " are read as packed bytes)";
  return "";
}

// The bytes of 4-bit values of shape `values` packed whole, as ONNX's int4 and uint4 tensors: 1-D
// where the last size is odd or `a` (the array holding them) is 1-D, else `values` with the last
// size halved (the same bytes).
Shape WholeBytes(const Shape& values, const ArrayRef& a) {
  uint64_t count = 1;
  for (uint64_t v : values) count = v && count > UINT64_MAX / v ? UINT64_MAX : count * v;
  if (values.back() % 2 || a.shape.size() == 1) return {count / 2 + count % 2};
  Shape halved = values;
  halved.back() /= 2;
  return halved;
}

}  // namespace

std::string MapGatherBlockQuantized(const OnnxOptions& o, const ArrayRef& data, const ArrayRef& idx,
                                    const ArrayRef& scales, const ArrayRef* zeroPoints,
                                    OnnxMapping* m) {
  VKDML_BLOCK_QUANTIZED_TYPE type;
  if (o.blockType == "int4" || o.blockType == "uint4") {
    if (o.bits != 4)
      return "bits is " + std::to_string(o.bits) + ", expected 4 for " + o.blockType + " data";
    type =
        o.blockType == "int4" ? VKDML_BLOCK_QUANTIZED_TYPE_INT4 : VKDML_BLOCK_QUANTIZED_TYPE_UINT4;
  } else if (o.blockType == "uint8") {
    if (o.bits != 4 && o.bits != 8)
      return "bits is " + std::to_string(o.bits) + ", expected 4 or 8 for uint8 data";
    type = o.bits == 4 ? VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4 : VKDML_BLOCK_QUANTIZED_TYPE_UINT8;
  } else {
    return "type is '" + o.blockType + "', expected int4, uint4 or uint8";
  }
  if (o.blockSize < 16 || o.blockSize > (int64_t(1) << 31) || (o.blockSize & (o.blockSize - 1)))
    return "block_size is " + std::to_string(o.blockSize) +
           ", expected a power of 2, at least 16 (as ONNX Runtime's)";
  const bool four = o.bits == 4, whole = o.blockType != "uint8";
  const bool given = !o.valuesShape.empty();  // values_shape: data packed whole
  if (given && !whole)
    return "values_shape is given, expected none for uint8 data (the data's shape is its "
           "values')";
  // The values, with data's name and rank in messages (values_shape's where given).
  ArrayRef values = data;
  if (given) {
    values.name = "values_shape";
    values.shape = o.valuesShape;
    for (size_t d = 0; d < values.shape.size(); ++d)
      if (values.shape[d] > UINT32_MAX)
        return "values_shape[" + std::to_string(d) + "] is " + std::to_string(values.shape[d]) +
               ", expected at most 4294967295 (DirectML's sizes are 32-bit)";
  }
  for (const ArrayRef* a :
       {&data, &idx, &scales, zeroPoints, static_cast<const ArrayRef*>(&values)})
    if (a && a->shape.size() > 8)
      return a->name + ": rank is " + std::to_string(a->shape.size()) +
             ", expected at most 8 (DirectML tensors have at most 8 dimensions)";
  if (values.shape.empty()) return values.name + ": rank is 0, expected at least 1";
  const Shape dataShape = given ? WholeBytes(values.shape, data) : values.shape;
  if (!given && four) values.shape.back() *= 2;
  std::string error = CheckPackedBytes(
      data, dataShape,
      given  ? "two 4-bit values a byte, packed whole as ONNX's " + o.blockType + " tensors"
      : four ? "two 4-bit values a byte, the first in the low nibble"
             : "the values");
  if (!error.empty()) return error;
  size_t axis = 0, qaxis = 0;
  if (!(error = Axis(o.axis, o.axisLabel, values, &axis)).empty()) return error;
  if (!(error = Axis(o.quantizeAxis, "quantize_axis", values, &qaxis)).empty()) return error;
  if (!(error = CheckIndexType(idx)).empty()) return error;
  if (scales.dtype != npy::DType::Float32 && scales.dtype != npy::DType::Float16)
    return scales.name + ": dtype is " + npy::DTypeName(scales.dtype) +
           ", expected float32 or float16 (the output's dtype)";
  Shape blocks = values.shape;
  blocks[qaxis] = (blocks[qaxis] + uint64_t(o.blockSize) - 1) / uint64_t(o.blockSize);
  if (scales.shape != blocks)
    return scales.name + ": shape is " + scales.ShapeString() + ", expected " +
           npy::ShapeString(blocks) + " (the values' shape " + values.ShapeString() +
           ", quantize_axis " + std::to_string(qaxis) + " in blocks of " +
           std::to_string(o.blockSize) + ")";
  // int4 and uint4 zero points: ONNX's tensors of those types, packed whole (1-D, their bytes;
  // or the scales' shape with the last dimension halved where it is even: the same bytes).
  // uint8 with bits 4: ONNX Runtime's, each row of the last dimension starting on a byte.
  Shape zeroShape = blocks;
  if (four) zeroShape.back() = (zeroShape.back() + 1) / 2;
  if (zeroPoints && whole) zeroShape = WholeBytes(blocks, *zeroPoints);
  if (zeroPoints &&
      !(error = CheckPackedBytes(*zeroPoints, zeroShape,
                                 !four   ? "the zero points"
                                 : whole ? "the zero points, two a byte, packed whole as ONNX's " +
                                               o.blockType + " tensors"
                                         : "the zero points, two a byte, each row starting on a "
                                           "byte"))
           .empty())
    return error;
  m->outputDType = scales.dtype;
  const Shape& v = values.shape;
  m->outputShape = Concat(Concat(Slice(v, 0, axis), idx.shape), Slice(v, axis + 1, v.size()));
  if (m->outputShape.size() > 8)
    return "the output would have rank " + std::to_string(m->outputShape.size()) + " (shape " +
           npy::ShapeString(m->outputShape) + "), expected at most 8 (DirectML's limit)";
  const size_t r = v.size();
  m->D = std::max({r, idx.shape.size(), m->outputShape.size()});
  if (!ByteSize(m->outputShape, npy::ItemSize(m->outputDType), &m->outputBytes))
    return "the output would have shape " + npy::ShapeString(m->outputShape) +
           ", more than 2^64 bytes";
  if (m->outputBytes == 0) {
    m->skipDevice = true;
    return "";
  }
  if (v[axis] == 0)
    return values.name + ": has size 0 on axis " + std::to_string(axis) +
           ", so no index into it is valid";
  m->inputs.resize(zeroPoints ? 4 : 3);
  error = ToTensor(data, data.shape, m->D, &m->inputs[0]);
  if (error.empty()) error = ToTensor(idx, idx.shape, m->D, &m->inputs[1]);
  if (error.empty()) error = ToTensor(scales, scales.shape, m->D, &m->inputs[2]);
  if (error.empty() && zeroPoints)  // 1-D (packed whole): {1, ..., 1, bytes}
    error = ToTensor(*zeroPoints, zeroPoints->shape, m->D, &m->inputs[3]);
  if (!error.empty()) return error;
  m->output.type = DataType(m->outputDType);
  m->output.sizes.assign(m->D - m->outputShape.size(), 1);
  for (uint64_t d : m->outputShape) m->output.sizes.push_back(UINT(d));
  const UINT lead = UINT(m->D - r);
  m->valueSizes.assign(lead, 1);  // values_shape: each checked below 2^32 above
  for (uint64_t size : v) m->valueSizes.push_back(UINT(size));
  m->blockQuantized = {m->inputs[0].Desc(),
                       m->inputs[1].Desc(),
                       m->inputs[2].Desc(),
                       zeroPoints ? m->inputs[3].Desc() : nullptr,
                       m->output.Desc(),
                       type,
                       UINT(axis) + lead,
                       UINT(idx.shape.size()),
                       UINT(qaxis) + lead,
                       UINT(o.blockSize),
                       given ? m->valueSizes.data() : nullptr};
  m->desc = {VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &m->blockQuantized};
  WrapOutOfRange(o, m);
  return "";
}

std::string CheckIndicesOnHost(const OnnxOptions& a, const ArrayRef& in, const ArrayRef& idx) {
  const ArrayRef& c = idx;  // read in place, in C order through its strides
  Shape is = in.shape;      // gather-block-quantized: its values' (4-bit: two a byte)
  if (a.op == "gather-block-quantized" && !a.valuesShape.empty())
    is = a.valuesShape;
  else if (a.op == "gather-block-quantized" && a.bits == 4 && !is.empty())
    is.back() *= 2;
  const Shape& xs = c.shape;
  const Shape& strides = c.strides;
  const bool nd = a.op == "gather-nd" || a.op == "scatter-nd";
  const size_t B = a.op == "gather-nd" ? static_cast<size_t>(a.batchDims) : 0;
  const int64_t axis =
      a.axis < 0 ? a.axis + int64_t(is.size()) : a.axis;  // checked by MapOnnxOperator
  const uint64_t k = nd ? xs.back() : 1;
  const bool isSigned = c.dtype == npy::DType::Int32 || c.dtype == npy::DType::Int64;
  const size_t size = npy::ItemSize(c.dtype);
  const uint64_t count = c.ElementCount();
  Shape pos(xs.size(), 0);  // e's coordinates
  for (uint64_t e = 0; e < count; ++e) {
    if (e)
      for (size_t d = xs.size(); d-- > 0;) {
        if (++pos[d] < xs[d]) break;
        pos[d] = 0;
      }
    uint64_t at = 0;
    for (size_t d = 0; d < xs.size(); ++d) at += pos[d] * strides[d];
    const uint64_t n = nd ? is[B + e % k] : is[static_cast<size_t>(axis)];
    uint64_t u = 0;
    std::memcpy(&u, c.data + at * size, size);
    int64_t v = size == 4 ? int64_t(int32_t(uint32_t(u))) : int64_t(u);
    bool bad = isSigned ? (v < -int64_t(n) || v >= int64_t(n)) : u >= n;
    if (!bad) continue;
    std::string coords;
    for (size_t d = 0; d < xs.size(); ++d) coords += (d ? "," : "") + std::to_string(pos[d]);
    std::string range = n == 0     ? "(none: that dimension of " + in.name + " is 0)"
                        : isSigned ? "[-" + std::to_string(n) + ", " + std::to_string(n - 1) + "]"
                                   : "[0, " + std::to_string(n - 1) + "]";
    return idx.name + ": indices[" + (xs.empty() ? "()" : coords) + "] is " +
           (isSigned ? std::to_string(v) : std::to_string(u)) + ", outside the valid range " +
           range;
  }
  return "";
}

}  // namespace cli
