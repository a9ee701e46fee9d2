// What vkdml asks of a physical device when it creates the VkDevice, and what it checks of a
// device it adopts, decided from the device's description and extension names alone (as IREE's
// device plan): no Vulkan calls, so the tests give it made-up devices.
#pragma once

#include <string>
#include <vector>

#include "device/device_features.h"
#include "operators/error.h"

namespace vkdml::detail {

struct DevicePlan {
  DeviceFeatures enable;                // every feature vkdml uses that the device has
  std::vector<const char*> extensions;  // the ones they need, and VK_KHR_portability_subset
};

// Whether a device's apiVersion is Vulkan 1.0 (vkdml needs 1.1).
bool BelowVulkan11(uint32_t apiVersion);

// info: the physical device as physical_device.cpp describes it (apiVersion, available);
// extensions: its extensions' names. Unsupported for a Vulkan 1.0 device.
Result PlanDevice(const DeviceInfo& info, const std::vector<std::string>& extensions,
                  DevicePlan* out);

// vkCreateDevice's feature chain for a plan (its pNext: &chain->features).
void ChainPlan(const DevicePlan& plan, FeatureChain* chain);

// The limits vkdml's kernels need, each Vulkan 1.1's minimum: one descriptor layout of
// VKDML_BINDING_COUNT - 1 storage buffers, and workgroups of VKDML_MIN_GROUP_SIZE invocations.
// A device below them (not conformant) is Unsupported, the message naming the limit, the
// device's value and the need, rather than given an invalid pipeline.
Result CheckLimits(const DeviceInfo& info, const VkPhysicalDeviceLimits& limits);

// An adopted device: every feature its owner says it enabled (DeviceDesc.enabledFeatures) must
// be one the device has; else InvalidArgument naming the first that is not.
Result CheckClaimedFeatures(const DeviceInfo& info, const DeviceFeatures& claimed);

}  // namespace vkdml::detail
