// A vkGetInstanceProcAddr for DeviceDesc::getInstanceProcAddr that wraps the system loader's
// and lets a test see or change what vkdml's Vulkan calls do: which pipeline cache each
// pipeline is created with, the queues submitted to, the data a pipeline cache starts from, and a
// physical device that reports Vulkan 1.0 or no compute queue, or a Vulkan 1.0 loader. One test at
// a time (the recordings are global).
#pragma once

#include <cstdint>
#include <vector>

#include "vkdml/vkdml.h"

namespace vt::hooks {

// The hooking vkGetInstanceProcAddr.
PFN_vkGetInstanceProcAddr GetInstanceProcAddr();
// The system loader's (dlopen'ed), for the test's own calls.
PFN_vkGetInstanceProcAddr LoaderGetInstanceProcAddr();

struct Recorded {
  std::vector<VkPipelineCache> pipelineCaches;    // per vkCreateComputePipelines call
  std::vector<std::vector<uint8_t>> initialData;  // per vkCreatePipelineCache call
  std::vector<VkQueue> submits;                   // per vkQueueSubmit call
};
// Clears and returns the recordings.
Recorded& Reset();
Recorded& Seen();

// While set, vkGetPhysicalDeviceProperties reports apiVersion 1.0.
void FakeVulkan10(bool on);
// While set, no queue family reports VK_QUEUE_COMPUTE_BIT.
void FakeNoCompute(bool on);
// While set, the loader is a Vulkan 1.0 one: no vkEnumerateInstanceVersion.
void FakeLoader10(bool on);
// While set, vkGetPhysicalDeviceFeatures2 reports no shaderFloat64.
void FakeNoFloat64(bool on);
// While not 0, vkGetPhysicalDeviceMemoryProperties reports no heap larger than this.
void FakeHeapBytes(uint64_t bytes);

}  // namespace vt::hooks
