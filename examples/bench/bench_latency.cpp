// The latency rows of `vkdml bench`: the host time per call of Device::Run, of an empty
// Device::Submit, and of replaying one pre-recorded command buffer on vkdml's queue.
#include <algorithm>
#include <functional>
#include <vector>

#include "bench_context.h"

namespace bench {

namespace {

// Host time (ms) of each of `calls` calls of fn(iteration), after `warm` untimed ones.
std::vector<double> HostTimes(int warm, int calls, const std::function<void(int)>& fn) {
  std::vector<double> ms;
  for (int it = 0; it < warm + calls; ++it) {
    auto t0 = Clock::now();
    fn(it);
    if (it >= warm) ms.push_back(Seconds(t0, Clock::now()) * 1e3);
  }
  return ms;
}

// A latency row of case s, timed on the host.
CaseResult HostRow(const Spec& s, const char* name, const std::vector<double>& ms) {
  CaseResult r;
  r.spec = &s;
  r.caseName = name;
  r.timing = "host";
  Summarise(ms, &r.ms, &r.minMs, &r.maxMs);
  r.runs = static_cast<int>(ms.size());
  return r;
}

// One command buffer, recorded once and submitted to vkdml's queue again and again. Each
// submit waits as CUDA does by default while CPU cores are free (torch.cuda.synchronize):
// spinning, on a timeline semaphore where the device has them (~1 us less than a fence,
// PERF_NOTES v17). A blocking vkWaitForFences adds ~20 us of wake-up on NVIDIA's driver (v10).
class Replay {
 public:
  Replay(const Vk& vk, vkdml::Device& dev) : vk_(vk), queue_(dev.Queue()) {
    VkCommandPoolCreateInfo cpci{};
    cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    cpci.queueFamilyIndex = dev.QueueFamilyIndex();
    VkCheck(vk_.vkCreateCommandPool(vk_.device, &cpci, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cbai{};
    cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cbai.commandPool = pool_;
    cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cbai.commandBufferCount = 1;
    VkCheck(vk_.vkAllocateCommandBuffers(vk_.device, &cbai, &cmd_), "vkAllocateCommandBuffers");
    submit_.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit_.commandBufferCount = 1;
    submit_.pCommandBuffers = &cmd_;
    if (vk_.vkGetSemaphoreCounterValue)
      UseTimeline();
    else
      UseFence();
  }
  ~Replay() {
    if (fence_) vk_.vkDestroyFence(vk_.device, fence_, nullptr);
    if (timeline_) vk_.vkDestroySemaphore(vk_.device, timeline_, nullptr);
    if (pool_) vk_.vkDestroyCommandPool(vk_.device, pool_, nullptr);
  }
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // The synchronisation a replay needs, and no more (each barrier costs ~0.5-1 us a call here,
  // PERF_NOTES v17): one barrier after the dispatch orders its writes before the next replay's
  // reads and writes, the final read-back copy and host reads. The uploads are ordered before
  // every later dispatch once, by the caller (a barrier covers all commands after it in
  // submission order).
  void Record(vkdml::Device& dev, vkdml::BindingTable& table) {
    VkCommandBufferBeginInfo cbbi{};
    cbbi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    VkCheck(vk_.vkBeginCommandBuffer(cmd_, &cbbi), "vkBeginCommandBuffer");
    Check(dev.RecordDispatch(cmd_, table), "RecordDispatch");
    Barrier(vk_, cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                VK_PIPELINE_STAGE_HOST_BIT,
            kShaderRW | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
    VkCheck(vk_.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  }

  void SubmitAndWait() {
    if (timeline_) {
      ++value_;
      VkCheck(vk_.vkQueueSubmit(queue_, 1, &submit_, VK_NULL_HANDLE), "vkQueueSubmit");
      uint64_t reached = 0;
      do VkCheck(vk_.vkGetSemaphoreCounterValue(vk_.device, timeline_, &reached), "counter value");
      while (reached < value_);
      return;
    }
    VkCheck(vk_.vkQueueSubmit(queue_, 1, &submit_, fence_), "vkQueueSubmit");
    VkResult st;
    while ((st = vk_.vkGetFenceStatus(vk_.device, fence_)) == VK_NOT_READY) {
    }
    VkCheck(st, "vkGetFenceStatus");
    VkCheck(vk_.vkResetFences(vk_.device, 1, &fence_), "vkResetFences");
  }

 private:
  // Each submit signals the timeline semaphore's next value (value_, through values_).
  void UseTimeline() {
    VkSemaphoreTypeCreateInfo type{};
    type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo sci{};
    sci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    sci.pNext = &type;
    VkCheck(vk_.vkCreateSemaphore(vk_.device, &sci, nullptr, &timeline_), "vkCreateSemaphore");
    values_.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    values_.signalSemaphoreValueCount = 1;
    values_.pSignalSemaphoreValues = &value_;
    submit_.pNext = &values_;
    submit_.signalSemaphoreCount = 1;
    submit_.pSignalSemaphores = &timeline_;
  }
  void UseFence() {
    VkFenceCreateInfo fci{};
    fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkCheck(vk_.vkCreateFence(vk_.device, &fci, nullptr, &fence_), "vkCreateFence");
  }

  const Vk& vk_;
  VkQueue queue_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
  VkTimelineSemaphoreSubmitInfo values_{};
  VkSubmitInfo submit_{};
};

}  // namespace

// Host time per call for a tiny GatherElements: (a) Device::Run with a compiled operator,
// (b) an empty Device::Submit, the floor under both others, (c) one pre-recorded command
// buffer submitted and waited for each time.
std::vector<CaseResult> Context::RunLatency(const Spec& s) {
  Step(s.name, "creating the operator");
  const OpDesc desc(s);
  std::unique_ptr<vkdml::CompiledOperator> compiled = Compile(desc);
  const vkdml::Operator& op = compiled->Op();
  const vkdml::UINT64 outSize = op.OutputSize(0);
  const int calls = std::max(200, opt.latencyCalls), warm = 20;
  std::vector<CaseResult> results;

  // Host inputs rotate through 8 sets (the working set is tiny).
  const size_t sets = 8;
  std::vector<HostData> hosts(sets);
  for (size_t i = 0; i < sets; ++i) MakeHostData(s, desc, &hosts[i], opt.seed + 1000 + i);
  Bytes out;
  out.Allocate(outSize);

  Step(s.name, Format("Device::Run x %d", calls));
  size_t last = 0;
  auto runOnce = [&](int it) {
    last = static_cast<size_t>(it) % sets;
    const HostData& h = hosts[last];
    Check(dev_->Run(*compiled, {h.input.data(), h.indices.data()}, {out.data()}), "Device::Run");
  };
  CaseResult run = HostRow(s, "latency-run", HostTimes(warm, calls, runOnce));
  run.bytes = MinBytes(s, hosts[last]);
  run.mismatches = Verify(s, hosts[last], out.data(), &run.checked, &run.firstMismatch);
  results.push_back(run);

  Step(s.name, Format("empty Device::Submit x %d", calls));
  auto emptySubmit = [&](int) { Check(dev_->Submit([](VkCommandBuffer) {}), "Device::Submit"); };
  results.push_back(HostRow(s, "latency-empty-submit", HostTimes(warm, calls, emptySubmit)));

  Step(s.name, Format("replaying one command buffer x %d", calls));
  auto input = NewBuffer(hosts[0].input.data(), op.InputSize(0));
  auto indices = NewBuffer(hosts[0].indices.data(), op.InputSize(1));
  auto output = NewBuffer(outSize);
  auto table = Bind(*compiled, {input->Binding(), indices->Binding()}, output->Binding());
  Replay replay(vk_, *dev_);
  // The uploads before every later dispatch, once (see Replay::Record).
  Check(dev_->Submit([&](VkCommandBuffer c) {
    Barrier(vk_, c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
  }),
        "Device::Submit");
  replay.Record(*dev_, *table);
  CaseResult rep =
      HostRow(s, "latency-replay", HostTimes(warm, calls, [&](int) { replay.SubmitAndWait(); }));
  rep.bytes = MinBytes(s, hosts[0]);
  Check(output->Read(0, out.data(), outSize), "Buffer::Read");
  rep.mismatches = Verify(s, hosts[0], out.data(), &rep.checked, &rep.firstMismatch);
  results.push_back(rep);
  return results;
}

}  // namespace bench
