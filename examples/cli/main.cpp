// vkdml: the command-line tool. `vkdml devices`, `vkdml demo`, `vkdml run`, `vkdml bench`.
#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"
#include "cli.h"
#include "npy.h"

namespace {

const char kUsage[] =
    "usage: vkdml COMMAND [options]   (vkdml COMMAND --help for a command's options)\n"
    "\n"
    "DirectML's Gather, GatherND, GatherND1, GatherElements, ScatterElements and ScatterND on\n"
    "Vulkan, with vkdml's own: scatter reductions, quantized rows, embedding bags and ONNX\n"
    "Runtime's GatherBlockQuantized.\n"
    "Commands:\n"
    "  devices   list the Vulkan devices and the optional features vkdml uses\n"
    "  demo      run the operator pages' examples and check them against the pages\n"
    "  run       run an operator on .npy arrays: ONNX's gather, gather-nd, gather-elements,\n"
    "            scatter-elements and scatter-nd (with reductions); vkdml's dequantize-rows,\n"
    "            quantize-rows, embedding-bag, gather-block-quantized, moe-permute and\n"
    "            moe-unpermute\n"
    "  bench     measure the operators' throughput\n"
    "  paged-cache-write, paged-gather\n"
    "            vLLM's paged KV cache write and gather on .npy arrays (float32, float16,\n"
    "            Q8_0 and Q4_0 caches)\n"
    "Exit status: 0 success, 1 device failure (or a demo mismatch), 2 bad input, 3 out of\n"
    "memory (host memory, or a Vulkan allocation).\n";

const char kDevicesUsage[] =
    "usage: vkdml devices\n"
    "\n"
    "Lists every Vulkan physical device: index, name, type, driver name and version, Vulkan\n"
    "API version, maxStorageBufferRange and the optional features vkdml uses (8- and 16-bit\n"
    "storage buffer access for 1- and 2-byte data types, which otherwise move in 32-bit words;\n"
    "the timeline semaphore; float64 arithmetic and the 64-bit and float atomics the scatter\n"
    "reductions use). Then what Device::CheckFeatureSupport says of it: the data types it\n"
    "runs, those whose scatter reductions (ADD, MULTIPLY, MAX, MIN, MEAN) it runs, the types\n"
    "whose binding offsets must be multiples of 4 bytes, and the operators whose tensors must\n"
    "fit one binding (their largest TotalTensorSizeInBytes). '*' marks the device used when\n"
    "--device is not given.\n";

const char* DeviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

std::string Version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

// What Device::CheckFeatureSupport says of physical device `index`, a line each: the data types
// it runs, those with every reduction (and any it does not), the binding alignments past the
// element size, and the operators whose tensors have a largest size.
void PrintSupport(size_t index) {
  using namespace vkdml;
  DeviceDesc desc;
  desc.physicalDeviceIndex = int(index);
  std::unique_ptr<Device> device;
  Result r = CreateDevice(desc, &device);
  if (!r) {
    std::printf("     not usable by vkdml: %s\n", r.message.c_str());
    return;
  }
  std::string types, reduced, unreduced, aligned;
  for (UINT t = DML_TENSOR_DATA_TYPE_FLOAT32; t <= DML_TENSOR_DATA_TYPE_INT64; ++t) {
    const auto type = DML_TENSOR_DATA_TYPE(t);
    const std::string name = std::string(" ") + DataTypeName(type);
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {type};
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {};
    if (device->CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, sizeof d,
                                    &d) &&
        d.IsSupported)
      types += name;
    bool every = true;
    for (UINT f = VKDML_REDUCE_FUNCTION_ADD; f <= VKDML_REDUCE_FUNCTION_MEAN; ++f) {
      VKDML_FEATURE_QUERY_REDUCTION_SUPPORT rq = {type, VKDML_REDUCE_FUNCTION(f)};
      VKDML_FEATURE_DATA_REDUCTION_SUPPORT rd = {};
      every = every &&
              device->CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof rq, &rq,
                                          sizeof rd, &rd) &&
              rd.IsSupported;
    }
    (every ? reduced : unreduced) += name;
    VKDML_FEATURE_QUERY_BINDING_ALIGNMENT aq = {type};
    VKDML_FEATURE_DATA_BINDING_ALIGNMENT ad = {};
    if (device->CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT, sizeof aq, &aq, sizeof ad,
                                    &ad) &&
        ad.OffsetAlignment > DataTypeSize(type))
      aligned += name;
  }
  std::printf("     data types:%s\n", types.empty() ? " none" : types.c_str());
  std::printf("     reductions on:%s\n", reduced.empty() ? " none" : reduced.c_str());
  if (!unreduced.empty()) std::printf("     no reductions on:%s\n", unreduced.c_str());
  if (!aligned.empty())
    std::printf("     binding offsets in multiples of 4 bytes:%s\n", aligned.c_str());
  // The largest tensor of each operator: any size where the large path takes it.
  struct {
    DML_OPERATOR_TYPE type;
    const char* name;
  } const kOperators[] = {{DML_OPERATOR_GATHER, "GATHER"},
                          {DML_OPERATOR_SCATTER_ELEMENTS, "SCATTER_ELEMENTS"},
                          {DML_OPERATOR_GATHER_ELEMENTS, "GATHER_ELEMENTS"},
                          {DML_OPERATOR_GATHER_ND, "GATHER_ND"},
                          {DML_OPERATOR_SCATTER_ND, "SCATTER_ND"},
                          {DML_OPERATOR_GATHER_ND1, "GATHER_ND1"},
                          {VKDML_OPERATOR_SCATTER_ND_REDUCE, "SCATTER_ND_REDUCE"},
                          {VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE, "SCATTER_ELEMENTS_REDUCE"},
                          {VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, "GATHER_QUANTIZED_ROWS"},
                          {VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, "SCATTER_QUANTIZED_ROWS"},
                          {VKDML_OPERATOR_EMBEDDING_BAG, "EMBEDDING_BAG"},
                          {VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, "GATHER_BLOCK_QUANTIZED"},
                          {VKDML_OPERATOR_MOE_PERMUTE, "MOE_PERMUTE"},
                          {VKDML_OPERATOR_MOE_UNPERMUTE, "MOE_UNPERMUTE"}};
  std::string bounded;
  for (const auto& op : kOperators) {
    VKDML_FEATURE_QUERY_TENSOR_SIZE sq = {op.type};
    VKDML_FEATURE_DATA_TENSOR_SIZE sd = {};
    if (device->CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof sq, &sq, sizeof sd, &sd) &&
        sd.MaxTensorBytes != UINT64_MAX)
      bounded +=
          std::string(" ") + op.name + " " + std::to_string(sd.MaxTensorBytes) + " bytes" +
          (op.type == VKDML_OPERATOR_EMBEDDING_BAG            ? " (all but its table),"
           : op.type == VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED ? " (its scales and zero points),"
                                                              : " (every tensor),");
  }
  if (!bounded.empty()) bounded.pop_back();
  std::printf("     largest tensor: any size (past maxStorageBufferRange: the large path)%s%s\n",
              bounded.empty() ? "" : "; but", bounded.c_str());
}

