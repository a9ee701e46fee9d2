// The Vulkan side of `vkdml bench`: vkdml's device, the raw device functions the benchmark
// records itself (timestamps, the copy kernel, the replayed command buffer), and the timing of
// each case against the copy kernel. RunLatency lives in bench_latency.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkdml/vkdml.h"

#include "bench_cases.h"
#include "bench_output.h"
#include "bench_util.h"

namespace bench {

struct Options {
  std::vector<std::string> cases;
  bool small = false;
  int device = -1;
  bool json = false;
  bool progress = true;
  int runs = 30, warmup = 5, latencyCalls = 200;
  int rotate = -1;  // -1 auto, else the number of buffer sets
  uint64_t seed = 1;
  bool compile = false;    // --compile: CompileOperator times instead of the cases
  bool runsGiven = false;  // --runs on the command line (--compile defaults to 5)
};

// clang-format off
#define BENCH_DEVICE_FUNCTIONS(X) \
  X(vkCreateShaderModule) \
  X(vkDestroyShaderModule) \
  X(vkCreateDescriptorSetLayout) \
  X(vkDestroyDescriptorSetLayout) \
  X(vkCreatePipelineLayout) \
  X(vkDestroyPipelineLayout) \
  X(vkCreateComputePipelines) \
  X(vkDestroyPipeline) \
  X(vkCreateDescriptorPool) \
  X(vkDestroyDescriptorPool) \
  X(vkResetDescriptorPool) \
  X(vkAllocateDescriptorSets) \
  X(vkUpdateDescriptorSets) \
  X(vkCreateQueryPool) \
  X(vkDestroyQueryPool) \
  X(vkGetQueryPoolResults) \
  X(vkCmdResetQueryPool) \
  X(vkCmdWriteTimestamp) \
  X(vkCmdBindPipeline) \
  X(vkCmdBindDescriptorSets) \
  X(vkCmdPushConstants) \
  X(vkCmdDispatch) \
  X(vkCmdPipelineBarrier) \
  X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) \
  X(vkAllocateCommandBuffers) \
  X(vkBeginCommandBuffer) \
  X(vkEndCommandBuffer) \
  X(vkQueueSubmit) \
  X(vkCreateFence) \
  X(vkDestroyFence) \
  X(vkGetFenceStatus) \
  X(vkResetFences) \
  X(vkCreateSemaphore) \
  X(vkDestroySemaphore)
// clang-format on

// The device-level functions the benchmark calls itself, from vkdml's
// Device::GetDeviceProcAddr: the tool links no libvulkan.
struct Vk {
  VkDevice device = VK_NULL_HANDLE;
#define BENCH_DECLARE(name) PFN_##name name = nullptr;
  BENCH_DEVICE_FUNCTIONS(BENCH_DECLARE)
#undef BENCH_DECLARE
  // Null unless the device has timeline semaphores enabled.
  PFN_vkGetSemaphoreCounterValue vkGetSemaphoreCounterValue = nullptr;

  void Load(const vkdml::Device& dev);
};

constexpr VkAccessFlags kShaderRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

void Barrier(const Vk& vk, VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess);

// What the cases run on: vkdml's device, the raw functions, the copy kernel, the options.
class Context {
 public:
  Options opt;
  Progress progress;
  size_t caseIndex = 0, caseCount = 0;  // for the progress line

  ~Context();

  // Takes vkdml's device, loads the raw functions and creates the copy kernel. Throws.
  void Open(std::unique_ptr<vkdml::Device> device);

  const vkdml::DeviceInfo& Info() const { return dev_->Info(); }
  bool Timestamps() const { return Info().timestampsSupported && Info().timestampPeriod > 0; }

  // Creates, fills, times (against the copy kernel) and verifies one case.
  CaseResult RunCase(const Spec& s);
  // The latency rows (bench_latency.cpp): Device::Run, an empty Device::Submit and a replayed
  // command buffer.
  std::vector<CaseResult> RunLatency(const Spec& s);

 private:
  using Body = std::function<void(VkCommandBuffer, int)>;
  struct CopyJob;
  struct Slot;
  static constexpr uint32_t kMaxSets = 16;  // buffer sets to rotate through, at most

  void Step(const std::string& name, const std::string& what) {
    progress.Step(caseIndex, caseCount, name, what);
  }
  // Validates and compiles a case's operator (the compiled operator keeps a copy of it).
  std::unique_ptr<vkdml::CompiledOperator> Compile(
      const OpDesc& desc, vkdml::UINT flags = vkdml::DML_EXECUTION_FLAG_NONE);
  // A device-local buffer, uninitialised or holding `size` bytes of data.
  std::unique_ptr<vkdml::Buffer> NewBuffer(vkdml::UINT64 size);
  std::unique_ptr<vkdml::Buffer> NewBuffer(const uint8_t* data, vkdml::UINT64 size);
  std::unique_ptr<vkdml::BindingTable> Bind(
      const vkdml::CompiledOperator& compiled, const std::vector<vkdml::DML_BUFFER_BINDING>& inputs,
      const vkdml::DML_BUFFER_BINDING& output,
      const std::vector<vkdml::DML_BUFFER_BINDING>& more = {});
  Slot MakeSlot(const Spec& s, const HostData& h, const vkdml::CompiledOperator& compiled);
  int Rotation(double workingSetBytes) const;

  void TimeAgainstCopy(const Spec& s, std::vector<Slot>& slots, CaseResult* res);
  std::vector<std::vector<double>> Time(const std::vector<Body>& bodies, int warmup, int runs,
                                        std::string* timing);
  std::vector<std::vector<double>> TimeOnHost(const std::vector<Body>& bodies, int warmup,
                                              int runs);
  void WarmUp(const std::vector<Body>& bodies);
  std::vector<std::vector<double>> Durations(VkQueryPool qp, size_t nb, int runs);

  void CreateCopyKernel();
  std::vector<VkDescriptorSet> AllocateCopySets(uint32_t count);
  void PrepareCopy(const std::string& name, double bytes, int rotation, CopyJob* job);
  void RecordCopy(const CopyJob& job, VkCommandBuffer cmd, int it);
  void CheckCopy(const CopyJob& job);

  std::unique_ptr<vkdml::Device> dev_;
  Vk vk_;
  // The copy kernel.
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
};

}  // namespace bench
