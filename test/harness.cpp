#include "harness.h"

#include "kernels/kernels.h"
#include "test_util.h"
#include "vk_hooks.h"

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
    const char* type = info.type == VK_PHYSICAL_DEVICE_TYPE_CPU              ? "CPU"
                       : info.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated GPU"
                       : info.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU   ? "discrete GPU"
                                                                             : "other";
    std::fprintf(stderr,
                 "vkdml tests on %s (%s, %s), 8-bit storage %d, 16-bit storage %d, "
                 "maxPerStageDescriptorStorageBuffers %u\n",
                 info.name.c_str(), info.driverName.c_str(), type,
                 info.enabled.storageBuffer8BitAccess, info.enabled.storageBuffer16BitAccess,
                 Limits().maxPerStageDescriptorStorageBuffers);
  }
  return *gDevice;
}

VkPhysicalDeviceLimits Limits() {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(
      hooks::LoaderGetInstanceProcAddr()(Dev().Instance(), "vkGetPhysicalDeviceProperties"));
  REQUIRE(get);
  VkPhysicalDeviceProperties p;
  get(Dev().PhysicalDevice(), &p);
  return p.limits;
}

UINT64 MaxAllocationSize() {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
      hooks::LoaderGetInstanceProcAddr()(Dev().Instance(), "vkGetPhysicalDeviceProperties2"));
  REQUIRE(get);
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &m3};
  get(Dev().PhysicalDevice(), &p);
  return m3.maxMemoryAllocationSize;
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

// A message that arrived between tests (after one test's checks, before the next) fails the
// next: none may go unreported, in a direct run of many tests as under ctest.
Fixture::Fixture() {
  std::vector<std::string> stale = TakeValidationMessages();
  if (!stale.empty()) FAIL_CHECK("validation messages from before this test:" << Join(stale));
}

Fixture::~Fixture() {
  std::vector<std::string> m = TakeValidationMessages();
  if (!m.empty() && std::uncaught_exceptions() == 0)
    FAIL_CHECK(m.size() << " validation message(s) during the test:" << Join(m));
}

std::string Str(const Result& r) {
  static const char* names[] = {"Ok",          "InvalidArgument", "Unsupported", "IndexOutOfRange",
                                "OutOfMemory", "DeviceError",     "Internal"};
  size_t i = static_cast<size_t>(r.status);
  std::string s = i < 7 ? names[i] : "Status(" + std::to_string(i) + ")";
  return s + ": " + r.message;
}

Bytes Poisoned(UINT64 size) {
  return Bytes(size, kPoison);
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

// ----- The large path (VKDML_TEST_LARGE) -----

LargeTally& TheLargeTally() {
  static LargeTally tally;
  return tally;
}

namespace {

// The device's capabilities as CompileOperator reads them, its switches included.
vkdml::detail::Capabilities Caps() {
  return CapabilitiesOf(Dev());
}

}  // namespace

// The binding range (VKDML_MAX_BINDING_RANGE) is the first of these windows for which kernel
// choice takes the large path: just below the smallest tensor past 16 bytes (a window's least:
// windows hold whole 16-byte vectors), so every such tensor is seen only through windows; then a
// quarter, a half and all but 16 bytes of the largest tensor (where an index tuple, which must fit
// one window, or the dispatch count rules the smaller out). Kernel choice is asked first
// (lib/kernels/kernels.h, with this device's capabilities), CompileOperator then compiles with the
// same range, and the tally counts what happened. Every mode runs there: a refusal at every window
// fails the test unless an index tuple is wider than them all.
Result CompileLarge(OpSpec& spec, const Operator& op, UINT flags,
                    std::unique_ptr<CompiledOperator>* out) {
  LargeTally& tally = TheLargeTally();
  vkdml::detail::OperatorImpl impl;
  REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &impl).ok());
  UINT64 largest = 0;
  for (const TensorDesc& t : spec.tensors) largest = std::max<UINT64>(largest, t.Total());
  const UINT64 align = Caps().rangeAlign;
  Result refusal;
  std::string range, refusalRange;
  UINT64 smallest = largest;  // of the tensors past 16 bytes, a window's least
  for (const TensorDesc& t : spec.tensors)
    if (t.Total() > 16) smallest = std::min<UINT64>(smallest, t.Total());
  bool first = true, belowSmallest = false;
  for (UINT64 window : {(smallest - 1) / 16 * 16, largest / 4, largest / 2, largest - 16}) {
    const bool isFirst = first;
    first = false;
    window = std::max<UINT64>(16, (window + 15) / 16 * 16);
    if (window >= largest) continue;  // no tensor past this window
    ScopedSwitch env("VKDML_MAX_BINDING_RANGE", std::to_string(align + window).c_str());
    vkdml::detail::KernelSet set;
    const Result chosen = vkdml::detail::ChooseKernels(impl, flags, Caps(), &set);
    if (chosen.ok()) {
      INFO("kernel choice at VKDML_MAX_BINDING_RANGE=" << align + window);
      REQUIRE(set.large);
      range = std::to_string(align + window);
      belowSmallest = isFirst;
      break;
    }
    refusal = chosen;  // the last: at the widest window
    refusalRange = std::to_string(align + window);
  }
  // An index tuple must fit one window: where it spans more than every window below the largest
  // tensor, no window can hold it with a tensor past it.
  const bool tuple =
      refusal.message.find("spans more than this device's binding range") != std::string::npos;
  if (range.empty() && !refusal.ok() && !tuple) {
    INFO("refused on the large path at VKDML_MAX_BINDING_RANGE=" << refusalRange << ": "
                                                                 << Str(refusal));
    FAIL("the large path refused a case it must run");
  }
  if (range.empty()) {
    ++(largest <= 16 ? tally.tiny : tally.tupleWide);
    return Dev().CompileOperator(op, flags, out);
  }
  ++tally.taken;
  tally.belowSmallest += belowSmallest;
  tally.deterministic += (flags & VKDML_EXECUTION_FLAG_DETERMINISTIC) != 0;
  ScopedSwitch env("VKDML_MAX_BINDING_RANGE", range.c_str());
  INFO("VKDML_MAX_BINDING_RANGE=" << range);
  return Dev().CompileOperator(op, flags, out);
}

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
  REQUIRE(op->Type() == spec.OperatorType());
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

  // VKDML_TEST_LARGE=1: every case through the large path (LargePath, below).
  const char* testLarge = std::getenv("VKDML_TEST_LARGE");
  std::unique_ptr<CompiledOperator> cop;
  if (testLarge && *testLarge) {
    r = CompileLarge(spec, *op, opts.flags, &cop);
  } else {
    r = dev.CompileOperator(*op, opts.flags, &cop);
  }
  INFO("CompileOperator: " << Str(r));
  REQUIRE(r.ok());
  REQUIRE(cop);
  REQUIRE(cop->Flags() == opts.flags);
  REQUIRE(cop->Op().Type() == spec.OperatorType());

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
      // Each binding starts at a multiple of what the device asks of its offset (the element
      // size, or 4 for packed elements) and of its alignment, + its offset.
      const UINT64 align = std::max<UINT64>(BindingAlignment(spec.tensors[i].Type()),
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
