/* The validation layer's canary for the CLI tests (test/cli/validation.py --expect-messages):
 * one invalid Vulkan call (vkCreateBuffer of size 0, VUID-VkBufferCreateInfo-size-00912) on the
 * first device, so that a test shows the layer is loaded and its messages are caught. */
#include <dlfcn.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

#define LOAD(name) PFN_##name name = (PFN_##name)gipa(instance, #name)

int main(void) {
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW);
  if (!lib) return 2;
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
  VkInstance instance = VK_NULL_HANDLE;
  LOAD(vkCreateInstance);
  VkApplicationInfo app = {
      VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "canary", 0, NULL, 0, VK_API_VERSION_1_1};
  VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app};
  if (vkCreateInstance(&ici, NULL, &instance) != VK_SUCCESS) return 2;
  LOAD(vkEnumeratePhysicalDevices);
  LOAD(vkCreateDevice);
  LOAD(vkGetDeviceProcAddr);
  LOAD(vkDestroyInstance);
  uint32_t n = 1;
  VkPhysicalDevice pd;
  if (vkEnumeratePhysicalDevices(instance, &n, &pd) < 0 || n == 0) return 2;
  float priority = 1;
  VkDeviceQueueCreateInfo queue = {
      VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &priority};
  VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &queue};
  VkDevice device;
  if (vkCreateDevice(pd, &dci, NULL, &device) != VK_SUCCESS) return 2;
  PFN_vkCreateBuffer createBuffer =
      (PFN_vkCreateBuffer)vkGetDeviceProcAddr(device, "vkCreateBuffer");
  PFN_vkDestroyBuffer destroyBuffer =
      (PFN_vkDestroyBuffer)vkGetDeviceProcAddr(device, "vkDestroyBuffer");
  PFN_vkDestroyDevice destroyDevice =
      (PFN_vkDestroyDevice)vkGetDeviceProcAddr(device, "vkDestroyDevice");
  VkBufferCreateInfo info = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, 0 /* invalid */,
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
  VkBuffer buffer = VK_NULL_HANDLE;
  if (createBuffer(device, &info, NULL, &buffer) == VK_SUCCESS) destroyBuffer(device, buffer, NULL);
  destroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
  puts("canary: made one invalid call");
  return 0;
}
