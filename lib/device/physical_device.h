// What vkdml reads of physical devices: their description and features (DeviceInfo), queue
// families and extensions, and which ones it can use. Calls through volk's instance-level
// globals (instance.h: VolkMutex() held).
#pragma once

#include <string>
#include <vector>

#include <volk.h>

#include "operators/error.h"

namespace vkdml::detail {

bool HasExtension(const std::vector<VkExtensionProperties>& list, const char* name);
Result DeviceExtensions(VkPhysicalDevice pd, std::vector<VkExtensionProperties>* list);

// Fills what vkdml reports about a physical device (all but `enabled`); extensionsOut, if given,
// receives its extensions.
Result Describe(VkPhysicalDevice pd, uint32_t queueFamily, DeviceInfo* out,
                std::vector<VkExtensionProperties>* extensionsOut = nullptr);

std::vector<VkQueueFamilyProperties> QueueFamilies(VkPhysicalDevice pd);
// The first queue family with compute, or UINT32_MAX.
uint32_t ComputeQueueFamily(VkPhysicalDevice pd);
// Every physical device; DeviceError (with what to install) when there is none.
Result PhysicalDevices(VkInstance instance, std::vector<VkPhysicalDevice>* out);
// Why vkdml cannot use a physical device (Vulkan 1.0, no compute queue), or "" if it can.
std::string Unsuitable(VkPhysicalDevice pd);

}  // namespace vkdml::detail
