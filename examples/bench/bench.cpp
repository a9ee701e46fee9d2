// `vkdml bench`: times vkdml's gather/scatter operators on large random tensors with Vulkan
// timestamp queries, checks a sample of each output on the CPU, and compares the effective
// bandwidth with a plain uvec4 copy kernel (bench_copy.comp) of the same byte count timed in the
// same run. See examples/bench/BENCH.md for the cases and the byte formulas.
//
// vkdml work goes through the public API only. The timestamps, the copy kernel and the
// replayed command buffer use raw Vulkan, loaded through Device::GetDeviceProcAddr (no libvulkan
// link). By default the benchmark creates the Vulkan device itself (through the loader it opens
// with dlopen, as volk does) and hands it to vkdml, because replaying a pre-recorded command
// buffer needs the queue, which vkdml's own device does not expose; --vkdml-device lets vkdml
// create it instead (then the replay latency is skipped).
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include "bench.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "vkdml/vkdml.h"

#include "bench_spirv.h"

namespace {

using vkdml::UINT;
using vkdml::UINT64;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------------------------------
// Errors and small helpers

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A bad command-line value found only once Vulkan is up: exit 2, like other usage errors.
struct UsageError : BenchError {
  using BenchError::BenchError;
};

std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

void Check(const vkdml::Result& r, const char* what) {
  if (r.status == vkdml::Status::Unsupported)
    throw Unsupported(std::string(what) + ": " + r.message);
  if (!r.ok()) throw BenchError(std::string(what) + ": " + r.message);
}

void VkCheck(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    throw BenchError(Format("%s failed: VkResult %d", what, static_cast<int>(r)));
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Host time (ms) of each of `calls` calls of fn(iteration), after `warm` untimed ones.
std::vector<double> HostTimes(int warm, int calls, const std::function<void(int)>& fn) {
  std::vector<double> ms;
  for (int it = 0; it < warm + calls; ++it) {
    auto t0 = Clock::now();
    fn(it);
    if (it >= warm) ms.push_back(Seconds(t0, Clock::now()) * 1e3);
  }
  return ms;
}

uint64_t Product(const std::vector<uint32_t>& v, size_t begin = 0, size_t end = SIZE_MAX) {
  uint64_t p = 1;
  const size_t stop = std::min(end, v.size());
  for (size_t i = begin; i < stop; ++i) p *= v[i];
  return p;
}

std::string ShapeJson(const std::vector<uint32_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string ShapeText(const std::vector<uint32_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += Format("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return Format("%.6g", v);
}

std::string HumanBytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return Format("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return Format("%.1f MiB", b / (1024.0 * 1024));
  return Format("%.1f KiB", b / 1024.0);
}

// SplitMix64: a fast generator good enough for benchmark data; seeded per chunk so the data
// does not depend on the thread count.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

// Runs fn(chunk) for chunk in [0, chunks) on all hardware threads.
void ParallelFor(size_t chunks, const std::function<void(size_t)>& fn) {
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, chunks);
  if (threads <= 1) {
    for (size_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t c = next++; c < chunks; c = next++) fn(c);
    });
  for (auto& th : pool) th.join();
}

// A host byte array without zero-initialisation (gigabytes at full size).
struct Bytes {
  std::unique_ptr<uint8_t[]> p;
  size_t n = 0;
  void Allocate(size_t size) {
    p.reset(new uint8_t[size]);
    n = size;
  }
  uint8_t* data() { return p.get(); }
  const uint8_t* data() const { return p.get(); }
};

constexpr size_t kChunk = size_t(1) << 20;  // elements per generator chunk

// Random non-zero finite values: float32 in +-[1, 2), float16 in +-[1, 2), other types any
// non-zero bit pattern. The kernels move bits, so every value is exact on both sides.
void FillData(Bytes& b, size_t elemSize, uint64_t seed) {
  size_t count = b.n / elemSize;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x51ED2705ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i) {
      uint64_t r = rng.Next();
      if (elemSize == 4) {
        uint32_t v = 0x3F800000u | static_cast<uint32_t>(r & 0x7FFFFFu) |
                     static_cast<uint32_t>(r >> 63) << 31;
        std::memcpy(b.data() + i * 4, &v, 4);
      } else if (elemSize == 2) {
        uint16_t v = static_cast<uint16_t>(0x3C00u | (r & 0x3FFu) | ((r >> 63) << 15));
        std::memcpy(b.data() + i * 2, &v, 2);
      } else {
        r |= 1;
        std::memcpy(b.data() + i * elemSize, &r, elemSize);
      }
    }
  });
}

// float32 integers in +-[1, 4]: sums of them are exact whatever the order of the additions, so
// a reduction's output can be checked bit for bit without knowing the order.
void FillIntegers(Bytes& b, uint64_t seed) {
  size_t count = b.n / 4;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x51ED2705ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i) {
      uint64_t r = rng.Next();
      float v = static_cast<float>(1 + (r & 3)) * (r >> 63 ? -1.0f : 1.0f);
      std::memcpy(b.data() + i * 4, &v, 4);
    }
  });
}

bool IsSigned(vkdml::DML_TENSOR_DATA_TYPE t) {
  return t == vkdml::DML_TENSOR_DATA_TYPE_INT32 || t == vkdml::DML_TENSOR_DATA_TYPE_INT64;
}

void StoreIndex(uint8_t* p, size_t size, int64_t v) {
  if (size == 8) {
    std::memcpy(p, &v, 8);
  } else {
    int32_t w = static_cast<int32_t>(v);
    std::memcpy(p, &w, 4);
  }
}

// The index as vkdml reads it: clamped into [-n, n-1] (signed) or [0, n-1], negatives + n.
uint64_t LoadIndex(const uint8_t* base, vkdml::DML_TENSOR_DATA_TYPE t, uint64_t pos, uint64_t n) {
  size_t size = vkdml::DataTypeSize(t);
  const uint8_t* p = base + pos * size;
  if (IsSigned(t)) {
    int64_t v;
    if (size == 8) {
      std::memcpy(&v, p, 8);
    } else {
      int32_t w;
      std::memcpy(&w, p, 4);
      v = w;
    }
    int64_t sn = static_cast<int64_t>(n);
    v = std::min(std::max(v, -sn), sn - 1);
    return static_cast<uint64_t>(v < 0 ? v + sn : v);
  }
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return std::min(v, n - 1);
}

// Random indices: component j of each k-tuple in [0, ranges[j]).
void FillIndices(Bytes& b, vkdml::DML_TENSOR_DATA_TYPE t, const std::vector<uint32_t>& ranges,
                 uint64_t seed) {
  size_t size = vkdml::DataTypeSize(t), k = ranges.size();
  size_t count = b.n / size;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x2545F491ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i)
      StoreIndex(b.data() + i * size, size, static_cast<int64_t>(rng.Below(ranges[i % k])));
  });
}

// The first `count` entries of a random permutation of [0, n): unique row indices.
void FillUniqueIndices(Bytes& b, vkdml::DML_TENSOR_DATA_TYPE t, uint32_t n, uint64_t seed) {
  size_t size = vkdml::DataTypeSize(t), count = b.n / size;
  std::vector<uint32_t> perm(n);
  for (uint32_t i = 0; i < n; ++i) perm[i] = i;
  Rng rng(seed);
  for (size_t i = 0; i < count; ++i) {
    size_t j = i + rng.Below(n - i);
    std::swap(perm[i], perm[j]);
    StoreIndex(b.data() + i * size, size, perm[i]);
  }
}

// ------------------------------------------------------------------------------------------
// Progress on stderr: an updating line on a terminal; elsewhere plain lines once the run has
// taken more than two seconds.

struct Progress {
  bool enabled = true;
  bool tty = isatty(2) != 0;
  Clock::time_point start = Clock::now();
  bool shown = false;

  void Step(size_t index, size_t total, const std::string& name, const std::string& what) {
    if (!enabled) return;
    double t = Seconds(start, Clock::now());
    if (tty) {
      std::fprintf(stderr, "\r\033[K[%zu/%zu %.0fs] %s: %s", index + 1, total, t, name.c_str(),
                   what.c_str());
      shown = true;
    } else if (t > 2.0) {
      std::fprintf(stderr, "[%zu/%zu %.0fs] %s: %s\n", index + 1, total, t, name.c_str(),
                   what.c_str());
    }
    std::fflush(stderr);
  }
  void Clear() {
    if (tty && shown) std::fprintf(stderr, "\r\033[K");
    shown = false;
    std::fflush(stderr);
  }
};

// ------------------------------------------------------------------------------------------
// Vulkan: the loader (opened with dlopen), an optional device of our own, and the device
// functions the benchmark records itself.

// clang-format off
#define BENCH_DEVICE_FUNCTIONS(X) \
  X(vkCreateShaderModule) \
  X(vkDestroyShaderModule) \
  X(vkCreateDescriptorSetLayout) \
  X(vkDestroyDescriptorSetLayout) \
  X(vkCreatePipelineLayout) \
  X(vkDestroyPipelineLayout) \
  X(vkCreateComputePipelines) \
  X(vkDestroyPipeline) \
  X(vkCreateDescriptorPool) \
  X(vkDestroyDescriptorPool) \
  X(vkResetDescriptorPool) \
  X(vkAllocateDescriptorSets) \
  X(vkUpdateDescriptorSets) \
  X(vkCreateQueryPool) \
  X(vkDestroyQueryPool) \
  X(vkGetQueryPoolResults) \
  X(vkCmdResetQueryPool) \
  X(vkCmdWriteTimestamp) \
  X(vkCmdBindPipeline) \
  X(vkCmdBindDescriptorSets) \
  X(vkCmdPushConstants) \
  X(vkCmdDispatch) \
  X(vkCmdPipelineBarrier) \
  X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) \
  X(vkAllocateCommandBuffers) \
  X(vkBeginCommandBuffer) \
  X(vkEndCommandBuffer) \
  X(vkQueueSubmit) \
  X(vkCreateFence) \
  X(vkDestroyFence) \
  X(vkWaitForFences) \
  X(vkGetFenceStatus) \
  X(vkResetFences) \
  X(vkCreateSemaphore) \
  X(vkDestroySemaphore) \
  X(vkDeviceWaitIdle)
