#include "harness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

namespace vt {

namespace {

std::mutex gMutex;
std::vector<std::string> gMessages;
std::unique_ptr<Device> gDevice;
std::string gDeviceError;

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& m : v) s += "\n--- validation message ---\n" + m;
  return s;
}

std::string Dims(const std::vector<UINT>& v) {
  std::ostringstream s;
  s << "{";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "}";
  return s.str();
}

}  // namespace

Device& Dev() {
  if (!gDevice) {
    INFO("an earlier attempt to create the device failed: " << gDeviceError);
    REQUIRE(gDeviceError.empty());
    DeviceDesc desc;
    desc.enableValidation = true;
    desc.onValidationMessage = [](const char* message) {
      std::lock_guard<std::mutex> lock(gMutex);
      gMessages.push_back(message ? message : "(null)");
    };
    Result r = CreateDevice(desc, &gDevice);
    if (!r.ok() || !gDevice) {
      gDeviceError = Str(r);
      gDevice.reset();
      FAIL("CreateDevice failed: " << gDeviceError);
    }
    const DeviceInfo& info = gDevice->Info();
    std::fprintf(stderr, "vkdml tests on %s (%s), 8-bit storage %d, 16-bit storage %d\n",
                 info.name.c_str(), info.driverName.c_str(), info.enabled.storageBuffer8BitAccess,
                 info.enabled.storageBuffer16BitAccess);
  }
  return *gDevice;
}

bool HaveDevice() {
  return gDevice != nullptr;
}

void DestroyDevice() {
  gDevice.reset();
}

std::vector<std::string> TakeValidationMessages() {
  std::lock_guard<std::mutex> lock(gMutex);
  std::vector<std::string> m;
  m.swap(gMessages);
  return m;
}

void RequireNoValidationMessages() {
  std::vector<std::string> m = TakeValidationMessages();
  if (!m.empty()) FAIL(m.size() << " validation message(s):" << Join(m));
}

bool CheckNoValidationMessages() {
  std::vector<std::string> m = TakeValidationMessages();
  if (m.empty()) return true;
  // Print each distinct message (handles masked) once per process; repeats fail tersely.
  static std::set<std::string> seen;
  static const std::regex handle("0x[0-9a-fA-F]+");
  std::vector<std::string> fresh;
  for (const std::string& msg : m)
    if (seen.insert(std::regex_replace(msg, handle, "0x?")).second) fresh.push_back(msg);
  if (!fresh.empty())
    FAIL_CHECK(m.size() << " validation message(s):" << Join(fresh));
  else
    FAIL_CHECK(m.size() << " validation message(s), repeats of ones reported before");
  return false;
}

Fixture::Fixture() {
  std::vector<std::string> stale = TakeValidationMessages();
  if (!stale.empty()) WARN("validation messages from before this test:" << Join(stale));
}

Fixture::~Fixture() {
  std::vector<std::string> m = TakeValidationMessages();
  if (!m.empty() && std::uncaught_exceptions() == 0)
    FAIL_CHECK(m.size() << " validation message(s) during the test:" << Join(m));
}

std::string Str(const Result& r) {
  static const char* names[] = {"Ok",          "InvalidArgument", "Unsupported", "IndexOutOfRange",
                                "OutOfMemory", "DeviceError"};
  size_t i = static_cast<size_t>(r.status);
  std::string s = i < 6 ? names[i] : "Status(" + std::to_string(i) + ")";
  return s + ": " + r.message;
}

Bytes Poisoned(UINT64 size) {
  return Bytes(size, kPoison);
}

// ----- TensorDesc -----

