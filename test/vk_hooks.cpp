#include "vk_hooks.h"

#include <dlfcn.h>

#include <cstring>

namespace vt::hooks {

namespace {

PFN_vkGetInstanceProcAddr gLoader = nullptr;
PFN_vkGetDeviceProcAddr gDeviceProcAddr = nullptr;  // the loader's, for vkdml's devices
PFN_vkGetPhysicalDeviceProperties gProperties = nullptr;
PFN_vkGetPhysicalDeviceQueueFamilyProperties gFamilies = nullptr;
PFN_vkGetPhysicalDeviceFeatures2 gFeatures2 = nullptr;
PFN_vkGetPhysicalDeviceMemoryProperties gMemory = nullptr;
PFN_vkQueueSubmit gQueueSubmit = nullptr;  // one device's at a time (tests make one)
bool gNoFloat64 = false;
uint64_t gHeapBytes = 0;
Recorded gSeen;
bool gFake10 = false, gNoCompute = false, gLoader10 = false;

template <typename F>
F Real(VkDevice device, const char* name) {
  return reinterpret_cast<F>(gDeviceProcAddr(device, name));
}

VKAPI_ATTR VkResult VKAPI_CALL CreateComputePipelines(VkDevice device, VkPipelineCache cache,
                                                      uint32_t count,
                                                      const VkComputePipelineCreateInfo* infos,
                                                      const VkAllocationCallbacks* allocator,
                                                      VkPipeline* pipelines) {
  gSeen.pipelineCaches.push_back(cache);
  return Real<PFN_vkCreateComputePipelines>(device, "vkCreateComputePipelines")(
      device, cache, count, infos, allocator, pipelines);
}

VKAPI_ATTR VkResult VKAPI_CALL CreatePipelineCache(VkDevice device,
                                                   const VkPipelineCacheCreateInfo* info,
                                                   const VkAllocationCallbacks* allocator,
                                                   VkPipelineCache* cache) {
  const auto* data = static_cast<const uint8_t*>(info->pInitialData);
  gSeen.initialData.emplace_back(data, data + info->initialDataSize);
  return Real<PFN_vkCreatePipelineCache>(device, "vkCreatePipelineCache")(device, info, allocator,
                                                                          cache);
}

VKAPI_ATTR VkResult VKAPI_CALL QueueSubmit(VkQueue queue, uint32_t count,
                                           const VkSubmitInfo* submits, VkFence fence) {
  gSeen.submits.push_back(queue);
  return gQueueSubmit(queue, count, submits, fence);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL DeviceProcAddr(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkCreateComputePipelines") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(CreateComputePipelines);
  if (std::strcmp(name, "vkCreatePipelineCache") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(CreatePipelineCache);
  if (std::strcmp(name, "vkQueueSubmit") == 0) {
    gQueueSubmit = reinterpret_cast<PFN_vkQueueSubmit>(gDeviceProcAddr(device, name));
    return reinterpret_cast<PFN_vkVoidFunction>(QueueSubmit);
  }
  return gDeviceProcAddr(device, name);
}

VKAPI_ATTR void VKAPI_CALL Properties(VkPhysicalDevice pd, VkPhysicalDeviceProperties* p) {
  gProperties(pd, p);
  if (gFake10) p->apiVersion = VK_MAKE_API_VERSION(0, 1, 0, 0);
}

VKAPI_ATTR void VKAPI_CALL Families(VkPhysicalDevice pd, uint32_t* count,
                                    VkQueueFamilyProperties* families) {
  gFamilies(pd, count, families);
  if (gNoCompute && families)
    for (uint32_t i = 0; i < *count; ++i) families[i].queueFlags &= ~VK_QUEUE_COMPUTE_BIT;
}

VKAPI_ATTR void VKAPI_CALL Features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2* features) {
  gFeatures2(pd, features);
  if (gNoFloat64) features->features.shaderFloat64 = VK_FALSE;
}

VKAPI_ATTR void VKAPI_CALL Memory(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties* m) {
  gMemory(pd, m);
  if (gHeapBytes)
    for (uint32_t i = 0; i < m->memoryHeapCount; ++i)
      if (m->memoryHeaps[i].size > gHeapBytes) m->memoryHeaps[i].size = gHeapBytes;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL InstanceProcAddr(VkInstance instance, const char* name) {
  // A Vulkan 1.0 loader has no vkEnumerateInstanceVersion.
  if (gLoader10 && std::strcmp(name, "vkEnumerateInstanceVersion") == 0) return nullptr;
  PFN_vkVoidFunction real = LoaderGetInstanceProcAddr()(instance, name);
  if (!real) return nullptr;
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) {
    gDeviceProcAddr = reinterpret_cast<PFN_vkGetDeviceProcAddr>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(DeviceProcAddr);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceFeatures2") == 0) {
    gFeatures2 = reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(Features2);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceMemoryProperties") == 0) {
    gMemory = reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(Memory);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceQueueFamilyProperties") == 0) {
    gFamilies = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(Families);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceProperties") == 0) {
    gProperties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(Properties);
  }
  return real;
}

}  // namespace

PFN_vkGetInstanceProcAddr GetInstanceProcAddr() {
  return InstanceProcAddr;
}

PFN_vkGetInstanceProcAddr LoaderGetInstanceProcAddr() {
  if (!gLoader) {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib)
      gLoader = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  }
  return gLoader;
}

Recorded& Reset() {
  gSeen = {};
  return gSeen;
}

Recorded& Seen() {
  return gSeen;
}

void FakeVulkan10(bool on) {
  gFake10 = on;
}

void FakeNoCompute(bool on) {
  gNoCompute = on;
}

void FakeLoader10(bool on) {
  gLoader10 = on;
}

void FakeNoFloat64(bool on) {
  gNoFloat64 = on;
}

void FakeHeapBytes(uint64_t bytes) {
  gHeapBytes = bytes;
}

}  // namespace vt::hooks
