// vkdml._vkdml: the Python module's native part (pybind11). vkdml/__init__.py turns any host
// array into a NumPy array this part takes (native byte order, non-negative strides that are
// whole elements) and gives the functions their NumPy/ONNX signatures; here the operator is
// mapped onto DirectML exactly as `vkdml run` maps it (examples/cli/onnx_map.h), compiled once
// per device and descriptor, and run with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli.h"
#include "onnx_map.h"

namespace py = pybind11;
using namespace vkdml;

namespace {

// Python's exceptions for a Result: ValueError for bad input, IndexError for a checked index,
// MemoryError, and vkdml.UnsupportedError / vkdml.Error (a RuntimeError) for the rest.
PyObject* gError = nullptr;
PyObject* gUnsupported = nullptr;

[[noreturn]] void Throw(const Result& r) {
  switch (r.status) {
    case Status::InvalidArgument:
      throw py::value_error(r.message);
    case Status::IndexOutOfRange:
      throw py::index_error(r.message);
    case Status::OutOfMemory:
      PyErr_SetString(PyExc_MemoryError, r.message.c_str());
      throw py::error_already_set();
    case Status::Unsupported:
      PyErr_SetString(gUnsupported, r.message.c_str());
      throw py::error_already_set();
    default:
      PyErr_SetString(gError, r.message.c_str());
      throw py::error_already_set();
  }
}

void Check(const Result& r) {
  if (!r) Throw(r);
}

// NumPy's dtype names for the types vkdml moves.
const npy::DType kDTypes[] = {npy::DType::Bool,    npy::DType::Int8,    npy::DType::Int16,
                              npy::DType::Int32,   npy::DType::Int64,   npy::DType::UInt8,
                              npy::DType::UInt16,  npy::DType::UInt32,  npy::DType::UInt64,
                              npy::DType::Float16, npy::DType::Float32, npy::DType::Float64};

npy::DType ParseDType(const std::string& name, const std::string& what) {
  for (npy::DType t : kDTypes)
    if (name == npy::DTypeName(t)) return t;
  std::string names;
  for (npy::DType t : kDTypes) names += std::string(names.empty() ? "" : ", ") + npy::DTypeName(t);
  throw py::type_error(what + ": dtype is " + name + ", expected one of " + names);
}

// A Device and what the module keeps with it: compiled operators by descriptor, and the
// validation layer's messages when asked for.
struct DeviceState {
  std::unique_ptr<Device> device;
  std::mutex mutex;  // guards the two below
  std::unordered_map<std::string, std::shared_ptr<CompiledOperator>> compiled;
  std::vector<std::string> messages;
  PFN_vkCmdCopyBuffer cmdCopyBuffer = nullptr;
  PFN_vkCmdPipelineBarrier cmdPipelineBarrier = nullptr;

  ~DeviceState() {  // compiled operators go before their device, the mutex after it
    compiled.clear();
    device.reset();
  }

  // The compiled operator for desc and flags, from the cache when `key` has been seen.
  std::shared_ptr<CompiledOperator> Compile(const std::string& key, const DML_OPERATOR_DESC& desc,
                                            UINT flags) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = compiled.find(key);
      if (it != compiled.end()) return it->second;
    }
    std::unique_ptr<CompiledOperator> op;
    Result r;
    {
      py::gil_scoped_release release;
      r = cli::Prepare(*device, desc, flags, &op);
    }
    Check(r);
    std::lock_guard<std::mutex> lock(mutex);
    if (compiled.size() >= 256) compiled.clear();  // a bound on what shapes seen once keep
    return compiled.emplace(key, std::move(op)).first->second;
  }
};

class PyDevice {
 public:
  PyDevice(int index, bool validation) : state_(std::make_shared<DeviceState>()) {
    Result r = cli::CheckDeviceIndex(index);
    if (!r) {
      r.message.replace(0, r.message.find(' '), "index");  // "--device is 7, ..." -> "index is"
      Throw(r);
    }
    DeviceDesc desc;
    desc.physicalDeviceIndex = index;
    desc.enableValidation = validation;
    DeviceState* state = state_.get();
    desc.onValidationMessage = [state](const char* message) {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->messages.emplace_back(message);
    };
    {
      py::gil_scoped_release release;
      r = CreateDevice(desc, &state_->device);
    }
    Check(r);
    Device& d = *state_->device;
    state_->cmdCopyBuffer =
        reinterpret_cast<PFN_vkCmdCopyBuffer>(d.GetDeviceProcAddr()(d.Handle(), "vkCmdCopyBuffer"));
    state_->cmdPipelineBarrier = reinterpret_cast<PFN_vkCmdPipelineBarrier>(
        d.GetDeviceProcAddr()(d.Handle(), "vkCmdPipelineBarrier"));
  }

  const std::shared_ptr<DeviceState>& State() const { return state_; }
  const DeviceInfo& Info() const { return state_->device->Info(); }