TensorDesc::TensorDesc(DML_TENSOR_DATA_TYPE type, std::vector<UINT> s, std::vector<UINT> st,
                       UINT64 totalBytes, UINT alignment)
    : sizes(std::move(s)), strides(std::move(st)) {
  buf.DataType = type;
  buf.Flags = DML_TENSOR_FLAG_NONE;
  buf.DimensionCount = static_cast<UINT>(sizes.size());
  buf.GuaranteedBaseOffsetAlignment = alignment;
  const UINT* given = strides.empty() ? nullptr : strides.data();
  buf.TotalTensorSizeInBytes =
      totalBytes ? totalBytes : CalcBufferTensorSize(type, buf.DimensionCount, sizes.data(), given);
  // Past DirectML's 2^32 - 1 elements: vkdml's flag, and the size it gives.
  if (!totalBytes && buf.TotalTensorSizeInBytes == 0 &&
      CalcLargeBufferTensorSize(type, buf.DimensionCount, sizes.data(), given) != 0) {
    buf.Flags = VKDML_TENSOR_FLAG_LARGE;
    buf.TotalTensorSizeInBytes =
        CalcLargeBufferTensorSize(type, buf.DimensionCount, sizes.data(), given);
  }
  desc.Type = DML_TENSOR_TYPE_BUFFER;
  Fix();
}

TensorDesc::TensorDesc(const TensorDesc& o)
    : sizes(o.sizes), strides(o.strides), buf(o.buf), desc(o.desc) {
  Fix();
}

TensorDesc& TensorDesc::operator=(const TensorDesc& o) {
  sizes = o.sizes;
  strides = o.strides;
  buf = o.buf;
  desc = o.desc;
  Fix();
  return *this;
}

void TensorDesc::Fix() {
  buf.Sizes = sizes.data();
  buf.Strides = strides.empty() ? nullptr : strides.data();
  desc.Desc = &buf;
}

std::string TensorDesc::ToString() const {
  std::ostringstream s;
  s << DataTypeName(buf.DataType) << " sizes " << Dims(sizes);
  if (!strides.empty()) s << " strides " << Dims(strides);
  s << " total " << buf.TotalTensorSizeInBytes;
  if (buf.GuaranteedBaseOffsetAlignment) s << " align " << buf.GuaranteedBaseOffsetAlignment;
  return s.str();
}

// ----- OpSpec -----

OpSpec OpSpec::GatherND(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ND;
  s.tensors = {input, indices, output};
  s.r = r;
  s.q = q;
  return s;
}

OpSpec OpSpec::GatherND1(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q,
                         UINT b) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ND1;
  s.tensors = {input, indices, output};
  s.r = r;
  s.q = q;
  s.b = b;
  return s;
}

OpSpec OpSpec::Gather(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis,
                      UINT indexDimensions) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER;
  s.tensors = {input, indices, output};
  s.axis = axis;
  s.indexDims = indexDimensions;
  return s;
}

OpSpec OpSpec::GatherElements(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ELEMENTS;
  s.tensors = {input, indices, output};
  s.axis = axis;
  return s;
}

OpSpec OpSpec::ScatterND(TensorDesc input, TensorDesc indices, TensorDesc updates,
                         TensorDesc output, UINT r, UINT q) {
  OpSpec s;
  s.type = DML_OPERATOR_SCATTER_ND;
  s.tensors = {input, indices, updates, output};
  s.r = r;
  s.q = q;
  return s;
}

OpSpec OpSpec::ScatterElements(TensorDesc input, TensorDesc indices, TensorDesc updates,
                               TensorDesc output, UINT axis) {
  OpSpec s;
  s.type = DML_OPERATOR_SCATTER_ELEMENTS;
  s.tensors = {input, indices, updates, output};
  s.axis = axis;
  return s;
}

OpSpec& OpSpec::WithReduce(VKDML_REDUCE_FUNCTION f) {
  if (type == DML_OPERATOR_SCATTER_ND) type = VKDML_OPERATOR_SCATTER_ND_REDUCE;
  if (type == DML_OPERATOR_SCATTER_ELEMENTS) type = VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE;
  reduce = f;
  return *this;
}

const DML_OPERATOR_DESC& OpSpec::Desc() {
  for (TensorDesc& t : tensors) t.Fix();
  op.Type = type;
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      gnd = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), r, q};
      op.Desc = &gnd;
      break;
    case DML_OPERATOR_GATHER_ND1:
      gnd1 = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), r, q, b};
      op.Desc = &gnd1;
      break;
    case DML_OPERATOR_GATHER:
      g = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), axis, indexDims};
      op.Desc = &g;
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      ge = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), axis};
      op.Desc = &ge;
      break;
    case DML_OPERATOR_SCATTER_ND:
      snd = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), r, q};
      op.Desc = &snd;
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      se = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), axis};
      op.Desc = &se;
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      sndr = {
          tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), r, q, reduce};
      op.Desc = &sndr;
      break;
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      ser = {
          tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), axis, reduce};
      op.Desc = &ser;
      break;
    default:
      op.Desc = nullptr;
  }
  return op;
}

