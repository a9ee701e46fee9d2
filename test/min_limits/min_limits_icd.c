/* A Vulkan driver for the tests that forwards every call to another driver (lavapipe) but
 * reports Vulkan 1.1's minimum limits: 4 storage buffers per stage, workgroups of 128
 * invocations, 16 KiB of shared memory, 128 bytes of push constants, 128 MiB storage buffers;
 * and none of the optional features vkdml can use: no 8/16-bit storage, no float64, int64 or
 * int16, no 64-bit or float atomics, no denormal preservation (as SwiftShader, or Apple and
 * Adreno GPUs in part). The validation layer above it then checks every layout and pipeline
 * vkdml makes against them.
 *
 *   VKDML_MIN_LIMITS_NEXT=/path/libvulkan_lvp.so   the driver it forwards to (default: the
 *                                                   build's VKDML_MIN_LIMITS_DEFAULT_NEXT, else
 *                                                   lavapipe's)
 *   VKDML_MIN_LIMITS_TYPE=integrated|own           report an integrated GPU (so that vkdml
 *                                                   chooses its GPU kernels) or the driver's
 *                                                   own type (default: the build's
 *                                                   VKDML_MIN_LIMITS_INTEGRATED, else own)
 *
 * Handles pass through untouched: the loader writes its dispatch pointer into the first word of
 * the next driver's dispatchable objects, as it would for that driver alone. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vk_icd.h>
#include <vulkan/vulkan.h>

#ifndef VKDML_MIN_LIMITS_DEFAULT_NEXT
#define VKDML_MIN_LIMITS_DEFAULT_NEXT "libvulkan_lvp.so"
#endif
#ifndef VKDML_MIN_LIMITS_INTEGRATED
#define VKDML_MIN_LIMITS_INTEGRATED 0
#endif

#define EXPORT __attribute__((visibility("default")))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

typedef VkResult(VKAPI_PTR* PFN_Negotiate)(uint32_t*);

static PFN_vkGetInstanceProcAddr nextGetInstanceProcAddr;
static PFN_GetPhysicalDeviceProcAddr nextGetPhysicalDeviceProcAddr;
static PFN_Negotiate nextNegotiate;
static PFN_vkGetPhysicalDeviceProperties nextProperties;
static PFN_vkGetPhysicalDeviceProperties2 nextProperties2;
static PFN_vkGetPhysicalDeviceFeatures nextFeatures;
static PFN_vkGetPhysicalDeviceFeatures2 nextFeatures2;

static int Load(void) {
  if (nextGetInstanceProcAddr) return 1;
  const char* path = getenv("VKDML_MIN_LIMITS_NEXT");
  void* next = dlopen(path && *path ? path : VKDML_MIN_LIMITS_DEFAULT_NEXT, RTLD_NOW | RTLD_LOCAL);
  if (!next) return 0;
  nextNegotiate = (PFN_Negotiate)dlsym(next, "vk_icdNegotiateLoaderICDInterfaceVersion");
  nextGetPhysicalDeviceProcAddr =
      (PFN_GetPhysicalDeviceProcAddr)dlsym(next, "vk_icdGetPhysicalDeviceProcAddr");
  nextGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)dlsym(next, "vk_icdGetInstanceProcAddr");
  return nextGetInstanceProcAddr != NULL;
}

/* Vulkan 1.1's required limits (the specification's "Required Limits" table), where the
 * driver's are more generous. */