int DevicesMain(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kDevicesUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "vkdml devices: unexpected argument '%s' (see --help)\n", argv[i]);
    return cli::kExitBadInput;
  }
  std::vector<vkdml::DeviceInfo> devices;
  vkdml::Result r = vkdml::EnumerateDevices(&devices);
  if (!r) {
    std::fprintf(stderr, "vkdml devices: %s\n", r.message.c_str());
    return cli::kExitDevice;
  }
  if (devices.empty()) {
    std::fprintf(stderr, "vkdml devices: no Vulkan physical devices found\n");
    return cli::kExitDevice;
  }
  size_t chosen = 0;
  for (size_t i = devices.size(); i-- > 0;)
    if (devices[i].type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) chosen = i;
  for (size_t i = 0; i < devices.size(); ++i) {
    const vkdml::DeviceInfo& d = devices[i];
    std::printf("%c %zu: %s\n", i == chosen ? '*' : ' ', i, d.name.c_str());
    std::printf("     type: %s\n", DeviceTypeName(d.type));
    std::printf("     driver: %s%s%s, version %s (0x%x)\n",
                d.driverName.empty() ? "unknown" : d.driverName.c_str(),
                d.driverInfo.empty() ? "" : " ", d.driverInfo.c_str(),
                Version(d.driverVersion).c_str(), d.driverVersion);
    std::printf("     Vulkan API version: %s\n", Version(d.apiVersion).c_str());
    std::printf("     maxStorageBufferRange: %llu bytes\n",
                static_cast<unsigned long long>(d.maxStorageBufferRange));
    std::printf(
        "     storageBuffer8BitAccess: %s, storageBuffer16BitAccess: %s, "
        "timelineSemaphore: %s\n",
        d.available.storageBuffer8BitAccess ? "yes" : "no",
        d.available.storageBuffer16BitAccess ? "yes" : "no",
        d.available.timelineSemaphore ? "yes" : "no");
    std::printf(
        "     shaderFloat64: %s, shaderInt64: %s, shaderBufferInt64Atomics: %s, "
        "shaderBufferFloat32AtomicAdd: %s\n",
        d.available.shaderFloat64 ? "yes" : "no", d.available.shaderInt64 ? "yes" : "no",
        d.available.shaderBufferInt64Atomics ? "yes" : "no",
        d.available.shaderBufferFloat32AtomicAdd ? "yes" : "no");
    std::printf("     shaderDenormPreserveFloat32: %s, shaderDenormPreserveFloat64: %s\n",
                d.available.shaderDenormPreserveFloat32 ? "yes" : "no",
                d.available.shaderDenormPreserveFloat64 ? "yes" : "no");
    PrintSupport(i);
  }
  std::printf("(* = the default device, used when --device is not given)\n");
  return 0;
}

int BenchCommand(int argc, char** argv) {
  return BenchMain(argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  int (*handler)(int, char**) = command == "devices"             ? DevicesMain
                                : command == "demo"              ? cli::DemoMain
                                : command == "run"               ? cli::RunMain
                                : command == "bench"             ? BenchCommand
                                : command == "paged-cache-write" ? cli::PagedWriteMain
                                : command == "paged-gather"      ? cli::PagedGatherMain
                                                                 : nullptr;
  if (!handler) {
    if (command.empty())
      std::fprintf(stderr, "vkdml: no command given\n%s", kUsage);
    else
      std::fprintf(stderr,
                   "vkdml: unknown command '%s', expected devices, demo, run, bench, "
                   "paged-cache-write or paged-gather\n",
                   command.c_str());
    return cli::kExitBadInput;
  }
  // Memory exhaustion anywhere is one line and its own exit status. The exception unwinds the
  // command first, so a pending output file is removed, never left half written.
  try {
    return handler(argc - 1, argv + 1);
  } catch (const npy::OutOfMemory& e) {
    std::fprintf(stderr, "vkdml %s: out of memory: %s\n", command.c_str(), e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vkdml %s: out of memory\n", command.c_str());
  } catch (const std::length_error&) {
    std::fprintf(stderr, "vkdml %s: out of memory (a size past what memory can hold)\n",
                 command.c_str());
  }
  return cli::kExitOutOfMemory;
}
