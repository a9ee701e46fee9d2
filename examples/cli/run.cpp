// `vkdml run`: one ONNX operator (Gather, GatherND, GatherElements, ScatterElements, ScatterND)
// on .npy arrays, mapped onto a DirectML descriptor and run on a Vulkan device.
#include "cli.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "npy.h"

namespace cli {

using namespace vkdml;

namespace {

const char kRunUsage[] =
    "usage: vkdml run OP --input IN.npy --indices IDX.npy [--updates UPD.npy] [--axis N]\n"
    "                 [--batch-dims N] [--reduction none|add|mul|max|min] [--deterministic]\n"
    "                 --output OUT.npy [--device N] [--check-indices]\n"
    "\n"
    "Runs one ONNX operator on .npy arrays on a Vulkan device and writes the result.\n"
    "OP (ONNX semantics, NumPy shapes):\n"
    "  gather             Gather: --axis N (default 0); output shape\n"
    "                     input.shape[:N] + indices.shape + input.shape[N+1:]\n"
    "  gather-nd          GatherND: --batch-dims N (default 0); output shape\n"
    "                     indices.shape[:-1] + input.shape[N + indices.shape[-1]:]\n"
    "  gather-elements    GatherElements: --axis N (default 0); output shape indices.shape\n"
    "  scatter-elements   ScatterElements: --axis N (default 0), --updates (shape\n"
    "                     indices.shape); output shape input.shape\n"
    "  scatter-nd         ScatterND: --updates; output shape input.shape\n"
    "Scatter options:\n"
    "  --reduction R      none (default: the update replaces the element), add, mul, max or\n"
    "                     min (ONNX's reduction: each update combined with its target, in the\n"
    "                     element type; bool add and mul are or and and, as NumPy's)\n"
    "  --deterministic    apply the updates one at a time in the indices' C order, so the\n"
    "                     output is the same bits every run (float add and mul otherwise\n"
    "                     may differ in the order of the steps)\n"
    "Options:\n"
    "  --device N         Vulkan device index from `vkdml devices` (default: the first\n"
    "                     discrete GPU, else the first device)\n"
    "  --check-indices    fail (exit 2) on the first out-of-range index instead of clamping\n"
    "Data types: bool, int8..int64, uint8..uint64, float16, float32, float64; indices are\n"
    "int32, int64, uint32 or uint64. Negative indices count from the end; out-of-range\n"
    "indices are clamped unless --check-indices. Inputs are mapped, not read into memory,\n"
    "after each file's header and size agree; the operator is checked before the output takes\n"
    "any memory. Exit status: 0 ok, 2 bad input, 1 device failure, 3 out of memory (host\n"
    "memory or a Vulkan allocation); OUT is only written on success.\n";

struct RunArgs {
  std::string op, input, indices, updates, output, reduction = "none";
  int64_t axis = 0, batchDims = 0, device = -1;
  bool haveAxis = false, haveBatchDims = false, checkIndices = false, deterministic = false;
};

// Reports message as `vkdml run: message` on stderr and returns the exit status.
int Error(const std::string& message, int status = kExitBadInput) {
  std::fprintf(stderr, "vkdml run: %s\n", message.c_str());
  return status;
}

// Parses argv into args; returns -1 to go on, else the exit status.
int ParseRunArgs(int argc, char** argv, RunArgs* a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    if (arg == "--check-indices" || arg == "--deterministic") {
      (arg == "--check-indices" ? a->checkIndices : a->deterministic) = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!a->op.empty()) return Error("unexpected argument '" + arg + "' (see --help)");
      a->op = arg;
      continue;
    }
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error(arg + " needs a value (see --help)");
    }
    int64_t* number = arg == "--axis"         ? &a->axis
                      : arg == "--batch-dims" ? &a->batchDims
                      : arg == "--device"     ? &a->device
                                              : nullptr;
    if (number) {
      if (!ParseInt(value, number)) return Error(arg + " is '" + value + "', expected an integer");
      if (arg == "--axis") a->haveAxis = true;
      if (arg == "--batch-dims") a->haveBatchDims = true;
    } else if (arg == "--input") {
      a->input = value;
    } else if (arg == "--indices") {
      a->indices = value;
    } else if (arg == "--updates") {
      a->updates = value;
    } else if (arg == "--output") {
      a->output = value;
    } else if (arg == "--reduction") {
      a->reduction = value;
    } else {
      return Error("unknown option " + arg + " (see --help)");
    }
  }
  return -1;
}

