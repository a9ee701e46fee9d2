// Kernel choice: which kernel runs each of an operator's passes, with which specialization
// constants, over which packed plan, and how many workgroups it dispatches. Every plan
// transformation (plan.h: Simplify, Stripe, Lines, Widen) is applied here and nowhere else.
// CPU only: no Vulkan calls, so the tests check it directly.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "interface.h"
#include "operator.h"

namespace vkdml::detail {

// What kernel choice needs to know of a device, and the test knobs that change it.
struct DeviceTraits {
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  UINT64 maxSharedMemory = 0;  // maxComputeSharedMemorySize
  UINT maxLinesGroupSize = 1;  // threads a workgroup of glsl/scatter_lines.comp may have
  UINT maxGroups = 1;          // workgroups per dispatch; grid-stride loops cover the rest
  enum class Lines { Never, WhenBetter, Always } lines = Lines::WhenBetter;
  bool float32AtomicAdd = false;  // shaderBufferFloat32AtomicAdd
  bool int64Atomics = false;      // shaderInt64 and shaderBufferInt64Atomics
  bool float64 = false;           // shaderFloat64, for float32 arithmetic (FLOAT64 checks its own)
  bool denormPreserve32 = false;  // shaderDenormPreserveFloat32
  bool denormPreserve64 = false;  // shaderDenormPreserveFloat64
  // The most iterations one invocation's loops may take, summed: lavapipe ends a shader's loops
  // after 65535 (vkdml keeps well below that there); unbounded elsewhere.
  UINT64 maxLoop = UINT64(-1);
  // The indexed copy's kernels: GPUs' (glsl/indexed.comp, an element per thread) or, on CPU
  // devices, glsl/indexed_runs.comp (a run of elements per invocation). VKDML_KERNELS=gpu|cpu
  // overrides the device type's choice (the tests run the GPU kernels on lavapipe so).
  enum class Kernels { Gpu, Cpu } kernels = Kernels::Gpu;
  bool int64 = false;  // shaderInt64: the CPU kernels may move 32-byte u64vec4 elements
  // The bytes one descriptor may cover (maxStorageBufferRange) and the alignment of its offset
  // (minStorageBufferOffsetAlignment, at least 16): a tensor that may not fit one descriptor
  // takes the large path.
  UINT64 maxRange = 0xFFFFFFFFu;
  UINT64 rangeAlign = 256;

  // From the device's properties, its enabled features and the environment:
  // VKDML_MAX_GROUPS=N lowers maxGroups (so small tests run the grid-stride loops);
  // VKDML_SCATTER_LINES=1 takes the line scatter wherever it can run (the tests use it on
  // lavapipe), =0 never (A/B benchmarks); VKDML_ATOMICS=32 uses neither the float32 atomic add
  // nor 64-bit atomics (so the tests run the fallbacks of devices without them);
  // VKDML_KERNELS=gpu|cpu picks the indexed copy's kernels; VKDML_NATIVE_FLOAT32=1 computes
  // float32 reductions in float32 whatever the device's denormal handling (as devices with
  // neither DenormPreserve nor float64 do); VKDML_MAX_BINDING_RANGE=N lowers maxRange to N bytes
  // (at least minStorageBufferOffsetAlignment + 16, a window of one vector), so the tests run
  // the large path on small tensors.
  static DeviceTraits Of(VkPhysicalDeviceType type, const VkPhysicalDeviceLimits& limits,
                         const DeviceFeatures& enabled);
};

using Specialization = std::array<uint32_t, VKDML_SPEC_COUNT>;

// The large path (tensors that may not fit one descriptor, loops of 2^32 or more elements): a
// kernel is dispatched once per chunk of its plan's loop (and, where its indexed side is indexed
// and windowed, once per window of that side), each dispatch seeing every tensor through a
// descriptor that covers only what it touches (binding_table.cpp; interface.h: LargePush).
struct Span {
  UINT64 begin = 0, end = 0;  // bytes from the tensor's element 0
};
struct LargeDispatch {
  UINT start[VKDML_MAX_DIMS] = {};  // the chunk's first loop coordinates
  UINT count = 0;                   // its loop elements, fewer than 2^32
  UINT groups = 0;
  // What it touches of the direct side and IndicesTensor, and of the indexed side: there, the
  // elements it takes (the others belong to another dispatch's window).
  Span direct, indices, indexed;
};

// One dispatch.
struct Kernel {
  std::string module;  // the embedded SPIR-V module (glsl/CMakeLists.txt names them)
  Specialization spec = {};
  UINT groups = 0;                       // workgroups
  VkPipeline pipeline = VK_NULL_HANDLE;  // filled in by CompileOperator
  // Its push constants: a plan's (shader::Push: the plan slot, the bindings' bases counted in
  // `unit`-byte elements, and an ordered scatter's [begin, end)) or, for a sort step, a fixed
  // shader::SortPush.
  UINT slot = 0, unit = 0;
  // A wide kernel (Step::wide) runs where the source and destination bindings start at a multiple
  // of `align` bytes within their descriptor ranges (0: of `unit`), and IndicesTensor's at a
  // multiple of `indexAlign`.
  UINT align = 0, indexAlign = 1;
  UINT begin = 0, end = 0;
  bool sortStep = false;
  shader::SortPush sort = {};
  // The large path: this kernel's dispatches, and the bindings of its direct and indexed sides
  // with the indexed side's element size (checked mode's report indexes IndicesTensor).
  std::vector<LargeDispatch> large;
  UINT directBinding = 0, indexedBinding = 0, indexedUnit = 0;
};

// One dispatch of an operator's work, after a barrier from the one before.
struct Step {
  Pass::Kind kind = Pass::Kind::Gather;
  bool skipInPlace = false;  // Pass::skipInPlace
  Kernel plain;
  // The same pass moving uvec4s, where the plan widens (Plan::Widen), or on CPU devices a
  // faster kernel for it: usable where its bindings are aligned as it needs (Kernel::align).
  bool hasWide = false;
  Kernel wide;
};

struct KernelSet {
  std::vector<Step> steps;
  bool checked = false;
  Kernel report;                          // checked mode's last dispatch
  std::vector<shader::PackedPlan> plans;  // VKDML_PLAN_SLOTS, the uniform buffer's contents
  // A deterministic scatter's scratch, in 32-bit words: the sort's keys and values buffers
  // (each) and its counts buffer (glsl/interface.h: VKDML_BIND_SORT_*); 0 without a sort.
  UINT64 sortWords = 0, countWords = 0;
  // A deterministic float MAX or MIN's scratch (glsl/ties.glsl), in 32-bit words: its tie
  // positions, in the sort's keys buffer, and its tie marks, in the counts buffer, which is
  // zeroed before each run.
  UINT64 tiePositionWords = 0, tieMarkWords = 0;
  // A reduction on 1- or 2-byte elements updates the 4-byte words holding them atomically, so
  // OutputTensor's binding offset must be a multiple of 4.
  bool wordAtomics = false;
  // The large path: every kernel dispatched through Kernel::large; maxRange and rangeAlign as
  // kernel choice assumed them (DeviceTraits).
  bool large = false;
  UINT64 maxRange = 0, rangeAlign = 0;
};

// flags: the compile flags (VKDML_EXECUTION_FLAG_CHECK_INDICES, _DETERMINISTIC).
Result ChooseKernels(const OperatorImpl& op, UINT flags, const DeviceTraits& device,
                     KernelSet* out);

}  // namespace vkdml::detail
