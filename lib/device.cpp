#include "device.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "binding_table.h"
#include "compiled.h"
#include "device_features.h"
#include "error.h"
#include "host_run.h"
#include "interface.h"
#include "operator.h"
#include "spirv_table.h"

namespace vkdml {
namespace detail {

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

namespace {

// volk's globals (the loader's entry points and the last instance's) are shared by every
// CreateDevice and EnumerateDevices: each holds this lock from start to end. A Device keeps the
// instance- and device-level functions it needs later, and uses no global afterwards.
std::mutex gVolkMutex;
PFN_vkGetInstanceProcAddr gLoaderGetInstanceProcAddr = nullptr;  // the system loader's, once found

// Points volk at the system loader (opened once) or at the caller's vkGetInstanceProcAddr.
// gVolkMutex held.
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
// gVolkMutex held.
void LoadInstance(VkInstance instance) {
  volkLoadInstanceOnly(instance);
}

// vkCreateInstance's failures that mean something is not installed, as what to install.
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

bool HasExtension(const std::vector<VkExtensionProperties>& list, const char* name) {
  for (const auto& e : list)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Where the loader offers VK_KHR_portability_enumeration, an instance of vkdml's asks for it (the
// extension, appended to `extensions`, and its flag), so that portability drivers (MoltenVK) are
// listed too; their devices get VK_KHR_portability_subset (CreateLogicalDevice).
Result EnumeratePortability(VkInstanceCreateInfo* ci, std::vector<const char*>* extensions) {
  uint32_t n = 0;
  VKDML_VK(vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> list(n);
  VKDML_VK(vkEnumerateInstanceExtensionProperties(nullptr, &n, list.data()));
  list.resize(n);
  if (HasExtension(list, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions->push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    ci->flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  return {};
}

Result DeviceExtensions(VkPhysicalDevice pd, std::vector<VkExtensionProperties>* list) {
  uint32_t n = 0;
  VKDML_VK(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr));
  list->resize(n);
  VKDML_VK(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, list->data()));
  list->resize(n);
  return {};
}

// Fills what vkdml reports about a physical device (all but `enabled`); extensionsOut, if given,
// receives its extensions.
Result Describe(VkPhysicalDevice pd, uint32_t queueFamily, DeviceInfo* out,
                std::vector<VkExtensionProperties>* extensionsOut = nullptr) {
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
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties floats{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  // Queried through the extensions: vkdml's instances are Vulkan 1.1.
  const bool hasDriver = HasExtension(extensions, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  const bool hasFloatControls =
      HasExtension(extensions, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  void** props2Next = &props2.pNext;
  if (hasDriver) {
    *props2Next = &driver;
    props2Next = &driver.pNext;
  }
  if (hasFloatControls) *props2Next = &floats;
  if (hasDriver || hasFloatControls) vkGetPhysicalDeviceProperties2(pd, &props2);
  if (hasDriver) {
    info.driverName = driver.driverName;
    info.driverInfo = driver.driverInfo;
  }
  info.available.shaderDenormPreserveFloat32 =
      hasFloatControls && floats.shaderDenormPreserveFloat32;
  info.available.shaderDenormPreserveFloat64 =
      hasFloatControls && floats.shaderDenormPreserveFloat64;

  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceShaderAtomicInt64Features int64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  bool has8 = HasExtension(extensions, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool hasTimeline = HasExtension(extensions, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  bool hasInt64 = HasExtension(extensions, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  bool hasFloat = HasExtension(extensions, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  void** next = &s16.pNext;  // chain only the structures of extensions the device has
  auto chain = [&next](auto* s) {
    *next = s;
    next = &s->pNext;
  };
  if (has8) chain(&s8);
  if (hasTimeline) chain(&timeline);
  if (hasInt64) chain(&int64);
  if (hasFloat) chain(&atomicFloat);
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &s16};
  vkGetPhysicalDeviceFeatures2(pd, &features);
  info.available.storageBuffer8BitAccess = has8 && s8.storageBuffer8BitAccess;
  info.available.storageBuffer16BitAccess = s16.storageBuffer16BitAccess;
  info.available.timelineSemaphore = hasTimeline && timeline.timelineSemaphore;
  info.available.shaderFloat64 = features.features.shaderFloat64;
  info.available.shaderInt64 = features.features.shaderInt64;
  info.available.shaderBufferInt64Atomics = hasInt64 && int64.shaderBufferInt64Atomics;
  info.available.shaderBufferFloat32AtomicAdd =
      hasFloat && atomicFloat.shaderBufferFloat32AtomicAdd;

  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  info.timestampsSupported = queueFamily < n && families[queueFamily].timestampValidBits > 0 &&
                             props.limits.timestampPeriod > 0;
  return {};
}

bool BelowVulkan11(uint32_t apiVersion) {
  return VK_API_VERSION_MAJOR(apiVersion) == 1 && VK_API_VERSION_MINOR(apiVersion) < 1;
}

std::vector<VkQueueFamilyProperties> QueueFamilies(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  return families;
}

// The first queue family with compute, or UINT32_MAX.
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

// Why vkdml cannot use a physical device (Vulkan 1.0, no compute queue), or "" if it can.
std::string Unsuitable(VkPhysicalDevice pd) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  if (BelowVulkan11(p.apiVersion)) return Str(p.deviceName, " supports only Vulkan 1.0");
  if (ComputeQueueFamily(pd) == UINT32_MAX) return Str(p.deviceName, " has no compute queue");
  return "";
}

}  // namespace

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

Result DeviceImpl::CreateInstance(const DeviceDesc& desc) {
  if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
    return Fail(Status::Unsupported, "the Vulkan loader supports only Vulkan 1.0, expected 1.1");
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkdml";
  app.pEngineName = "vkdml";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;

  const char* layer = "VK_LAYER_KHRONOS_validation";
  std::vector<const char*> extensions;
  VKDML_TRY(EnumeratePortability(&ci, &extensions));
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  if (desc.enableValidation) {
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
    onValidationMessage_ = desc.onValidationMessage;
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    messenger.pfnUserCallback = DebugCallback;
    messenger.pUserData = this;
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    features.pNext = &messenger;
    ci.pNext = &features;
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (VkResult r = vkCreateInstance(&ci, nullptr, &instance_); r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    return InstanceFailed(r);
  }
  LoadInstance(instance_);
  destroyInstance_ = vkDestroyInstance;
  destroyMessenger_ = vkDestroyDebugUtilsMessengerEXT;
  if (desc.enableValidation)
    VKDML_VK(vkCreateDebugUtilsMessengerEXT(instance_, &messenger, nullptr, &messenger_));
  return {};
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

// What Vulkan lets vkdml check of a caller's objects: the device's version and the queue family.
// (The instance's apiVersion cannot be queried; DeviceDesc documents that it must be 1.1.)
Result DeviceImpl::CheckAdopted() {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(physical_, &p);
  if (BelowVulkan11(p.apiVersion))
    return Fail(Status::Unsupported, "DeviceDesc.physicalDevice (", p.deviceName,
                ") supports Vulkan 1.0, expected 1.1");
  std::vector<VkQueueFamilyProperties> families = QueueFamilies(physical_);
  if (queueFamily_ >= families.size())
    return Fail(Status::InvalidArgument, "DeviceDesc.queueFamilyIndex is ", queueFamily_,
                ", expected less than ", families.size(),
                " (the physical device's queue families)");
  if (!(families[queueFamily_].queueFlags & VK_QUEUE_COMPUTE_BIT))
    return Fail(Status::InvalidArgument, "DeviceDesc.queueFamilyIndex ", queueFamily_,
                " has no compute support (queueFlags 0x", std::hex,
                families[queueFamily_].queueFlags, ")");
  return {};
}

Result DeviceImpl::CreateLogicalDevice() {
  DeviceInfo d;
  std::vector<VkExtensionProperties> extensions;
  VKDML_TRY(Describe(physical_, queueFamily_, &d, &extensions));
  if (BelowVulkan11(d.apiVersion))
    return Fail(Status::Unsupported, "Vulkan device ", d.name,
                " supports Vulkan 1.0, expected 1.1: install a newer driver");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = queueFamily_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  std::vector<const char*> enable;
  // A portability driver's device (MoltenVK) must enable VK_KHR_portability_subset.
  if (HasExtension(extensions, "VK_KHR_portability_subset"))
    enable.push_back("VK_KHR_portability_subset");
  // vkdml's instance asks for Vulkan 1.1, so 1.2's core features come as extensions.
  const DeviceFeatures& a = d.available;
  if (a.storageBuffer8BitAccess) enable.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (a.timelineSemaphore) enable.push_back(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  if (a.shaderBufferInt64Atomics) enable.push_back(VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  if (a.shaderBufferFloat32AtomicAdd) enable.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (a.shaderDenormPreserveFloat32 || a.shaderDenormPreserveFloat64)
    enable.push_back(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  timeline.timelineSemaphore = d.available.timelineSemaphore;
  VkPhysicalDeviceShaderAtomicInt64Features int64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  int64.shaderBufferInt64Atomics = a.shaderBufferInt64Atomics;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  atomicFloat.shaderBufferFloat32AtomicAdd = a.shaderBufferFloat32AtomicAdd;
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  s8.storageBuffer8BitAccess = d.available.storageBuffer8BitAccess;
  VkPhysicalDevice16BitStorageFeatures s16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  s16.storageBuffer16BitAccess = d.available.storageBuffer16BitAccess;
  void** next = &s16.pNext;  // the extensions' structures only where they are enabled
  auto chain = [&next](auto* s) {
    *next = s;
    next = &s->pNext;
  };
  if (a.storageBuffer8BitAccess) chain(&s8);
  if (a.timelineSemaphore) chain(&timeline);
  if (a.shaderBufferInt64Atomics) chain(&int64);
  if (a.shaderBufferFloat32AtomicAdd) chain(&atomicFloat);
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &s16};
  features.features.shaderFloat64 = a.shaderFloat64;
  features.features.shaderInt64 = a.shaderInt64;

  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &queue;
  ci.enabledExtensionCount = uint32_t(enable.size());
  ci.ppEnabledExtensionNames = enable.data();
  VKDML_VK(vkCreateDevice(physical_, &ci, nullptr, &device_));
  info_.enabled = d.available;
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

Result DeviceImpl::CreateLayouts() {
  VkDescriptorSetLayoutBinding b[VKDML_BINDING_COUNT];
  for (uint32_t i = 0; i < VKDML_BINDING_COUNT; ++i) {
    b[i] = {};
    b[i].binding = i;
    b[i].descriptorType = i == VKDML_BIND_PLANS ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sci.bindingCount = VKDML_BINDING_COUNT;
  sci.pBindings = b;
  VKDML_VK(vk_.vkCreateDescriptorSetLayout(device_, &sci, nullptr, &setLayout_));
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           uint32_t(std::max({sizeof(shader::Push), sizeof(shader::SortPush),
                                              sizeof(shader::LargePush)}))};
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &setLayout_;
  pci.pushConstantRangeCount = 1;
  pci.pPushConstantRanges = &push;
  VKDML_VK(vk_.vkCreatePipelineLayout(device_, &pci, nullptr, &pipelineLayout_));
  return {};
}

Result DeviceImpl::Init(const DeviceDesc& desc) {
  VKDML_TRY(Switches::Read(&switches_));
  VKDML_TRY(LoadVulkan(desc.getInstanceProcAddr));
  if (desc.pipelineCache && !desc.device)
    return Fail(Status::InvalidArgument,
                "DeviceDesc.pipelineCache is set but device is not: a pipeline cache belongs to "
                "the VkDevice that made it, so vkdml can adopt it only with that device");
  if (desc.device) {
    if (!desc.instance || !desc.physicalDevice || !desc.queue)
      return Fail(Status::InvalidArgument,
                  "DeviceDesc.device is set, so instance, physicalDevice and queue must be too");
    instance_ = desc.instance;
    physical_ = desc.physicalDevice;
    queueFamily_ = desc.queueFamilyIndex;
    LoadInstance(instance_);
    VKDML_TRY(CheckAdopted());  // before device_ is set: the destructor then touches nothing
    device_ = desc.device;
    queue_ = desc.queue;
    info_.enabled = desc.enabledFeatures;
  } else {
    owned_ = true;
    VKDML_TRY(CreateInstance(desc));
    VKDML_TRY(PickPhysicalDevice(desc.physicalDeviceIndex));
    VKDML_TRY(CreateLogicalDevice());
  }
  getDeviceProcAddr_ = vkGetDeviceProcAddr;
  volkLoadDeviceTable(&vk_, device_);
  if (!queue_) vk_.vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);
  VKDML_TRY(ReadInfo());
  if (desc.device)  // a feature the caller says it enabled must be one the device has
    for (const Feature& f : kFeatures)
      if (info_.enabled.*f.member && !(info_.available.*f.member))
        return Fail(Status::InvalidArgument, "DeviceDesc.enabledFeatures.", f.name, " is set, but ",
                    info_.name, " does not support it");
  // The extension's entry points, or Vulkan 1.2's where the caller's device has those instead.
  getCounter_ = vk_.vkGetSemaphoreCounterValueKHR;
  waitSemaphores_ = vk_.vkWaitSemaphoresKHR;
  if (!getCounter_ || !waitSemaphores_) {
    getCounter_ = vk_.vkGetSemaphoreCounterValue;
    waitSemaphores_ = vk_.vkWaitSemaphores;
    getCounterName_ = "vkGetSemaphoreCounterValue";
    waitSemaphoresName_ = "vkWaitSemaphores";
  }
  waitTimeoutNs_ = desc.waitTimeoutNs;
  if (!getCounter_ || !waitSemaphores_) info_.enabled.timelineSemaphore = false;
  caps_ = Capabilities::Of(info_.type, limits_, info_.enabled, switches_);
  VKDML_TRY(CreateLayouts());
  VKDML_TRY(CreatePipelineCache(desc));

  VKDML_TRY(CreateCommandBuffer(&commandPool_, &commandBuffer_));
  if (info_.enabled.timelineSemaphore) {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo semaphore{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type};
    VKDML_VK(vk_.vkCreateSemaphore(device_, &semaphore, nullptr, &timeline_));
  } else {
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKDML_VK(vk_.vkCreateFence(device_, &fence, nullptr, &fence_));
  }
  runner_ = std::make_unique<HostRunner>(this);
  return runner_->Init();
}

Result DeviceImpl::CreateCommandBuffer(VkCommandPool* pool, VkCommandBuffer* cmd) {
  VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = queueFamily_;
  VKDML_VK(vk_.vkCreateCommandPool(device_, &ci, nullptr, pool));
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = *pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VKDML_VK(vk_.vkAllocateCommandBuffers(device_, &alloc, cmd));
  return {};
}

DeviceImpl::~DeviceImpl() {
  if (device_) {
    vk_.vkDeviceWaitIdle(device_);
    runner_.reset();
    for (auto& p : pipelines_) vk_.vkDestroyPipeline(device_, p.second, nullptr);
    if (ownCache_) vk_.vkDestroyPipelineCache(device_, pipelineCache_, nullptr);
    if (pipelineLayout_) vk_.vkDestroyPipelineLayout(device_, pipelineLayout_, nullptr);
    if (setLayout_) vk_.vkDestroyDescriptorSetLayout(device_, setLayout_, nullptr);
    if (fence_) vk_.vkDestroyFence(device_, fence_, nullptr);
    if (timeline_) vk_.vkDestroySemaphore(device_, timeline_, nullptr);
    if (commandPool_) vk_.vkDestroyCommandPool(device_, commandPool_, nullptr);
    if (owned_) vk_.vkDestroyDevice(device_, nullptr);
  }
  if (owned_ && instance_) {
    if (messenger_) destroyMessenger_(instance_, messenger_, nullptr);
    destroyInstance_(instance_, nullptr);
  }
}

int DeviceImpl::FindMemoryType(uint32_t typeBits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memoryProps_.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) && (memoryProps_.memoryTypes[i].propertyFlags & want) == want)
      return int(i);
  return -1;
}

Result DeviceImpl::Pipeline(const std::string& module, const Specialization& spec,
                            VkPipeline* out) {
  auto key = std::make_pair(module, spec);
  {
    std::lock_guard<std::mutex> lock(pipelineMutex_);
    auto it = pipelines_.find(key);
    if (it != pipelines_.end()) {
      *out = it->second;
      return {};
    }
  }
  // Created outside the lock, so that threads compiling different operators do not wait for
  // each other; a thread that lost the race for the same key destroys its own.
  const SpirvModule* spirv = FindSpirv(module.c_str());
  if (!spirv) return Fail(Status::Internal, "internal: no SPIR-V module named ", module);
  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = spirv->count * sizeof(uint32_t);
  mci.pCode = spirv->words;
  VkShaderModule shader;
  VKDML_VK(vk_.vkCreateShaderModule(device_, &mci, nullptr, &shader));
  VkSpecializationMapEntry entries[std::tuple_size<Specialization>::value];
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo specInfo{uint32_t(spec.size()), entries, sizeof(spec), spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = shader;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &specInfo;
  ci.layout = pipelineLayout_;
  VkPipeline pipeline;
  VkResult r = vk_.vkCreateComputePipelines(device_, pipelineCache_, 1, &ci, nullptr, &pipeline);
  vk_.vkDestroyShaderModule(device_, shader, nullptr);
  if (r != VK_SUCCESS) return VkFailure(r, "vkCreateComputePipelines");
  std::lock_guard<std::mutex> lock(pipelineMutex_);
  auto inserted = pipelines_.emplace(key, pipeline);
  if (!inserted.second) vk_.vkDestroyPipeline(device_, pipeline, nullptr);
  *out = inserted.first->second;
  return {};
}

// Pipeline cache ---------------------------------------------------------------------------

Result DeviceImpl::CreatePipelineCache(const DeviceDesc& desc) {
  if (desc.pipelineCache) {
    if (!desc.pipelineCacheData.empty())
      return Fail(Status::InvalidArgument,
                  "DeviceDesc.pipelineCache and pipelineCacheData are both set: vkdml seeds only "
                  "its own cache, expected one of them");
    pipelineCache_ = desc.pipelineCache;
    return {};
  }
  // VkPipelineCacheHeaderVersionOne. Data from another device or driver is left out (Vulkan
  // would ignore it); data that is no pipeline cache at all is refused.
  const std::vector<uint8_t>& data = desc.pipelineCacheData;
  VkPipelineCacheHeaderVersionOne header{};
  bool compatible = false;
  if (!data.empty()) {
    if (data.size() < sizeof header)
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData is ", data.size(),
                  " bytes, expected at least ", sizeof header,
                  " (a Vulkan pipeline cache header, as GetPipelineCacheData returns)");
    std::memcpy(&header, data.data(), sizeof header);
    if (header.headerSize < sizeof header || header.headerSize > data.size())
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData: headerSize is ",
                  header.headerSize, ", expected ", sizeof header, " to ", data.size(),
                  " (not data from GetPipelineCacheData?)");
    if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData: headerVersion is ",
                  int(header.headerVersion), ", expected 1 (VK_PIPELINE_CACHE_HEADER_VERSION_ONE)");
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(physical_, &p);
    compatible = header.vendorID == p.vendorID && header.deviceID == p.deviceID &&
                 std::memcmp(header.pipelineCacheUUID, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (compatible) {
    ci.initialDataSize = data.size();
    ci.pInitialData = data.data();
  }
  VKDML_VK(vk_.vkCreatePipelineCache(device_, &ci, nullptr, &pipelineCache_));
  ownCache_ = true;
  return {};
}

Result DeviceImpl::GetPipelineCacheData(std::vector<uint8_t>* out) {
  if (!out) return Fail(Status::InvalidArgument, "GetPipelineCacheData: out is null");
  for (;;) {  // the cache may grow between the two calls (another thread compiling)
    size_t size = 0;
    VKDML_VK(vk_.vkGetPipelineCacheData(device_, pipelineCache_, &size, nullptr));
    out->resize(size);
    VkResult r = vk_.vkGetPipelineCacheData(device_, pipelineCache_, &size, out->data());
    if (r == VK_INCOMPLETE) continue;
    if (r != VK_SUCCESS) return VkFailure(r, "vkGetPipelineCacheData");
    out->resize(size);
    return {};
  }
}

Result DeviceImpl::Submit(const std::function<void(VkCommandBuffer)>& record) {
  VKDML_TRY(CheckNotLost());
  std::lock_guard<std::mutex> lock(submitMutex_);
  VKDML_VK(vk_.vkResetCommandBuffer(commandBuffer_, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VKDML_VK(vk_.vkBeginCommandBuffer(commandBuffer_, &begin));
  record(commandBuffer_);
  VKDML_VK(vk_.vkEndCommandBuffer(commandBuffer_));
  return SubmitLocked(commandBuffer_);
}

Result DeviceImpl::SubmitRecorded(VkCommandBuffer cmd) {
  VKDML_TRY(CheckNotLost());
  std::lock_guard<std::mutex> lock(submitMutex_);
  return SubmitLocked(cmd);
}

Result DeviceImpl::CheckNotLost() const {
  if (!lost_) return {};
  std::lock_guard<std::mutex> lock(lostMutex_);
  return Fail(Status::DeviceError, "the Vulkan device is lost (", lostReason_,
              "): destroy this Device and create a new one");
}

void DeviceImpl::DrainIfLost() {
  if (!lost_) return;
  std::lock_guard<std::mutex> lock(lostMutex_);
  if (drained_) return;
  vk_.vkDeviceWaitIdle(device_);
  drained_ = true;
}

void DeviceImpl::MarkLost(const std::string& reason) {
  std::lock_guard<std::mutex> lock(lostMutex_);
  if (lost_) return;
  lostReason_ = reason;
  lost_ = true;
}

Result DeviceImpl::WaitFailed(VkResult r, const char* call) {
  Result failed =
      r == VK_TIMEOUT
          ? Fail(Status::DeviceError, call, " gave up: the work did not complete within ",
                 waitTimeoutNs_, " ns (DeviceDesc.waitTimeoutNs), VK_TIMEOUT")
          : Fail(Status::DeviceError, VkFailure(r, call).message);
  MarkLost(failed.message);
  failed.message += "; the device now counts as lost";
  return failed;
}

Result DeviceImpl::SubmitLocked(VkCommandBuffer cmd) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  // Short work finishes sooner than a blocking wait wakes up: poll for a moment first. The
  // blocking wait then takes what is left of DeviceDesc.waitTimeoutNs.
  const auto start = std::chrono::steady_clock::now();
  auto elapsedNs = [&] {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  };
  const uint64_t pollNs = std::min<uint64_t>(500000, waitTimeoutNs_);
  auto remainingNs = [&] {
    const uint64_t e = elapsedNs();
    return waitTimeoutNs_ == UINT64_MAX ? UINT64_MAX : e >= waitTimeoutNs_ ? 0 : waitTimeoutNs_ - e;
  };
  auto submitted = [&](VkResult r) {  // a failed submit ran nothing; only a lost device stays
    if (r == VK_ERROR_DEVICE_LOST) MarkLost("vkQueueSubmit failed: VK_ERROR_DEVICE_LOST");
    return r == VK_SUCCESS ? Result{} : VkFailure(r, "vkQueueSubmit");
  };
  if (timeline_) {
    const uint64_t value = ++timelineValue_;
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &value;
    submit.pNext = &values;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &timeline_;
    VKDML_TRY(submitted(vk_.vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE)));
    uint64_t reached = 0;
    for (;;) {
      VkResult r = getCounter_(device_, timeline_, &reached);
      if (r != VK_SUCCESS) return WaitFailed(r, getCounterName_);
      if (reached >= value) return {};
      if (elapsedNs() >= pollNs) break;
    }
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline_;
    wait.pValues = &value;
    VkResult r = waitSemaphores_(device_, &wait, remainingNs());
    return r == VK_SUCCESS ? Result{} : WaitFailed(r, waitSemaphoresName_);
  }
  VKDML_VK(vk_.vkResetFences(device_, 1, &fence_));
  VKDML_TRY(submitted(vk_.vkQueueSubmit(queue_, 1, &submit, fence_)));
  VkResult status;
  while ((status = vk_.vkGetFenceStatus(device_, fence_)) == VK_NOT_READY)
    if (elapsedNs() >= pollNs) {
      status = vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, remainingNs());
      return status == VK_SUCCESS ? Result{} : WaitFailed(status, "vkWaitForFences");
    }
  return status == VK_SUCCESS ? Result{} : WaitFailed(status, "vkGetFenceStatus");
}

// Operators ----------------------------------------------------------------------------------

Result DeviceImpl::CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) {
  VKDML_TRY(CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateOperator: out is null");
  auto op = std::make_unique<OperatorImpl>();
  VKDML_TRY(BuildOperator(desc, op.get()));
  // What this device can run: each tensor's storage feature. (Tensors past one descriptor's
  // range take the large path: kernels.h.)
  std::vector<const Tensor*> all;
  for (const Tensor& t : op->inputs) all.push_back(&t);
  for (const Tensor& t : op->outputs) all.push_back(&t);
  for (const Tensor* t : all) {
    bool missing8 = t->elemSize == 1 && !info_.enabled.storageBuffer8BitAccess;
    bool missing16 = t->elemSize == 2 && !info_.enabled.storageBuffer16BitAccess;
    if (missing8 || missing16)
      return Fail(Status::Unsupported, op->name, ": ", t->field, ".DataType is ",
                  DataTypeName(t->type), ", which needs ",
                  missing8 ? "storageBuffer8BitAccess" : "storageBuffer16BitAccess",
                  ", not enabled on device ", info_.name);
  }
  const bool float64Arithmetic = op->reduce != VKDML_REDUCE_FUNCTION_NONE &&
                                 op->inputs[0].type == DML_TENSOR_DATA_TYPE_FLOAT64;
  if (float64Arithmetic && !info_.enabled.shaderFloat64)
    return Fail(Status::Unsupported, op->name,
                ": a reduction on FLOAT64 elements needs shaderFloat64, not enabled on device ",
                info_.name);
  *out = std::move(op);
  return {};
}

Result DeviceImpl::CompileOperator(const Operator& op, UINT flags,
                                   std::unique_ptr<CompiledOperator>* out) {
  VKDML_TRY(CheckNotLost());
  return detail::CompileOperator(*this, op, flags, out);
}

Result DeviceImpl::CreateBindingTable(const CompiledOperator& op,
                                      std::unique_ptr<BindingTable>* out) {
  VKDML_TRY(CheckNotLost());
  return detail::CreateBindingTable(*this, op, out);
}

Result DeviceImpl::RecordDispatch(VkCommandBuffer cmd, BindingTable& table) {
  VKDML_TRY(CheckNotLost());
  return static_cast<BindingTableImpl&>(table).Record(cmd);
}

Result DeviceImpl::Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  VKDML_TRY(CheckNotLost());
  return runner_->Run(op, inputs, outputs);
}

// Buffers ------------------------------------------------------------------------------------

Result DeviceImpl::CreateInternalBuffer(UINT64 size, VkBufferUsageFlags usage,
                                        Buffer::Memory memory, std::unique_ptr<BufferImpl>* out,
                                        bool gpuReads) {
  auto b = std::make_unique<BufferImpl>(this, usage);
  VKDML_TRY(b->Allocate(size, memory, gpuReads));
  *out = std::move(b);
  return {};
}

Result DeviceImpl::CreateBuffer(UINT64 size, Buffer::Memory memory, std::unique_ptr<Buffer>* out) {
  VKDML_TRY(CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateBuffer: out is null");
  if (size == 0)
    return Fail(Status::InvalidArgument, "CreateBuffer: size is 0, expected at least 1");
  std::unique_ptr<BufferImpl> b;
  VKDML_TRY(CreateInternalBuffer(size,
                                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 memory, &b));
  *out = std::move(b);
  return {};
}

void DeviceImpl::TrackBuffer(VkBuffer buffer, UINT64 size) {
  std::lock_guard<std::mutex> lock(buffersMutex_);
  buffers_[buffer] = size;
}

void DeviceImpl::UntrackBuffer(VkBuffer buffer) {
  std::lock_guard<std::mutex> lock(buffersMutex_);
  buffers_.erase(buffer);
}

bool DeviceImpl::KnownBufferSize(VkBuffer buffer, UINT64* size) {
  std::lock_guard<std::mutex> lock(buffersMutex_);
  auto it = buffers_.find(buffer);
  if (it == buffers_.end()) return false;
  *size = it->second;
  return true;
}

}  // namespace detail

// Public entry points ------------------------------------------------------------------------

Result CreateDevice(const DeviceDesc& desc, std::unique_ptr<Device>* out) {
  if (!out) return detail::Fail(Status::InvalidArgument, "CreateDevice: out is null");
  auto device = std::make_unique<detail::DeviceImpl>();
  std::lock_guard<std::mutex> lock(detail::gVolkMutex);
  VKDML_TRY(device->Init(desc));
  *out = std::move(device);
  return {};
}

Result EnumerateDevices(std::vector<DeviceInfo>* out,
                        PFN_vkGetInstanceProcAddr getInstanceProcAddr) {
  if (!out) return detail::Fail(Status::InvalidArgument, "EnumerateDevices: out is null");
  std::lock_guard<std::mutex> lock(detail::gVolkMutex);
  VKDML_TRY(detail::LoadVulkan(getInstanceProcAddr));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkdml";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  std::vector<const char*> extensions;
  VKDML_TRY(detail::EnumeratePortability(&ci, &extensions));
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkInstance instance;
  if (VkResult vr = vkCreateInstance(&ci, nullptr, &instance); vr != VK_SUCCESS)
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
