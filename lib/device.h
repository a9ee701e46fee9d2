// The Vulkan side of a Device: handles, the function table, buffers and one-shot submits.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <volk.h>

#include "vkdml/vkdml.h"

namespace vkdml::detail {

class DeviceImpl;

class BufferImpl final : public Buffer {
 public:
  BufferImpl(DeviceImpl* device, VkBufferUsageFlags usage) : device_(device), usage_(usage) {}
  ~BufferImpl() override;
  // gpuReads: host-visible memory the host writes and the GPU reads, placed in device memory
  // where the host can map it.
  Result Allocate(UINT64 size, Memory memory, bool gpuReads = false);

  VkBuffer Handle() const override { return buffer_; }
  UINT64 Size() const override { return size_; }
  Result Write(UINT64 offset, const void* data, UINT64 size) override;
  Result Read(UINT64 offset, void* data, UINT64 size) override;
  void* Mapped() const { return mapped_; }

 private:
  Result CheckRange(const char* what, UINT64 offset, UINT64 size, const void* data) const;

  DeviceImpl* device_;
  VkBufferUsageFlags usage_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  UINT64 size_ = 0;
  void* mapped_ = nullptr;
};

class DeviceImpl final : public Device {
 public:
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

  // For the other parts of the library.
  const VolkDeviceTable& Vk() const { return vk_; }
  const VkPhysicalDeviceLimits& Limits() const { return limits_; }
  int FindMemoryType(uint32_t typeBits, VkMemoryPropertyFlags want) const;
  VkDescriptorSetLayout SetLayout() const { return setLayout_; }
  VkPipelineLayout PipelineLayout() const { return pipelineLayout_; }
  // The compute pipeline for an embedded SPIR-V module and its specialization constants
  // (glsl/indexed.comp: checked, rank, tuple size, index flags, unroll, mask skip; then
  // glsl/scatter_lines.comp's line length and workgroup size), created once per key.
  using Specialization = std::array<uint32_t, 8>;
  Result Pipeline(const std::string& module, const Specialization& spec, VkPipeline* out);
  Result CreateInternalBuffer(UINT64 size, VkBufferUsageFlags usage, Buffer::Memory memory,
                              std::unique_ptr<BufferImpl>* out, bool gpuReads = false);
  // Submits a recorded command buffer and waits for it (Submit and Run).
  Result SubmitRecorded(VkCommandBuffer cmd);
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
  Result SubmitLocked(VkCommandBuffer cmd);  // submitMutex_ held

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
  std::function<void(const char*)> onValidationMessage_;

  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout_ = VK_NULL_HANDLE;
  std::mutex pipelineMutex_;
  std::map<std::pair<std::string, Specialization>, VkPipeline> pipelines_;

  std::mutex buffersMutex_;
  std::map<VkBuffer, UINT64> buffers_;

  std::mutex runMutex_;  // Run's arenas (staging: host visible, and device local), its commands
  std::unique_ptr<BufferImpl> runStaging_, runDevice_;
  std::unique_ptr<BufferImpl> runInputs_;  // small work's inputs: host written, GPU read
  UINT64 runArenaGeneration_ = 1;          // bumped whenever an arena is replaced
  VkCommandPool runPool_ = VK_NULL_HANDLE;
  VkCommandBuffer runCommands_ = VK_NULL_HANDLE;  // replayed while runRecorded_ still holds
  struct RunKey {
    UINT64 serial = 0, arena = 0;
    bool direct = false;
    bool operator==(const RunKey& o) const {
      return serial == o.serial && arena == o.arena && direct == o.direct;
    }
  } runRecorded_;
  std::atomic<UINT64> serial_{0};

  std::mutex submitMutex_;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkCommandBuffer commandBuffer_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;         // without timelineSemaphore
  VkSemaphore timeline_ = VK_NULL_HANDLE;  // with it: signalled to ++timelineValue_ per submit
  uint64_t timelineValue_ = 0;
  PFN_vkGetSemaphoreCounterValueKHR getCounter_ = nullptr;
  PFN_vkWaitSemaphoresKHR waitSemaphores_ = nullptr;

  friend VkBool32 VKAPI_PTR DebugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT*, void*);
};

const char* VkResultName(VkResult r);

#define VKDML_VK(call)                                                               \
  do {                                                                               \
    VkResult vr_ = (call);                                                           \
    if (vr_ != VK_SUCCESS)                                                           \
      return ::vkdml::detail::Fail(                                                  \
          vr_ == VK_ERROR_OUT_OF_DEVICE_MEMORY || vr_ == VK_ERROR_OUT_OF_HOST_MEMORY \
              ? ::vkdml::Status::OutOfMemory                                         \
              : ::vkdml::Status::DeviceError,                                        \
          #call " failed: ", ::vkdml::detail::VkResultName(vr_));                    \
  } while (0)

}  // namespace vkdml::detail
