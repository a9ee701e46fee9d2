#include "device/device_plan.h"

#include <algorithm>
#include <cstring>

#include "interface.h"

namespace vkdml::detail {

namespace {

// A portability driver's device (MoltenVK) must enable it. What the subset may leave out
// (events, image views, samplers, graphics state) vkdml never uses: test_floors.cpp checks.
constexpr const char* kPortabilitySubset = "VK_KHR_portability_subset";

bool Contains(const std::vector<const char*>& list, const char* name) {
  return std::any_of(list.begin(), list.end(),
                     [name](const char* e) { return std::strcmp(e, name) == 0; });
}

}  // namespace

bool BelowVulkan11(uint32_t apiVersion) {
  return VK_API_VERSION_MAJOR(apiVersion) == 1 && VK_API_VERSION_MINOR(apiVersion) < 1;
}

Result PlanDevice(const DeviceInfo& info, const std::vector<std::string>& extensions,
                  DevicePlan* out) {
  if (BelowVulkan11(info.apiVersion))
    return Fail(Status::Unsupported, "Vulkan device ", info.name,
                " supports Vulkan 1.0, expected 1.1: install a newer driver");
  DevicePlan plan;
  if (std::find(extensions.begin(), extensions.end(), kPortabilitySubset) != extensions.end())
    plan.extensions.push_back(kPortabilitySubset);
  // vkdml's instance asks for Vulkan 1.1, so 1.2's core features come as extensions.
  for (const Feature& f : kFeatures) {
    if (!(info.available.*f.member)) continue;
    plan.enable.*f.member = true;
    if (f.extension && !Contains(plan.extensions, f.extension))
      plan.extensions.push_back(f.extension);
  }
  *out = std::move(plan);
  return {};
}

void ChainPlan(const DevicePlan& plan, FeatureChain* chain) {
  for (const Feature& f : kFeatures) *f.field(*chain) = plan.enable.*f.member ? VK_TRUE : VK_FALSE;
  chain->Link([&plan](const char* extension) { return Contains(plan.extensions, extension); });
}

Result CheckLimits(const DeviceInfo& info, const VkPhysicalDeviceLimits& limits) {
  const struct {
    const char* name;
    uint64_t value, need;
    const char* what;
  } needs[] = {
      {"maxPerStageDescriptorStorageBuffers", limits.maxPerStageDescriptorStorageBuffers,
       VKDML_BINDING_COUNT - 1, "storage buffers in its one descriptor layout"},
      {"maxDescriptorSetStorageBuffers", limits.maxDescriptorSetStorageBuffers,
       VKDML_BINDING_COUNT - 1, "storage buffers in its one descriptor layout"},
      {"maxPerStageResources", limits.maxPerStageResources, VKDML_BINDING_COUNT,
       "descriptors in its one descriptor layout"},
      {"maxComputeWorkGroupInvocations", limits.maxComputeWorkGroupInvocations,
       VKDML_MIN_GROUP_SIZE, "invocations in a workgroup"},
      {"maxComputeWorkGroupSize[0]", limits.maxComputeWorkGroupSize[0], VKDML_MIN_GROUP_SIZE,
       "invocations in a workgroup"},
  };
  for (const auto& n : needs)
    if (n.value < n.need)
      return Fail(Status::Unsupported, "Vulkan device ", info.name, " allows ", n.value, " (",
                  n.name, "), but vkdml needs ", n.need, " ", n.what,
                  " (Vulkan 1.1's minimum: the device is not conformant)");
  return {};
}

Result CheckClaimedFeatures(const DeviceInfo& info, const DeviceFeatures& claimed) {
  for (const Feature& f : kFeatures)
    if (claimed.*f.member && !(info.available.*f.member))
      return Fail(Status::InvalidArgument, "DeviceDesc.enabledFeatures.", f.name, " is set, but ",
                  info.name, " does not support it");
  return {};
}

}  // namespace vkdml::detail
