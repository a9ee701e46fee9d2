// What kernel choice knows of a device, captured once when the Device is created (as ncnn's
// GpuInfo or IREE's physical-device snapshot): its type, the limits and enabled features that
// shape kernels, the driver quirks vkdml works around, and the environment's switches. Kernel
// choice (kernels.h) reads nothing else, so the tests give it made-up devices.
// CPU only: no Vulkan calls.
#pragma once

#include "interface.h"
#include "operators/error.h"
#include "vkdml/vkdml.h"

namespace vkdml::detail {

// The VKDML_* environment switches, read once when a Device is created (Switches::Read, the one
// function in lib/ that reads vkdml's switches from the environment; device/instance.cpp reads
// the loader's variables only to name them in a message). They are for tests and A/B benchmarks;
// a device's own limits always bound them.
struct Switches {
  UINT64 maxBindingRange = 0;  // VKDML_MAX_BINDING_RANGE=N: lowers maxRange (0: the device's)
  UINT maxGroups = 0;          // VKDML_MAX_GROUPS=N: lowers maxGroups (grid-stride loops)
  enum class Lines { Auto, Never, Always } lines = Lines::Auto;   // VKDML_SCATTER_LINES=0|1
  enum class Kernels { Auto, Gpu, Cpu } kernels = Kernels::Auto;  // VKDML_KERNELS=gpu|cpu
  bool only32BitAtomics = false;  // VKDML_ATOMICS=32: no float32 atomic add, no 64-bit atomics
  bool nativeFloat32 = false;     // VKDML_NATIVE_FLOAT32=1: float32 reductions in float32

  // From the environment: an unset or empty variable keeps the default; any other value that is
  // not one of those above is an InvalidArgument naming the variable and what it takes.
  static Result Read(Switches* out);
};

struct Capabilities {
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  UINT64 maxSharedMemory = 0;  // maxComputeSharedMemorySize
  UINT maxLinesGroupSize = 1;  // threads a workgroup of glsl/scatter_lines.comp may have
  // Threads in a workgroup of the other kernels (glsl/interface.h: VKDML_GROUP_SIZE), or
  // VKDML_MIN_GROUP_SIZE where the device allows fewer than VKDML_GROUP_SIZE.
  UINT groupSize = VKDML_GROUP_SIZE;
  UINT maxGroups = 1;  // workgroups per dispatch; grid-stride loops cover the rest
  enum class Lines { Never, WhenBetter, Always } lines = Lines::WhenBetter;
  bool float32AtomicAdd = false;  // shaderBufferFloat32AtomicAdd
  bool int64Atomics = false;      // shaderInt64 and shaderBufferInt64Atomics
  bool float64 = false;           // shaderFloat64, for float32 arithmetic
  // shaderFloat64, for FLOAT64 arithmetic (no switch lowers it); without it, FLOAT64 reductions
  // compute in 32-bit integer arithmetic (glsl/soft_float64.glsl).
  bool float64Elements = false;
  bool denormPreserve32 = false;  // shaderDenormPreserveFloat32
  bool denormPreserve64 = false;  // shaderDenormPreserveFloat64
  // The most iterations one invocation's loops may take, summed: lavapipe ends a shader's loops
  // after 65535 (vkdml keeps well below that there, and on other CPU devices); unbounded
  // elsewhere.
  UINT64 maxLoop = UINT64(-1);
  // The indexed copy's kernels: GPUs' (glsl/indexed.comp, an element per thread) or, on CPU
  // devices, glsl/indexed_runs.comp (a run of elements per invocation).
  enum class Kernels { Gpu, Cpu } kernels = Kernels::Gpu;
  bool int64 = false;  // shaderInt64: the CPU kernels may move 32-byte u64vec4 elements
  // storageBuffer8BitAccess and storageBuffer16BitAccess. Without them, kernels hold 1- and
  // 2-byte elements packed in 32-bit words (glsl/elem.glsl: WORDS).
  bool storage8 = false, storage16 = false;
  bool Packed(UINT elemSize) const {
    return (elemSize == 1 && !storage8) || (elemSize == 2 && !storage16);
  }
  // The bytes one descriptor may cover (maxStorageBufferRange) and the alignment of its offset
  // (minStorageBufferOffsetAlignment, at least 16): a tensor that may not fit one descriptor
  // takes the large path.
  UINT64 maxRange = 0xFFFFFFFFu;
  UINT64 rangeAlign = 256;
  // The bytes vkdml's own scratch buffer may span (the device's maxStorageBufferRange: the
  // switch VKDML_MAX_BINDING_RANGE lowers only maxRange, the tensors' windows). A deterministic
  // sort too large for it goes in chunks (kernel_reduce.cpp).
  UINT64 scratchRange = 0xFFFFFFFFu;

  // From the device's type, driver, limits and enabled features, with the driver quirks (CPU
  // devices: no line scatter; lavapipe and CPU devices: bounded loops) and then the switches
  // applied. VKDML_MAX_BINDING_RANGE keeps at least rangeAlign + 16 bytes (a window of one
  // vector).
  static Capabilities Of(VkPhysicalDeviceType type, VkDriverId driver,
                         const VkPhysicalDeviceLimits& limits, const DeviceFeatures& enabled,
                         const Switches& switches);
};

}  // namespace vkdml::detail