const DML_TENSOR_DESC** OpSpec::TensorSlot(size_t i) {
  switch (type) {
    case DML_OPERATOR_GATHER_ND: {
      const DML_TENSOR_DESC** p[] = {&gnd.InputTensor, &gnd.IndicesTensor, &gnd.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER_ND1: {
      const DML_TENSOR_DESC** p[] = {&gnd1.InputTensor, &gnd1.IndicesTensor, &gnd1.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER: {
      const DML_TENSOR_DESC** p[] = {&g.InputTensor, &g.IndicesTensor, &g.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER_ELEMENTS: {
      const DML_TENSOR_DESC** p[] = {&ge.InputTensor, &ge.IndicesTensor, &ge.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_SCATTER_ELEMENTS: {
      const DML_TENSOR_DESC** p[] = {&se.InputTensor, &se.IndicesTensor, &se.UpdatesTensor,
                                     &se.OutputTensor};
      return p[i];
    }
    case VKDML_OPERATOR_SCATTER_ND_REDUCE: {
      const DML_TENSOR_DESC** p[] = {&sndr.InputTensor, &sndr.IndicesTensor, &sndr.UpdatesTensor,
                                     &sndr.OutputTensor};
      return p[i];
    }
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: {
      const DML_TENSOR_DESC** p[] = {&ser.InputTensor, &ser.IndicesTensor, &ser.UpdatesTensor,
                                     &ser.OutputTensor};
      return p[i];
    }
    default: {
      const DML_TENSOR_DESC** p[] = {&snd.InputTensor, &snd.IndicesTensor, &snd.UpdatesTensor,
                                     &snd.OutputTensor};
      return p[i];
    }
  }
}

const char* OpSpec::Name() const {
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      return "GATHER_ND";
    case DML_OPERATOR_GATHER_ND1:
      return "GATHER_ND1";
    case DML_OPERATOR_GATHER:
      return "GATHER";
    case DML_OPERATOR_GATHER_ELEMENTS:
      return "GATHER_ELEMENTS";
    case DML_OPERATOR_SCATTER_ND:
      return "SCATTER_ND";
    case DML_OPERATOR_SCATTER_ELEMENTS:
      return "SCATTER_ELEMENTS";
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      return "SCATTER_ND_REDUCE";
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      return "SCATTER_ELEMENTS_REDUCE";
    default:
      return "?";
  }
}

const char* OpSpec::TensorName(size_t i) const {
  static const char* names3[] = {"InputTensor", "IndicesTensor", "OutputTensor"};
  static const char* names4[] = {"InputTensor", "IndicesTensor", "UpdatesTensor", "OutputTensor"};
  return tensors.size() == 4 ? names4[i] : names3[i];
}

std::string OpSpec::ToString() const {
  std::ostringstream s;
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      s << "GATHER_ND r=" << r << " q=" << q;
      break;
    case DML_OPERATOR_GATHER_ND1:
      s << "GATHER_ND1 r=" << r << " q=" << q << " b=" << b;
      break;
    case DML_OPERATOR_GATHER:
      s << "GATHER axis=" << axis << " IndexDimensions=" << indexDims;
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      s << "GATHER_ELEMENTS axis=" << axis;
      break;
    case DML_OPERATOR_SCATTER_ND:
      s << "SCATTER_ND r=" << r << " q=" << q;
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      s << "SCATTER_ELEMENTS axis=" << axis;
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      s << "SCATTER_ND_REDUCE r=" << r << " q=" << q << " ReduceFunction=" << reduce;
      break;
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      s << "SCATTER_ELEMENTS_REDUCE axis=" << axis << " ReduceFunction=" << reduce;
      break;
    default:
      s << "op " << int(type);
  }
  static const char* names3[] = {"input", "indices", "output"};
  static const char* names4[] = {"input", "indices", "updates", "output"};
  for (size_t i = 0; i < tensors.size(); ++i)
    s << "\n  " << (tensors.size() == 4 ? names4[i] : names3[i]) << ": " << tensors[i].ToString();
  return s.str();
}

ref::IndexError OpSpec::Reference(const std::vector<Bytes>& inputs, Bytes* output) const {
  const ref::Tensor in = tensors[0].Ref(), idx = tensors[1].Ref(), out = tensors.back().Ref();
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      return ref::GatherND(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), r, q,
                           0);
    case DML_OPERATOR_GATHER_ND1:
      return ref::GatherND(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), r, q,
                           b);
    case DML_OPERATOR_GATHER:
      return ref::Gather(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), axis,
                         indexDims);
    case DML_OPERATOR_GATHER_ELEMENTS:
      return ref::GatherElements(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(),
                                 axis);
    case DML_OPERATOR_SCATTER_ND:
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      return ref::ScatterND(in, inputs[0].data(), idx, inputs[1].data(), tensors[2].Ref(),
                            inputs[2].data(), out, output->data(), r, q, reduce);
    case DML_OPERATOR_SCATTER_ELEMENTS:
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      return ref::ScatterElements(in, inputs[0].data(), idx, inputs[1].data(), tensors[2].Ref(),
                                  inputs[2].data(), out, output->data(), axis, reduce);
    default:
      throw std::invalid_argument("OpSpec::Reference: operator type");
  }
}

// ----- DiffBytes -----

std::string DiffBytes(const Bytes& actual, const Bytes& expected, const ref::Tensor* tensor) {
  if (actual.size() != expected.size())
    return "size " + std::to_string(actual.size()) + ", expected " +
           std::to_string(expected.size());
  size_t count = 0;
  std::vector<size_t> first;
  for (size_t i = 0; i < actual.size(); ++i)
    if (actual[i] != expected[i]) {
      if (first.size() < 12) first.push_back(i);
      ++count;
    }
  if (count == 0) return {};
  // Byte -> element coordinate of the tensor (if any), for the message.
  std::map<uint64_t, ref::Coord> elementAt;
  if (tensor && tensor->ElementCount() <= (1u << 20))
    ref::ForEachCoord(tensor->sizes, [&](const ref::Coord& c) {
      uint64_t o = tensor->ByteOffset(c);
      for (uint32_t k = 0; k < tensor->ElemSize(); ++k) elementAt.emplace(o + k, c);
    });
  std::ostringstream s;
  s << count << " of " << actual.size() << " bytes differ";
  for (size_t i : first) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "\n  byte %zu: got 0x%02x, expected 0x%02x", i, actual[i],
                  expected[i]);
    s << buf;
    if (tensor) {
      auto it = elementAt.find(i);
      if (it == elementAt.end()) {
        s << " (padding, not an element)";
      } else {
        s << " (element [";
        for (size_t d = 0; d < it->second.size(); ++d) s << (d ? "," : "") << it->second[d];
        s << "])";
      }
    }
  }
  return s.str();
}

