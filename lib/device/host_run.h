// Device::Run, the convenience path: host memory in, host memory out. A HostRunner owns the
// staging memory ("arenas") and one recorded command buffer, which it replays while the operator
// and the arenas stay the same. Work of more than kStagingBytes streams instead: each tensor in
// a device buffer of its own, copied in and out through kStagingBytes of host-visible memory,
// which is all Run ever holds of it (README: Device::Run).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "device/buffer.h"
#include "device/device.h"

namespace vkdml::detail {

// A runner for `device`, which owns it (DeviceImpl::SetRunner) and sees it as a
// DeviceImpl::Runner.
class HostRunner final : public DeviceImpl::Runner {
 public:
  explicit HostRunner(DeviceImpl* device) : device_(device) {}
  ~HostRunner() override;
  Result Init();
  Result Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs) override;

 private:
  struct Layout;
  Result EnsureArenas(const Layout& layout);
  Result Bind(const CompiledOperator& op, const Layout& layout, BindingTable** table);
  Result Record(const Layout& layout, BindingTable& table);
  Result RunStreamed(const CompiledOperator& op, Layout& layout,
                     const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  Result Stream(BufferImpl& tensor, UINT64 size, const void* from, void* to);

  DeviceImpl* device_;
  std::mutex mutex_;  // one Run at a time: the arenas and the command buffer are shared
  // Every tensor at a 256-byte aligned offset of an arena. staging: host visible, outputs (and,
  // for large work, inputs) pass through it; inputs: small work's inputs, host written and GPU
  // read; device: large work's tensors in device memory.
  std::unique_ptr<BufferImpl> staging_, inputArena_, deviceArena_;
  std::vector<std::unique_ptr<BufferImpl>> streamed_;  // streamed work's tensors, one each
  UINT64 generation_ = 1;                              // bumped whenever an arena is replaced
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;  // replayed while `recorded_` still holds
  struct Key {
    UINT64 serial = 0, arena = 0;
    bool direct = false;
    bool operator==(const Key& o) const {
      return serial == o.serial && arena == o.arena && direct == o.direct;
    }
  } recorded_;
};

}  // namespace vkdml::detail
