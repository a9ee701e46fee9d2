// The Vulkan side of a Device: instance and device, the function table, capabilities, pipelines,
// the buffers vkdml made, and submits. Defined in device.cpp (creating or adopting it),
// instance.cpp, physical_device.cpp, pipelines.cpp and submit.cpp; its entry points, which hand
// the work to the floors above (operators, compiling, binding tables, Run), in api.cpp.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <volk.h>

#include "kernels/capabilities.h"
#include "kernels/kernels.h"
#include "vkdml/vkdml.h"

namespace vkdml::detail {

class DeviceImpl final : public Device {
 public:
  // Device::Run's work, which the Device owns but which is done floors above it (host_run.h:
  // HostRunner, over compiled operators and binding tables): the Device holds it through this
  // interface of its own, so this floor names nothing of those above.
  class Runner {
   public:
    virtual ~Runner() = default;
    virtual Result Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) = 0;
  };

  ~DeviceImpl() override;
  Result Init(const DeviceDesc& desc);

  const DeviceInfo& Info() const override { return info_; }
  VkDevice Handle() const override { return device_; }
  VkPhysicalDevice PhysicalDevice() const override { return physical_; }
  VkInstance Instance() const override { return instance_; }
  VkQueue Queue() const override { return queue_; }
  uint32_t QueueFamilyIndex() const override { return queueFamily_; }
  PFN_vkGetDeviceProcAddr GetDeviceProcAddr() const override { return getDeviceProcAddr_; }