static void Lower(VkPhysicalDeviceProperties* p) {
  VkPhysicalDeviceLimits* l = &p->limits;
  l->maxBoundDescriptorSets = MIN(l->maxBoundDescriptorSets, 4);
  l->maxPerStageDescriptorUniformBuffers = MIN(l->maxPerStageDescriptorUniformBuffers, 12);
  l->maxPerStageDescriptorStorageBuffers = MIN(l->maxPerStageDescriptorStorageBuffers, 4);
  l->maxPerStageResources = MIN(l->maxPerStageResources, 128);
  l->maxDescriptorSetUniformBuffers = MIN(l->maxDescriptorSetUniformBuffers, 72);
  l->maxDescriptorSetStorageBuffers = MIN(l->maxDescriptorSetStorageBuffers, 24);
  l->maxPushConstantsSize = MIN(l->maxPushConstantsSize, 128);
  l->maxUniformBufferRange = MIN(l->maxUniformBufferRange, 16384);
  l->maxStorageBufferRange = MIN(l->maxStorageBufferRange, 1u << 27);
  l->maxMemoryAllocationCount = MIN(l->maxMemoryAllocationCount, 4096);
  l->maxComputeSharedMemorySize = MIN(l->maxComputeSharedMemorySize, 16384);
  l->maxComputeWorkGroupInvocations = MIN(l->maxComputeWorkGroupInvocations, 128);
  l->maxComputeWorkGroupSize[0] = MIN(l->maxComputeWorkGroupSize[0], 128);
  l->maxComputeWorkGroupSize[1] = MIN(l->maxComputeWorkGroupSize[1], 128);
  l->maxComputeWorkGroupSize[2] = MIN(l->maxComputeWorkGroupSize[2], 64);
  for (int i = 0; i < 3; ++i)
    l->maxComputeWorkGroupCount[i] = MIN(l->maxComputeWorkGroupCount[i], 65535);
  l->minStorageBufferOffsetAlignment = MAX(l->minStorageBufferOffsetAlignment, 256);
  l->minUniformBufferOffsetAlignment = MAX(l->minUniformBufferOffsetAlignment, 256);
  const char* type = getenv("VKDML_MIN_LIMITS_TYPE");
  const int integrated =
      type && *type ? strcmp(type, "integrated") == 0 : VKDML_MIN_LIMITS_INTEGRATED;
  if (integrated) p->deviceType = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
}

/* Vulkan 1.1 requires no feature but robustBufferAccess: the optional ones vkdml asks for
 * (lib/device/device_features.h), and their neighbours in the same structures, read as absent. */
static void LowerFeatures(VkPhysicalDeviceFeatures* f) {
  f->shaderFloat64 = f->shaderInt64 = f->shaderInt16 = VK_FALSE;
}

