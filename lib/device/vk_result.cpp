// What a failed Vulkan call returns (device.h: VkFailure, VKDML_VK).
#include "device/device.h"

#include <cstring>

namespace vkdml::detail {

const char* VkResultName(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_FRAGMENTATION:
      return "VK_ERROR_FRAGMENTATION";
    case VK_ERROR_UNKNOWN:
      return "VK_ERROR_UNKNOWN";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    default:
      return "an unknown VkResult";
  }
}

Result VkFailure(VkResult r, const char* call) {
  // The first identifier "vk..." in the call's text is the function called ("vk_.vkCreateBuffer(
  // dev, ...)" names vkCreateBuffer); text without one is the function's name already.
  std::string text = call, name = text;
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    const bool start =
        i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_');
    if (!start || text.compare(i, 2, "vk") != 0 ||
        !std::isupper(static_cast<unsigned char>(text[i + 2])))
      continue;
    size_t end = i;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    name = text.substr(i, end - i);
    break;
  }
  const Status status = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                            ? Status::OutOfMemory
                            : Status::DeviceError;
  if (std::strcmp(VkResultName(r), "an unknown VkResult") == 0)
    return Fail(status, name, " failed: VkResult ", int(r));
  return Fail(status, name, " failed: ", VkResultName(r));
}

}  // namespace vkdml::detail
