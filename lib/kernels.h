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

  // From the device's properties and the environment: VKDML_MAX_GROUPS=N lowers maxGroups (so
  // small tests run the grid-stride loops); VKDML_SCATTER_LINES=1 takes the line scatter
  // wherever it can run (the tests use it on lavapipe), =0 never (A/B benchmarks).
  static DeviceTraits Of(VkPhysicalDeviceType type, const VkPhysicalDeviceLimits& limits);
};

using Specialization = std::array<uint32_t, VKDML_SPEC_COUNT>;

// One dispatch.
struct Kernel {
  std::string module;  // the embedded SPIR-V module (glsl/CMakeLists.txt names them)
  Specialization spec = {};
  UINT slot = 0;    // the plan slot it reads (Push::plan)
  UINT unit = 0;    // bytes per element it moves: Push's source and destination bases count these
  UINT groups = 0;  // workgroups
  VkPipeline pipeline = VK_NULL_HANDLE;  // filled in by CompileOperator
};

struct PassKernels {
  Pass::Kind kind = Pass::Kind::Gather;
  bool skipInPlace = false;  // Pass::skipInPlace
  Kernel plain;
  // The same pass moving uvec4s, where the plan widens (Plan::Widen): usable when the source
  // and destination bindings are VKDML_VECTOR_BYTES-aligned within their descriptor ranges.
  bool hasWide = false;
  Kernel wide;
};

struct KernelSet {
  std::vector<PassKernels> passes;
  bool checked = false;
  Kernel report;                          // checked mode's last dispatch
  std::vector<shader::PackedPlan> plans;  // VKDML_PLAN_SLOTS, the uniform buffer's contents
};

// checked: VKDML_EXECUTION_FLAG_CHECK_INDICES.
Result ChooseKernels(const OperatorImpl& op, bool checked, const DeviceTraits& device,
                     KernelSet* out);

}  // namespace vkdml::detail