// clang-format on

struct Vk {
  VkDevice device = VK_NULL_HANDLE;
#define BENCH_DECLARE(name) PFN_##name name = nullptr;
  BENCH_DEVICE_FUNCTIONS(BENCH_DECLARE)
#undef BENCH_DECLARE
  PFN_vkGetSemaphoreCounterValue vkGetSemaphoreCounterValue = nullptr;

  void Load(VkDevice dev, PFN_vkGetDeviceProcAddr gdpa) {
    device = dev;
#define BENCH_LOAD(name)                                 \
  name = reinterpret_cast<PFN_##name>(gdpa(dev, #name)); \
  if (!name) throw BenchError("vkGetDeviceProcAddr returned null for " #name);
    BENCH_DEVICE_FUNCTIONS(BENCH_LOAD)
#undef BENCH_LOAD
    // Vulkan 1.2: null on older devices, used only where OwnVulkan enabled timelineSemaphore.
    vkGetSemaphoreCounterValue =
        reinterpret_cast<PFN_vkGetSemaphoreCounterValue>(gdpa(dev, "vkGetSemaphoreCounterValue"));
  }
};

// A Vulkan instance and device the benchmark creates and lends to vkdml (DeviceDesc's adopt
// path), so it also has the queue for replaying its own command buffers.
struct OwnVulkan {
  void* lib = nullptr;
  PFN_vkGetInstanceProcAddr gipa = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  uint32_t timestampValidBits = 64;
  bool fp16Storage = false;
  bool timeline = false;  // timelineSemaphore enabled (Vulkan 1.2 device and loader)
  PFN_vkDestroyInstance destroyInstance = nullptr;
  PFN_vkDestroyDevice destroyDevice = nullptr;

  ~OwnVulkan() {
    if (device && destroyDevice) destroyDevice(device, nullptr);
    if (instance && destroyInstance) destroyInstance(instance, nullptr);
    if (lib) dlclose(lib);
  }

  template <typename F>
  F Instance(const char* name) {
    auto f = reinterpret_cast<F>(gipa(instance, name));
    if (!f) throw BenchError(std::string("vkGetInstanceProcAddr returned null for ") + name);
    return f;
  }

  void Create(int deviceIndex) {
    for (const char* name : {"libvulkan.so.1", "libvulkan.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) throw BenchError("cannot open the Vulkan loader (libvulkan.so.1)");
    gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!gipa) throw BenchError("libvulkan.so.1 has no vkGetInstanceProcAddr");

    uint32_t loaderVersion = VK_API_VERSION_1_0;
    if (auto ev = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
            gipa(VK_NULL_HANDLE, "vkEnumerateInstanceVersion")))
      ev(&loaderVersion);
    if (loaderVersion < VK_API_VERSION_1_1) throw BenchError("the Vulkan loader is older than 1.1");
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "vkdml bench";
    app.apiVersion = loaderVersion;
    VkInstanceCreateInfo ici{};
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    auto createInstance =
        reinterpret_cast<PFN_vkCreateInstance>(gipa(VK_NULL_HANDLE, "vkCreateInstance"));
    VkCheck(createInstance(&ici, nullptr, &instance), "vkCreateInstance");
    destroyInstance = Instance<PFN_vkDestroyInstance>("vkDestroyInstance");

    auto enumerate = Instance<PFN_vkEnumeratePhysicalDevices>("vkEnumeratePhysicalDevices");
    auto props = Instance<PFN_vkGetPhysicalDeviceProperties>("vkGetPhysicalDeviceProperties");
    uint32_t n = 0;
    VkCheck(enumerate(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(n);
    VkCheck(enumerate(instance, &n, devices.data()), "vkEnumeratePhysicalDevices");
    if (n == 0) throw BenchError("no Vulkan device");
    if (deviceIndex >= static_cast<int>(n))
      throw UsageError(Format("--device is %d, expected 0 to %u (%u device%s; see `vkdml devices`)",
                              deviceIndex, n - 1, n, n == 1 ? "" : "s"));
    if (deviceIndex >= 0) {
      physical = devices[static_cast<size_t>(deviceIndex)];
    } else {  // as vkdml: the first discrete GPU, else the first device
      physical = devices[0];
      for (VkPhysicalDevice d : devices) {
        VkPhysicalDeviceProperties p;
        props(d, &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
          physical = d;
          break;
        }
      }
    }
    VkPhysicalDeviceProperties p;
    props(physical, &p);
    if (p.apiVersion < VK_API_VERSION_1_1) throw BenchError("the device is older than Vulkan 1.1");

    auto qfp = Instance<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
        "vkGetPhysicalDeviceQueueFamilyProperties");
    uint32_t nf = 0;
    qfp(physical, &nf, nullptr);
    std::vector<VkQueueFamilyProperties> families(nf);
    qfp(physical, &nf, families.data());
    bool found = false;
    for (int pass = 0; pass < 2 && !found; ++pass)
      for (uint32_t i = 0; i < nf && !found; ++i)
        if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
            (pass == 1 || families[i].timestampValidBits > 0)) {
          family = i;
          timestampValidBits = families[i].timestampValidBits;
          found = true;
        }
    if (!found) throw BenchError("the device has no compute queue");

    const bool core12 = p.apiVersion >= VK_API_VERSION_1_2 && loaderVersion >= VK_API_VERSION_1_2;
    VkPhysicalDeviceTimelineSemaphoreFeatures tl{};
    tl.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
    VkPhysicalDevice16BitStorageFeatures f16{};
    f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    f16.pNext = core12 ? &tl : nullptr;
    VkPhysicalDeviceFeatures2 f2{};
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f16;
    Instance<PFN_vkGetPhysicalDeviceFeatures2>("vkGetPhysicalDeviceFeatures2")(physical, &f2);
    fp16Storage = f16.storageBuffer16BitAccess == VK_TRUE;
    timeline = core12 && tl.timelineSemaphore == VK_TRUE;
    VkPhysicalDeviceTimelineSemaphoreFeatures enableTl{};
    enableTl.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
    enableTl.timelineSemaphore = VK_TRUE;
    VkPhysicalDevice16BitStorageFeatures enable16{};
    enable16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    enable16.storageBuffer16BitAccess = fp16Storage ? VK_TRUE : VK_FALSE;
    enable16.pNext = timeline ? &enableTl : nullptr;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{};
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{};
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.pNext = &enable16;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    VkCheck(Instance<PFN_vkCreateDevice>("vkCreateDevice")(physical, &dci, nullptr, &device),
            "vkCreateDevice");
    auto gdpa = Instance<PFN_vkGetDeviceProcAddr>("vkGetDeviceProcAddr");
    destroyDevice = reinterpret_cast<PFN_vkDestroyDevice>(gdpa(device, "vkDestroyDevice"));
    auto getQueue = reinterpret_cast<PFN_vkGetDeviceQueue>(gdpa(device, "vkGetDeviceQueue"));
    getQueue(device, family, 0, &queue);
  }
};

// ------------------------------------------------------------------------------------------
// Cases

enum class OpKind { GatherND, GatherElements, ScatterND, ScatterElements };

struct Spec {
  std::string name;
  OpKind kind = OpKind::GatherND;
  vkdml::DML_TENSOR_DATA_TYPE dtype = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32;
  vkdml::DML_TENSOR_DATA_TYPE itype = vkdml::DML_TENSOR_DATA_TYPE_INT64;
  std::vector<uint32_t> input, indices, updates;  // actual shapes (updates: scatters only)
  int axis = -1;                                  // GatherElements, ScatterElements
  bool inPlace = false;                           // scatters: output bound to the input
  bool uniqueRows = false;                        // ScatterND: a permutation prefix
  // Scatters with a reduction (vkdml's VKDML_OPERATOR_SCATTER_*_REDUCE), deterministic or not.
  vkdml::VKDML_REDUCE_FUNCTION reduce = vkdml::VKDML_REDUCE_FUNCTION_NONE;
  bool deterministic = false;
  bool latency = false;
  bool diagnostic = false;  // runs only when named: evidence for what limits a case
  std::string peer;

