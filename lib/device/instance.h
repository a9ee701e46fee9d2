// The Vulkan loader and vkdml's instances: volk's globals (the loader's entry points and the
// last instance's) are shared by every CreateDevice and EnumerateDevices, each of which holds
// VolkMutex() from start to end. A Device keeps the instance- and device-level functions it
// needs later, and uses no global afterwards.
#pragma once

#include <mutex>

#include <volk.h>

#include "operators/error.h"

namespace vkdml::detail {

std::mutex& VolkMutex();

// Points volk at the system loader (opened once) or at the caller's vkGetInstanceProcAddr.
// VolkMutex() held.
Result LoadVulkan(PFN_vkGetInstanceProcAddr custom);

// Instance-level entry points come from volk's globals; loads them for this instance.
// VolkMutex() held.
void LoadInstance(VkInstance instance);

}  // namespace vkdml::detail
