#include "ops.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "npy.h"

namespace cli {

using namespace vkdml;

const DML_TENSOR_DESC* HostTensor::Desc() {
  UINT64 total = CalcBufferTensorSize(type, static_cast<UINT>(sizes.size()), sizes.data(),
                                      strides.empty() ? nullptr : strides.data());
  if (bytes.size() < total) bytes.resize(total, 0);
  buffer_ = {type,
             DML_TENSOR_FLAG_NONE,
             static_cast<UINT>(sizes.size()),
             sizes.data(),
             strides.empty() ? nullptr : strides.data(),
             total,
             0};
  desc_ = {DML_TENSOR_TYPE_BUFFER, &buffer_};
  return &desc_;
}

Result CheckDeviceIndex(int index) {
  if (index < 0) return {};
  std::vector<DeviceInfo> devices;
  Result r = EnumerateDevices(&devices);
  if (!r) return r;
  if (static_cast<size_t>(index) >= devices.size())
    return {Status::InvalidArgument,
            "--device is " + std::to_string(index) + ", expected 0 to " +
                std::to_string(int(devices.size()) - 1) + " (" + std::to_string(devices.size()) +
                (devices.size() == 1 ? " device" : " devices") + "; see `vkdml devices`)"};
  return {};
}

Result OpenDevice(int index, std::unique_ptr<Device>* out) {
  Result r = CheckDeviceIndex(index);
  if (!r) return r;
  DeviceDesc desc;
  desc.physicalDeviceIndex = index;
  return CreateDevice(desc, out);
}

Result Execute(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               const std::vector<HostTensor*>& inputs, HostTensor* output) {
  std::unique_ptr<Operator> op;
  Result r = device.CreateOperator(desc, &op);
  if (!r) return r;
  std::unique_ptr<CompiledOperator> compiled;
  r = device.CompileOperator(*op, flags, &compiled);
  if (!r) return r;
  std::vector<const void*> in;
  for (HostTensor* t : inputs) in.push_back(t->bytes.data());
  output->bytes.resize(std::max<size_t>(output->bytes.size(), op->OutputSize(0)));
  return device.Run(*compiled, in, {output->bytes.data()});
}

int ExitStatus(const Result& r) {
  return r.status == Status::InvalidArgument || r.status == Status::IndexOutOfRange ? kExitBadInput
                                                                                    : kExitDevice;
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos)
    return false;
  *out = std::stoll(text);
  return true;
}

namespace {

const char kRunUsage[] =
    "usage: vkdml run OP --input IN.npy --indices IDX.npy [--updates UPD.npy] [--axis N]\n"
    "                 [--batch-dims N] [--reduction none|add|mul|min|max] --output OUT.npy\n"
    "                 [--device N] [--check-indices]\n"
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
    "  --reduction: none only (DirectML's scatters have no reduction)\n"
    "Options:\n"
    "  --device N         Vulkan device index from `vkdml devices` (default: the first\n"
    "                     discrete GPU, else the first device)\n"
    "  --check-indices    fail (exit 2) on the first out-of-range index instead of clamping\n"
    "Data types: bool, int8..int64, uint8..uint64, float16, float32, float64; indices are\n"
    "int32, int64, uint32 or uint64. Negative indices count from the end; out-of-range\n"
    "indices are clamped unless --check-indices. Exit status: 0 ok, 2 bad input, 1 device\n"
    "failure; OUT is only written on success.\n";

struct RunArgs {
  std::string op, input, indices, updates, output, reduction = "none";
  int64_t axis = 0, batchDims = 0, device = -1;
  bool haveAxis = false, haveBatchDims = false, checkIndices = false;
};

int Fail(const std::string& message, int status = kExitBadInput) {
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
    if (arg == "--check-indices") {
      a->checkIndices = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!a->op.empty()) return Fail("unexpected argument '" + arg + "' (see --help)");
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
      return Fail(arg + " needs a value (see --help)");
    }
    int64_t* number = arg == "--axis"         ? &a->axis
                      : arg == "--batch-dims" ? &a->batchDims
                      : arg == "--device"     ? &a->device
                                              : nullptr;
    if (number) {
      if (!ParseInt(value, number)) return Fail(arg + " is '" + value + "', expected an integer");
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
      return Fail("unknown option " + arg + " (see --help)");
    }
  }
  return -1;
}