  std::vector<uint32_t> Output() const {
    if (kind == OpKind::GatherElements) return indices;
    if (IsScatter()) return input;
    std::vector<uint32_t> out(indices.begin(), indices.end() - 1);
    out.insert(out.end(), input.begin() + indices.back(), input.end());
    return out;
  }
  bool IsScatter() const { return kind == OpKind::ScatterND || kind == OpKind::ScatterElements; }
  const char* ReduceName() const {  // ONNX's names
    const char* names[] = {"none", "add", "mul", "max", "min"};
    return reduce <= vkdml::VKDML_REDUCE_FUNCTION_MIN ? names[reduce] : "?";
  }
  const char* OpName() const {
    switch (kind) {
      case OpKind::GatherND:
        return "GatherND";
      case OpKind::GatherElements:
        return "GatherElements";
      case OpKind::ScatterND:
        return "ScatterND";
      case OpKind::ScatterElements:
        return "ScatterElements";
    }
    return "?";
  }
};

const char* TypeName(vkdml::DML_TENSOR_DATA_TYPE t) {
  switch (t) {
    case vkdml::DML_TENSOR_DATA_TYPE_FLOAT32:
      return "float32";
    case vkdml::DML_TENSOR_DATA_TYPE_FLOAT16:
      return "float16";
    case vkdml::DML_TENSOR_DATA_TYPE_INT32:
      return "int32";
    case vkdml::DML_TENSOR_DATA_TYPE_INT64:
      return "int64";
    default:
      return vkdml::DataTypeName(t);
  }
}

Spec MakeSpec(const char* name, OpKind kind, vkdml::DML_TENSOR_DATA_TYPE dtype,
              vkdml::DML_TENSOR_DATA_TYPE itype, std::vector<uint32_t> input,
              std::vector<uint32_t> indices) {
  Spec s;
  s.name = name;
  s.kind = kind;
  s.dtype = dtype;
  s.itype = itype;
  s.input = std::move(input);
  s.indices = std::move(indices);
  return s;
}

// Full sizes; `small` divides the big dimensions by 64 (8 for the square GatherElements and
// ScatterElements cases: 1/64 of the elements) so that all cases run in well under a minute on
// lavapipe.
std::vector<Spec> MakeSpecs(bool small) {
  const uint32_t rows = small ? 16384 : 1048576, picks = small ? 4096 : 262144;
  const uint32_t side = small ? 512 : 4096, tuples = small ? 16384 : 1048576;
  const uint32_t sq = small ? 1024 : 8192;
  const auto f32 = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32, f16 = vkdml::DML_TENSOR_DATA_TYPE_FLOAT16;
  const auto i64 = vkdml::DML_TENSOR_DATA_TYPE_INT64, i32 = vkdml::DML_TENSOR_DATA_TYPE_INT32;
  std::vector<Spec> s;
  auto add = [&](Spec sp) { s.push_back(std::move(sp)); };
  Spec rowsF32 = MakeSpec("rows-f32", OpKind::GatherND, f32, i64, {rows, 256}, {picks, 1});
  rowsF32.peer = "torch.index_select(x, 0, i)";
  add(rowsF32);
  Spec rowsF16 = rowsF32;
  rowsF16.name = "rows-f16";
  rowsF16.dtype = f16;
  add(rowsF16);
  Spec tup = MakeSpec("tuples-f32", OpKind::GatherND, f32, i64, {side, side, 16}, {tuples, 2});
  tup.peer = "x[i0, i1]";
  add(tup);
  Spec el1 = MakeSpec("elements-axis1-f32", OpKind::GatherElements, f32, i64, {sq, sq}, {sq, sq});
  el1.axis = 1;
  el1.peer = "torch.gather(x, 1, i)";
  add(el1);
  Spec el0 = el1;
  el0.name = "elements-axis0-f32";
  el0.axis = 0;
  el0.peer = "torch.gather(x, 0, i)";
  add(el0);
  Spec el1i = el1;
  el1i.name = "elements-axis1-i32idx";
  el1i.itype = i32;
  add(el1i);
  Spec sc = MakeSpec("scatter-rows-f32", OpKind::ScatterND, f32, i64, {rows, 256}, {picks, 1});
  sc.updates = {picks, 256};
  sc.uniqueRows = true;
  sc.peer = "x.clone().index_copy_(0, i, u)";
  add(sc);
  Spec sci = sc;
  sci.name = "scatter-rows-inplace";
  sci.inPlace = true;
  sci.peer = "x.index_copy_(0, i, u)";
  add(sci);
  // ScatterElements along axis 1, in place, plain random indices: duplicate targets in a row.
  Spec sce =
      MakeSpec("scatter-elements-axis1-f32", OpKind::ScatterElements, f32, i64, {sq, sq}, {sq, sq});
  sce.updates = {sq, sq};
  sce.axis = 1;
  sce.inPlace = true;
  sce.peer = "x.scatter_(1, i, u)";
  add(sce);
  // Scatters with a reduction, in place, with random indices (duplicate targets), each again
  // deterministic.
  Spec sadd = MakeSpec("scatter-add-rows-f32", OpKind::ScatterND, f32, i64, {rows, 256}, {rows, 1});
  sadd.updates = {rows, 256};
  sadd.inPlace = true;
  sadd.reduce = vkdml::VKDML_REDUCE_FUNCTION_ADD;
  sadd.peer = "x.index_add_(0, i, u)";
  Spec seadd = sce;
  seadd.name = "scatter-elements-add-axis1-f32";
  seadd.reduce = vkdml::VKDML_REDUCE_FUNCTION_ADD;
  seadd.peer = "x.scatter_add_(1, i, u)";
  Spec semax = seadd;
  semax.name = "scatter-elements-amax-axis1-f32";
  semax.reduce = vkdml::VKDML_REDUCE_FUNCTION_MAX;
  semax.peer = "x.scatter_reduce_(1, i, u, \"amax\")";
  for (Spec* r : {&sadd, &seadd, &semax}) {
    add(*r);
    r->name += "-det";
    r->deterministic = true;
    r->peer += " (torch.use_deterministic_algorithms(True))";
    add(*r);
  }
  Spec lat = MakeSpec("latency", OpKind::GatherElements, f32, i64, {64, 64}, {64, 64});
  lat.axis = 1;
  lat.latency = true;
  lat.peer = "torch.gather(x, 1, i) + torch.cuda.synchronize()";
  add(lat);

  // Diagnostics (run with --case NAME). elements-axis0 with 64 input rows: the same kernel and
  // access pattern, but the rows a stripe reads fit in an SM's L1 instead of L2.
  Spec el0l1 = el0;
  el0l1.name = "elements-axis0-64rows";
  el0l1.input = {64, sq};
  el0l1.diagnostic = true;
  add(el0l1);
  // elements-axis0 with rows 8224 elements apart instead of 8192: the same walk, but the rows a
  // stripe reads no longer lie a power of two (32 KiB) apart in memory.
  Spec el0p = el0;
  el0p.name = "elements-axis0-pitch8224";
  el0p.input = {sq, sq + 32};
  el0p.indices = {sq, sq + 32};
  el0p.diagnostic = true;
  add(el0p);
  // tuples-f32 over a 4 MiB input that stays in L2: what is left without random DRAM reads.
  Spec tupL2 = tup;
  tupL2.name = "tuples-f32-4mib";
  tupL2.input = {256, 256, 16};
  tupL2.diagnostic = true;
  add(tupL2);
  return s;
}

// The DirectML descriptors of a case, right-aligned to one DimensionCount. Not movable: the
// descriptors point into it.
struct OpDesc {
  struct Tensor {
    std::vector<UINT> sizes;
    vkdml::DML_BUFFER_TENSOR_DESC buffer{};
    vkdml::DML_TENSOR_DESC desc{};
  };
  Tensor input, indices, updates, output;
  vkdml::DML_GATHER_ND_OPERATOR_DESC gnd{};
  vkdml::DML_GATHER_ELEMENTS_OPERATOR_DESC ge{};
  vkdml::DML_SCATTER_ND_OPERATOR_DESC snd{};
  vkdml::DML_SCATTER_OPERATOR_DESC se{};
  vkdml::VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC sndr{};
  vkdml::VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC ser{};
  vkdml::DML_OPERATOR_DESC op{};