static void LowerChain(void* next) {
  for (VkBaseOutStructure* s = (VkBaseOutStructure*)next; s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES: {
        VkPhysicalDevice8BitStorageFeatures* x = (VkPhysicalDevice8BitStorageFeatures*)s;
        x->storageBuffer8BitAccess = x->uniformAndStorageBuffer8BitAccess = VK_FALSE;
        x->storagePushConstant8 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES: {
        VkPhysicalDevice16BitStorageFeatures* x = (VkPhysicalDevice16BitStorageFeatures*)s;
        x->storageBuffer16BitAccess = x->uniformAndStorageBuffer16BitAccess = VK_FALSE;
        x->storagePushConstant16 = x->storageInputOutput16 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES: {
        VkPhysicalDeviceShaderAtomicInt64Features* x =
            (VkPhysicalDeviceShaderAtomicInt64Features*)s;
        x->shaderBufferInt64Atomics = x->shaderSharedInt64Atomics = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT: {
        VkBaseOutStructure* keep = s->pNext;
        VkStructureType type = s->sType;
        memset(s, 0, sizeof(VkPhysicalDeviceShaderAtomicFloatFeaturesEXT));
        s->sType = type;
        s->pNext = keep;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        VkPhysicalDeviceShaderFloat16Int8Features* x =
            (VkPhysicalDeviceShaderFloat16Int8Features*)s;
        x->shaderFloat16 = x->shaderInt8 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: {
        VkPhysicalDeviceVulkan11Features* x = (VkPhysicalDeviceVulkan11Features*)s;
        x->storageBuffer16BitAccess = x->uniformAndStorageBuffer16BitAccess = VK_FALSE;
        x->storagePushConstant16 = x->storageInputOutput16 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        VkPhysicalDeviceVulkan12Features* x = (VkPhysicalDeviceVulkan12Features*)s;
        x->storageBuffer8BitAccess = x->uniformAndStorageBuffer8BitAccess = VK_FALSE;
        x->storagePushConstant8 = x->shaderBufferInt64Atomics = VK_FALSE;
        x->shaderSharedInt64Atomics = x->shaderFloat16 = x->shaderInt8 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES: {
        VkPhysicalDeviceFloatControlsProperties* x = (VkPhysicalDeviceFloatControlsProperties*)s;
        x->shaderDenormPreserveFloat16 = x->shaderDenormPreserveFloat32 = VK_FALSE;
        x->shaderDenormPreserveFloat64 = VK_FALSE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES: {
        VkPhysicalDeviceVulkan12Properties* x = (VkPhysicalDeviceVulkan12Properties*)s;
        x->shaderDenormPreserveFloat16 = x->shaderDenormPreserveFloat32 = VK_FALSE;
        x->shaderDenormPreserveFloat64 = VK_FALSE;
        break;
      }
      default:
        break;
    }
  }
}

static VKAPI_ATTR void VKAPI_CALL Features(VkPhysicalDevice pd, VkPhysicalDeviceFeatures* f) {
  nextFeatures(pd, f);
  LowerFeatures(f);
}

static VKAPI_ATTR void VKAPI_CALL Features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2* f) {
  nextFeatures2(pd, f);
  LowerFeatures(&f->features);
  LowerChain(f->pNext);
}

static VKAPI_ATTR void VKAPI_CALL Properties(VkPhysicalDevice pd, VkPhysicalDeviceProperties* p) {
  nextProperties(pd, p);
  Lower(p);
}

static VKAPI_ATTR void VKAPI_CALL Properties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2* p) {
  nextProperties2(pd, p);
  Lower(&p->properties);
  LowerChain(p->pNext);
  for (VkBaseOutStructure* s = (VkBaseOutStructure*)p->pNext; s; s = s->pNext)
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES) {
      VkPhysicalDeviceMaintenance3Properties* m = (VkPhysicalDeviceMaintenance3Properties*)s;
      m->maxPerSetDescriptors = MIN(m->maxPerSetDescriptors, 1024);
      m->maxMemoryAllocationSize = MIN(m->maxMemoryAllocationSize, (VkDeviceSize)1 << 30);
    }
}

/* The functions this driver replaces; everything else is the next driver's own. */
static PFN_vkVoidFunction Replaced(VkInstance instance, const char* name, PFN_vkVoidFunction next) {
  (void)instance;
  if (!next) return NULL;
  if (strcmp(name, "vkGetPhysicalDeviceProperties") == 0) {
    nextProperties = (PFN_vkGetPhysicalDeviceProperties)next;
    return (PFN_vkVoidFunction)Properties;
  }
  if (strcmp(name, "vkGetPhysicalDeviceProperties2") == 0 ||
      strcmp(name, "vkGetPhysicalDeviceProperties2KHR") == 0) {
    nextProperties2 = (PFN_vkGetPhysicalDeviceProperties2)next;
    return (PFN_vkVoidFunction)Properties2;
  }
  if (strcmp(name, "vkGetPhysicalDeviceFeatures") == 0) {
    nextFeatures = (PFN_vkGetPhysicalDeviceFeatures)next;
    return (PFN_vkVoidFunction)Features;
  }
  if (strcmp(name, "vkGetPhysicalDeviceFeatures2") == 0 ||
      strcmp(name, "vkGetPhysicalDeviceFeatures2KHR") == 0) {
    nextFeatures2 = (PFN_vkGetPhysicalDeviceFeatures2)next;
    return (PFN_vkVoidFunction)Features2;
  }
  return next;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t* version) {
  if (!Load() || !nextNegotiate) return VK_ERROR_INCOMPATIBLE_DRIVER;
  return nextNegotiate(version);
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetInstanceProcAddr(VkInstance instance,
                                                                          const char* name) {
  if (!Load()) return NULL;
  return Replaced(instance, name, nextGetInstanceProcAddr(instance, name));
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetPhysicalDeviceProcAddr(VkInstance instance,
                                                                                const char* name) {
  if (!Load() || !nextGetPhysicalDeviceProcAddr) return NULL;
  return Replaced(instance, name, nextGetPhysicalDeviceProcAddr(instance, name));
}
