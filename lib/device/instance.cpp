// The Vulkan loader, vkdml's instances (DeviceImpl::CreateInstance) and EnumerateDevices.
#include "device/instance.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/device.h"
#include "device/physical_device.h"

namespace vkdml::detail {

namespace {

PFN_vkGetInstanceProcAddr gLoaderGetInstanceProcAddr = nullptr;  // the system loader's, once found

// vkCreateInstance's failures that mean something is not installed, as what to install.
// vkdml's own switches (VKDML_*) are read in one place, Switches::Read (kernels/capabilities.cpp),
// when a Device is created. The loader's variables read here are not switches: they change
// nothing vkdml does, and are read only to name them in this message, since they are the usual
// reason the loader finds no driver.
Result InstanceFailed(VkResult r) {
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    std::string chosen;  // the variables that restrict the loader to some drivers
    for (const char* var : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"})
      if (const char* v = std::getenv(var); v && *v) chosen += Str("; ", var, " is ", v);
    return Fail(Status::DeviceError,
                "no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER", chosen,
                "): install mesa-vulkan-drivers (lavapipe on the CPU, AMD, Intel) or your GPU's "
                "Vulkan driver (NVIDIA: nvidia-vulkan-icd)");
  }
  return Fail(r == VK_ERROR_OUT_OF_HOST_MEMORY ? Status::OutOfMemory : Status::DeviceError,
              "vkCreateInstance failed: ", VkResultName(r));
}

// A Vulkan 1.1 instance's create info, listing portability drivers too (EnumeratePortability).
struct InstanceInfo {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  std::vector<const char*> extensions;
  InstanceInfo() {
    app.pApplicationName = "vkdml";
    app.pEngineName = "vkdml";
    app.apiVersion = VK_API_VERSION_1_1;
    ci.pApplicationInfo = &app;
  }
  InstanceInfo(const InstanceInfo&) = delete;
  InstanceInfo& operator=(const InstanceInfo&) = delete;
  // Fills the extensions in; call last.
  VkInstanceCreateInfo* Finish() {
    ci.enabledExtensionCount = uint32_t(extensions.size());
    ci.ppEnabledExtensionNames = extensions.data();
    return &ci;
  }
};

// Where the loader offers VK_KHR_portability_enumeration, an instance of vkdml's asks for it (the
// extension and its flag), so that portability drivers (MoltenVK) are listed too; their devices
// get VK_KHR_portability_subset (device_plan.cpp).
Result EnumeratePortability(InstanceInfo* info) {
  uint32_t n = 0;
  VKDML_VK(vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> list(n);
  VKDML_VK(vkEnumerateInstanceExtensionProperties(nullptr, &n, list.data()));
  list.resize(n);
  if (HasExtension(list, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    info->extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    info->ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  return {};
}

}  // namespace

std::mutex& VolkMutex() {
  static std::mutex m;
  return m;
}

// Points volk at the system loader (opened once) or at the caller's vkGetInstanceProcAddr.
// VolkMutex() held.
Result LoadVulkan(PFN_vkGetInstanceProcAddr custom) {
  if (custom) {
    volkInitializeCustom(custom);
    return {};
  }
  if (gLoaderGetInstanceProcAddr) {
    volkInitializeCustom(gLoaderGetInstanceProcAddr);
    return {};
  }
  if (volkInitialize() != VK_SUCCESS)
    return Fail(Status::DeviceError,
                "no Vulkan loader found (libvulkan.so.1): install libvulkan1 and a Vulkan driver "
                "(mesa-vulkan-drivers, or your GPU's)");
  gLoaderGetInstanceProcAddr = vkGetInstanceProcAddr;
  return {};
}

// Instance-level entry points come from volk's globals; load them for this instance.
// VolkMutex() held.
void LoadInstance(VkInstance instance) {
  volkLoadInstanceOnly(instance);
}

VkBool32 VKAPI_PTR DebugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                 VkDebugUtilsMessageTypeFlagsEXT,
                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<DeviceImpl*>(user);
  const char* message = data && data->pMessage ? data->pMessage : "(no message)";
  if (self->onValidationMessage_)
    self->onValidationMessage_(message);
  else
    std::fprintf(stderr, "vkdml validation: %s\n", message);
  return VK_FALSE;
}

namespace {

// The validation layer with synchronization validation, its messages to `messenger`'s callback.
struct Validation {
  const char* layer = "VK_LAYER_KHRONOS_validation";
  VkValidationFeatureEnableEXT enables[1] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};

  // Adds it to the instance's create info; Unsupported, with what to install, without the layer.
  Result AddTo(InstanceInfo* info, void* user) {
    uint32_t n = 0;
    VKDML_VK(vkEnumerateInstanceLayerProperties(&n, nullptr));
    std::vector<VkLayerProperties> layers(n);
    VKDML_VK(vkEnumerateInstanceLayerProperties(&n, layers.data()));
    layers.resize(n);
    bool found = false;
    for (const auto& l : layers) found = found || std::strcmp(l.layerName, layer) == 0;
    if (!found)
      return Fail(
          Status::Unsupported,
          "DeviceDesc.enableValidation is set but the validation layer "
          "(VK_LAYER_KHRONOS_validation) is not installed: install vulkan-validationlayers");
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    messenger.pfnUserCallback = DebugCallback;
    messenger.pUserData = user;
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    features.pNext = &messenger;
    info->ci.pNext = &features;
    info->ci.enabledLayerCount = 1;
    info->ci.ppEnabledLayerNames = &layer;
    info->extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    return {};
  }
};

}  // namespace

Result DeviceImpl::CreateInstance(const DeviceDesc& desc) {
  if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
    return Fail(Status::Unsupported, "the Vulkan loader supports only Vulkan 1.0, expected 1.1");
  InstanceInfo info;
  VKDML_TRY(EnumeratePortability(&info));
  Validation validation;
  if (desc.enableValidation) {
    VKDML_TRY(validation.AddTo(&info, this));
    onValidationMessage_ = desc.onValidationMessage;
  }
  if (VkResult r = vkCreateInstance(info.Finish(), nullptr, &instance_); r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    return InstanceFailed(r);
  }
  LoadInstance(instance_);
  destroyInstance_ = vkDestroyInstance;
  destroyMessenger_ = vkDestroyDebugUtilsMessengerEXT;
  if (desc.enableValidation)
    VKDML_VK(
        vkCreateDebugUtilsMessengerEXT(instance_, &validation.messenger, nullptr, &messenger_));
  return {};
}

}  // namespace vkdml::detail

namespace vkdml {

Result EnumerateDevices(std::vector<DeviceInfo>* out,
                        PFN_vkGetInstanceProcAddr getInstanceProcAddr) {
  if (!out) return detail::Fail(Status::InvalidArgument, "EnumerateDevices: out is null");
  std::lock_guard<std::mutex> lock(detail::VolkMutex());
  VKDML_TRY(detail::LoadVulkan(getInstanceProcAddr));
  detail::InstanceInfo ci;
  VKDML_TRY(detail::EnumeratePortability(&ci));
  VkInstance instance;
  if (VkResult vr = vkCreateInstance(ci.Finish(), nullptr, &instance); vr != VK_SUCCESS)
    return detail::InstanceFailed(vr);
  detail::LoadInstance(instance);
  std::vector<VkPhysicalDevice> all;
  Result r = detail::PhysicalDevices(instance, &all);
  out->clear();
  for (size_t i = 0; i < all.size() && r.ok(); ++i) {
    DeviceInfo info;
    r = detail::Describe(all[i], detail::ComputeQueueFamily(all[i]), &info);
    info.enabled = info.available;
    out->push_back(info);
  }
  vkDestroyInstance(instance, nullptr);
  if (!r) out->clear();
  return r;
}

}  // namespace vkdml