  explicit OpDesc(const Spec& s) {
    std::vector<uint32_t> out = s.Output();
    size_t d = std::max({s.input.size(), s.indices.size(), out.size(), s.updates.size()});
    auto set = [d](Tensor& t, vkdml::DML_TENSOR_DATA_TYPE type, const std::vector<uint32_t>& a) {
      t.sizes.assign(d - a.size(), 1u);
      t.sizes.insert(t.sizes.end(), a.begin(), a.end());
      t.buffer.DataType = type;
      t.buffer.Flags = vkdml::DML_TENSOR_FLAG_NONE;
      t.buffer.DimensionCount = static_cast<UINT>(d);
      t.buffer.Sizes = t.sizes.data();
      t.buffer.Strides = nullptr;
      t.buffer.TotalTensorSizeInBytes =
          vkdml::CalcBufferTensorSize(type, static_cast<UINT>(d), t.sizes.data(), nullptr);
      t.buffer.GuaranteedBaseOffsetAlignment = 0;
      t.desc = {vkdml::DML_TENSOR_TYPE_BUFFER, &t.buffer};
    };
    set(input, s.dtype, s.input);
    set(indices, s.itype, s.indices);
    set(output, s.dtype, out);
    switch (s.kind) {
      case OpKind::GatherND:
        gnd = {&input.desc, &indices.desc, &output.desc, static_cast<UINT>(s.input.size()),
               static_cast<UINT>(s.indices.size())};
        op = {vkdml::DML_OPERATOR_GATHER_ND, &gnd};
        break;
      case OpKind::GatherElements:
        ge = {&input.desc, &indices.desc, &output.desc,
              static_cast<UINT>(s.axis + static_cast<int>(d - s.input.size()))};
        op = {vkdml::DML_OPERATOR_GATHER_ELEMENTS, &ge};
        break;
      case OpKind::ScatterND:
        set(updates, s.dtype, s.updates);
        snd = {&input.desc,
               &indices.desc,
               &updates.desc,
               &output.desc,
               static_cast<UINT>(s.input.size()),
               static_cast<UINT>(s.indices.size())};
        op = {vkdml::DML_OPERATOR_SCATTER_ND, &snd};
        if (s.reduce) {
          sndr = {snd.InputTensor,  snd.IndicesTensor,       snd.UpdatesTensor,
                  snd.OutputTensor, snd.InputDimensionCount, snd.IndicesDimensionCount,
                  s.reduce};
          op = {vkdml::VKDML_OPERATOR_SCATTER_ND_REDUCE, &sndr};
        }
        break;
      case OpKind::ScatterElements:
        set(updates, s.dtype, s.updates);
        se = {&input.desc, &indices.desc, &updates.desc, &output.desc,
              static_cast<UINT>(s.axis + static_cast<int>(d - s.input.size()))};
        op = {vkdml::DML_OPERATOR_SCATTER_ELEMENTS, &se};
        if (s.reduce) {
          ser = {se.InputTensor,  se.IndicesTensor, se.UpdatesTensor,
                 se.OutputTensor, se.Axis,          s.reduce};
          op = {vkdml::VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE, &ser};
        }
        break;
    }
  }
  OpDesc(const OpDesc&) = delete;
  OpDesc& operator=(const OpDesc&) = delete;
};

// Host copies of a case's inputs (random, never zeros) and the CPU reference on a sample.
struct HostData {
  Bytes input, indices, updates;
  uint64_t targets = 0;  // ScatterElements: distinct output elements that some update targets
};

// ScatterElements: how many distinct output elements the updates target (a duplicate target
// counts once). Each line along the axis (outer, inner) is independent.
uint64_t CountTargets(const Spec& s, const HostData& h) {
  const size_t axis = static_cast<size_t>(s.axis);
  const uint64_t outer = Product(s.input, 0, axis), inner = Product(s.input, axis + 1);
  const uint64_t n = s.input[axis], m = s.indices[axis];
  std::atomic<uint64_t> total{0};
  ParallelFor(static_cast<size_t>(outer), [&](size_t o) {
    std::vector<uint8_t> hit(static_cast<size_t>(n * inner), 0);
    uint64_t count = 0;
    for (uint64_t j = 0; j < m; ++j)
      for (uint64_t in = 0; in < inner; ++in) {
        uint64_t u = (o * m + j) * inner + in;
        uint64_t t = LoadIndex(h.indices.data(), s.itype, u, n) * inner + in;
        count += hit[t] ? 0 : 1;
        hit[t] = 1;
      }
    total += count;
  });
  return total;
}

void MakeHostData(const Spec& s, const OpDesc& d, HostData* h, uint64_t seed) {
  size_t es = vkdml::DataTypeSize(s.dtype);
  const bool integers = s.reduce == vkdml::VKDML_REDUCE_FUNCTION_ADD;
  h->input.Allocate(d.input.buffer.TotalTensorSizeInBytes);
  if (integers)
    FillIntegers(h->input, seed * 3 + 1);
  else
    FillData(h->input, es, seed * 3 + 1);
  h->indices.Allocate(Product(s.indices) * vkdml::DataTypeSize(s.itype));
  if (s.uniqueRows) {
    FillUniqueIndices(h->indices, s.itype, s.input[0], seed * 3 + 2);
  } else if (s.kind == OpKind::GatherElements || s.kind == OpKind::ScatterElements) {
    // Plain random along the axis: for ScatterElements, duplicate targets within a line.
    FillIndices(h->indices, s.itype, {s.input[static_cast<size_t>(s.axis)]}, seed * 3 + 2);
  } else {
    std::vector<uint32_t> ranges(s.input.begin(), s.input.begin() + s.indices.back());
    FillIndices(h->indices, s.itype, ranges, seed * 3 + 2);
  }
  if (s.IsScatter()) {
    h->updates.Allocate(d.updates.buffer.TotalTensorSizeInBytes);
    if (integers)
      FillIntegers(h->updates, seed * 3 + 3);
    else
      FillData(h->updates, es, seed * 3 + 3);
  }
  if (s.kind == OpKind::ScatterElements) h->targets = CountTargets(s, *h);
  if (s.kind == OpKind::ScatterND && s.reduce) {  // distinct rows, times a row's elements
    std::vector<uint8_t> hit(s.input[0], 0);
    for (uint64_t i = 0; i < s.indices[0]; ++i)
      h->targets += hit[LoadIndex(h->indices.data(), s.itype, i, s.input[0])]++ ? 0 : 1;
    h->targets *= Product(s.input, 1);
  }
}

// Where output element o comes from: an input element or an updates element; for
// ScatterElements with duplicate targets, any one of the updates that target it.
struct Reference {
  const Spec& s;
  const HostData& h;
  uint64_t k = 0, slice = 1;
  std::vector<int64_t> owner;        // ScatterND: input slice -> update row
  std::vector<uint32_t> head, next;  // ScatterND with a reduction: each slice's rows, in order
  uint64_t axisN = 1, axisM = 1, axisInner = 1;  // ScatterElements: output and updates

  Reference(const Spec& spec, const HostData& host) : s(spec), h(host) {
    if (s.kind == OpKind::GatherElements) return;
    if (s.kind == OpKind::ScatterElements) {
      size_t axis = static_cast<size_t>(s.axis);
      axisN = s.input[axis];
      axisM = s.indices[axis];
      axisInner = Product(s.input, axis + 1);
      return;
    }
    k = s.indices.back();
    slice = Product(s.input, k);
    if (s.kind == OpKind::ScatterND) {
      owner.assign(Product(s.input, 0, k), -1);
      uint64_t rows = Product(s.indices, 0, s.indices.size() - 1);
      for (uint64_t i = 0; i < rows; ++i) owner[TupleSlot(i)] = static_cast<int64_t>(i);
      if (s.reduce) {
        head.assign(owner.size(), UINT32_MAX);
        next.assign(rows, UINT32_MAX);
        for (uint64_t i = rows; i-- > 0;) {
          next[i] = head[TupleSlot(i)];
          head[TupleSlot(i)] = static_cast<uint32_t>(i);
        }
      }
    }
  }
  // A reduction's output element o (float32, as the bench's reduction cases are): the input
  // folded with each update that targets it, in IndicesTensor's order, NumPy's way.
  float Folded(uint64_t o) const {
    float v, u;
    std::memcpy(&v, h.input.data() + o * 4, 4);
    auto fold = [&](const uint8_t* update) {
      std::memcpy(&u, update, 4);
      if (s.reduce == vkdml::VKDML_REDUCE_FUNCTION_ADD) v = v + u;
      if (s.reduce == vkdml::VKDML_REDUCE_FUNCTION_MAX) v = std::isnan(v) || v >= u ? v : u;
    };
    if (s.kind == OpKind::ScatterND) {
      for (uint32_t r = head[o / slice]; r != UINT32_MAX; r = next[r])
        fold(h.updates.data() + (r * slice + o % slice) * 4);
      return v;
    }
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = o / (n * inner), c = (o / inner) % n, in = o % inner;
    for (uint64_t j = 0; j < m; ++j) {
      uint64_t e = (outer * m + j) * inner + in;
      if (LoadIndex(h.indices.data(), s.itype, e, n) == c) fold(h.updates.data() + e * 4);
    }
    return v;
  }
  uint64_t TupleSlot(uint64_t i) const {
    uint64_t off = 0;
    for (uint64_t j = 0; j < k; ++j)
      off = off * s.input[j] + LoadIndex(h.indices.data(), s.itype, i * k + j, s.input[j]);
    return off;
  }
  // ScatterElements: the output element that updates element u targets.
  uint64_t Target(uint64_t u) const {
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = u / (m * inner), in = u % inner;
    return (outer * n + LoadIndex(h.indices.data(), s.itype, u, n)) * inner + in;
  }
  // The values output element o may hold: one, except for ScatterElements, where it is each
  // update targeting o (one of them wins) or, when none does, the input element.
  void Allowed(uint64_t o, std::vector<const uint8_t*>* want) const {
    want->clear();
    if (s.kind != OpKind::ScatterElements) {
      want->push_back(Expected(o));
      return;
    }
    size_t es = vkdml::DataTypeSize(s.dtype);
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = o / (n * inner), c = (o / inner) % n, in = o % inner;
    for (uint64_t j = 0; j < m; ++j) {
      uint64_t u = (outer * m + j) * inner + in;
      if (LoadIndex(h.indices.data(), s.itype, u, n) == c)
        want->push_back(h.updates.data() + u * es);
    }
    if (want->empty()) want->push_back(h.input.data() + o * es);
  }
  const uint8_t* Expected(uint64_t o) const {
    size_t es = vkdml::DataTypeSize(s.dtype);
    switch (s.kind) {
      case OpKind::GatherND:
        return h.input.data() + (TupleSlot(o / slice) * slice + o % slice) * es;
      case OpKind::GatherElements: {
        // Output shape == indices shape; replace the axis coordinate with the index.
        size_t axis = static_cast<size_t>(s.axis);
        uint64_t inner = Product(s.indices, axis + 1);
        uint64_t outer = o / (inner * s.indices[axis]);
        uint64_t in = o % inner;
        uint64_t idx = LoadIndex(h.indices.data(), s.itype, o, s.input[axis]);
        uint64_t src = (outer * s.input[axis] + idx) * Product(s.input, axis + 1) + in;
        return h.input.data() + src * es;
      }
      case OpKind::ScatterND: {
        int64_t row = owner[o / slice];
        if (row < 0) return h.input.data() + o * es;
        return h.updates.data() + (static_cast<uint64_t>(row) * slice + o % slice) * es;
      }
      case OpKind::ScatterElements:  // Allowed()
        break;
    }
    return nullptr;
  }
};

// Checks `samples` random output elements (all of them when there are fewer); for ScatterND,
// half of the sample lies in updated slices, for ScatterElements half are targets of random
// update elements. Returns the number of mismatches.
uint64_t Verify(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                std::string* first) {
  Reference ref(s, h);
  size_t es = vkdml::DataTypeSize(s.dtype);
  uint64_t total = Product(s.Output());
  const uint64_t samples = 20000;
  std::vector<uint64_t> pos;
  if (total <= samples) {
    for (uint64_t o = 0; o < total; ++o) pos.push_back(o);
  } else {
    Rng rng(12345);
    uint64_t rows = Product(s.indices, 0, s.indices.size() - 1);
    for (uint64_t i = 0; i < samples; ++i) {
      if (s.kind == OpKind::ScatterND && i % 2)
        pos.push_back(ref.TupleSlot(rng.Below(rows)) * ref.slice + rng.Below(ref.slice));
      else if (s.kind == OpKind::ScatterElements && i % 2)
        pos.push_back(ref.Target(rng.Below(Product(s.indices))));
      else
        pos.push_back(rng.Below(total));
    }
  }
  uint64_t bad = 0;
  std::vector<const uint8_t*> want;
  for (uint64_t o : pos) {
    float folded;
    if (s.reduce) {
      folded = ref.Folded(o);
      want.assign(1, reinterpret_cast<const uint8_t*>(&folded));
    } else {
      ref.Allowed(o, &want);
    }
    bool ok = false;
    for (const uint8_t* w : want) ok = ok || std::memcmp(out + o * es, w, es) == 0;
    if (!ok && !bad++) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, out + o * es, es);
      std::memcpy(&w, want[0], es);
      *first = Format("output element %" PRIu64 " is 0x%" PRIx64 ", expected 0x%" PRIx64, o, g, w);
      if (want.size() > 1)
        *first += Format(" or one of the other %zu updates targeting it", want.size() - 1);
    }
  }
  *checked = pos.size();
  return bad;
}

