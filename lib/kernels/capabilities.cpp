#include "kernels/capabilities.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "interface.h"

namespace vkdml::detail {

namespace {

constexpr UINT kMaxGroups = 65535;  // per dispatch; grid-stride loops cover the rest

// A positive integer (decimal), or the message saying what the variable takes.
Result ReadCount(const char* name, UINT64 max, UINT64* out) {
  const char* text = std::getenv(name);
  if (!text || !*text) return {};
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text, &end, 10);
  if (*end || errno || n == 0 || n > max || text[0] == '-')
    return Fail(Status::InvalidArgument, name, "=", text, ": expected a positive integer up to ",
                max);
  *out = n;
  return {};
}

// One of `values`, as its index, or the message listing them.
Result ReadChoice(const char* name, std::initializer_list<const char*> values, int* out) {
  const char* text = std::getenv(name);
  if (!text || !*text) return {};
  int i = 0;
  std::string list;
  for (const char* v : values) {
    if (std::strcmp(text, v) == 0) {
      *out = i;
      return {};
    }
    list += Str(i ? ", " : "", v);
    ++i;
  }
  return Fail(Status::InvalidArgument, name, "=", text, ": expected one of ", list, " (or unset)");
}

}  // namespace

Result Switches::Read(Switches* out) {
  Switches s;
  UINT64 groups = 0;
  VKDML_TRY(ReadCount("VKDML_MAX_BINDING_RANGE", UINT64(-1), &s.maxBindingRange));
  VKDML_TRY(ReadCount("VKDML_MAX_GROUPS", 0xFFFFFFFFu, &groups));
  s.maxGroups = UINT(groups);
  int lines = -1, kernels = -1, atomics = -1, native = -1;
  VKDML_TRY(ReadChoice("VKDML_SCATTER_LINES", {"0", "1"}, &lines));
  VKDML_TRY(ReadChoice("VKDML_KERNELS", {"gpu", "cpu"}, &kernels));
  VKDML_TRY(ReadChoice("VKDML_ATOMICS", {"32"}, &atomics));
  VKDML_TRY(ReadChoice("VKDML_NATIVE_FLOAT32", {"0", "1"}, &native));
  if (lines >= 0) s.lines = lines ? Lines::Always : Lines::Never;
  if (kernels >= 0) s.kernels = kernels ? Kernels::Cpu : Kernels::Gpu;
  s.only32BitAtomics = atomics == 0;
  s.nativeFloat32 = native == 1;
  *out = s;
  return {};
}

Capabilities Capabilities::Of(VkPhysicalDeviceType type, VkDriverId driver,
                              const VkPhysicalDeviceLimits& limits, const DeviceFeatures& enabled,
                              const Switches& switches) {
  Capabilities c;
  c.type = type;
  c.maxSharedMemory = limits.maxComputeSharedMemorySize;
  c.maxLinesGroupSize = std::min({VKDML_LINES_MAX_GROUP, limits.maxComputeWorkGroupInvocations,
                                  limits.maxComputeWorkGroupSize[0]});
  c.groupSize = std::min(limits.maxComputeWorkGroupInvocations,
                         limits.maxComputeWorkGroupSize[0]) >= VKDML_GROUP_SIZE
                    ? VKDML_GROUP_SIZE
                    : VKDML_MIN_GROUP_SIZE;
  c.maxGroups = std::min(kMaxGroups, limits.maxComputeWorkGroupCount[0]);
  c.maxRange = c.scratchRange = limits.maxStorageBufferRange;
  c.rangeAlign = std::max<UINT64>(VKDML_VECTOR_BYTES, limits.minStorageBufferOffsetAlignment);
  c.int64 = enabled.shaderInt64;
  c.storage8 = enabled.storageBuffer8BitAccess;
  c.storage16 = enabled.storageBuffer16BitAccess;
  c.float32AtomicAdd = enabled.shaderBufferFloat32AtomicAdd;
  c.int64Atomics = enabled.shaderInt64 && enabled.shaderBufferInt64Atomics;
  c.float64 = c.float64Elements = enabled.shaderFloat64;
  c.denormPreserve32 = enabled.shaderDenormPreserveFloat32;
  c.denormPreserve64 = enabled.shaderDenormPreserveFloat64;

  // Driver quirks. CPU devices (lavapipe, SwiftShader): the line scatter's barriers cost more
  // than the random writes it saves (examples/bench/PERF_NOTES.md, v15); a run of elements per
  // invocation beats an element per thread (v33). lavapipe, whatever type it reports (the
  // minimum-limits test device reports an integrated GPU over it): a shader's loops end after
  // 65535 iterations.
  const bool cpu = type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  c.lines = cpu ? Lines::Never : Lines::WhenBetter;
  c.kernels = cpu ? Kernels::Cpu : Kernels::Gpu;
  if (cpu || driver == VK_DRIVER_ID_MESA_LLVMPIPE) c.maxLoop = 16384;

  // The switches, within the device's limits.
  if (switches.maxBindingRange && switches.maxBindingRange < c.maxRange)
    c.maxRange = std::max<UINT64>(switches.maxBindingRange, c.rangeAlign + VKDML_VECTOR_BYTES);
  if (switches.maxGroups) c.maxGroups = std::min(c.maxGroups, switches.maxGroups);
  if (switches.lines != Switches::Lines::Auto)
    c.lines = switches.lines == Switches::Lines::Always ? Lines::Always : Lines::Never;
  if (switches.kernels != Switches::Kernels::Auto)
    c.kernels = switches.kernels == Switches::Kernels::Cpu ? Kernels::Cpu : Kernels::Gpu;
  if (switches.only32BitAtomics) c.float32AtomicAdd = c.int64Atomics = false;
  // float32 reductions in float32 with the device's own denormal handling, as on a device with
  // neither DenormPreserve nor float64.
  if (switches.nativeFloat32) c.float64 = c.denormPreserve32 = false;
  return c;
}

}  // namespace vkdml::detail