// ----- Execute -----

namespace {

uint8_t Background(size_t buffer, UINT64 i) {
  return static_cast<uint8_t>((i * 73 + buffer * 29 + 11) ^ 0x3C);
}

void Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  static PFN_vkCmdPipelineBarrier fn = nullptr;
  if (!fn)
    fn = reinterpret_cast<PFN_vkCmdPipelineBarrier>(
        Dev().GetDeviceProcAddr()(Dev().Handle(), "vkCmdPipelineBarrier"));
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, srcAccess, dstAccess};
  fn(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

}  // namespace

ExecResult Execute(OpSpec& spec, const std::vector<Bytes>& inputs,
                   const std::vector<Bytes>& outputs, const ExecOptions& opts) {
  INFO("operator: " << spec.ToString());
  Device& dev = Dev();
  std::unique_ptr<Operator> op;
  Result r = dev.CreateOperator(spec.Desc(), &op);
  INFO("CreateOperator: " << Str(r));
  REQUIRE(r.ok());
  REQUIRE(op);
  const UINT nIn = spec.InputCount();
  REQUIRE(op->Type() == spec.type);
  REQUIRE(op->InputCount() == nIn);
  REQUIRE(op->OutputCount() == 1);
  REQUIRE(inputs.size() == nIn);
  REQUIRE(outputs.size() == 1);
  for (UINT i = 0; i < nIn; ++i) {
    REQUIRE(op->InputSize(i) == spec.tensors[i].Total());
    REQUIRE(inputs[i].size() == spec.tensors[i].Total());
  }
  REQUIRE(op->OutputSize(0) == spec.Output().Total());
  REQUIRE(outputs[0].size() == spec.Output().Total());

  // VKDML_TEST_LARGE=1: kernel choice assumes a binding range of about a third of the largest
  // tensor (VKDML_MAX_BINDING_RANGE, at least 1 KiB and an index tuple's span), so the operator
  // takes the large path (lib/kernels.h: LargeDispatch) through a few windows a tensor. What the
  // large path refuses keeps its path: deterministic executions, and reductions of 8-byte
  // elements that need the sort, as without 64-bit atomics (VKDML_ATOMICS=32).
  const char* testLarge = std::getenv("VKDML_TEST_LARGE");
  const char* atomics = std::getenv("VKDML_ATOMICS");
  const bool needsSort = spec.reduce != VKDML_REDUCE_FUNCTION_NONE &&
                         ref::ElementSize(spec.tensors[0].Type()) == 8 && atomics &&
                         std::strcmp(atomics, "32") == 0;
  const bool large =
      testLarge && *testLarge && !(opts.flags & VKDML_EXECUTION_FLAG_DETERMINISTIC) && !needsSort;
  if (large) {
    UINT64 range = 1024;
    for (const TensorDesc& t : spec.tensors) range = std::max<UINT64>(range, t.Total() / 3 + 256);
    const TensorDesc& ix = spec.tensors[1];  // an ND index tuple must fit one window
    const bool nd = spec.type == DML_OPERATOR_GATHER_ND || spec.type == DML_OPERATOR_GATHER_ND1 ||
                    spec.type == DML_OPERATOR_SCATTER_ND ||
                    spec.type == VKDML_OPERATOR_SCATTER_ND_REDUCE;
    if (nd) {
      const UINT64 stride = ix.strides.empty() ? 1 : ix.strides.back();
      range = std::max<UINT64>(range, (ix.sizes.back() * stride + 1) * 8 + 512);
    }
    setenv("VKDML_MAX_BINDING_RANGE", std::to_string(range).c_str(), 1);
  }
  std::unique_ptr<CompiledOperator> cop;
  r = dev.CompileOperator(*op, opts.flags, &cop);
  if (large) unsetenv("VKDML_MAX_BINDING_RANGE");
  INFO("CompileOperator: " << Str(r) << (large ? " (VKDML_TEST_LARGE)" : ""));
  REQUIRE(r.ok());
  REQUIRE(cop);
  REQUIRE(cop->Flags() == opts.flags);
  REQUIRE(cop->Op().Type() == spec.type);

  ExecResult result;
  if (opts.path == Path::Run) {
    std::vector<const void*> in;
    for (const Bytes& b : inputs) in.push_back(b.data());
    result.outputs = outputs;
    std::vector<void*> out;
    for (Bytes& b : result.outputs) out.push_back(b.data());
    result.runResult = dev.Run(*cop, in, out);
    result.validationClean = CheckNoValidationMessages();
    return result;
  }

  // Record path: lay the bindings out, fill every buffer with a background pattern, the inputs
  // and the outputs' initial images, run, and check that only output bytes changed.
  const UINT n = nIn + 1;
  struct Region {
    size_t buffer;
    UINT64 pos, size;
  };
  std::vector<Region> regions(n);
  std::vector<UINT64> bufferSizes;
  for (UINT i = 0; i < n; ++i) {
    const UINT64 off = i < opts.offsets.size() ? opts.offsets[i] : 0;
    const UINT64 size = spec.tensors[i].Total();
    if (opts.inPlace && i == nIn) {
      REQUIRE(off == (opts.offsets.empty() ? 0 : opts.offsets[0]));
      regions[i] = regions[0];
      continue;
    }
    if (opts.oneBuffer) {
      if (bufferSizes.empty()) bufferSizes.push_back(0);
      // Each binding starts at a multiple of its element size (and alignment) + its offset.
      const UINT64 align = std::max<UINT64>(ref::ElementSize(spec.tensors[i].Type()),
                                            spec.tensors[i].buf.GuaranteedBaseOffsetAlignment);
      const UINT64 start = (bufferSizes[0] + align - 1) / align * align;
      regions[i] = {0, start + off, size};
      bufferSizes[0] = start + off + size + opts.guard;
      continue;
    } else {
      regions[i] = {bufferSizes.size(), off, size};
      bufferSizes.push_back(off + size + opts.guard);
    }
  }
  std::vector<Bytes> images(bufferSizes.size());
  for (size_t b = 0; b < images.size(); ++b) {
    images[b].resize(bufferSizes[b]);
    for (UINT64 i = 0; i < bufferSizes[b]; ++i) images[b][i] = Background(b, i);
  }
  for (UINT i = 0; i < n; ++i) {
    if (opts.inPlace && i == nIn) {
      REQUIRE(outputs[0] == inputs[0]);
      continue;
    }
    const Bytes& src = i < nIn ? inputs[i] : outputs[0];
    std::memcpy(images[regions[i].buffer].data() + regions[i].pos, src.data(), src.size());
  }
  std::vector<std::unique_ptr<Buffer>> buffers(images.size());
  for (size_t b = 0; b < images.size(); ++b) {
    r = dev.CreateBuffer(images[b].size(), opts.memory, &buffers[b]);
    INFO("CreateBuffer(" << images[b].size() << "): " << Str(r));
    REQUIRE(r.ok());
    REQUIRE(buffers[b]->Size() >= images[b].size());
    r = buffers[b]->Write(0, images[b].data(), images[b].size());
    INFO("Buffer::Write: " << Str(r));
    REQUIRE(r.ok());
  }
  std::vector<DML_BUFFER_BINDING> bindings(n);
  for (UINT i = 0; i < n; ++i)
    bindings[i] = buffers[regions[i].buffer]->Binding(regions[i].pos, regions[i].size);

  std::unique_ptr<BindingTable> table;
  r = dev.CreateBindingTable(*cop, &table);
  INFO("CreateBindingTable: " << Str(r));
  REQUIRE(r.ok());
  r = table->BindInputs(nIn, bindings.data());
  INFO("BindInputs: " << Str(r));
  REQUIRE(r.ok());
  r = table->BindOutputs(1, bindings.data() + nIn);
  INFO("BindOutputs: " << Str(r));
  REQUIRE(r.ok());

  Result recorded;
  r = dev.Submit([&](VkCommandBuffer cmd) {
    Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    recorded = dev.RecordDispatch(cmd, *table);
    Barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
  });
  INFO("RecordDispatch: " << Str(recorded));
  REQUIRE(recorded.ok());
  INFO("Submit: " << Str(r));
  REQUIRE(r.ok());
  result.indexStatus = table->IndexStatus();
  result.validationClean = CheckNoValidationMessages();

  // Read back everything; only the output range may have changed.
  for (size_t b = 0; b < images.size(); ++b) {
    Bytes actual(images[b].size());
    r = buffers[b]->Read(0, actual.data(), actual.size());
    INFO("Buffer::Read: " << Str(r));
    REQUIRE(r.ok());
    Bytes expected = images[b];
    for (UINT i = nIn; i < n; ++i) {
      if (regions[i].buffer != b) continue;
      std::copy(actual.begin() + regions[i].pos, actual.begin() + regions[i].pos + regions[i].size,
                expected.begin() + regions[i].pos);
      result.outputs.emplace_back(actual.begin() + regions[i].pos,
                                  actual.begin() + regions[i].pos + regions[i].size);
    }
    std::string diff = DiffBytes(actual, expected, nullptr);
    INFO("buffer " << b << " (" << images[b].size()
                   << " bytes): bytes outside the output changed: " << diff);
    CHECK(diff.empty());
    result.outsideClean = result.outsideClean && diff.empty();
  }
  REQUIRE(result.outputs.size() == 1);
  return result;
}

}  // namespace vt