// Minimum bytes a case must move (examples/bench/BENCH.md).
double MinBytes(const Spec& s, const HostData& h) {
  double es = vkdml::DataTypeSize(s.dtype), is = vkdml::DataTypeSize(s.itype);
  double idx = static_cast<double>(Product(s.indices)) * is;
  double out = static_cast<double>(Product(s.Output())) * es;
  if (!s.IsScatter()) return idx + 2 * out;  // indices + elements read + output
  double upd = static_cast<double>(Product(s.updates)) * es;
  if (!s.inPlace)  // input read + output written + indices + updates read
    return static_cast<double>(Product(s.input)) * es + out + idx + upd;
  // In place: indices + updates read + the output elements written; for ScatterElements the
  // distinct targets (a duplicate target needs one write), for ScatterND the updated slices. A
  // reduction also reads each distinct target.
  if (s.reduce) return idx + upd + 2 * static_cast<double>(h.targets) * es;
  if (s.kind == OpKind::ScatterElements) return idx + upd + static_cast<double>(h.targets) * es;
  return idx + 2 * upd;
}

// ------------------------------------------------------------------------------------------
// The benchmark context: device, copy kernel, timing.

struct Options {
  std::vector<std::string> cases;
  bool small = false;
  int device = -1;
  bool json = false;
  bool vkdmlDevice = false;
  bool progress = true;
  int runs = 30, warmup = 5, latencyCalls = 200;
  int rotate = -1;  // -1 auto, 0 off, n: n buffer sets
  uint64_t seed = 1;
};

struct Result {
  const Spec* spec = nullptr;
  std::string caseName, timing = "gpu-timestamps", error;
  bool skipped = false;
  double ms = NAN, copyMs = NAN, bytes = 0, minMs = NAN, maxMs = NAN;
  double copyMinMs = NAN, copyMaxMs = NAN;
  int runs = 0, rotation = 1;
  uint64_t checked = 0, mismatches = 0;
  std::string firstMismatch;
};

// A latency row of case s, timed on the host.
Result HostRow(const Spec& s, const char* name) {
  Result r;
  r.spec = &s;
  r.caseName = name;
  r.timing = "host";
  return r;
}

// A latency row from host-timed calls.
void SetHostTimes(Result* r, const std::vector<double>& ms) {
  r->ms = Median(ms);
  r->minMs = *std::min_element(ms.begin(), ms.end());
  r->maxMs = *std::max_element(ms.begin(), ms.end());
  r->runs = static_cast<int>(ms.size());
}