  bool Supports(const std::string& dtype) const {
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {cli::DataType(ParseDType(dtype, "dtype"))};
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {};
    Check(state_->device->CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q,
                                              sizeof d, &d));
    return d.IsSupported != 0;
  }

  bool SupportsReduction(const std::string& dtype, const std::string& reduction) const {
    const npy::DType t = ParseDType(dtype, "dtype");
    VKDML_REDUCE_FUNCTION f = VKDML_REDUCE_FUNCTION_MIN;
    if (!cli::ReduceFunction(reduction, t, &f))
      throw py::value_error("reduction is '" + reduction +
                            "', expected add, mul, max, min or mean" +
                            (reduction == "mean" ? " (mean divides: not on bool)" : ""));
    VKDML_FEATURE_QUERY_REDUCTION_SUPPORT q = {cli::DataType(t), f};
    VKDML_FEATURE_DATA_REDUCTION_SUPPORT d = {};
    Check(state_->device->CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof q, &q,
                                              sizeof d, &d));
    return d.IsSupported != 0;
  }

  // The largest tensor `function` (a module function's name) takes on this device, in bytes;
  // None where the large path takes any size (VKDML_FEATURE_TENSOR_SIZE: embedding_bag's bounds
  // all but its table, gather_block_quantized's its scales and zero points).
  py::object MaxTensorBytes(const std::string& function) const {
    static const std::pair<const char*, DML_OPERATOR_TYPE> kFunctions[] = {
        {"gather", DML_OPERATOR_GATHER},
        {"gather_elements", DML_OPERATOR_GATHER_ELEMENTS},
        {"gather_nd", DML_OPERATOR_GATHER_ND1},
        {"scatter_elements", DML_OPERATOR_SCATTER_ELEMENTS},
        {"scatter_nd", DML_OPERATOR_SCATTER_ND},
        {"dequantize_rows", VKDML_OPERATOR_GATHER_QUANTIZED_ROWS},
        {"quantize_rows", VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS},
        {"gather_block_quantized", VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED},
        {"embedding_bag", VKDML_OPERATOR_EMBEDDING_BAG},
        {"moe_permute", VKDML_OPERATOR_MOE_PERMUTE},
        {"moe_unpermute", VKDML_OPERATOR_MOE_UNPERMUTE},
        {"paged_cache_write", VKDML_OPERATOR_PAGED_CACHE_WRITE},
        {"paged_gather", VKDML_OPERATOR_PAGED_GATHER},
        {"segment_csr", VKDML_OPERATOR_SEGMENT_REDUCE},
        {"segment_coo", VKDML_OPERATOR_SEGMENT_REDUCE},
        {"segment_reduce", VKDML_OPERATOR_SEGMENT_REDUCE}};
    std::string names;
    for (const auto& f : kFunctions) {
      if (function != f.first) {
        names += std::string(names.empty() ? "" : ", ") + f.first;
        continue;
      }
      VKDML_FEATURE_QUERY_TENSOR_SIZE q = {f.second};
      VKDML_FEATURE_DATA_TENSOR_SIZE d = {};
      Check(state_->device->CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof q, &q, sizeof d,
                                                &d));
      return d.MaxTensorBytes == UINT64_MAX ? py::object(py::none())
                                            : py::object(py::int_(d.MaxTensorBytes));
    }
    throw py::value_error("function is '" + function + "', expected one of " + names);
  }

  std::vector<std::string> TakeMessages() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::vector<std::string> out;
    out.swap(state_->messages);
    return out;
  }

 private:
  std::shared_ptr<DeviceState> state_;
};

// An array in a device buffer, row-major. The buffer holds at least 4 bytes and a multiple of
// 4: DirectML's TotalTensorSizeInBytes of the array.
class PyTensor {
 public:
  PyTensor(py::object device, std::shared_ptr<DeviceState> state, npy::DType dtype,
           cli::Shape shape)
      : device_(std::move(device)), state_(std::move(state)) {
    ref_.dtype = dtype;
    ref_.strides = cli::RowMajorStrides(shape);
    ref_.shape = std::move(shape);
    const UINT64 size = std::max<UINT64>((Bytes() + 3) / 4 * 4, 4);
    Result r;
    {
      py::gil_scoped_release release;
      r = state_->device->CreateBuffer(size, Buffer::Memory::DeviceLocal, &buffer_);
    }
    Check(r);
  }

  uint64_t Bytes() const { return ref_.ElementCount() * npy::ItemSize(ref_.dtype); }
  npy::DType DType() const { return ref_.dtype; }
  const cli::Shape& Shape() const { return ref_.shape; }
  const std::shared_ptr<DeviceState>& State() const { return state_; }
  const py::object& DeviceObject() const { return device_; }  // the vkdml.Device
  Buffer& Buf() { return *buffer_; }

  void Write(const void* data) {
    Result r;
    {
      py::gil_scoped_release release;
      if (Bytes()) r = buffer_->Write(0, data, Bytes());
    }
    Check(r);
  }
  void Read(void* data) {
    Result r;
    {
      py::gil_scoped_release release;
      if (Bytes()) r = buffer_->Read(0, data, Bytes());
    }
    Check(r);
  }

  // The array as the mapping sees it (row-major, no host data), called `name`.
  cli::ArrayRef Ref(const std::string& name) const {
    cli::ArrayRef ref = ref_;
    ref.name = name;
    return ref;
  }

 private:
  py::object device_;
  std::shared_ptr<DeviceState> state_;  // outlives buffer_ (members go in reverse order)
  cli::ArrayRef ref_;                   // dtype, shape and row-major strides; no name or host data
  std::unique_ptr<Buffer> buffer_;
};

py::tuple ShapeTuple(const cli::Shape& shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t[i] = py::int_(shape[i]);
  return t;
}

// A new NumPy array of dtype and shape over the first bytes of `raw` (which may be longer).
py::array ViewAs(const py::array& raw, npy::DType dtype, const cli::Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::dtype dt = py::dtype::from_args(py::str(npy::DTypeName(dtype)));
  return py::array(dt, dims, {}, raw.data(), raw);
}

py::array Uninitialised(uint64_t bytes) {
  return py::array_t<uint8_t>(static_cast<py::ssize_t>(std::max<uint64_t>(bytes, 1)));
}

