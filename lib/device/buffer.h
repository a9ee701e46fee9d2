// Buffers vkdml allocates: for callers (Device::CreateBuffer) and for itself (plans, staging).
#pragma once

#include <memory>

#include <volk.h>

#include "vkdml/vkdml.h"

namespace vkdml::detail {

class DeviceImpl;

class BufferImpl final : public Buffer {
 public:
  // A buffer of `size` bytes, allocated and tracked by the device (DeviceImpl::TrackBuffer).
  static Result Create(DeviceImpl* device, UINT64 size, VkBufferUsageFlags usage, Memory memory,
                       std::unique_ptr<BufferImpl>* out, bool gpuReads = false);

  // A binding table's scratch (status words first). *hostStatus: checked mode's host reads the
  // status words in place, where the scratch holds them alone (statusOnly: host-visible memory)
  // or is at most 64 KiB and the device has memory the host maps (a BAR) for it; else it is
  // device local and they are copied out after each run (a transfer between the dispatches:
  // 5.7 us of a paged gather's 149 on an H200, examples/bench/PERF_NOTES.md v47).
  static Result CreateScratch(DeviceImpl* device, UINT64 size, bool checked, bool statusOnly,
                              std::unique_ptr<BufferImpl>* out, bool* hostStatus);

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
  Result Create(UINT64 size, Memory memory, bool gpuReads);  // Allocate, without the size named
  Result CheckRange(const char* what, UINT64 offset, UINT64 size, const void* data) const;
  // Write (from host memory `from`) or Read (into `to`) through a staging buffer, in chunks, one
  // submit each.
  Result Stage(UINT64 offset, const void* from, void* to, UINT64 size);

  DeviceImpl* device_;
  VkBufferUsageFlags usage_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  UINT64 size_ = 0;
  void* mapped_ = nullptr;
  bool mappedOnly_ = false;  // CreateScratch's: no host memory in place of the device's
};

}  // namespace vkdml::detail