void Barrier(const Vk& vk, VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

constexpr VkAccessFlags kShaderRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

struct Context {
  Options opt;
  OwnVulkan own;
  std::unique_ptr<vkdml::Device> dev;
  Vk vk;
  uint32_t timestampValidBits = 64;
  Progress progress;
  size_t caseIndex = 0, caseCount = 0;

  // The copy kernel.
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  static constexpr uint32_t kMaxSets = 16;

  ~Context() {
    if (vk.device) {
      if (pool) vk.vkDestroyDescriptorPool(vk.device, pool, nullptr);
      if (pipeline) vk.vkDestroyPipeline(vk.device, pipeline, nullptr);
      if (layout) vk.vkDestroyPipelineLayout(vk.device, layout, nullptr);
      if (setLayout) vk.vkDestroyDescriptorSetLayout(vk.device, setLayout, nullptr);
      if (module) vk.vkDestroyShaderModule(vk.device, module, nullptr);
    }
    dev.reset();  // before `own` destroys the VkDevice
  }

  const vkdml::DeviceInfo& Info() const { return dev->Info(); }
  bool Timestamps() const { return Info().timestampsSupported && Info().timestampPeriod > 0; }
  void Step(const std::string& name, const std::string& what) {
    progress.Step(caseIndex, caseCount, name, what);
  }

  void Open() {
    vkdml::DeviceDesc desc;
    if (opt.vkdmlDevice) {
      desc.physicalDeviceIndex = opt.device;
    } else {
      own.Create(opt.device);
      desc.instance = own.instance;
      desc.physicalDevice = own.physical;
      desc.device = own.device;
      desc.queue = own.queue;
      desc.queueFamilyIndex = own.family;
      desc.getInstanceProcAddr = own.gipa;
      desc.enabledFeatures.storageBuffer16BitAccess = own.fp16Storage;
      desc.enabledFeatures.timelineSemaphore = own.timeline;
      timestampValidBits = own.timestampValidBits;
    }
    Check(vkdml::CreateDevice(desc, &dev), "CreateDevice");
    vk.Load(dev->Handle(), dev->GetDeviceProcAddr());
    CreateCopyKernel();
  }

  void CreateCopyKernel() {
    const bench::SpirvModule* copy = bench::FindSpirv("bench_copy");
    if (!copy) throw BenchError("bench_copy.spv is not embedded");
    VkShaderModuleCreateInfo smci{};
    smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    smci.codeSize = copy->count * 4;
    smci.pCode = copy->words;
    VkCheck(vk.vkCreateShaderModule(vk.device, &smci, nullptr, &module), "vkCreateShaderModule");
    VkDescriptorSetLayoutBinding b[2]{};
    for (uint32_t i = 0; i < 2; ++i) {
      b[i].binding = i;
      b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[i].descriptorCount = 1;
      b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dslci{};
    dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dslci.bindingCount = 2;
    dslci.pBindings = b;
    VkCheck(vk.vkCreateDescriptorSetLayout(vk.device, &dslci, nullptr, &setLayout),
            "vkCreateDescriptorSetLayout");
    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
    VkPipelineLayoutCreateInfo plci{};
    plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &setLayout;
    plci.pushConstantRangeCount = 1;
    plci.pPushConstantRanges = &pcr;
    VkCheck(vk.vkCreatePipelineLayout(vk.device, &plci, nullptr, &layout),
            "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo cpci{};
    cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = "main";
    cpci.layout = layout;
    VkCheck(vk.vkCreateComputePipelines(vk.device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline),
            "vkCreateComputePipelines");
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * kMaxSets};
    VkDescriptorPoolCreateInfo dpci{};
    dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dpci.maxSets = kMaxSets;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &ps;
    VkCheck(vk.vkCreateDescriptorPool(vk.device, &dpci, nullptr, &pool), "vkCreateDescriptorPool");
  }

  // How many buffer sets to rotate through: enough to exceed ~4x a large GPU L2 (60 MB), only
  // on GPUs (a CPU device's caches are far smaller than any case).
  int Rotation(double workingSetBytes) const {
    if (opt.rotate >= 0) return std::max(1, std::min(opt.rotate, static_cast<int>(kMaxSets)));
    if (Info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) return 1;
    const double target = 4 * 60e6;
    if (workingSetBytes >= target) return 1;
    return std::min(static_cast<int>(kMaxSets),
                    static_cast<int>(std::ceil(target / workingSetBytes)));
  }

  std::unique_ptr<vkdml::Buffer> NewBuffer(UINT64 size) {
    std::unique_ptr<vkdml::Buffer> b;
    Check(dev->CreateBuffer(size, vkdml::Buffer::Memory::DeviceLocal, &b), "CreateBuffer");
    return b;
  }

  static void Upload(vkdml::Buffer& b, const uint8_t* data, UINT64 size) {
    const UINT64 step = UINT64(64) << 20;
    for (UINT64 off = 0; off < size; off += step)
      Check(b.Write(off, data + off, std::min(step, size - off)), "Buffer::Write");
  }

  using Body = std::function<void(VkCommandBuffer, int)>;

  // Records `warmup + runs` iterations into one submit; each iteration runs every body in turn
  // (body(cmd, iteration)), with a barrier before each and timestamps around each timed one.
  // Returns the timed durations in ms, per body. Interleaving the case with the copy kernel
  // makes both see the same GPU state (on an H100 the whole memory system was seen to slow to
  // ~57% for seconds at a time, for both kernels alike). Without timestamps, submits each body
  // on its own and times it on the host.
  std::vector<std::vector<double>> Time(const std::vector<Body>& bodies, int warmup, int runs,
                                        std::string* timing) {
    const size_t nb = bodies.size();
    std::vector<std::vector<double>> ms(nb);
    if (!Timestamps()) {
      *timing = "host";
      for (int it = 0; it < warmup + runs; ++it)
        for (size_t k = 0; k < nb; ++k) {
          auto t0 = Clock::now();
          Check(dev->Submit([&](VkCommandBuffer cmd) {
            Barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_TRANSFER_WRITE_BIT | kShaderRW, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    kShaderRW);
            bodies[k](cmd, it);
          }),
                "Device::Submit");
          if (it >= warmup) ms[k].push_back(Seconds(t0, Clock::now()) * 1e3);
        }
      return ms;
    }
    *timing = "gpu-timestamps";
    // GPU clocks fall while the host prepares data and take a while to come back: keep the GPU
    // busy with untimed iterations for a quarter of a second before the timed submit.
    for (auto start = Clock::now(); Seconds(start, Clock::now()) < 0.25;)
      Check(dev->Submit([&](VkCommandBuffer cmd) {
        for (int it = 0; it < 8; ++it)
          for (size_t k = 0; k < nb; ++k) {
            Barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_TRANSFER_WRITE_BIT | kShaderRW, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    kShaderRW);
            bodies[k](cmd, it);
          }
      }),
            "Device::Submit");
    VkQueryPoolCreateInfo qpci{};
    qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = static_cast<uint32_t>(2 * nb * static_cast<size_t>(runs));
    VkQueryPool qp = VK_NULL_HANDLE;
    VkCheck(vk.vkCreateQueryPool(vk.device, &qpci, nullptr, &qp), "vkCreateQueryPool");
    struct Guard {
      const Vk& vk;
      VkQueryPool qp;
      ~Guard() { vk.vkDestroyQueryPool(vk.device, qp, nullptr); }
    } guard{vk, qp};
    Check(dev->Submit([&](VkCommandBuffer cmd) {
      vk.vkCmdResetQueryPool(cmd, qp, 0, qpci.queryCount);
      // Earlier uploads (transfer) and kernels are visible to this submit's shaders.
      Barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_TRANSFER_WRITE_BIT | kShaderRW, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              kShaderRW);
      for (int it = 0; it < warmup + runs; ++it)
        for (size_t k = 0; k < nb; ++k) {
          if (it > 0 || k > 0)
            Barrier(vk, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
          int q = it - warmup;
          uint32_t query = static_cast<uint32_t>(2 * (static_cast<size_t>(q) * nb + k));
          // BOTTOM_OF_PIPE: written once all earlier work has completed.
          if (q >= 0) vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, query);
          bodies[k](cmd, it);
          if (q >= 0)
            vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, query + 1);
        }
      Barrier(vk, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
              VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
    }),
          "Device::Submit");
    std::vector<uint64_t> ticks(qpci.queryCount);
    VkCheck(vk.vkGetQueryPoolResults(
                vk.device, qp, 0, qpci.queryCount, ticks.size() * sizeof(uint64_t), ticks.data(),
                sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
    uint64_t mask =
        timestampValidBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestampValidBits) - 1;
    for (size_t q = 0; q < static_cast<size_t>(runs); ++q)
      for (size_t k = 0; k < nb; ++k) {
        size_t i = 2 * (q * nb + k);
        uint64_t d = (ticks[i + 1] - ticks[i]) & mask;
        ms[k].push_back(static_cast<double>(d) * Info().timestampPeriod * 1e-6);
      }
    return ms;
  }

  // The copy kernel on `bytes` read + written (bytes/2 each way, rounded up to 16), with its
  // buffers (`rotation` pairs) and descriptor sets ready to record.
  struct CopyJob {
    std::vector<std::unique_ptr<vkdml::Buffer>> src, dst;
    std::vector<VkDescriptorSet> sets;
    Bytes block;  // the source contents, repeated
    UINT64 half = 0;
    uint32_t count = 0, groupsX = 0, groupsY = 0;  // 2D grid: one invocation per element
    double movedBytes = 0;
  };

  void PrepareCopy(const std::string& name, double bytes, int rotation, CopyJob* job) {
    job->half = (static_cast<UINT64>(std::ceil(bytes / 2)) + 15) / 16 * 16;
    const UINT64 half = job->half;
    job->count = static_cast<uint32_t>(half / 16);
    const UINT64 groups = std::max<UINT64>(1, (UINT64(job->count) + 255) / 256);
    job->groupsX = static_cast<uint32_t>(std::min<UINT64>(groups, 65535));
    job->groupsY = static_cast<uint32_t>((groups + job->groupsX - 1) / job->groupsX);
    job->movedBytes = 2.0 * static_cast<double>(half);
    Step(name,
         Format("copy kernel buffers, 2 x %s", HumanBytes(static_cast<double>(half)).c_str()));
    // Random source contents from one 64 MiB block.
    Bytes& block = job->block;
    block.Allocate(static_cast<size_t>(std::min<UINT64>(half, UINT64(64) << 20)));
    FillData(block, 4, 99);
    std::vector<VkDescriptorSet>& sets = job->sets;
    sets.resize(static_cast<size_t>(rotation));
    VkCheck(vk.vkResetDescriptorPool(vk.device, pool, 0), "vkResetDescriptorPool");
    std::vector<VkDescriptorSetLayout> layouts(sets.size(), setLayout);
    VkDescriptorSetAllocateInfo dsai{};
    dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    dsai.descriptorPool = pool;
    dsai.descriptorSetCount = static_cast<uint32_t>(sets.size());
    dsai.pSetLayouts = layouts.data();
    VkCheck(vk.vkAllocateDescriptorSets(vk.device, &dsai, sets.data()), "vkAllocateDescriptorSets");
    for (size_t r = 0; r < sets.size(); ++r) {
      job->src.push_back(NewBuffer(half));
      job->dst.push_back(NewBuffer(half));
      for (UINT64 off = 0; off < half; off += block.n)
        Check(job->src.back()->Write(off, block.data(), std::min<UINT64>(block.n, half - off)),
              "Buffer::Write");
      VkDescriptorBufferInfo info[2] = {{job->src.back()->Handle(), 0, half},
                                        {job->dst.back()->Handle(), 0, half}};
      VkWriteDescriptorSet w[2]{};
      for (uint32_t i = 0; i < 2; ++i) {
        w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w[i].dstSet = sets[r];
        w[i].dstBinding = i;
        w[i].descriptorCount = 1;
        w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[i].pBufferInfo = &info[i];
      }
      vk.vkUpdateDescriptorSets(vk.device, 2, w, 0, nullptr);
    }
  }

  void RecordCopy(const CopyJob& job, VkCommandBuffer cmd, int it) {
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1,
                               &job.sets[static_cast<size_t>(it) % job.sets.size()], 0, nullptr);
    vk.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &job.count);
    vk.vkCmdDispatch(cmd, job.groupsX, job.groupsY, 1);
  }

  // Checks the copy too: a broken reference would make every ratio meaningless.
  void CheckCopy(const CopyJob& job) {
    std::vector<uint8_t> head(static_cast<size_t>(std::min<UINT64>(job.half, 1 << 16)));
    Check(job.dst[0]->Read(0, head.data(), head.size()), "Buffer::Read");
    if (std::memcmp(head.data(), job.block.data(), head.size()) != 0)
      throw BenchError("the copy kernel's output differs from its input");
  }

  Result RunCase(const Spec& s);
  std::vector<Result> RunLatency(const Spec& s);
};