// A host NumPy array as the mapping sees it (its strides already whole, non-negative elements).
cli::ArrayRef HostRef(const py::array& a, const std::string& name) {
  cli::ArrayRef ref;
  ref.name = name;
  ref.dtype = ParseDType(py::str(a.dtype().attr("name")), name);
  const size_t item = npy::ItemSize(ref.dtype);
  uint64_t extent = item;  // bytes from the first element to the end of the last
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    ref.shape.push_back(static_cast<uint64_t>(a.shape(d)));
    ref.strides.push_back(static_cast<uint64_t>(a.strides(d)) / item);
    extent += (ref.shape.back() ? ref.shape.back() - 1 : 0) * static_cast<uint64_t>(a.strides(d));
  }
  ref.fortranOrder =
      a.ndim() > 1 && (a.flags() & py::array::f_style) && !(a.flags() & py::array::c_style);
  ref.data = static_cast<const uint8_t*>(a.data());
  ref.readable = a.size() ? extent : 0;
  return ref;
}

// One of the operator's arguments: a device tensor, or a host array.
struct Arg {
  PyTensor* tensor = nullptr;
  py::array host;
  cli::ArrayRef ref;
};

Arg ToArg(const py::object& o, const std::string& name) {
  Arg a;
  if (py::isinstance<PyTensor>(o)) {
    a.tensor = o.cast<PyTensor*>();
    a.ref = a.tensor->Ref(name);
  } else {
    a.host = o.cast<py::array>();
    a.ref = HostRef(a.host, name);
  }
  return a;
}

// What tells compiled operators apart: everything MapOnnxOperator reads but the data.
std::string Key(const cli::OnnxOptions& o, UINT flags, const std::vector<Arg*>& args) {
  std::string key = o.op + "/" + o.reduction + "/" + std::to_string(o.axis) + "/" +
                    std::to_string(o.batchDims) + "/" + std::to_string(flags) + "/" +
                    std::to_string(o.outOfRange) + ":" + std::to_string(o.fillValue.UInt64) + "/" +
                    std::to_string(o.excludeSelf) + "/" + o.format + "/" +
                    std::to_string(int(o.dtype)) + "/" + o.mode + "/" +
                    std::to_string(o.includeLastOffset) + "/" +
                    (o.hasPadding ? std::to_string(o.paddingIdx) : "-") + "/" + o.blockType + ":" +
                    std::to_string(o.bits) + ":" + std::to_string(o.quantizeAxis) + ":" +
                    std::to_string(o.blockSize) + ":" + std::to_string(o.dimSize) + ":" +
                    std::to_string(o.hasInitial) + ":";
  for (uint64_t size : o.valuesShape) key += std::to_string(size) + ",";
  for (const Arg* a : args) {
    key += "|" + std::to_string(int(a->ref.dtype));
    for (size_t d = 0; d < a->ref.shape.size(); ++d)
      key += ":" + std::to_string(a->ref.shape[d]) + "*" + std::to_string(a->ref.strides[d]);
  }
  return key;
}

// A checked execution's failure, said of the indices argument.
[[noreturn]] void ThrowIndex(const Result& r, const cli::OnnxMapping& m, const Arg& idx) {
  if (r.status != Status::IndexOutOfRange) Throw(r);
  throw py::index_error(cli::IndexMessage(r.message, m.D, idx.ref.shape.size(), idx.ref.name,
                                          m.desc.Type == VKDML_OPERATOR_SEGMENT_REDUCE));
}

// embedding_bag's own arguments (RunOp's, for op "embedding-bag").
struct BagArgs {
  py::object offsets = py::none(), weights = py::none();
  std::string mode = "sum";
  bool includeLastOffset = false;
  py::object paddingIdx = py::none();
};

// gather_block_quantized's own arguments (RunOp's, for op "gather-block-quantized").
struct BlockArgs {
  py::object scales = py::none(), zeroPoints = py::none();
  std::string type = "uint8";
  int64_t bits = 4, quantizeAxis = 1, blockSize = 128;
  std::vector<uint64_t> valuesShape;  // empty: none given
};

// segment_csr, segment_coo and segment_reduce's own arguments (RunOp's, for the segment ops;
// segment_reduce's initial value is `fill`'s bytes).
struct SegArgs {
  int64_t dimSize = -1;  // segment-coo's segments; -1: the largest id plus 1
  bool hasInitial = false;
};