  Result CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) override;
  Result CompileOperator(const Operator& op, UINT flags,
                         std::unique_ptr<CompiledOperator>* out) override;
  Result CreateBindingTable(const CompiledOperator& op,
                            std::unique_ptr<BindingTable>* out) override;
  Result RecordDispatch(VkCommandBuffer cmd, BindingTable& table) override;
  Result Submit(const std::function<void(VkCommandBuffer)>& record) override;
  Result CreateBuffer(UINT64 size, Buffer::Memory memory, std::unique_ptr<Buffer>* out) override;
  Result Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs) override;
  Result GetPipelineCacheData(std::vector<uint8_t>* out) override;
  Result CheckFeatureSupport(DML_FEATURE feature, UINT querySize, const void* query,
                             UINT supportSize, void* support) const override;

  // For the other parts of the library.
  const VolkDeviceTable& Vk() const { return vk_; }
  const VkPhysicalDeviceLimits& Limits() const { return limits_; }
  int FindMemoryType(uint32_t typeBits, VkMemoryPropertyFlags want) const;
  // The size of the heap a memory type (FindMemoryType's) allocates from.
  UINT64 HeapSize(int type) const {
    return memoryProps_.memoryHeaps[memoryProps_.memoryTypes[type].heapIndex].size;
  }
  VkDescriptorSetLayout SetLayout() const { return setLayout_; }
  VkPipelineLayout PipelineLayout() const { return pipelineLayout_; }
  // What kernel choice knows of this device (capabilities.h), captured when it was created, the
  // environment's switches included.
  Capabilities Caps() const {
    std::lock_guard<std::mutex> lock(capsMutex_);
    return caps_;
  }
  // For the tests: the switches as if the environment had held them when the device was created;
  // they apply to the operators compiled after.
  Switches GetSwitches() const {
    std::lock_guard<std::mutex> lock(capsMutex_);
    return switches_;
  }
  void SetSwitches(const Switches& switches) {
    std::lock_guard<std::mutex> lock(capsMutex_);
    switches_ = switches;
    caps_ = Capabilities::Of(info_.type, info_.driverID, limits_, info_.enabled, switches);
  }
  // The compute pipeline for an embedded SPIR-V module and its specialization constants
  // (glsl/interface.h), created once per key.
  Result Pipeline(const std::string& module, const Specialization& spec, VkPipeline* out);
  // Device::Run's runner (host_run.h), which CreateDevice makes after Init.
  void SetRunner(std::unique_ptr<Runner> runner) { runner_ = std::move(runner); }
  // Submits a recorded command buffer and waits for it (Submit and Run).
  Result SubmitRecorded(VkCommandBuffer cmd);
  // After a lost device (a submit or wait that failed, or a wait past DeviceDesc.waitTimeoutNs)
  // every call fails at once: Ok until then, afterwards DeviceError saying what was lost.
  Result CheckNotLost() const;
  // Called by the destructors of what submitted work may use (buffers, binding tables, Run's
  // commands): once the device is lost, its work may still run (a wait that gave up), so the
  // first of them waits for the device to be idle, which a device really lost is at once.
  void DrainIfLost();
  // A resettable primary command buffer in a pool of its own (one per thread that records).
  Result CreateCommandBuffer(VkCommandPool* pool, VkCommandBuffer* cmd);
  // A fresh serial number per compiled operator (Run's recorded command buffer names one).
  UINT64 NextSerial() { return ++serial_; }
  // Sizes of the live buffers vkdml made, so bindings into them can be range-checked.
  void TrackBuffer(VkBuffer buffer, UINT64 size);
  void UntrackBuffer(VkBuffer buffer);
  bool KnownBufferSize(VkBuffer buffer, UINT64* size);

 private:
  Result CreateInstance(const DeviceDesc& desc);
  Result PickPhysicalDevice(int index);
  Result CheckAdopted();
  Result CreateLogicalDevice();
  Result ReadInfo();
  Result CreateLayouts();
  Result CreatePipelineCache(const DeviceDesc& desc);
  Result SubmitLocked(VkCommandBuffer cmd);  // submitMutex_ held
  // A wait (or poll) after a successful submit failed: whether the work ran is unknown, so the
  // device counts as lost from now on.
  Result WaitFailed(VkResult r, const char* call);
  void MarkLost(const std::string& reason);

  bool owned_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  // Instance-level entry points this Device needs later, kept here: volk's globals follow
  // whichever instance was loaded last (EnumerateDevices loads its own).
  PFN_vkGetDeviceProcAddr getDeviceProcAddr_ = nullptr;
  PFN_vkDestroyInstance destroyInstance_ = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT destroyMessenger_ = nullptr;
  VolkDeviceTable vk_{};
  VkPhysicalDeviceLimits limits_{};
  VkPhysicalDeviceMemoryProperties memoryProps_{};
  DeviceInfo info_;
  mutable std::mutex capsMutex_;
  Switches switches_;
  Capabilities caps_;
  std::function<void(const char*)> onValidationMessage_;

  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout_ = VK_NULL_HANDLE;
  std::mutex pipelineMutex_;
  std::map<std::pair<std::string, Specialization>, VkPipeline> pipelines_;
  VkPipelineCache pipelineCache_ = VK_NULL_HANDLE;  // every pipeline goes through it
  bool ownCache_ = false;                           // else the caller's (DeviceDesc)

  std::mutex buffersMutex_;
  std::map<VkBuffer, UINT64> buffers_;

  std::unique_ptr<Runner> runner_;  // Device::Run
  std::atomic<UINT64> serial_{0};

  std::mutex submitMutex_;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkCommandBuffer commandBuffer_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;         // without timelineSemaphore
  VkSemaphore timeline_ = VK_NULL_HANDLE;  // with it: signalled to ++timelineValue_ per submit
  uint64_t timelineValue_ = 0;
  PFN_vkGetSemaphoreCounterValueKHR getCounter_ = nullptr;
  PFN_vkWaitSemaphoresKHR waitSemaphores_ = nullptr;
  const char* getCounterName_ = "vkGetSemaphoreCounterValueKHR";
  const char* waitSemaphoresName_ = "vkWaitSemaphoresKHR";
  uint64_t waitTimeoutNs_ = UINT64_MAX;  // DeviceDesc.waitTimeoutNs

  mutable std::mutex lostMutex_;
  std::atomic<bool> lost_{false};
  std::string lostReason_;  // what was lost, set once with lost_
  bool drained_ = false;    // DrainIfLost has waited

  friend VkBool32 VKAPI_PTR DebugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT*, void*);
};

const char* VkResultName(VkResult r);

// The Result of a failed Vulkan call, e.g. "vkAllocateMemory failed:
// VK_ERROR_OUT_OF_DEVICE_MEMORY": OutOfMemory for the two out-of-memory codes, else DeviceError.
// `call` is the call's source text (or the function's name); the message names the vk* function
// in it.
Result VkFailure(VkResult r, const char* call);

#define VKDML_VK(call)                                                    \
  do {                                                                    \
    VkResult vr_ = (call);                                                \
    if (vr_ != VK_SUCCESS) return ::vkdml::detail::VkFailure(vr_, #call); \
  } while (0)

}  // namespace vkdml::detail
