/* Checks the minimum-limits driver (min_limits_icd.c) itself: through the loader, with
 * VK_DRIVER_FILES naming it, the one device reports Vulkan 1.1's minimum limits in both
 * property queries, none of the optional features vkdml can use in both feature queries, and,
 * in its integrated build (or with VKDML_MIN_LIMITS_TYPE=integrated), an
 * integrated GPU.
 * Usage: check_min_limits [integrated]. Exit status 0 when every limit is as expected. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <vulkan/vulkan.h>

static int failures;

#define EXPECT(what, actual, expected)                                                   \
  do {                                                                                   \
    if ((unsigned long long)(actual) != (unsigned long long)(expected)) {                \
      fprintf(stderr, "%s is %llu, expected %llu\n", what, (unsigned long long)(actual), \
              (unsigned long long)(expected));                                           \
      ++failures;                                                                        \
    }                                                                                    \
  } while (0)

int main(int argc, char** argv) {
  const int integrated = argc > 1 && strcmp(argv[1], "integrated") == 0;
  void* loader = dlopen("libvulkan.so.1", RTLD_NOW);
  if (!loader) return fprintf(stderr, "no Vulkan loader\n"), 1;
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)dlsym(loader, "vkGetInstanceProcAddr");
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance instance;
  if (create(&ci, NULL, &instance) != VK_SUCCESS) return fprintf(stderr, "no instance\n"), 1;
  PFN_vkEnumeratePhysicalDevices enumerate =
      (PFN_vkEnumeratePhysicalDevices)gipa(instance, "vkEnumeratePhysicalDevices");
  PFN_vkGetPhysicalDeviceProperties props =
      (PFN_vkGetPhysicalDeviceProperties)gipa(instance, "vkGetPhysicalDeviceProperties");
  PFN_vkGetPhysicalDeviceProperties2 props2 =
      (PFN_vkGetPhysicalDeviceProperties2)gipa(instance, "vkGetPhysicalDeviceProperties2");
  uint32_t n = 1;
  VkPhysicalDevice pd;
  VkResult r = enumerate(instance, &n, &pd);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n != 1) return fprintf(stderr, "no device\n"), 1;
  VkPhysicalDeviceProperties p;
  props(pd, &p);
  VkPhysicalDeviceMaintenance3Properties m3 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                    .pNext = &m3};
  props2(pd, &p2);
  for (int q = 0; q < 2; ++q) {
    const VkPhysicalDeviceProperties* x = q ? &p2.properties : &p;
    const VkPhysicalDeviceLimits* l = &x->limits;
    EXPECT("maxPerStageDescriptorStorageBuffers", l->maxPerStageDescriptorStorageBuffers, 4);
    EXPECT("maxComputeWorkGroupInvocations", l->maxComputeWorkGroupInvocations, 128);
    EXPECT("maxComputeWorkGroupSize[0]", l->maxComputeWorkGroupSize[0], 128);
    EXPECT("maxComputeSharedMemorySize", l->maxComputeSharedMemorySize, 16384);
    EXPECT("maxPushConstantsSize", l->maxPushConstantsSize, 128);
    EXPECT("maxStorageBufferRange", l->maxStorageBufferRange, 1u << 27);
    EXPECT("maxUniformBufferRange", l->maxUniformBufferRange, 16384);
    EXPECT("minStorageBufferOffsetAlignment", l->minStorageBufferOffsetAlignment, 256);
    EXPECT("deviceType", x->deviceType,
           integrated ? VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU : VK_PHYSICAL_DEVICE_TYPE_CPU);
  }
  EXPECT("maxMemoryAllocationSize", m3.maxMemoryAllocationSize, 1u << 30);
  VkPhysicalDeviceFeatures f;
  ((PFN_vkGetPhysicalDeviceFeatures)gipa(instance, "vkGetPhysicalDeviceFeatures"))(pd, &f);
  VkPhysicalDevice8BitStorageFeatures s8 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, .pNext = &s8};
  VkPhysicalDeviceShaderAtomicInt64Features a64 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES, .pNext = &s16};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                  .pNext = &a64};
  ((PFN_vkGetPhysicalDeviceFeatures2)gipa(instance, "vkGetPhysicalDeviceFeatures2"))(pd, &f2);
  for (int q = 0; q < 2; ++q) {
    const VkPhysicalDeviceFeatures* x = q ? &f2.features : &f;
    EXPECT("shaderFloat64", x->shaderFloat64, 0);
    EXPECT("shaderInt64", x->shaderInt64, 0);
    EXPECT("shaderInt16", x->shaderInt16, 0);
  }
  EXPECT("storageBuffer8BitAccess", s8.storageBuffer8BitAccess, 0);
  EXPECT("storageBuffer16BitAccess", s16.storageBuffer16BitAccess, 0);
  EXPECT("shaderBufferInt64Atomics", a64.shaderBufferInt64Atomics, 0);
  VkPhysicalDeviceFloatControlsProperties fc = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  p2.pNext = &fc;
  props2(pd, &p2);
  EXPECT("shaderDenormPreserveFloat32", fc.shaderDenormPreserveFloat32, 0);
  EXPECT("shaderDenormPreserveFloat64", fc.shaderDenormPreserveFloat64, 0);
  ((PFN_vkDestroyInstance)gipa(instance, "vkDestroyInstance"))(instance, NULL);
  if (!failures)
    printf(
        "the minimum-limits device reports Vulkan 1.1's minimum limits and no optional feature\n");
  return failures ? 1 : 0;
}