// Runs op on x, indices (and updates; embedding-bag: offsets and weights;
// gather-block-quantized: scales and zero points). Host arrays in: a new
// NumPy array out. Any device tensor in: the others are uploaded to its device, and the result
// is a device tensor (`out` if given, which may be x itself: in place).
py::object RunOp(const std::string& op, const std::string& label, py::object device, py::object x,
                 py::object indices, py::object updates, int64_t axis, int64_t batchDims,
                 const std::string& reduction, bool deterministic, bool checkIndices,
                 int outOfRange, const py::bytes& fill, bool includeSelf, py::object out,
                 const std::string& format, const std::string& dtype, const BagArgs& bag,
                 const BlockArgs& block, const SegArgs& seg) {
  cli::OnnxOptions o;
  o.dimSize = seg.dimSize;
  o.hasInitial = seg.hasInitial;
  o.blockType = block.type;
  o.bits = block.bits;
  o.quantizeAxis = block.quantizeAxis;
  o.blockSize = block.blockSize;
  o.valuesShape = block.valuesShape;
  o.mode = bag.mode;
  o.includeLastOffset = bag.includeLastOffset;
  o.hasPadding = !bag.paddingIdx.is_none();
  if (o.hasPadding) o.paddingIdx = bag.paddingIdx.cast<int64_t>();
  o.format = format;  // dequantize-rows (the mapping checks both)
  o.dtype = ParseDType(dtype, "dtype");
  o.excludeSelf = !includeSelf;  // with a reduction (vkdml/__init__.py checked)
  // vkdml/__init__.py checked both: FILL or DROP as the operator takes it, the fill value's
  // bytes those of an element of x's dtype.
  o.outOfRange = static_cast<VKDML_OUT_OF_RANGE_MODE>(outOfRange);
  const std::string fillBytes = fill;
  std::memcpy(o.fillValue.Bytes, fillBytes.data(), std::min<size_t>(fillBytes.size(), 8));
  if (seg.hasInitial) o.initial = o.fillValue;
  o.op = op;
  o.opLabel = label;
  o.axis = axis;
  o.batchDims = batchDims;
  o.reduction = reduction;
  o.axisLabel = "axis";
  o.batchDimsLabel = "batch_dims";
  const bool quantized = op == "dequantize-rows" || op == "quantize-rows";
  const bool isBag = op == "embedding-bag", isBlocks = op == "gather-block-quantized";
  const bool isSegment = cli::IsSegmentOp(op);
  Arg in = ToArg(x, quantized || isBag ? "table"
                    : isBlocks         ? "data"
                    : isSegment        ? (op == "segment-reduce" ? "data" : "src")
                                       : "x");
  Arg idx = ToArg(indices, "indices"), upd, off, weights, scales, zeroPoints;
  const bool zeroed = isBlocks && !block.zeroPoints.is_none();
  if (isBlocks) scales = ToArg(block.scales, "scales");
  if (zeroed) zeroPoints = ToArg(block.zeroPoints, "zero_points");
  const bool scatter = !updates.is_none(), weighted = !bag.weights.is_none();
  if (scatter) upd = ToArg(updates, quantized ? "rows" : "updates");
  if (isBag) off = ToArg(bag.offsets, "offsets");
  if (weighted) weights = ToArg(bag.weights, "per_sample_weights");
  const npy::DType it = idx.ref.dtype;
  if (it != npy::DType::Int32 && it != npy::DType::Int64 && it != npy::DType::UInt32 &&
      it != npy::DType::UInt64)
    throw py::type_error(std::string("indices: dtype is ") + npy::DTypeName(it) +
                         ", expected an integer type (int32, int64, uint32 or uint64; other "
                         "integer types are widened to int32)");
  if (scatter && upd.ref.dtype != in.ref.dtype && !quantized)
    throw py::type_error(std::string("updates: dtype is ") + npy::DTypeName(upd.ref.dtype) +
                         ", expected " + npy::DTypeName(in.ref.dtype) + " (the dtype of x)");

  // The device: a tensor argument's, else the one given.
  std::vector<Arg*> args = {&in, &idx};  // in binding order
  if (scatter) args.push_back(&upd);
  if (isBag) args.push_back(&off);
  if (weighted) args.push_back(&weights);
  if (isBlocks) args.push_back(&scales);
  if (zeroed) args.push_back(&zeroPoints);
  std::shared_ptr<DeviceState> state;
  for (Arg* a : args) {
    if (!a->tensor) continue;
    if (state && a->tensor->State() != state)
      throw py::value_error(a->ref.name +
                            " is a tensor on another device than the first tensor "
                            "argument; move it with Device.tensor(t.numpy())");
    state = a->tensor->State();
    device = a->tensor->DeviceObject();
  }
  const bool onDevice = state != nullptr;
  if (!state) state = device.cast<PyDevice&>().State();
  PyTensor* outTensor = nullptr;
  if (!out.is_none()) {
    if (!onDevice || !py::isinstance<PyTensor>(out))
      throw py::type_error("out: expected a vkdml.Tensor on the device of the tensor arguments");
    outTensor = out.cast<PyTensor*>();
    if (outTensor->State() != state)
      throw py::value_error("out: a tensor on another device than the tensor arguments");
  }
  // Host arrays beside a tensor go to its device first.
  std::vector<std::unique_ptr<PyTensor>> uploads;
  if (onDevice)
    for (Arg* a : args) {
      if (a->tensor) continue;
      py::array c = py::array::ensure(a->host, py::array::c_style);
      uploads.push_back(std::make_unique<PyTensor>(device, state, a->ref.dtype, a->ref.shape));
      uploads.back()->Write(c.data());
      a->tensor = uploads.back().get();
      a->ref = a->tensor->Ref(a->ref.name);
    }

  cli::OnnxMapping m;
  const std::string error =
      isSegment ? cli::MapSegmentReduce(o, in.ref, idx.ref, &m)
      : isBag
          ? cli::MapEmbeddingBag(o, in.ref, idx.ref, off.ref, weighted ? &weights.ref : nullptr, &m)
      : isBlocks ? cli::MapGatherBlockQuantized(o, in.ref, idx.ref, scales.ref,
                                                zeroed ? &zeroPoints.ref : nullptr, &m)
                 : cli::MapOnnxOperator(o, in.ref, idx.ref, scatter ? &upd.ref : nullptr, &m);
  if (!error.empty()) throw py::value_error(error);
  const UINT flags = (checkIndices ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                     (deterministic ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  if (outTensor && (outTensor->DType() != m.outputDType || outTensor->Shape() != m.outputShape))
    throw py::value_error("out: shape " + npy::ShapeString(outTensor->Shape()) + " " +
                          npy::DTypeName(outTensor->DType()) + ", expected " +
                          npy::ShapeString(m.outputShape) + " " + npy::DTypeName(m.outputDType));

  std::shared_ptr<CompiledOperator> compiled;
  if (!m.skipDevice) compiled = state->Compile(Key(o, flags, args), m.desc, flags);
  Result r;

  if (!onDevice) {  // host arrays: Device::Run straight from and into NumPy's memory
    const uint64_t total =
        std::max<uint64_t>(compiled ? compiled->Op().OutputSize(0) : 0, m.outputBytes);
    py::array raw = Uninitialised(total);
    uint8_t* dst = static_cast<uint8_t*>(raw.mutable_data());
    if (m.skipDevice) {
      if (checkIndices && !isBag && !isSegment) {  // (embedding-bag: no bags or entries, nothing
                                                   // read; a segment op: no output)
        const std::string bad = cli::CheckIndicesOnHost(o, in.ref, idx.ref);
        if (!bad.empty()) throw py::index_error(bad);
      }
      if (m.zeroOutput)
        std::memset(dst, 0, m.outputBytes);  // embedding-bag without entries
      else if (m.outputBytes)
        cli::CopyToCOrder(in.ref, dst);  // a scatter without updates
      return ViewAs(raw, m.outputDType, m.outputShape);
    }
    if (m.outputStartsAsInput) cli::CopyToCOrder(in.ref, dst);
    std::vector<cli::HostTensor*> inputs;
    for (cli::HostTensor& t : m.inputs) inputs.push_back(&t);
    {
      py::gil_scoped_release release;
      r = cli::RunPrepared(*state->device, *compiled, inputs, dst);
    }
    if (!r) ThrowIndex(r, m, idx);
    return ViewAs(raw, m.outputDType, m.outputShape);
  }

  // Device tensors: one submission, the output never leaves the device.
  std::unique_ptr<PyTensor> made;
  PyTensor* result = outTensor;
  if (!result) {
    made = std::make_unique<PyTensor>(device, state, m.outputDType, m.outputShape);
    result = made.get();
  }
  const bool inPlace = result == in.tensor;
  if (m.skipDevice && checkIndices && !isBag && !isSegment) {
    std::vector<uint8_t> host(idx.tensor->Bytes() + 8);
    idx.tensor->Read(host.data());
    cli::ArrayRef ref = idx.ref;
    ref.data = host.data();
    ref.readable = host.size();
    const std::string bad = cli::CheckIndicesOnHost(o, in.ref, ref);
    if (!bad.empty()) throw py::index_error(bad);
  }
  if (m.zeroOutput) {  // embedding-bag without entries: every bag 0
    const std::vector<uint8_t> zeros(result->Bytes(), 0);
    result->Write(zeros.data());
  }
  const bool copyInput =
      !inPlace && !m.zeroOutput && (m.skipDevice ? m.outputBytes != 0 : m.outputStartsAsInput);
  std::unique_ptr<BindingTable> table;
  if (!m.skipDevice) {
    Check(state->device->CreateBindingTable(*compiled, &table));
    std::vector<DML_BUFFER_BINDING> bindings;
    for (size_t i = 0; i < m.inputs.size(); ++i)
      bindings.push_back(args[i]->tensor->Buf().Binding(0, compiled->Op().InputSize(UINT(i))));
    Check(table->BindInputs(UINT(bindings.size()), bindings.data()));
    DML_BUFFER_BINDING output = result->Buf().Binding(0, compiled->Op().OutputSize(0));
    Check(table->BindOutputs(1, &output));
  }
  if (copyInput || table) {
    DeviceState* s = state.get();
    VkBuffer src = in.tensor->Buf().Handle(), dst = result->Buf().Handle();
    const VkDeviceSize bytes = in.tensor->Bytes();
    Device& dev = *state->device;
    BindingTable* t = table.get();
    Result recorded;
    {
      py::gil_scoped_release release;
      r = dev.Submit([&](VkCommandBuffer cmd) {
        if (copyInput) {
          const VkBufferCopy region = {0, 0, bytes};
          s->cmdCopyBuffer(cmd, src, dst, 1, &region);
          VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
          barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
          barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
          s->cmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                                nullptr);
        }
        if (t) recorded = dev.RecordDispatch(cmd, *t);
      });
    }
    Check(r);
    Check(recorded);
    if (t) {
      r = t->IndexStatus();
      if (!r) ThrowIndex(r, m, idx);
    }
  }
  if (made) return py::cast(std::move(made));
  return out;
}

// moe_permute and moe_unpermute's native part (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE): device
// tensors in binding order, row-major; `outputs` made by vkdml/__init__.py, written here. The
// descriptor's checks say what is wrong with a shape or dtype (ValueError).
void RunMoe(const std::string& op, const std::vector<PyTensor*>& inputs,
            const std::vector<PyTensor*>& outputs, uint32_t experts) {
  const bool permute = op == "permute";
  if (inputs.size() != (permute ? 2u : 3u) || outputs.size() != (permute ? 4u : 1u))
    throw py::value_error("run_moe: " + std::to_string(inputs.size()) + " inputs and " +
                          std::to_string(outputs.size()) + " outputs for " + op);
  std::vector<PyTensor*> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const std::shared_ptr<DeviceState> state = all[0]->State();
  for (PyTensor* t : all)
    if (t->State() != state) throw py::value_error("every tensor must be on one device");
  // Row-major tensors: sizes only, rank at least 1.
  std::vector<std::vector<UINT>> sizes(all.size());
  std::vector<DML_BUFFER_TENSOR_DESC> buffers(all.size());
  std::vector<DML_TENSOR_DESC> descs(all.size());
  std::string key = "moe/" + op + "/" + std::to_string(experts);
  for (size_t i = 0; i < all.size(); ++i) {
    for (uint64_t d : all[i]->Shape()) {
      if (d == 0 || d > 0xFFFFFFFFu)
        throw py::value_error("run_moe: a dimension of " + std::to_string(d) +
                              " (expected 1 to 2^32 - 1)");
      sizes[i].push_back(UINT(d));
    }
    if (sizes[i].empty()) sizes[i].push_back(1);
    DML_BUFFER_TENSOR_DESC& b = buffers[i];
    b.DataType = cli::DataType(all[i]->DType());
    b.DimensionCount = UINT(sizes[i].size());
    b.Sizes = sizes[i].data();
    b.TotalTensorSizeInBytes = CalcBufferTensorSize(b.DataType, b.DimensionCount, b.Sizes, nullptr);
    descs[i] = {DML_TENSOR_TYPE_BUFFER, &b};
    key += "|" + std::to_string(int(b.DataType));
    for (UINT d : sizes[i]) key += ":" + std::to_string(d);
  }
  VKDML_MOE_PERMUTE_OPERATOR_DESC p{&descs[0], &descs[1], nullptr, nullptr,
                                    nullptr,   nullptr,   experts};
  VKDML_MOE_UNPERMUTE_OPERATOR_DESC u{&descs[0], &descs[1], &descs[2], nullptr};
  if (permute) {
    p.OutputTensor = &descs[2];
    p.OffsetsTensor = &descs[3];
    p.PermutationTensor = &descs[4];
    p.InverseTensor = &descs[5];
  } else {
    u.OutputTensor = &descs[3];
  }
  const DML_OPERATOR_DESC desc = permute ? DML_OPERATOR_DESC{VKDML_OPERATOR_MOE_PERMUTE, &p}
                                         : DML_OPERATOR_DESC{VKDML_OPERATOR_MOE_UNPERMUTE, &u};
  std::shared_ptr<CompiledOperator> compiled = state->Compile(key, desc, 0);
  std::unique_ptr<BindingTable> table;
  Check(state->device->CreateBindingTable(*compiled, &table));
  std::vector<DML_BUFFER_BINDING> in, out;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back(inputs[i]->Buf().Binding(0, compiled->Op().InputSize(UINT(i))));
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back(outputs[i]->Buf().Binding(0, compiled->Op().OutputSize(UINT(i))));
  Check(table->BindInputs(UINT(in.size()), in.data()));
  Check(table->BindOutputs(UINT(out.size()), out.data()));
  Device& dev = *state->device;
  Result r, recorded;
  {
    py::gil_scoped_release release;
    r = dev.Submit([&](VkCommandBuffer cmd) { recorded = dev.RecordDispatch(cmd, *table); });
  }
  Check(r);
  Check(recorded);
}

// The paged KV cache (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER; vkdml/__init__.py's
// paged_cache_write and paged_gather checked the arguments' kinds and made host arrays C-ordered).
// A tensor's descriptor: row-major `shape` of `dtype`.
struct PagedTensor {
  std::vector<UINT> sizes;
  DML_BUFFER_TENSOR_DESC buf{};
  DML_TENSOR_DESC desc{};
  PagedTensor(npy::DType dtype, const cli::Shape& shape) {
    for (uint64_t d : shape) {
      if (d == 0 || d > 0xFFFFFFFFu)
        throw py::value_error("a paged cache's arrays have sizes from 1 to 4294967295, got " +
                              npy::ShapeString(shape));
      sizes.push_back(UINT(d));
    }
    buf.DataType = cli::DataType(dtype);
    buf.DimensionCount = UINT(sizes.size());
    buf.Sizes = sizes.data();
    buf.TotalTensorSizeInBytes =
        CalcBufferTensorSize(buf.DataType, buf.DimensionCount, buf.Sizes, nullptr);
    desc = {DML_TENSOR_TYPE_BUFFER, &buf};
  }
  PagedTensor(const PagedTensor&) = delete;
};

// Runs the write (op "write": args cache, slot_mapping, values; the cache written in place) or
// the gather (op "gather": args cache, block_table, starts (with `lengths`: the sequences'
// lengths)[, offsets]; a new output of `dtype` and shape (total, heads, head_size), or `out`).
// All host arrays or all device tensors (the Python side uploads the rest).
py::object RunPaged(const std::string& op, py::object device, const std::vector<py::object>& items,
                    int layout, int format, const std::string& dtype, int outOfRange,
                    const py::bytes& fill, uint64_t total, py::object out, bool lengths) {
  const bool write = op == "write";
  static const char* const kWriteNames[] = {"cache", "slot_mapping", "values"};
  const char* const gatherNames[] = {"cache", "block_table", lengths ? "seq_lens" : "seq_starts",
                                     "token_offsets"};
  std::vector<Arg> args;
  for (size_t i = 0; i < items.size(); ++i)
    args.push_back(ToArg(items[i], write ? kWriteNames[i] : gatherNames[i]));
  std::shared_ptr<DeviceState> state;
  for (Arg& a : args)
    if (a.tensor) {
      state = a.tensor->State();
      device = a.tensor->DeviceObject();
    }
  const bool onDevice = state != nullptr;
  if (!state) state = device.cast<PyDevice&>().State();
  std::vector<std::unique_ptr<PagedTensor>> tensors;
  for (Arg& a : args) tensors.push_back(std::make_unique<PagedTensor>(a.ref.dtype, a.ref.shape));
  const cli::Shape& cacheShape = args[0].ref.shape;
  const bool nhd = layout == VKDML_PAGED_CACHE_LAYOUT_NHD;
  cli::Shape outShape;
  npy::DType outType = args[0].ref.dtype;
  if (!write) {
    if (cacheShape.size() != 4) throw py::value_error("cache: expected 4 dimensions");
    const uint64_t bytes = cacheShape[3];
    const uint64_t headSize =
        format ? bytes / (format == VKDML_QUANTIZED_FORMAT_Q8_0 ? 34 : 18) * 32 : bytes;
    outShape = {total, cacheShape[nhd ? 2 : 1], headSize};
    outType = ParseDType(dtype, "dtype");
  }
  std::unique_ptr<PagedTensor> output =
      std::make_unique<PagedTensor>(outType, write ? cacheShape : outShape);
  DML_OPERATOR_DESC desc{};
  VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC w{};
  VKDML_PAGED_GATHER_OPERATOR_DESC g{};
  if (write) {
    w = {&tensors[0]->desc,
         &tensors[1]->desc,
         &tensors[2]->desc,
         &output->desc,
         VKDML_PAGED_CACHE_LAYOUT(layout),
         VKDML_QUANTIZED_FORMAT(format)};
    desc = {VKDML_OPERATOR_PAGED_CACHE_WRITE, &w};
  } else {
    g = {&tensors[0]->desc,
         &tensors[1]->desc,
         lengths ? nullptr : &tensors[2]->desc,
         tensors.size() > 3 ? &tensors[3]->desc : nullptr,
         &output->desc,
         VKDML_PAGED_CACHE_LAYOUT(layout),
         VKDML_QUANTIZED_FORMAT(format),
         lengths ? &tensors[2]->desc : nullptr};
    desc = {VKDML_OPERATOR_PAGED_GATHER, &g};
  }
  // ERROR is the operators' own default; the others wrap them.
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{&desc, VKDML_OUT_OF_RANGE_MODE(outOfRange), {}};
  const std::string fillBytes = fill;
  std::memcpy(wrap.FillValue.Bytes, fillBytes.data(), std::min<size_t>(fillBytes.size(), 8));
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};
  const bool wrapped = outOfRange != VKDML_OUT_OF_RANGE_MODE_ERROR;
  std::string key = "paged/" + op + "/" + std::to_string(layout) + "/" + std::to_string(format) +
                    "/" + std::to_string(outOfRange) + ":" + std::to_string(wrap.FillValue.UInt64) +
                    "/" + std::to_string(total) + "/" + std::to_string(int(outType)) +
                    (lengths ? "/lengths" : "");
  for (const Arg& a : args) {
    key += "|" + std::to_string(int(a.ref.dtype));
    for (uint64_t d : a.ref.shape) key += ":" + std::to_string(d);
  }
  std::shared_ptr<CompiledOperator> compiled = state->Compile(key, wrapped ? outer : desc, 0);
  const auto index = [&](const Result& r) {
    if (r.status == Status::IndexOutOfRange) throw py::index_error(r.message);
    Throw(r);
  };
  Result r;
  if (!onDevice) {
    std::vector<const void*> inputs;
    for (Arg& a : args) inputs.push_back(a.ref.data);
    if (write) {  // in place: the cache's own memory (read before it is written)
      void* cache = args[0].host.mutable_data();
      {
        py::gil_scoped_release release;
        r = state->device->Run(*compiled, inputs, {cache});
      }
      if (!r) index(r);
      return items[0];
    }
    py::array result = out.is_none()
                           ? ViewAs(Uninitialised(compiled->Op().OutputSize(0)), outType, outShape)
                           : out.cast<py::array>();
    {
      py::gil_scoped_release release;
      r = state->device->Run(*compiled, inputs, {result.mutable_data()});
    }
    if (!r) index(r);
    return result;
  }
  for (Arg& a : args)
    if (!a.tensor) throw py::type_error(a.ref.name + ": expected a vkdml.Tensor beside one");
  std::unique_ptr<PyTensor> made;
  PyTensor* result = write ? args[0].tensor : nullptr;
  if (!write && !out.is_none()) {
    result = out.cast<PyTensor*>();
    if (result->DType() != outType || result->Shape() != outShape)
      throw py::value_error("out: shape " + npy::ShapeString(result->Shape()) + " " +
                            npy::DTypeName(result->DType()) + ", expected " +
                            npy::ShapeString(outShape) + " " + npy::DTypeName(outType));
  }
  if (!result) {
    made = std::make_unique<PyTensor>(device, state, outType, outShape);
    result = made.get();
  }
  std::unique_ptr<BindingTable> table;
  Check(state->device->CreateBindingTable(*compiled, &table));
  std::vector<DML_BUFFER_BINDING> bindings;
  for (size_t i = 0; i < args.size(); ++i)
    bindings.push_back(args[i].tensor->Buf().Binding(0, compiled->Op().InputSize(UINT(i))));
  Check(table->BindInputs(UINT(bindings.size()), bindings.data()));
  DML_BUFFER_BINDING binding = result->Buf().Binding(0, compiled->Op().OutputSize(0));
  Check(table->BindOutputs(1, &binding));
  Device& dev = *state->device;
  BindingTable* t = table.get();
  Result recorded;
  {
    py::gil_scoped_release release;
    r = dev.Submit([&](VkCommandBuffer cmd) { recorded = dev.RecordDispatch(cmd, *t); });
  }
  Check(r);
  Check(recorded);
  r = t->IndexStatus();
  if (!r) index(r);
  if (made) return py::cast(std::move(made));
  return write ? items[0] : out;
}
}  // namespace

