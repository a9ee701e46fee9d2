#include "device/device_features.h"

#include <cstring>

namespace vkdml::detail {

void FeatureChain::Link(const std::function<bool(const char*)>& has) {
  struct Link {
    const char* extension;  // nullptr: Vulkan 1.1's core
    VkBaseOutStructure* structure;
  };
  const Link links[] = {
      {nullptr, reinterpret_cast<VkBaseOutStructure*>(&storage16)},
      {VK_KHR_8BIT_STORAGE_EXTENSION_NAME, reinterpret_cast<VkBaseOutStructure*>(&storage8)},
      {VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME, reinterpret_cast<VkBaseOutStructure*>(&timeline)},
      {VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME,
       reinterpret_cast<VkBaseOutStructure*>(&atomicInt64)},
      {VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME,
       reinterpret_cast<VkBaseOutStructure*>(&atomicFloat)},
  };
  void** next = &features.pNext;
  for (const Link& l : links) {
    l.structure->pNext = nullptr;
    if (l.extension && !has(l.extension)) continue;
    *next = l.structure;
    next = reinterpret_cast<void**>(&l.structure->pNext);
  }
  *next = nullptr;
  floatControls.pNext = nullptr;
  properties.pNext = has(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME) ? &floatControls : nullptr;
}

DeviceFeatures ReadFeatures(FeatureChain& chain, const std::function<bool(const char*)>& has) {
  DeviceFeatures out;
  for (const Feature& f : kFeatures)
    out.*f.member = (!f.extension || has(f.extension)) && *f.field(chain);
  return out;
}

}  // namespace vkdml::detail
