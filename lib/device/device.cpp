// Creating or adopting a Device (the physical device's plan: device_plan.h), its teardown, and
// the buffers it tracks. Its entry points are in api.cpp.
#include "device/device.h"

#include <vector>

#include "device/device_plan.h"
#include "device/instance.h"
#include "device/physical_device.h"
#include "interface.h"
#include "operators/error.h"

namespace vkdml::detail {

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
  std::vector<std::string> names;
  for (const VkExtensionProperties& e : extensions) names.push_back(e.extensionName);
  DevicePlan plan;
  VKDML_TRY(PlanDevice(d, names, &plan));
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = queueFamily_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  FeatureChain chain;
  ChainPlan(plan, &chain);
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &chain.features};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &queue;
  ci.enabledExtensionCount = uint32_t(plan.extensions.size());
  ci.ppEnabledExtensionNames = plan.extensions.data();
  VKDML_VK(vkCreateDevice(physical_, &ci, nullptr, &device_));
  info_.enabled = plan.enable;
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
  VKDML_TRY(CheckLimits(info_, limits_));
  if (desc.device) VKDML_TRY(CheckClaimedFeatures(info_, info_.enabled));
  // The extension's entry points, or Vulkan 1.2's where the caller's device has those instead.
  getCounter_ = vk_.vkGetSemaphoreCounterValueKHR;
  waitSemaphores_ = vk_.vkWaitSemaphoresKHR;
  if (!getCounter_ || !waitSemaphores_) {
    getCounter_ = vk_.vkGetSemaphoreCounterValue;
    waitSemaphores_ = vk_.vkWaitSemaphores;
    getCounterName_ = "vkGetSemaphoreCounterValue";
    waitSemaphoresName_ = "vkWaitSemaphores";
  }
  if (!getCounter_ || !waitSemaphores_) info_.enabled.timelineSemaphore = false;
  caps_ = Capabilities::Of(info_.type, info_.driverID, limits_, info_.enabled, switches_);
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
  // SwiftShader builds a queue's renderer on its first submission, on its own thread, and
  // crashes there if that allocation fails: submit once now, while the memory is there, so
  // memory that runs out later fails a vkAllocateMemory, which vkdml reports. Only on a queue
  // of vkdml's own (an adopted one is submitted to only where DeviceDesc says), and before
  // waitTimeoutNs applies (it bounds the caller's work).
  if (owned_) VKDML_TRY(Submit([](VkCommandBuffer) {}));
  waitTimeoutNs_ = desc.waitTimeoutNs;
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

// Buffers: those vkdml made, tracked so bindings into them can be range-checked.

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

}  // namespace vkdml::detail