// Checks the operator and which options apply to it; returns -1 to go on.
int CheckOperator(const RunArgs& a) {
  const std::string& op = a.op;
  if (op.empty())
    return Error(
        "no operator given, expected one of gather, gather-elements, "
        "gather-nd, scatter-elements, scatter-nd (see --help)");
  if (op != "gather" && op != "gather-nd" && op != "gather-elements" && op != "scatter-nd" &&
      op != "scatter-elements")
    return Error("unknown operator '" + op +
                 "', expected one of gather, gather-elements, "
                 "gather-nd, scatter-elements, scatter-nd");
  bool scatter = op == "scatter-nd" || op == "scatter-elements";
  bool elements = op == "gather-elements" || op == "scatter-elements";
  if (a.reduction != "none") {
    if (a.reduction != "add" && a.reduction != "mul" && a.reduction != "min" &&
        a.reduction != "max")
      return Error("--reduction is '" + a.reduction + "', expected none, add, mul, max or min");
    if (!scatter) return Error("--reduction does not apply to " + op);
  }
  if (a.deterministic && !scatter)
    return Error("--deterministic does not apply to " + op + " (a gather is deterministic)");
  if (a.haveAxis && !elements && op != "gather") return Error("--axis does not apply to " + op);
  if (a.haveBatchDims && op != "gather-nd") return Error("--batch-dims does not apply to " + op);
  if (!a.updates.empty() && !scatter) return Error("--updates does not apply to " + op);
  if (a.input.empty()) return Error("--input is required");
  if (a.indices.empty()) return Error("--indices is required");
  if (scatter && a.updates.empty()) return Error("--updates is required for " + op);
  if (a.output.empty()) return Error("--output is required");
  if (a.device < -1 || a.device > 1000000)
    return Error("--device is " + std::to_string(a.device) +
                 ", expected a device index from `vkdml devices` (or -1, the default)");
  return -1;
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

struct Named {
  std::string path;
  npy::Array array;
  size_t rank() const { return array.shape.size(); }
  uint64_t dim(size_t i) const { return array.shape[i]; }
  std::string Shape() const { return npy::ShapeString(array.shape); }
};

using Shape = std::vector<uint64_t>;

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
// (mapped, not copied). "" or the error: a stride DirectML's 32 bits cannot hold.
std::string ToTensor(const Named& n, const Shape& view, size_t D, HostTensor* t) {
  const npy::Array& a = n.array;
  t->type = DataType(a.dtype);
  Shape strides = a.Strides();
  size_t lead = D - view.size();
  t->sizes.assign(lead, 1);
  // Any stride will do for a dimension of size 1.
  t->strides.assign(lead, static_cast<UINT>(std::min<uint64_t>(a.ElementCount(), UINT32_MAX)));
  for (size_t i = 0; i < view.size(); ++i) {
    UINT size, stride;
    if (!Fits(view[i], &size) || (!Fits(strides[i], &stride) && view[i] > 1))
      return n.path + ": the stride of dimension " + std::to_string(i) + " (shape " + n.Shape() +
             (a.fortranOrder ? ", Fortran order" : "") + ") is " + std::to_string(strides[i]) +
             " elements, more than DirectML's strides hold (4294967295)";
    t->sizes.push_back(size);
    t->strides.push_back(view[i] > 1 ? stride : 1);
  }
  if (view == a.shape && !a.fortranOrder) t->strides.clear();  // packed
  t->data = a.data.get();
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

// "GATHER_ND1: IndicesTensor[0,0,3,1] is 7, ..." over D padded dims -> "<path>: indices[3,1] is
// 7, ..." over the array's own dims ("indices[()]" for a 0-d array, NumPy's way to index it).
std::string IndexMessage(const std::string& message, size_t D, size_t q, const std::string& path) {
  const std::string key = "IndicesTensor[";
  size_t at = message.find(key), close = message.find(']', at);
  if (at == std::string::npos || close == std::string::npos) return path + ": " + message;
  if (q == 0) return path + ": indices[()" + message.substr(close);
  std::string coords = message.substr(at + key.size(), close - at - key.size());
  size_t drop = D - q;
  for (size_t i = 0; i < drop; ++i) {
    size_t comma = coords.find(',');
    if (comma == std::string::npos) return path + ": " + message;
    coords.erase(0, comma + 1);
  }
  return path + ": indices[" + coords + message.substr(close);
}

// The ONNX operator, mapped onto DirectML: tensors in binding order and the output's ONNX shape.
struct OnnxMapping {
  std::vector<HostTensor> inputs;
  HostTensor output;
  Shape outputShape;
  Shape outputView;  // a scatter's OutputTensor sizes, the input's view (empty: outputShape)
  size_t D = 1;
  DML_GATHER_OPERATOR_DESC gather{};
  DML_GATHER_ND1_OPERATOR_DESC gatherNd{};
  DML_GATHER_ELEMENTS_OPERATOR_DESC gatherElements{};
  DML_SCATTER_ND_OPERATOR_DESC scatterNd{};
  DML_SCATTER_OPERATOR_DESC scatterElements{};
  VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC scatterNdReduce{};
  VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC scatterElementsReduce{};
  DML_OPERATOR_DESC desc{};
  bool skipDevice = false;           // the output is empty or a copy of the input
  bool outputStartsAsInput = false;  // a view: the output is the input outside it
  uint64_t outputBytes = 0;          // the output array's (the .npy file's data)
};

// Checks the arrays against the ONNX operator and fills mapping. Returns "" or the error.
std::string MapOnnxOperator(const RunArgs& a, const Named& in, const Named& idx, const Named* upd,
                            OnnxMapping* m) {
  for (const Named* n : {&in, &idx, upd}) {
    if (!n) continue;
    if (n->rank() > 8)
      return n->path + ": rank is " + std::to_string(n->rank()) + " (shape " + n->Shape() +
             "), expected at most 8 (DirectML tensors have at most 8 dimensions)";
    // More than 2^32-1 elements is for the library to refuse (or, one day, run).
    for (size_t i = 0; i < n->rank(); ++i)
      if (n->dim(i) > UINT32_MAX)
        return n->path + ": shape[" + std::to_string(i) + "] is " + std::to_string(n->dim(i)) +
               ", expected at most 4294967295";
  }
  npy::DType it = idx.array.dtype;
  if (it != npy::DType::Int32 && it != npy::DType::Int64 && it != npy::DType::UInt32 &&
      it != npy::DType::UInt64)
    return idx.path + ": dtype is " + npy::DTypeName(it) +
           ", expected an index type: int32, int64, uint32 or uint64";
  if (upd && upd->array.dtype != in.array.dtype)
    return upd->path + ": dtype is " + npy::DTypeName(upd->array.dtype) + ", expected " +
           npy::DTypeName(in.array.dtype) + " (the dtype of " + in.path + ")";

  size_t r = in.rank(), q = idx.rank();
  const Shape& is = in.array.shape;
  const Shape& xs = idx.array.shape;
  Shape inView = is;
  if (a.op == "gather") {
    // DML_OPERATOR_GATHER with IndexDimensions q: input.shape[:axis] + indices.shape +
    // input.shape[axis+1:], rank r - 1 + q; the input is padded to D dimensions with leading 1s
    // (which DirectML drops again), so Axis moves by D - r.
    if (r < 1) return in.path + ": rank is 0, expected at least 1 for gather";
    int64_t axis = a.axis < 0 ? a.axis + int64_t(r) : a.axis;
    if (axis < 0 || axis >= int64_t(r))
      return "--axis is " + std::to_string(a.axis) + ", expected " + std::to_string(-int64_t(r)) +
             " to " + std::to_string(r - 1) + " (" + in.path + " has rank " + std::to_string(r) +
             ")";
    const size_t A = static_cast<size_t>(axis);
    m->outputShape = Concat(Concat(Slice(is, 0, A), xs), Slice(is, A + 1, r));
    if (m->outputShape.size() > 8)
      return "the output would have rank " + std::to_string(m->outputShape.size()) + " (shape " +
             npy::ShapeString(m->outputShape) + "), expected at most 8 (DirectML's limit)";
    m->D = std::max({r, q, m->outputShape.size(), size_t(1)});
    m->gather.Axis = static_cast<UINT>(A + (m->D - r));
    m->gather.IndexDimensions = static_cast<UINT>(q);
    m->desc = {DML_OPERATOR_GATHER, &m->gather};
  } else if (a.op == "gather-elements" || a.op == "scatter-elements") {
    if (r < 1) return in.path + ": rank is 0, expected at least 1 for " + a.op;
    if (q != r)
      return idx.path + ": rank is " + std::to_string(q) + " (shape " + idx.Shape() +
             "), expected " + std::to_string(r) + " (the rank of " + in.path + ")";
    int64_t axis = a.axis < 0 ? a.axis + int64_t(r) : a.axis;
    if (axis < 0 || axis >= int64_t(r))
      return "--axis is " + std::to_string(a.axis) + ", expected " + std::to_string(-int64_t(r)) +
             " to " + std::to_string(r - 1) + " (" + in.path + " has rank " + std::to_string(r) +
             ")";
    for (size_t d = 0; d < r; ++d) {
      if (int64_t(d) != axis && xs[d] > is[d])
        return idx.path + ": shape[" + std::to_string(d) + "] is " + std::to_string(xs[d]) +
               ", expected at most " + std::to_string(is[d]) + " (shape[" + std::to_string(d) +
               "] of " + in.path + ")";
      if (int64_t(d) != axis) inView[d] = xs[d];  // ONNX allows smaller: a strided view
    }
    m->D = r;
    if (upd) {
      if (upd->array.shape != xs)
        return upd->path + ": shape is " + upd->Shape() + ", expected " + idx.Shape() +
               " (the shape of " + idx.path + ")";
      // DirectML's output has the input's sizes: with smaller indices both are the view of the
      // input that the indices cover, and the output starts as a copy of the whole input (set
      // below), whose elements outside the view Device::Run keeps.
      m->outputShape = is;
      m->outputView = inView;
      m->scatterElements.Axis = static_cast<UINT>(axis);
      m->desc = {DML_OPERATOR_SCATTER_ELEMENTS, &m->scatterElements};
    } else {
      m->outputShape = xs;
      m->gatherElements.Axis = static_cast<UINT>(axis);
      m->desc = {DML_OPERATOR_GATHER_ELEMENTS, &m->gatherElements};
    }
  } else {
    bool scatter = upd != nullptr;
    int64_t b = scatter ? 0 : a.batchDims;
    if (r < 1) return in.path + ": rank is 0, expected at least 1 for " + a.op;
    if (q < 1)
      return idx.path +
             ": rank is 0, expected at least 1 (index tuples lie along the "
             "last axis)";
    uint64_t k = xs[q - 1];
    if (b < 0 || b >= int64_t(std::min(q, r)))
      return "--batch-dims is " + std::to_string(b) + ", expected 0 to " +
             std::to_string(int64_t(std::min(q, r)) - 1) + " (less than the ranks of " + in.path +
             " and " + idx.path + ")";
    size_t B = static_cast<size_t>(b);
    if (k < 1 || k > r - B)
      return idx.path + ": shape[-1] (the index tuple size) is " + std::to_string(k) +
             ", expected 1 to " + std::to_string(r - B) + " (the rank of " + in.path +
             (B ? " minus --batch-dims)" : ")");
    for (size_t d = 0; d < B; ++d)
      if (xs[d] != is[d])
        return idx.path + ": shape[" + std::to_string(d) + "] is " + std::to_string(xs[d]) +
               ", expected " + std::to_string(is[d]) + " (a batch dimension: shape[" +
               std::to_string(d) + "] of " + in.path + ")";
    Shape slices = Concat(Slice(xs, 0, q - 1), Slice(is, B + k, r));
    m->D = std::max({r, q, slices.size(), size_t(1)});
    if (scatter) {
      if (upd->array.shape != slices)
        return upd->path + ": shape is " + upd->Shape() + ", expected " + npy::ShapeString(slices) +
               " (indices.shape[:-1] + input.shape[indices.shape[-1]:])";
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
  if (!ByteSize(m->outputShape, npy::ItemSize(in.array.dtype), &m->outputBytes))
    return "the output would have shape " + npy::ShapeString(m->outputShape) + " of " +
           npy::DTypeName(in.array.dtype) + ", more than 2^64 bytes";
  const uint64_t outCount = m->outputBytes / npy::ItemSize(in.array.dtype);
  if (upd ? upd->array.ElementCount() == 0 : outCount == 0) {
    m->skipDevice = true;
    return "";
  }
  for (const Named* n : {&in, &idx})
    if (n->array.ElementCount() == 0)
      return n->path + ": has no elements (shape " + n->Shape() + "), so no index into it is valid";

  m->inputs.resize(upd ? 3 : 2);
  std::string error = ToTensor(in, inView, m->D, &m->inputs[0]);
  if (error.empty()) error = ToTensor(idx, xs, m->D, &m->inputs[1]);
  if (error.empty() && upd) error = ToTensor(*upd, upd->array.shape, m->D, &m->inputs[2]);
  if (!error.empty()) return error;
  m->output.type = m->inputs[0].type;
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
  if (a.reduction != "none") {  // vkdml's reduce operators, with the same tensors
    VKDML_REDUCE_FUNCTION f = a.reduction == "add"   ? VKDML_REDUCE_FUNCTION_ADD
                              : a.reduction == "mul" ? VKDML_REDUCE_FUNCTION_MULTIPLY
                              : a.reduction == "max" ? VKDML_REDUCE_FUNCTION_MAX
                                                     : VKDML_REDUCE_FUNCTION_MIN;
    // bool moves as UINT8: NumPy's bool add is or (max), its mul and (min).
    if (in.array.dtype == npy::DType::Bool && f == VKDML_REDUCE_FUNCTION_ADD)
      f = VKDML_REDUCE_FUNCTION_MAX;
    if (in.array.dtype == npy::DType::Bool && f == VKDML_REDUCE_FUNCTION_MULTIPLY)
      f = VKDML_REDUCE_FUNCTION_MIN;
    const auto& nd = m->scatterNd;
    const auto& se = m->scatterElements;
    m->scatterNdReduce = {nd.InputTensor,
                          nd.IndicesTensor,
                          nd.UpdatesTensor,
                          nd.OutputTensor,
                          nd.InputDimensionCount,
                          nd.IndicesDimensionCount,
                          f};
    m->scatterElementsReduce = {se.InputTensor,  se.IndicesTensor, se.UpdatesTensor,
                                se.OutputTensor, se.Axis,          f};
    m->desc =
        m->desc.Type == DML_OPERATOR_SCATTER_ND
            ? DML_OPERATOR_DESC{VKDML_OPERATOR_SCATTER_ND_REDUCE, &m->scatterNdReduce}
            : DML_OPERATOR_DESC{VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE, &m->scatterElementsReduce};
  }
  return "";
}

// --check-indices on work that needs no device (an empty output or no updates): the first
// index in C order outside its range, in the words of the device's check. "" if none.
std::string CheckIndicesOnHost(const RunArgs& a, const Named& in, const Named& idx) {
  const npy::Array& c = idx.array;  // read in place, in C order through its strides
  const Shape& is = in.array.shape;
  const Shape& xs = c.shape;
  const Shape strides = c.Strides();
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
    std::memcpy(&u, c.data.get() + at * size, size);
    int64_t v = size == 4 ? int64_t(int32_t(uint32_t(u))) : int64_t(u);
    bool bad = isSigned ? (v < -int64_t(n) || v >= int64_t(n)) : u >= n;
    if (!bad) continue;
    std::string coords;
    for (size_t d = 0; d < xs.size(); ++d) coords += (d ? "," : "") + std::to_string(pos[d]);
    std::string range = n == 0     ? "(none: that dimension of " + in.path + " is 0)"
                        : isSigned ? "[-" + std::to_string(n) + ", " + std::to_string(n - 1) + "]"
                                   : "[0, " + std::to_string(n - 1) + "]";
    return idx.path + ": indices[" + (xs.empty() ? "()" : coords) + "] is " +
           (isSigned ? std::to_string(v) : std::to_string(u)) + ", outside the valid range " +
           range;
  }
  return "";
}

}  // namespace

int RunMain(int argc, char** argv) {
  RunArgs a;
  int status = ParseRunArgs(argc, argv, &a);
  if (status < 0) status = CheckOperator(a);
  if (status >= 0) return status;

  // The inputs, mapped once their headers and sizes agree; then the operator, checked against
  // them. No output exists yet.
  Named in{a.input, {}}, idx{a.indices, {}}, upd{a.updates, {}};
  std::string error;
  for (Named* n : {&in, &idx, &upd})
    if (!n->path.empty() && !npy::Read(n->path, &n->array, &error)) return Error(error);
  const Named* updates = a.updates.empty() ? nullptr : &upd;
  OnnxMapping mapping;
  error = MapOnnxOperator(a, in, idx, updates, &mapping);
  if (!error.empty()) return Error(error);

  npy::PendingFile file(a.output);
  if (!file.Open(&error)) return Error(error);
  const std::string header = npy::HeaderBytes(in.array.dtype, mapping.outputShape, false);
  const uint64_t bytes = mapping.outputBytes;
  uint8_t* out = nullptr;
  if (mapping.skipDevice) {
    Result r = CheckDeviceIndex(static_cast<int>(a.device));  // checked even when not used
    if (!r) return Error(r.message, ExitStatus(r));
    if (a.checkIndices) {
      error = CheckIndicesOnHost(a, in, idx);
      if (!error.empty()) return Error(error, kExitBadInput);
    }
    if (!(out = file.Map(header.size() + bytes, &error))) return Error(error);
    if (bytes) npy::CopyToCOrder(in.array, out + header.size());  // a scatter without updates
  } else {
    // The whole operator is validated and compiled before the output takes any memory: a
    // refused operator costs nothing, however large its output would be.
    std::unique_ptr<Device> device;
    Result r = OpenDevice(static_cast<int>(a.device), &device);
    if (!r) return Error(r.message, ExitStatus(r));
    const UINT flags = (a.checkIndices ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                       (a.deterministic ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
    std::unique_ptr<CompiledOperator> compiled;
    r = Prepare(*device, mapping.desc, flags, &compiled);
    if (!r) return Error(r.message, ExitStatus(r));
    // The output file, mapped: the device's results land in it directly. TotalTensorSizeInBytes
    // may round the data up to 4 bytes; Commit cuts the file to the array's size.
    const uint64_t total = std::max<uint64_t>(compiled->Op().OutputSize(0), bytes);
    if (!(out = file.Map(header.size() + total, &error))) return Error(error);
    if (mapping.outputStartsAsInput) npy::CopyToCOrder(in.array, out + header.size());
    std::vector<HostTensor*> inputs;
    for (HostTensor& t : mapping.inputs) inputs.push_back(&t);
    r = RunPrepared(*device, *compiled, inputs, out + header.size());
    if (r.status == Status::IndexOutOfRange)
      return Error(IndexMessage(r.message, mapping.D, idx.rank(), idx.path), kExitBadInput);
    if (!r) return Error(r.message, ExitStatus(r));
  }
  std::memcpy(out, header.data(), header.size());
  if (!file.Commit(header.size() + bytes, &error)) return Error(error);
  return 0;
}

}  // namespace cli