Result Context::RunCase(const Spec& s) {
  Result res;
  res.spec = &s;
  res.caseName = s.name;
  Step(s.name, "creating the operator");
  auto desc = std::make_unique<OpDesc>(s);
  std::unique_ptr<vkdml::Operator> op;
  Check(dev->CreateOperator(desc->op, &op), "CreateOperator");
  std::unique_ptr<vkdml::CompiledOperator> compiled;
  Check(dev->CompileOperator(*op,
                             s.deterministic ? vkdml::VKDML_EXECUTION_FLAG_DETERMINISTIC
                                             : vkdml::DML_EXECUTION_FLAG_NONE,
                             &compiled),
        "CompileOperator");

  HostData h;
  UINT64 inSize = op->InputSize(0), idxSize = op->InputSize(1);
  UINT64 updSize = s.IsScatter() ? op->InputSize(2) : 0;
  UINT64 outSize = op->OutputSize(0);
  double ws = static_cast<double>(inSize + idxSize + updSize + (s.inPlace ? 0 : outSize));
  Step(s.name, "generating " + HumanBytes(ws) + " of random data");
  MakeHostData(s, *desc, &h, opt.seed + caseIndex);

  res.rotation = Rotation(ws);
  struct Slot {
    std::unique_ptr<vkdml::Buffer> input, indices, updates, output;
    std::unique_ptr<vkdml::BindingTable> table;
  };
  std::vector<Slot> slots(static_cast<size_t>(res.rotation));
  for (size_t r = 0; r < slots.size(); ++r) {
    Step(s.name, Format("uploading %s (set %zu/%zu)", HumanBytes(ws).c_str(), r + 1, slots.size()));
    Slot& sl = slots[r];
    sl.input = NewBuffer(inSize);
    Upload(*sl.input, h.input.data(), inSize);
    sl.indices = NewBuffer(idxSize);
    Upload(*sl.indices, h.indices.data(), idxSize);
    std::vector<vkdml::DML_BUFFER_BINDING> in = {sl.input->Binding(), sl.indices->Binding()};
    if (updSize) {
      sl.updates = NewBuffer(updSize);
      Upload(*sl.updates, h.updates.data(), updSize);
      in.push_back(sl.updates->Binding());
    }
    vkdml::DML_BUFFER_BINDING out;
    if (s.inPlace) {
      out = sl.input->Binding();
    } else {
      sl.output = NewBuffer(outSize);
      out = sl.output->Binding();
    }
    Check(dev->CreateBindingTable(*compiled, &sl.table), "CreateBindingTable");
    Check(sl.table->BindInputs(static_cast<UINT>(in.size()), in.data()), "BindInputs");
    Check(sl.table->BindOutputs(1, &out), "BindOutputs");
  }

  res.bytes = MinBytes(s, h);
  CopyJob copy;
  PrepareCopy(s.name, res.bytes, res.rotation, &copy);

  Step(s.name, Format("timing %d runs, interleaved with the copy kernel", opt.runs));
  vkdml::Result recordError;
  std::vector<std::vector<double>> times =
      Time({[&](VkCommandBuffer cmd, int it) {
              vkdml::Result r =
                  dev->RecordDispatch(cmd, *slots[static_cast<size_t>(it) % slots.size()].table);
              if (!r.ok() && recordError.ok()) recordError = r;
            },
            [&](VkCommandBuffer cmd, int it) { RecordCopy(copy, cmd, it); }},
           std::max(opt.warmup, res.rotation), opt.runs, &res.timing);
  Check(recordError, "RecordDispatch");
  CheckCopy(copy);
  std::vector<double>& ms = times[0];
  std::vector<double>& copyMs = times[1];
  // Scale the copy to the case's exact byte count (it rounds up to 16 bytes).
  for (double& t : copyMs) t *= res.bytes / copy.movedBytes;
  res.copyMs = Median(copyMs);
  res.copyMinMs = *std::min_element(copyMs.begin(), copyMs.end());
  res.copyMaxMs = *std::max_element(copyMs.begin(), copyMs.end());
  copy = CopyJob();
  res.ms = Median(ms);
  res.minMs = *std::min_element(ms.begin(), ms.end());
  res.maxMs = *std::max_element(ms.begin(), ms.end());
  res.runs = opt.runs;

  Step(s.name, "verifying a sample");
  if (s.reduce && s.inPlace) {  // the timed runs reduced into the input: once more from scratch
    Upload(*slots[0].input, h.input.data(), inSize);
    vkdml::Result recorded;
    Check(dev->Submit([&](VkCommandBuffer cmd) {
      Barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
      recorded = dev->RecordDispatch(cmd, *slots[0].table);
      Barrier(vk, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    }),
          "Device::Submit");
    Check(recorded, "RecordDispatch");
  }
  {
    Bytes out;
    out.Allocate(outSize);
    vkdml::Buffer& ob = s.inPlace ? *slots[0].input : *slots[0].output;
    Check(ob.Read(0, out.data(), outSize), "Buffer::Read");
    res.mismatches = Verify(s, h, out.data(), &res.checked, &res.firstMismatch);
  }
  slots.clear();
  h = HostData();

  return res;
}

// Host time per call for a tiny GatherElements: (a) Device::Run with a compiled operator,
// (b) one pre-recorded command buffer submitted and waited for each time.
std::vector<Result> Context::RunLatency(const Spec& s) {
  Step(s.name, "creating the operator");
  auto desc = std::make_unique<OpDesc>(s);
  std::unique_ptr<vkdml::Operator> op;
  Check(dev->CreateOperator(desc->op, &op), "CreateOperator");
  std::unique_ptr<vkdml::CompiledOperator> compiled;
  Check(dev->CompileOperator(*op,
                             s.deterministic ? vkdml::VKDML_EXECUTION_FLAG_DETERMINISTIC
                                             : vkdml::DML_EXECUTION_FLAG_NONE,
                             &compiled),
        "CompileOperator");
  UINT64 inSize = op->InputSize(0), idxSize = op->InputSize(1), outSize = op->OutputSize(0);
  const int calls = std::max(200, opt.latencyCalls), warm = 20;
  std::vector<Result> results;

  // Host inputs rotate through 8 sets (the working set is tiny).
  const size_t sets = 8;
  std::vector<HostData> hosts(sets);
  for (size_t i = 0; i < sets; ++i) MakeHostData(s, *desc, &hosts[i], opt.seed + 1000 + i);
  Bytes out;
  out.Allocate(outSize);

  {
    Step(s.name, Format("Device::Run x %d", calls));
    Result res = HostRow(s, "latency-run");
    size_t last = 0;
    SetHostTimes(&res, HostTimes(warm, calls, [&](int it) {
      last = static_cast<size_t>(it) % sets;
      Check(
          dev->Run(*compiled, {hosts[last].input.data(), hosts[last].indices.data()}, {out.data()}),
          "Device::Run");
    }));
    res.bytes = MinBytes(s, hosts[last]);
    res.mismatches = Verify(s, hosts[last], out.data(), &res.checked, &res.firstMismatch);
    results.push_back(res);
  }
  {
    // The floor under both: Device::Submit of an empty command buffer (submit + fence wait).
    Step(s.name, Format("empty Device::Submit x %d", calls));
    Result res = HostRow(s, "latency-empty-submit");
    SetHostTimes(&res, HostTimes(warm, calls, [&](int) {
      Check(dev->Submit([](VkCommandBuffer) {}), "Device::Submit");
    }));
    results.push_back(res);
  }

  Result res = HostRow(s, "latency-replay");
  res.bytes = MinBytes(s, hosts[0]);
  if (!own.queue) {
    res.skipped = true;
    res.error = "needs the benchmark's own Vulkan device (not with --vkdml-device)";
    results.push_back(res);
    return results;
  }
  Step(s.name, Format("replaying one command buffer x %d", calls));
  auto input = NewBuffer(inSize), indices = NewBuffer(idxSize), output = NewBuffer(outSize);
  Upload(*input, hosts[0].input.data(), inSize);
  Upload(*indices, hosts[0].indices.data(), idxSize);
  std::unique_ptr<vkdml::BindingTable> table;
  Check(dev->CreateBindingTable(*compiled, &table), "CreateBindingTable");
  vkdml::DML_BUFFER_BINDING in[2] = {input->Binding(), indices->Binding()};
  vkdml::DML_BUFFER_BINDING ob = output->Binding();
  Check(table->BindInputs(2, in), "BindInputs");
  Check(table->BindOutputs(1, &ob), "BindOutputs");

  VkCommandPoolCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpci.queueFamilyIndex = own.family;
  VkCommandPool cmdPool = VK_NULL_HANDLE;
  VkCheck(vk.vkCreateCommandPool(vk.device, &cpci, nullptr, &cmdPool), "vkCreateCommandPool");
  VkFence fence = VK_NULL_HANDLE;
  VkSemaphore timeline = VK_NULL_HANDLE;
  struct Cleanup {
    Vk& vk;
    VkCommandPool& pool;
    VkFence& fence;
    VkSemaphore& timeline;
    ~Cleanup() {
      if (fence) vk.vkDestroyFence(vk.device, fence, nullptr);
      if (timeline) vk.vkDestroySemaphore(vk.device, timeline, nullptr);
      if (pool) vk.vkDestroyCommandPool(vk.device, pool, nullptr);
    }
  } cleanup{vk, cmdPool, fence, timeline};
  VkCommandBufferAllocateInfo cbai{};
  cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cbai.commandPool = cmdPool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkCheck(vk.vkAllocateCommandBuffers(vk.device, &cbai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo cbbi{};
  cbbi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  VkCheck(vk.vkBeginCommandBuffer(cmd, &cbbi), "vkBeginCommandBuffer");
  // The synchronisation a replay needs, and no more (each barrier costs ~0.5-1 us a call here,
  // PERF_NOTES v17). The uploads are ordered before every later dispatch once, by a barrier
  // submitted after them: a barrier covers all commands after it in submission order. One
  // barrier after the dispatch orders its writes before the next replay's reads and writes, the
  // final read-back copy and host reads.
  auto uploadsBeforeDispatches = [&](VkCommandBuffer c) {
    Barrier(vk, c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
  };
  Check(dev->Submit(uploadsBeforeDispatches), "Device::Submit");
  Check(dev->RecordDispatch(cmd, *table), "RecordDispatch");
  Barrier(vk, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
              VK_PIPELINE_STAGE_HOST_BIT,
          kShaderRW | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
  VkCheck(vk.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  // Waits as CUDA does by default while CPU cores are free (torch.cuda.synchronize): spinning,
  // on a timeline semaphore where the device has them (~1 us less than a fence, v17). A
  // blocking vkWaitForFences adds ~20 us of wake-up on NVIDIA's driver (v10).
  if (own.timeline && vk.vkGetSemaphoreCounterValue) {
    VkSemaphoreTypeCreateInfo type{};
    type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo sci{};
    sci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    sci.pNext = &type;
    VkCheck(vk.vkCreateSemaphore(vk.device, &sci, nullptr, &timeline), "vkCreateSemaphore");
    uint64_t value = 0;
    VkTimelineSemaphoreSubmitInfo values{};
    values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &value;
    si.pNext = &values;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline;
    SetHostTimes(&res, HostTimes(warm, calls, [&](int) {
      ++value;
      VkCheck(vk.vkQueueSubmit(own.queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
      uint64_t reached = 0;
      do VkCheck(vk.vkGetSemaphoreCounterValue(vk.device, timeline, &reached), "counter value");
      while (reached < value);
    }));
  } else {
    VkFenceCreateInfo fci{};
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkCheck(vk.vkCreateFence(vk.device, &fci, nullptr, &fence), "vkCreateFence");
    SetHostTimes(&res, HostTimes(warm, calls, [&](int) {
      VkCheck(vk.vkQueueSubmit(own.queue, 1, &si, fence), "vkQueueSubmit");
      VkResult st;
      while ((st = vk.vkGetFenceStatus(vk.device, fence)) == VK_NOT_READY) {
      }
      VkCheck(st, "vkGetFenceStatus");
      VkCheck(vk.vkResetFences(vk.device, 1, &fence), "vkResetFences");
    }));
  }
  Check(output->Read(0, out.data(), outSize), "Buffer::Read");
  res.mismatches = Verify(s, hosts[0], out.data(), &res.checked, &res.firstMismatch);
  results.push_back(res);
  return results;
}

// ------------------------------------------------------------------------------------------
// Output

std::string DeviceLine(const vkdml::DeviceInfo& info) {
  std::string d = info.name;
  if (!info.driverName.empty() || !info.driverInfo.empty())
    d += " (" + info.driverName + (info.driverInfo.empty() ? "" : " " + info.driverInfo) + ")";
  return d;
}

std::string JsonLine(const Result& r, const Context& ctx) {
  const Spec& s = *r.spec;
  const vkdml::DeviceInfo& info = ctx.Info();
  double gbps = r.bytes / (r.ms * 1e6), copyGbps = r.bytes / (r.copyMs * 1e6);
  std::string j = "{";
  auto field = [&j](const char* k, const std::string& v) {
    if (j.size() > 1) j += ", ";
    j += JsonString(k) + ": " + v;
  };
  field("case", JsonString(r.caseName));
  field("op", JsonString(s.OpName()));
  field("dtype", JsonString(TypeName(s.dtype)));
  field("index_dtype", JsonString(TypeName(s.itype)));
  field("input_shape", ShapeJson(s.input));
  field("indices_shape", ShapeJson(s.indices));
  field("updates_shape", s.updates.empty() ? "null" : ShapeJson(s.updates));
  field("output_shape", ShapeJson(s.Output()));
  field("axis", s.axis < 0 ? "null" : std::to_string(s.axis));
  field("batch_dims", "0");
  field("in_place", s.inPlace ? "true" : "false");
  field("reduction", JsonString(s.ReduceName()));
  field("deterministic", s.deterministic ? "true" : "false");
  field("size", JsonString(ctx.opt.small ? "small" : "full"));
  if (!r.error.empty()) field(r.skipped ? "skipped" : "error", JsonString(r.error));
  field("median_ms", JsonNumber(r.ms));
  field("min_ms", JsonNumber(r.minMs));
  field("max_ms", JsonNumber(r.maxMs));
  field("runs", std::to_string(r.runs));
  field("timing", JsonString(r.timing));
  field("bytes", JsonNumber(r.bytes));
  field("gbps", JsonNumber(gbps));
  field("copy_ms", JsonNumber(r.copyMs));
  field("copy_min_ms", JsonNumber(r.copyMinMs));
  field("copy_max_ms", JsonNumber(r.copyMaxMs));
  field("copy_gbps", JsonNumber(copyGbps));
  field("pct_of_copy", JsonNumber(100.0 * gbps / copyGbps));
  field("rotation", std::to_string(r.rotation));
  field("verified", std::to_string(r.checked));
  field("mismatches", std::to_string(r.mismatches));
  if (!r.firstMismatch.empty()) field("first_mismatch", JsonString(r.firstMismatch));
  field("peer", JsonString(s.peer));
  field("device", JsonString(info.name));
  field("driver",
        JsonString(info.driverName + (info.driverInfo.empty() ? "" : " " + info.driverInfo)));
  field("vulkan", JsonString(Format("%u.%u.%u", VK_API_VERSION_MAJOR(info.apiVersion),
                                    VK_API_VERSION_MINOR(info.apiVersion),
                                    VK_API_VERSION_PATCH(info.apiVersion))));
  return j + "}";
}

void PrintHeader() {
  std::printf("%-26s %10s %10s %10s %9s %9s  %s\n", "case", "median ms", "GB/s", "copy GB/s",
              "% of copy", "ms range", "check");
}

void PrintRow(const Result& r) {
  if (!r.error.empty() && std::isnan(r.ms)) {
    std::printf("%-26s %s: %s\n", r.caseName.c_str(), r.skipped ? "skipped" : "ERROR",
                r.error.c_str());
    return;
  }
  double gbps = r.bytes / (r.ms * 1e6), copyGbps = r.bytes / (r.copyMs * 1e6);
  std::string check = r.mismatches ? Format("FAIL %" PRIu64 "/%" PRIu64 ": %s", r.mismatches,
                                            r.checked, r.firstMismatch.c_str())
                                   : Format("ok (%" PRIu64 ")", r.checked);
  std::string range = Format("%.2g-%.2g", r.minMs, r.maxMs);
  if (std::isnan(r.copyMs))
    std::printf("%-26s %10.4f %10.2f %10s %9s %9s  %s\n", r.caseName.c_str(), r.ms, gbps, "-", "-",
                range.c_str(), check.c_str());
  else
    std::printf("%-26s %10.4f %10.2f %10.2f %8.1f%% %9s  %s\n", r.caseName.c_str(), r.ms, gbps,
                copyGbps, 100.0 * gbps / copyGbps, range.c_str(), check.c_str());
}

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: vkdml bench [--case NAME[,NAME...]] [--size full|small] [--device N] "
               "[--json]\n"
               "                   [--runs N] [--warmup N] [--rotate auto|N] [--vkdml-device]\n"
               "                   [--latency-calls N] [--no-progress] [--list]\n"
               "Times vkdml's operators with Vulkan timestamps (median of --runs, default 30,\n"
               "after --warmup, default 5) against a uvec4 copy kernel of the same byte count,\n"
               "and checks a sample of each output on the CPU. See examples/bench/BENCH.md.\n");
}

bool ParseInt(const char* s, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < -1 || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int BenchMain(int argc, char** argv) {
  Options opt;
  int first = 1;
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0) first = 2;
  bool list = false;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vkdml bench: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](const char* name, int* out, int min) {
      const char* v = value(name);
      if (!ParseInt(v, out) || *out < min) {
        std::fprintf(stderr, "vkdml bench: %s %s: expected an integer >= %d\n", name, v, min);
        std::exit(2);
      }
    };
    if (a == "--case") {
      std::string v = value("--case");
      for (size_t p = 0; p <= v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        if (q > p) opt.cases.push_back(v.substr(p, q - p));
        p = q + 1;
      }
    } else if (a == "--size") {
      std::string v = value("--size");
      if (v != "full" && v != "small") {
        std::fprintf(stderr, "vkdml bench: --size %s: expected full or small\n", v.c_str());
        return 2;
      }
      opt.small = v == "small";
    } else if (a == "--device") {
      number("--device", &opt.device, 0);
    } else if (a == "--json") {
      opt.json = true;
    } else if (a == "--runs") {
      number("--runs", &opt.runs, 1);
    } else if (a == "--warmup") {
      number("--warmup", &opt.warmup, 0);
    } else if (a == "--latency-calls") {
      number("--latency-calls", &opt.latencyCalls, 1);
    } else if (a == "--rotate") {
      std::string v = value("--rotate");
      if (v == "auto") {
        opt.rotate = -1;
      } else if (!ParseInt(v.c_str(), &opt.rotate) || opt.rotate < 1) {
        std::fprintf(stderr, "vkdml bench: --rotate %s: expected auto or a count >= 1\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--vkdml-device") {
      opt.vkdmlDevice = true;
    } else if (a == "--no-progress") {
      opt.progress = false;
    } else if (a == "--list") {
      list = true;
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "vkdml bench: unknown argument '%s'\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }

  std::vector<Spec> all = MakeSpecs(opt.small);
  if (list) {
    for (const Spec& s : all)
      std::printf("%-26s %-15s %-8s idx %-6s input %s indices %s  peer: %s%s\n", s.name.c_str(),
                  s.OpName(), TypeName(s.dtype), TypeName(s.itype), ShapeText(s.input).c_str(),
                  ShapeText(s.indices).c_str(), s.peer.c_str(),
                  s.diagnostic ? "  (diagnostic: only when named)" : "");
    return 0;
  }
  std::vector<const Spec*> chosen;
  for (const Spec& s : all) {
    bool take = opt.cases.empty() && !s.diagnostic;
    for (const std::string& c : opt.cases)
      take |= c == s.name || (s.latency && (c == "latency-run" || c == "latency-replay" ||
                                            c == "latency-empty-submit"));
    if (take) chosen.push_back(&s);
  }
  for (const std::string& c : opt.cases) {
    bool known = c == "latency-run" || c == "latency-replay" || c == "latency-empty-submit";
    for (const Spec& s : all) known |= c == s.name;
    if (!known) {
      std::fprintf(stderr, "vkdml bench: unknown case '%s' (see --list)\n", c.c_str());
      return 2;
    }
  }

  Context ctx;
  ctx.opt = opt;
  ctx.progress.enabled = opt.progress;
  ctx.caseCount = chosen.size();
  try {
    ctx.Open();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "vkdml bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkdml bench: %s\n", e.what());
    return 1;
  }
  const vkdml::DeviceInfo& info = ctx.Info();
  if (!opt.json) {
    std::printf("vkdml bench: %s, size %s, %d runs (median), timing %s\n", DeviceLine(info).c_str(),
                opt.small ? "small" : "full", opt.runs,
                ctx.Timestamps() ? "gpu-timestamps" : "host (no timestamps on this queue)");
    PrintHeader();
    std::fflush(stdout);
  }

  int status = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Spec& s = *chosen[i];
    ctx.caseIndex = i;
    std::vector<Result> results;
    try {
      if (s.latency) {
        results = ctx.RunLatency(s);
        if (!opt.cases.empty()) {  // --case latency-run / latency-replay pick one of the two
          bool both = false;
          for (const std::string& c : opt.cases) both |= c == "latency";
          if (!both)
            results.erase(std::remove_if(results.begin(), results.end(),
                                         [&](const Result& r) {
                                           return std::find(opt.cases.begin(), opt.cases.end(),
                                                            r.caseName) == opt.cases.end();
                                         }),
                          results.end());
        }
      } else {
        results.push_back(ctx.RunCase(s));
      }
    } catch (const Unsupported& e) {
      Result r;
      r.spec = &s;
      r.caseName = s.name;
      r.skipped = true;
      r.error = e.what();
      results.push_back(r);
    } catch (const std::exception& e) {
      Result r;
      r.spec = &s;
      r.caseName = s.name;
      r.error = e.what();
      results.push_back(r);
      status = 1;
    }
    ctx.progress.Clear();
    for (const Result& r : results) {
      if (r.mismatches) status = 1;
      if (opt.json)
        std::printf("%s\n", JsonLine(r, ctx).c_str());
      else
        PrintRow(r);
    }
    std::fflush(stdout);
  }
  return status;
}
