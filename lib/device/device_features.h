// The optional device features vkdml uses (DeviceFeatures, vkdml.h), listed once with where
// Vulkan keeps each: the query (physical_device.cpp), the plan of what to enable
// (device_plan.cpp), vkCreateDevice's chain and the check of an adopted device's claims all
// follow this table, and a member added to DeviceFeatures without an entry fails the build.
// Vulkan types only: no calls.
#pragma once

#include <functional>

#include "vkdml/vkdml.h"

namespace vkdml::detail {

// The Vulkan structures that hold vkdml's features, for a query (vkGetPhysicalDeviceFeatures2
// and, for the float controls, which are properties, vkGetPhysicalDeviceProperties2) or for
// vkCreateDevice (`features` and what Link chains to it). Not copyable: Link points into it.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceShaderAtomicInt64Features atomicInt64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceFloatControlsProperties floatControls{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};

  FeatureChain() = default;
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;

  // Chains, under `features` (and `properties`), the structures of Vulkan 1.1's core and of the
  // extensions `has` accepts: a device may be asked only of those it has.
  void Link(const std::function<bool(const char*)>& has);
};

struct Feature {
  const char* name;  // the Vulkan feature's (and DeviceFeatures' member's) name
  bool DeviceFeatures::*member;
  const char* extension;  // the device extension that provides it; nullptr: Vulkan 1.1's core
  VkBool32* (*field)(FeatureChain&);  // where a query reads it and vkCreateDevice takes it
};

#define VKDML_FEATURE(name, extension, where)                                               \
  Feature {                                                                                 \
#name, &DeviceFeatures::name, extension, [](FeatureChain & c) { return &c.where.name; } \
  }
inline constexpr Feature kFeatures[] = {
    VKDML_FEATURE(storageBuffer8BitAccess, VK_KHR_8BIT_STORAGE_EXTENSION_NAME, storage8),
    VKDML_FEATURE(storageBuffer16BitAccess, nullptr, storage16),
    VKDML_FEATURE(timelineSemaphore, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME, timeline),
    VKDML_FEATURE(shaderFloat64, nullptr, features.features),
    VKDML_FEATURE(shaderInt64, nullptr, features.features),
    VKDML_FEATURE(shaderBufferInt64Atomics, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME, atomicInt64),
    VKDML_FEATURE(shaderBufferFloat32AtomicAdd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME,
                  atomicFloat),
    VKDML_FEATURE(shaderDenormPreserveFloat32, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME,
                  floatControls),
    VKDML_FEATURE(shaderDenormPreserveFloat64, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME,
                  floatControls),
};
#undef VKDML_FEATURE
static_assert(
    sizeof(DeviceFeatures) == sizeof(kFeatures) / sizeof(kFeatures[0]) * sizeof(bool),
    "a DeviceFeatures member without an entry in kFeatures (lib/device/device_features.h)");

// The features of a query's chain, each where its extension is present (`has`).
DeviceFeatures ReadFeatures(FeatureChain& chain, const std::function<bool(const char*)>& has);

}  // namespace vkdml::detail