// Checks the operator and which options apply to it; returns -1 to go on.
int CheckOperator(const RunArgs& a) {
  const std::string& op = a.op;
  if (op.empty())
    return Fail(
        "no operator given, expected one of gather, gather-elements, "
        "gather-nd, scatter-elements, scatter-nd (see --help)");
  if (op != "gather" && op != "gather-nd" && op != "gather-elements" && op != "scatter-nd" &&
      op != "scatter-elements")
    return Fail("unknown operator '" + op +
                "', expected one of gather, gather-elements, "
                "gather-nd, scatter-elements, scatter-nd");
  bool scatter = op == "scatter-nd" || op == "scatter-elements";
  bool elements = op == "gather-elements" || op == "scatter-elements";
  if (a.reduction != "none") {
    if (a.reduction != "add" && a.reduction != "mul" && a.reduction != "min" &&
        a.reduction != "max")
      return Fail("--reduction is '" + a.reduction + "', expected none, add, mul, min or max");
    if (!scatter) return Fail("--reduction does not apply to " + op);
    return Fail("operator '" + op + "' with --reduction " + a.reduction + " (ONNX " +
                (op == "scatter-nd" ? "ScatterND" : "ScatterElements") + " reduction='" +
                a.reduction +
                "') is not supported: DirectML's SCATTER and SCATTER_ND have no reduction, so "
                "vkdml has none (only --reduction none)");
  }
  if (a.haveAxis && !elements && op != "gather") return Fail("--axis does not apply to " + op);
  if (a.haveBatchDims && op != "gather-nd") return Fail("--batch-dims does not apply to " + op);
  if (!a.updates.empty() && !scatter) return Fail("--updates does not apply to " + op);
  if (a.input.empty()) return Fail("--input is required");
  if (a.indices.empty()) return Fail("--indices is required");
  if (scatter && a.updates.empty()) return Fail("--updates is required for " + op);
  if (a.output.empty()) return Fail("--output is required");
  if (a.device < -1 || a.device > 1000000)
    return Fail("--device is " + std::to_string(a.device) +
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

// The tensor for an array seen with `view` sizes (the array's own shape unless a GatherElements
// view) and the array's strides, right-aligned into D dimensions.
HostTensor ToTensor(const npy::Array& a, const Shape& view, size_t D) {
  HostTensor t;
  t.type = DataType(a.dtype);
  Shape strides = a.Strides();
  size_t lead = D - view.size();
  t.sizes.assign(lead, 1);
  t.strides.assign(lead, static_cast<UINT>(std::max<uint64_t>(a.ElementCount(), 1)));
  for (size_t i = 0; i < view.size(); ++i) {
    t.sizes.push_back(static_cast<UINT>(view[i]));
    t.strides.push_back(static_cast<UINT>(strides[i]));
  }
  if (view == a.shape && !a.fortranOrder) t.strides.clear();  // packed
  t.bytes = a.data;
  return t;
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

// The operator, mapped onto DirectML: tensors in binding order and the output's ONNX shape.
struct Plan {
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
  DML_OPERATOR_DESC desc{};
  bool skipDevice = false;  // the output is empty or a copy of the input
};

// Checks the arrays against the ONNX operator and fills plan. Returns "" or the error.
std::string MakePlan(const RunArgs& a, const Named& in, const Named& idx, const Named* upd,
                     Plan* p) {
  for (const Named* n : {&in, &idx, upd}) {
    if (!n) continue;
    if (n->rank() > 8)
      return n->path + ": rank is " + std::to_string(n->rank()) + " (shape " + n->Shape() +
             "), expected at most 8 (DirectML tensors have at most 8 dimensions)";
    if (n->array.ElementCount() > UINT32_MAX)
      return n->path + ": has " + std::to_string(n->array.ElementCount()) +
             " elements, expected at most 4294967295 (DirectML's limit)";
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
    p->outputShape = Concat(Concat(Slice(is, 0, A), xs), Slice(is, A + 1, r));
    if (p->outputShape.size() > 8)
      return "the output would have rank " + std::to_string(p->outputShape.size()) + " (shape " +
             npy::ShapeString(p->outputShape) + "), expected at most 8 (DirectML's limit)";
    p->D = std::max({r, q, p->outputShape.size(), size_t(1)});
    p->gather.Axis = static_cast<UINT>(A + (p->D - r));
    p->gather.IndexDimensions = static_cast<UINT>(q);
    p->desc = {DML_OPERATOR_GATHER, &p->gather};
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
    p->D = r;
    if (upd) {
      if (upd->array.shape != xs)
        return upd->path + ": shape is " + upd->Shape() + ", expected " + idx.Shape() +
               " (the shape of " + idx.path + ")";
      // DirectML's output has the input's sizes: with smaller indices both are the view of the
      // input that the indices cover, and the output starts as a copy of the whole input (set
      // below), whose elements outside the view Device::Run keeps.
      p->outputShape = is;
      p->outputView = inView;
      p->scatterElements.Axis = static_cast<UINT>(axis);
      p->desc = {DML_OPERATOR_SCATTER_ELEMENTS, &p->scatterElements};
    } else {
      p->outputShape = xs;
      p->gatherElements.Axis = static_cast<UINT>(axis);
      p->desc = {DML_OPERATOR_GATHER_ELEMENTS, &p->gatherElements};
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
    p->D = std::max({r, q, slices.size(), size_t(1)});
    if (scatter) {
      if (upd->array.shape != slices)
        return upd->path + ": shape is " + upd->Shape() + ", expected " + npy::ShapeString(slices) +
               " (indices.shape[:-1] + input.shape[indices.shape[-1]:])";
      p->outputShape = is;
      p->scatterNd.InputDimensionCount = static_cast<UINT>(r);
      p->scatterNd.IndicesDimensionCount = static_cast<UINT>(q);
      p->desc = {DML_OPERATOR_SCATTER_ND, &p->scatterNd};
    } else {
      if (slices.size() > 8)
        return "the output would have rank " + std::to_string(slices.size()) + " (shape " +
               npy::ShapeString(slices) + "), expected at most 8 (DirectML's limit)";
      p->outputShape = slices;
      p->gatherNd.InputDimensionCount = static_cast<UINT>(r);
      p->gatherNd.IndicesDimensionCount = static_cast<UINT>(q);
      p->gatherNd.BatchDimensionCount = static_cast<UINT>(B);
      p->desc = {DML_OPERATOR_GATHER_ND1, &p->gatherNd};
    }
  }
  if (p->D > 8)
    return "the operator needs " + std::to_string(p->D) +
           " dimensions, expected at most 8 (DirectML's limit)";

  // DirectML has no empty tensors: a gather with an empty output needs no device, and neither
  // does a scatter without updates. Otherwise an empty input means that no index can be valid.
  uint64_t outCount = 1;
  for (uint64_t d : p->outputShape) outCount *= d;
  if (upd ? upd->array.ElementCount() == 0 : outCount == 0) {
    p->skipDevice = true;
    return "";
  }
  for (const Named* n : {&in, &idx})
    if (n->array.ElementCount() == 0)
      return n->path + ": has no elements (shape " + n->Shape() + "), so no index into it is valid";

  p->inputs.push_back(ToTensor(in.array, inView, p->D));
  p->inputs.push_back(ToTensor(idx.array, xs, p->D));
  if (upd) p->inputs.push_back(ToTensor(upd->array, upd->array.shape, p->D));
  p->output.type = p->inputs[0].type;
  p->output.sizes.assign(p->D - p->outputShape.size(), 1);
  if (p->outputView.empty() || p->outputView == p->outputShape) {
    for (uint64_t d : p->outputShape) p->output.sizes.push_back(static_cast<UINT>(d));
  } else {
    // A view of the row-major output: the view's sizes, the whole output's strides.
    p->output.strides.assign(p->D - p->outputShape.size(), static_cast<UINT>(outCount));
    uint64_t stride = outCount;
    for (size_t d = 0; d < p->outputShape.size(); ++d) {
      stride /= p->outputShape[d];
      p->output.sizes.push_back(static_cast<UINT>(p->outputView[d]));
      p->output.strides.push_back(static_cast<UINT>(stride));
    }
    p->output.bytes = npy::ToCOrder(in.array).data;
  }
  const DML_TENSOR_DESC* descs[4];
  for (size_t i = 0; i < p->inputs.size(); ++i) descs[i] = p->inputs[i].Desc();
  const DML_TENSOR_DESC* out = p->output.Desc();
  p->gather.InputTensor = p->gatherNd.InputTensor = p->gatherElements.InputTensor =
      p->scatterNd.InputTensor = p->scatterElements.InputTensor = descs[0];
  p->gather.IndicesTensor = p->gatherNd.IndicesTensor = p->gatherElements.IndicesTensor =
      p->scatterNd.IndicesTensor = p->scatterElements.IndicesTensor = descs[1];
  if (upd) p->scatterNd.UpdatesTensor = p->scatterElements.UpdatesTensor = descs[2];
  p->gather.OutputTensor = p->gatherNd.OutputTensor = p->gatherElements.OutputTensor =
      p->scatterNd.OutputTensor = p->scatterElements.OutputTensor = out;
  return "";
}

// --check-indices on work that needs no device (an empty output or no updates): the first
// index in C order outside its range, in the words of the device's check. "" if none.
std::string CheckIndicesOnHost(const RunArgs& a, const Named& in, const Named& idx) {
  const npy::Array c = npy::ToCOrder(idx.array);
  const Shape& is = in.array.shape;
  const Shape& xs = c.shape;
  const bool nd = a.op == "gather-nd" || a.op == "scatter-nd";
  const size_t B = a.op == "gather-nd" ? static_cast<size_t>(a.batchDims) : 0;
  const int64_t axis = a.axis < 0 ? a.axis + int64_t(is.size()) : a.axis;  // checked by MakePlan
  const uint64_t k = nd ? xs.back() : 1;
  const bool isSigned = c.dtype == npy::DType::Int32 || c.dtype == npy::DType::Int64;
  const size_t size = npy::ItemSize(c.dtype);
  const uint64_t count = c.ElementCount();
  for (uint64_t e = 0; e < count; ++e) {
    const uint64_t n = nd ? is[B + e % k] : is[static_cast<size_t>(axis)];
    uint64_t u = 0;
    std::memcpy(&u, c.data.data() + e * size, size);
    int64_t v = size == 4 ? int64_t(int32_t(uint32_t(u))) : int64_t(u);
    bool bad = isSigned ? (v < -int64_t(n) || v >= int64_t(n)) : u >= n;
    if (!bad) continue;
    std::string coords;
    uint64_t rest = e;
    for (size_t d = xs.size(); d-- > 0;) {
      coords = std::to_string(rest % xs[d]) + (coords.empty() ? "" : ",") + coords;
      rest /= xs[d];
    }
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

  Named in{a.input, {}}, idx{a.indices, {}}, upd{a.updates, {}};
  std::string error;
  for (Named* n : {&in, &idx, &upd})
    if (!n->path.empty() && !npy::Read(n->path, &n->array, &error)) return Fail(error);
  const Named* updates = a.updates.empty() ? nullptr : &upd;
  Plan plan;
  error = MakePlan(a, in, idx, updates, &plan);
  if (!error.empty()) return Fail(error);

  npy::PendingFile file(a.output);
  if (!file.Open(&error)) return Fail(error);
  npy::Array result;
  result.dtype = in.array.dtype;
  result.shape = plan.outputShape;
  size_t bytes = static_cast<size_t>(result.ElementCount() * npy::ItemSize(result.dtype));
  if (plan.skipDevice) {
    Result r = CheckDeviceIndex(static_cast<int>(a.device));  // checked even when not used
    if (!r) return Fail(r.message, ExitStatus(r));
    if (a.checkIndices) {
      error = CheckIndicesOnHost(a, in, idx);
      if (!error.empty()) return Fail(error, kExitBadInput);
    }
    if (bytes) result.data = npy::ToCOrder(in.array).data;  // a scatter without updates
  } else {
    std::unique_ptr<Device> device;
    Result r = OpenDevice(static_cast<int>(a.device), &device);
    if (!r) return Fail(r.message, ExitStatus(r));
    std::vector<HostTensor*> inputs;
    for (HostTensor& t : plan.inputs) inputs.push_back(&t);
    r = Execute(*device, plan.desc, a.checkIndices ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0, inputs,
                &plan.output);
    if (r.status == Status::IndexOutOfRange)
      return Fail(IndexMessage(r.message, plan.D, idx.rank(), idx.path), kExitBadInput);
    if (!r) return Fail(r.message, ExitStatus(r));
    result.data.assign(plan.output.bytes.begin(),
                       plan.output.bytes.begin() + static_cast<std::ptrdiff_t>(bytes));
  }
  if (!file.Commit(npy::Serialize(result), &error)) return Fail(error);
  return 0;
}

}  // namespace cli