PYBIND11_MODULE(_vkdml, mod) {
  mod.doc() = "vkdml's native part; use the vkdml package";
  static py::exception<std::runtime_error> error(mod, "Error", PyExc_RuntimeError);
  static py::exception<std::runtime_error> unsupported(mod, "UnsupportedError", error.ptr());
  gError = error.ptr();
  gUnsupported = unsupported.ptr();

  py::class_<PyDevice>(mod, "Device")
      .def(py::init<int, bool>(), py::arg("index"), py::arg("validation"))
      .def_property_readonly("name", [](const PyDevice& d) { return d.Info().name; })
      .def_property_readonly("driver",
                             [](const PyDevice& d) {
                               const DeviceInfo& i = d.Info();
                               return i.driverName + (i.driverInfo.empty() ? "" : " ") +
                                      i.driverInfo;
                             })
      .def_property_readonly("limits",
                             [](const PyDevice& d) {
                               const DeviceInfo& i = d.Info();
                               py::dict l;
                               l["api_version"] =
                                   py::make_tuple(VK_API_VERSION_MAJOR(i.apiVersion),
                                                  VK_API_VERSION_MINOR(i.apiVersion),
                                                  VK_API_VERSION_PATCH(i.apiVersion));
                               l["max_storage_buffer_range"] = i.maxStorageBufferRange;
                               return l;
                             })
      .def_property_readonly("features",
                             [](const PyDevice& d) {
                               const DeviceFeatures& f = d.Info().enabled;
                               py::dict out;
                               out["storageBuffer8BitAccess"] = f.storageBuffer8BitAccess;
                               out["storageBuffer16BitAccess"] = f.storageBuffer16BitAccess;
                               out["timelineSemaphore"] = f.timelineSemaphore;
                               out["shaderFloat64"] = f.shaderFloat64;
                               out["shaderInt64"] = f.shaderInt64;
                               out["shaderBufferInt64Atomics"] = f.shaderBufferInt64Atomics;
                               out["shaderBufferFloat32AtomicAdd"] = f.shaderBufferFloat32AtomicAdd;
                               out["shaderDenormPreserveFloat32"] = f.shaderDenormPreserveFloat32;
                               out["shaderDenormPreserveFloat64"] = f.shaderDenormPreserveFloat64;
                               return out;
                             })
      .def("supports", &PyDevice::Supports, py::arg("dtype"))
      .def("supports_reduction", &PyDevice::SupportsReduction, py::arg("dtype"),
           py::arg("reduction"))
      .def("max_tensor_bytes", &PyDevice::MaxTensorBytes, py::arg("function"))
      .def("take_validation_messages", &PyDevice::TakeMessages)
      .def("tensor",
           [](py::object self, const py::array& a) {
             cli::ArrayRef ref = HostRef(a, "array");
             py::array c = py::array::ensure(a, py::array::c_style);
             auto t = std::make_unique<PyTensor>(self, self.cast<PyDevice&>().State(), ref.dtype,
                                                 ref.shape);
             t->Write(c.data());
             return t;
           })
      .def("empty",
           [](py::object self, const std::string& dtype, const std::vector<uint64_t>& shape) {
             return std::make_unique<PyTensor>(self, self.cast<PyDevice&>().State(),
                                               ParseDType(dtype, "dtype"), shape);
           });

  py::class_<PyTensor>(mod, "Tensor")
      .def_property_readonly("shape", [](const PyTensor& t) { return ShapeTuple(t.Shape()); })
      .def_property_readonly("dtype_name",
                             [](const PyTensor& t) { return npy::DTypeName(t.DType()); })
      .def_property_readonly("nbytes", &PyTensor::Bytes)
      .def_property_readonly("device", &PyTensor::DeviceObject)
      .def("numpy", [](PyTensor& t) {
        py::array raw = Uninitialised(t.Bytes());
        t.Read(raw.mutable_data());
        return ViewAs(raw, t.DType(), t.Shape());
      });

  py::class_<BagArgs>(mod, "BagArgs")
      .def(py::init([](py::object offsets, py::object weights, const std::string& mode,
                       bool includeLastOffset, py::object paddingIdx) {
             return BagArgs{offsets, weights, mode, includeLastOffset, paddingIdx};
           }),
           py::arg("offsets"), py::arg("weights"), py::arg("mode"), py::arg("include_last_offset"),
           py::arg("padding_idx"));
  py::class_<SegArgs>(mod, "SegArgs")
      .def(py::init([](int64_t dimSize, bool hasInitial) {
             return SegArgs{dimSize, hasInitial};
           }),
           py::arg("dim_size"), py::arg("has_initial"));
  py::class_<BlockArgs>(mod, "BlockArgs")
      .def(py::init([](py::object scales, py::object zeroPoints, const std::string& type,
                       int64_t bits, int64_t quantizeAxis, int64_t blockSize,
                       const std::vector<uint64_t>& valuesShape) {
             return BlockArgs{scales, zeroPoints, type, bits, quantizeAxis, blockSize, valuesShape};
           }),
           py::arg("scales"), py::arg("zero_points"), py::arg("type"), py::arg("bits"),
           py::arg("quantize_axis"), py::arg("block_size"), py::arg("values_shape"));
  mod.def("run", &RunOp, py::arg("op"), py::arg("label"), py::arg("device"), py::arg("x"),
          py::arg("indices"), py::arg("updates"), py::arg("axis"), py::arg("batch_dims"),
          py::arg("reduction"), py::arg("deterministic"), py::arg("check_indices"),
          py::arg("out_of_range"), py::arg("fill"), py::arg("include_self"), py::arg("out"),
          py::arg("format") = "q8_0", py::arg("dtype") = "float32", py::arg("bag") = BagArgs(),
          py::arg("block") = BlockArgs(), py::arg("segment") = SegArgs());
  mod.def("run_moe", &RunMoe, py::arg("op"), py::arg("inputs"), py::arg("outputs"),
          py::arg("experts"));
  mod.def("paged", &RunPaged, py::arg("op"), py::arg("device"), py::arg("items"), py::arg("layout"),
          py::arg("format"), py::arg("dtype"), py::arg("out_of_range"), py::arg("fill"),
          py::arg("total"), py::arg("out"), py::arg("lengths") = false);
}
