// Physical devices: their description and features, and DeviceImpl's choice of one.
#include "device/physical_device.h"

#include <cstring>

#include "device/device.h"
#include "device/device_features.h"
#include "device/device_plan.h"

namespace vkdml::detail {

bool HasExtension(const std::vector<VkExtensionProperties>& list, const char* name) {
  for (const auto& e : list)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

Result DeviceExtensions(VkPhysicalDevice pd, std::vector<VkExtensionProperties>* list) {
  uint32_t n = 0;
  VKDML_VK(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr));
  list->resize(n);
  VKDML_VK(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, list->data()));
  list->resize(n);
  return {};
}

Result Describe(VkPhysicalDevice pd, uint32_t queueFamily, DeviceInfo* out,
                std::vector<VkExtensionProperties>* extensionsOut) {
  DeviceInfo& info = *out;
  info = {};
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  info.name = props.deviceName;
  info.type = props.deviceType;
  info.apiVersion = props.apiVersion;
  info.driverVersion = props.driverVersion;
  info.maxStorageBufferRange = props.limits.maxStorageBufferRange;
  info.timestampPeriod = props.limits.timestampPeriod;

  std::vector<VkExtensionProperties> local;
  std::vector<VkExtensionProperties>& extensions = extensionsOut ? *extensionsOut : local;
  VKDML_TRY(DeviceExtensions(pd, &extensions));
  // Queried through the extensions: vkdml's instances are Vulkan 1.1.
  const auto has = [&extensions](const char* name) { return HasExtension(extensions, name); };
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  FeatureChain chain;
  chain.Link(has);
  if (has(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) {
    driver.pNext = chain.properties.pNext;
    chain.properties.pNext = &driver;
  }
  if (chain.properties.pNext) vkGetPhysicalDeviceProperties2(pd, &chain.properties);
  if (has(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) {
    info.driverName = driver.driverName;
    info.driverInfo = driver.driverInfo;
    info.driverID = driver.driverID;
  }
  vkGetPhysicalDeviceFeatures2(pd, &chain.features);
  info.available = ReadFeatures(chain, has);

  const std::vector<VkQueueFamilyProperties> families = QueueFamilies(pd);
  info.timestampsSupported = queueFamily < families.size() &&
                             families[queueFamily].timestampValidBits > 0 &&
                             props.limits.timestampPeriod > 0;
  return {};
}

std::vector<VkQueueFamilyProperties> QueueFamilies(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  return families;
}

uint32_t ComputeQueueFamily(VkPhysicalDevice pd) {
  std::vector<VkQueueFamilyProperties> families = QueueFamilies(pd);
  for (uint32_t i = 0; i < families.size(); ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  return UINT32_MAX;
}

Result PhysicalDevices(VkInstance instance, std::vector<VkPhysicalDevice>* out) {
  uint32_t n = 0;
  VKDML_VK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  out->resize(n);
  VKDML_VK(vkEnumeratePhysicalDevices(instance, &n, out->data()));
  out->resize(n);
  if (n == 0)
    return Fail(Status::DeviceError,
                "no Vulkan device found: install mesa-vulkan-drivers (lavapipe on the CPU, AMD, "
                "Intel) or your GPU's Vulkan driver (NVIDIA: nvidia-vulkan-icd)");
  return {};
}

std::string Unsuitable(VkPhysicalDevice pd) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  if (BelowVulkan11(p.apiVersion)) return Str(p.deviceName, " supports only Vulkan 1.0");
  if (ComputeQueueFamily(pd) == UINT32_MAX) return Str(p.deviceName, " has no compute queue");
  return "";
}

Result DeviceImpl::PickPhysicalDevice(int index) {
  std::vector<VkPhysicalDevice> all;
  VKDML_TRY(PhysicalDevices(instance_, &all));
  if (index >= int(all.size()))
    return Fail(Status::InvalidArgument, "DeviceDesc.physicalDeviceIndex is ", index,
                ", expected less than ", all.size(), " (the number of Vulkan devices)");
  if (index < 0) {
    // The first suitable discrete GPU, else the first suitable device.
    std::string why;
    for (size_t i = 0; i < all.size(); ++i) {
      std::string unsuitable = Unsuitable(all[i]);
      if (!unsuitable.empty()) {
        why += Str(why.empty() ? "" : ", ", unsuitable);
        continue;
      }
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(all[i], &p);
      if (index < 0 || p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) index = int(i);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) break;
    }
    if (index < 0)
      return Fail(Status::Unsupported,
                  "no suitable Vulkan device (vkdml needs Vulkan 1.1 and a compute queue): ", why,
                  ": install a newer driver, or mesa-vulkan-drivers for lavapipe");
  }
  physical_ = all[size_t(index)];
  queueFamily_ = ComputeQueueFamily(physical_);
  if (queueFamily_ == UINT32_MAX)
    return Fail(Status::Unsupported, "Vulkan device ", index, " has no compute queue");
  return {};
}

Result DeviceImpl::ReadInfo() {
  DeviceFeatures enabled = info_.enabled;
  VKDML_TRY(Describe(physical_, queueFamily_, &info_));
  info_.enabled = enabled;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  limits_ = props.limits;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memoryProps_);
  return {};
}

}  // namespace vkdml::detail
