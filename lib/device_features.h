// The optional device features vkdml uses (DeviceFeatures, vkdml.h), listed once: the checks that
// go over all of them (an adopted device's, the CLI's listing, the tests') read this table, and a
// member added to DeviceFeatures without an entry here fails the build.
#pragma once

#include "vkdml/vkdml.h"

namespace vkdml::detail {

struct Feature {
  const char* name;  // the Vulkan feature's (and DeviceFeatures' member's) name
  bool DeviceFeatures::*member;
};

#define VKDML_FEATURE(name)      \
  Feature {                      \
#name, &DeviceFeatures::name \
  }
inline constexpr Feature kFeatures[] = {
    VKDML_FEATURE(storageBuffer8BitAccess),
    VKDML_FEATURE(storageBuffer16BitAccess),
    VKDML_FEATURE(timelineSemaphore),
    VKDML_FEATURE(shaderFloat64),
    VKDML_FEATURE(shaderInt64),
    VKDML_FEATURE(shaderBufferInt64Atomics),
    VKDML_FEATURE(shaderBufferFloat32AtomicAdd),
    VKDML_FEATURE(shaderDenormPreserveFloat32),
    VKDML_FEATURE(shaderDenormPreserveFloat64),
};
#undef VKDML_FEATURE
static_assert(sizeof(DeviceFeatures) == sizeof(kFeatures) / sizeof(kFeatures[0]) * sizeof(bool),
              "a DeviceFeatures member without an entry in kFeatures (lib/device_features.h)");

}  // namespace vkdml::detail
