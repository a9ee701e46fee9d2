// Submission and waits: the Device's command buffer, timeline semaphore or fence, the wait's
// timeout (DeviceDesc.waitTimeoutNs) and a lost device.
#include <algorithm>
#include <chrono>

#include "device/device.h"

namespace vkdml::detail {

Result DeviceImpl::CreateCommandBuffer(VkCommandPool* pool, VkCommandBuffer* cmd) {
  VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = queueFamily_;
  VKDML_VK(vk_.vkCreateCommandPool(device_, &ci, nullptr, pool));
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = *pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VKDML_VK(vk_.vkAllocateCommandBuffers(device_, &alloc, cmd));
  return {};
}

Result DeviceImpl::Submit(const std::function<void(VkCommandBuffer)>& record) {
  VKDML_TRY(CheckNotLost());
  std::lock_guard<std::mutex> lock(submitMutex_);
  VKDML_VK(vk_.vkResetCommandBuffer(commandBuffer_, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VKDML_VK(vk_.vkBeginCommandBuffer(commandBuffer_, &begin));
  record(commandBuffer_);
  VKDML_VK(vk_.vkEndCommandBuffer(commandBuffer_));
  return SubmitLocked(commandBuffer_);
}

Result DeviceImpl::SubmitRecorded(VkCommandBuffer cmd) {
  VKDML_TRY(CheckNotLost());
  std::lock_guard<std::mutex> lock(submitMutex_);
  return SubmitLocked(cmd);
}

Result DeviceImpl::CheckNotLost() const {
  if (!lost_) return {};
  std::lock_guard<std::mutex> lock(lostMutex_);
  return Fail(Status::DeviceError, "the Vulkan device is lost (", lostReason_,
              "): destroy this Device and create a new one");
}

void DeviceImpl::DrainIfLost() {
  if (!lost_) return;
  std::lock_guard<std::mutex> lock(lostMutex_);
  if (drained_) return;
  vk_.vkDeviceWaitIdle(device_);
  drained_ = true;
}

void DeviceImpl::MarkLost(const std::string& reason) {
  std::lock_guard<std::mutex> lock(lostMutex_);
  if (lost_) return;
  lostReason_ = reason;
  lost_ = true;
}

Result DeviceImpl::WaitFailed(VkResult r, const char* call) {
  Result failed =
      r == VK_TIMEOUT
          ? Fail(Status::DeviceError, call, " gave up: the work did not complete within ",
                 waitTimeoutNs_, " ns (DeviceDesc.waitTimeoutNs), VK_TIMEOUT")
          : Fail(Status::DeviceError, VkFailure(r, call).message);
  MarkLost(failed.message);
  failed.message += "; the device now counts as lost";
  return failed;
}

Result DeviceImpl::SubmitLocked(VkCommandBuffer cmd) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  // Short work finishes sooner than a blocking wait wakes up: poll for a moment first. The
  // blocking wait then takes what is left of DeviceDesc.waitTimeoutNs.
  const auto start = std::chrono::steady_clock::now();
  auto elapsedNs = [&] {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  };
  const uint64_t pollNs = std::min<uint64_t>(500000, waitTimeoutNs_);
  auto remainingNs = [&] {
    const uint64_t e = elapsedNs();
    return waitTimeoutNs_ == UINT64_MAX ? UINT64_MAX : e >= waitTimeoutNs_ ? 0 : waitTimeoutNs_ - e;
  };
  auto submitted = [&](VkResult r) {  // a failed submit ran nothing; only a lost device stays
    if (r == VK_ERROR_DEVICE_LOST) MarkLost("vkQueueSubmit failed: VK_ERROR_DEVICE_LOST");
    return r == VK_SUCCESS ? Result{} : VkFailure(r, "vkQueueSubmit");
  };
  if (timeline_) {
    const uint64_t value = ++timelineValue_;
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &value;
    submit.pNext = &values;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &timeline_;
    VKDML_TRY(submitted(vk_.vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE)));
    uint64_t reached = 0;
    for (;;) {
      VkResult r = getCounter_(device_, timeline_, &reached);
      if (r != VK_SUCCESS) return WaitFailed(r, getCounterName_);
      if (reached >= value) return {};
      if (elapsedNs() >= pollNs) break;
    }
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline_;
    wait.pValues = &value;
    VkResult r = waitSemaphores_(device_, &wait, remainingNs());
    return r == VK_SUCCESS ? Result{} : WaitFailed(r, waitSemaphoresName_);
  }
  VKDML_VK(vk_.vkResetFences(device_, 1, &fence_));
  VKDML_TRY(submitted(vk_.vkQueueSubmit(queue_, 1, &submit, fence_)));
  VkResult status;
  while ((status = vk_.vkGetFenceStatus(device_, fence_)) == VK_NOT_READY)
    if (elapsedNs() >= pollNs) {
      status = vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, remainingNs());
      return status == VK_SUCCESS ? Result{} : WaitFailed(status, "vkWaitForFences");
    }
  return status == VK_SUCCESS ? Result{} : WaitFailed(status, "vkGetFenceStatus");
}

}  // namespace vkdml::detail
