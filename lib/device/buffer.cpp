#include "device/buffer.h"

#include <algorithm>
#include <cstring>

#include "device/device.h"
#include "operators/error.h"

namespace vkdml::detail {

namespace {
constexpr UINT64 kStagingChunk = 64ull << 20;  // Write and Read stage at most this much at once
constexpr UINT64 kMappedScratch = 64 << 10;    // CreateScratch's largest in a BAR
}  // namespace

Result BufferImpl::Allocate(UINT64 size, Memory memory, bool gpuReads) {
  Result r = Create(size, memory, gpuReads);
  // Which allocation failed: "vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (a buffer
  // of 120000128 bytes)".
  if (!r) r.message += Str(" (a buffer of ", size, " bytes)");
  return r;
}

Result BufferImpl::Create(UINT64 size, Memory memory, bool gpuReads) {
  const auto& vk = device_->Vk();
  VkDevice dev = device_->Handle();
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = size;
  ci.usage = usage_;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VKDML_VK(vk.vkCreateBuffer(dev, &ci, nullptr, &buffer_));
  size_ = size;
  device_->TrackBuffer(buffer_, size);
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(dev, buffer_, &req);
  // Each buffer has a VkDeviceMemory of its own, and says so: a driver may then place it as it
  // would a dedicated allocation (NVIDIA's, in larger pages: fewer TLB misses on multi-GiB
  // tables). Core in Vulkan 1.1.
  VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
  dedicated.buffer = buffer_;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &dedicated;
  ai.allocationSize = req.size;
  if (memory == Memory::HostVisible && gpuReads) {
    // Device memory the host can map (a BAR): the host writes across the bus once and the GPU
    // reads locally. Small heaps may be full: then host memory, as below.
    int type =
        device_->FindMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    ai.memoryTypeIndex = uint32_t(type);
    if (type >= 0 && req.size <= device_->HeapSize(type) &&
        vk.vkAllocateMemory(dev, &ai, nullptr, &memory_) != VK_SUCCESS)
      memory_ = VK_NULL_HANDLE;
  }
  if (!memory_ && mappedOnly_) return {};  // (CreateScratch: none, device-local memory next)
  if (!memory_) {
    int type = -1;
    if (memory == Memory::HostVisible) {
      type = device_->FindMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                             VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
      if (type < 0)
        type =
            device_->FindMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    } else {
      type = device_->FindMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      if (type < 0) type = device_->FindMemoryType(req.memoryTypeBits, 0);
    }
    if (type < 0) return Fail(Status::Unsupported, "no suitable Vulkan memory type for a buffer");
    // Vulkan forbids asking a heap for more than it holds: that is out of memory, said as such.
    if (req.size > device_->HeapSize(type))
      return Fail(Status::OutOfMemory, "vkAllocateMemory not called: ", req.size,
                  " bytes are more than the whole memory heap the buffer needs (",
                  device_->HeapSize(type), " bytes)");
    ai.memoryTypeIndex = uint32_t(type);
    VKDML_VK(vk.vkAllocateMemory(dev, &ai, nullptr, &memory_));
  }
  VKDML_VK(vk.vkBindBufferMemory(dev, buffer_, memory_, 0));
  if (memory == Memory::HostVisible) VKDML_VK(vk.vkMapMemory(dev, memory_, 0, size, 0, &mapped_));
  return {};
}

BufferImpl::~BufferImpl() {
  device_->DrainIfLost();
  const auto& vk = device_->Vk();
  if (buffer_) {
    device_->UntrackBuffer(buffer_);
    vk.vkDestroyBuffer(device_->Handle(), buffer_, nullptr);
  }
  if (memory_) vk.vkFreeMemory(device_->Handle(), memory_, nullptr);
}

Result BufferImpl::CheckRange(const char* what, UINT64 offset, UINT64 size,
                              const void* data) const {
  if (!data && size) return Fail(Status::InvalidArgument, "Buffer::", what, ": data is null");
  if (offset > size_ || size > size_ - offset)
    return Fail(Status::InvalidArgument, "Buffer::", what, ": offset ", offset, " + size ", size,
                " reaches past the buffer's ", size_, " bytes");
  return {};
}

Result BufferImpl::Write(UINT64 offset, const void* data, UINT64 size) {
  VKDML_TRY(device_->CheckNotLost());
  VKDML_TRY(CheckRange("Write", offset, size, data));
  if (!mapped_) return Stage(offset, data, nullptr, size);
  std::memcpy(static_cast<char*>(mapped_) + offset, data, size);
  return {};
}

Result BufferImpl::Read(UINT64 offset, void* data, UINT64 size) {
  VKDML_TRY(device_->CheckNotLost());
  VKDML_TRY(CheckRange("Read", offset, size, data));
  if (!mapped_) return Stage(offset, nullptr, data, size);
  std::memcpy(data, static_cast<const char*>(mapped_) + offset, size);
  return {};
}

Result BufferImpl::Create(DeviceImpl* device, UINT64 size, VkBufferUsageFlags usage, Memory memory,
                          std::unique_ptr<BufferImpl>* out, bool gpuReads) {
  auto b = std::make_unique<BufferImpl>(device, usage);
  VKDML_TRY(b->Allocate(size, memory, gpuReads));
  *out = std::move(b);
  return {};
}

Result BufferImpl::CreateScratch(DeviceImpl* device, UINT64 size, bool checked, bool statusOnly,
                                 std::unique_ptr<BufferImpl>* out, bool* hostStatus) {
  const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  *hostStatus = checked && statusOnly;
  if (checked && !statusOnly && size <= kMappedScratch) {  // a BAR's, or none
    auto b = std::make_unique<BufferImpl>(device, usage);
    b->mappedOnly_ = true;
    VKDML_TRY(b->Allocate(size, Memory::HostVisible, /*gpuReads=*/true));
    *hostStatus = b->memory_ != VK_NULL_HANDLE;
    if (*hostStatus) {
      *out = std::move(b);
      return {};
    }
  }
  return Create(device, size, usage, *hostStatus ? Memory::HostVisible : Memory::DeviceLocal, out,
                *hostStatus);
}

Result BufferImpl::Stage(UINT64 offset, const void* from, void* to, UINT64 size) {
  const bool toBuffer = from != nullptr;
  std::unique_ptr<BufferImpl> staging;
  VKDML_TRY(Create(device_, std::min(size, kStagingChunk) + 1,
                   toBuffer ? VK_BUFFER_USAGE_TRANSFER_SRC_BIT : VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                   Memory::HostVisible, &staging));
  const auto& vk = device_->Vk();
  for (UINT64 done = 0; done < size;) {
    const UINT64 n = std::min(size - done, kStagingChunk);
    if (toBuffer) std::memcpy(staging->Mapped(), static_cast<const char*>(from) + done, n);
    VKDML_TRY(device_->Submit([&](VkCommandBuffer cmd) {
      if (toBuffer) {
        VkBufferCopy region{0, offset + done, n};
        vk.vkCmdCopyBuffer(cmd, staging->Handle(), buffer_, 1, &region);
        return;
      }
      VkBufferCopy region{offset + done, 0, n};
      vk.vkCmdCopyBuffer(cmd, buffer_, staging->Handle(), 1, &region);
      VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                              &barrier, 0, nullptr, 0, nullptr);
    }));
    if (!toBuffer) std::memcpy(static_cast<char*>(to) + done, staging->Mapped(), n);
    done += n;
  }
  return {};
}

}  // namespace vkdml::detail
