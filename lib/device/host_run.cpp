#include "device/host_run.h"

#include <algorithm>
#include <cstring>

#include "device/binding_table.h"
#include "device/compiled.h"
#include "device/device.h"
#include "operators/error.h"

namespace vkdml::detail {

namespace {

// Run binds host memory directly up to this many bytes of tensors: for small work a copy to
// device memory costs more than the kernel's reads over the bus.
constexpr UINT64 kDirectRunBytes = 256 << 10;
constexpr UINT64 kArenaAlignment = 256;
// Run's host-visible staging memory at most (README: Device::Run); larger work streams through
// it.
constexpr UINT64 kStagingBytes = 64 << 20;

Result CheckArguments(const Operator& op, const std::vector<const void*>& inputs,
                      const std::vector<void*>& outputs) {
  if (inputs.size() != op.InputCount() || outputs.size() != op.OutputCount())
    return Fail(Status::InvalidArgument, "Run: ", inputs.size(), " inputs and ", outputs.size(),
                " outputs, expected ", op.InputCount(), " and ", op.OutputCount());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) return Fail(Status::InvalidArgument, "Run: inputs[", i, "] is null");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i]) return Fail(Status::InvalidArgument, "Run: outputs[", i, "] is null");
  return {};
}

bool SameBinding(const DML_BUFFER_BINDING& a, const DML_BUFFER_BINDING& b) {
  return a.Buffer == b.Buffer && a.Offset == b.Offset && a.SizeInBytes == b.SizeInBytes;
}

}  // namespace

// Where each tensor goes in the arenas: inputs, then outputs.
struct HostRunner::Layout {
  UINT inputs = 0, count = 0;
  std::vector<UINT64> offset, size;
  // Whether the host's bytes go in: every input, and the outputs with bytes the operator does
  // not write (gaps between strided elements, rounding; a paged gather's rows outside every
  // sequence), which keep the caller's values.
  std::vector<bool> upload;
  UINT64 total = 0;
  bool direct = false;    // small work: bind the host-visible arenas, no copies
  bool streamed = false;  // large work: streamed through kStagingBytes
  std::vector<DML_BUFFER_BINDING> bindings;

  explicit Layout(const OperatorImpl& op) {
    inputs = op.InputCount();
    count = inputs + op.OutputCount();
    for (UINT i = 0; i < count; ++i) {
      const bool input = i < inputs;
      offset.push_back(total);
      size.push_back(input ? op.InputSize(i) : op.OutputSize(i - inputs));
      upload.push_back(input || !FillsAllBytes(op.outputs[i - inputs]) ||
                       (op.paged && !op.IsScatter()));
      total += (size[i] + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    }
    direct = total <= kDirectRunBytes;
    streamed = total > kStagingBytes;
  }
};

HostRunner::~HostRunner() {
  device_->DrainIfLost();
  if (pool_) device_->Vk().vkDestroyCommandPool(device_->Handle(), pool_, nullptr);
}

Result HostRunner::Init() {
  return device_->CreateCommandBuffer(&pool_, &commands_);
}

Result HostRunner::Run(const CompiledOperator& compiled, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  VKDML_TRY(CheckArguments(compiled.Op(), inputs, outputs));
  auto& c = static_cast<const CompiledOperatorImpl&>(compiled);
  Layout layout(c.state->op);
  std::lock_guard<std::mutex> lock(mutex_);
  if (layout.streamed) return RunStreamed(compiled, layout, inputs, outputs);
  VKDML_TRY(EnsureArenas(layout));

  auto* staging = static_cast<char*>(staging_->Mapped());
  for (UINT i = 0; i < layout.count; ++i) {
    const bool input = i < layout.inputs;
    const BufferImpl& arena = !layout.direct ? *deviceArena_ : input ? *inputArena_ : *staging_;
    char* to = layout.direct && input ? static_cast<char*>(inputArena_->Mapped()) : staging;
    if (layout.upload[i])
      std::memcpy(to + layout.offset[i], input ? inputs[i] : outputs[i - layout.inputs],
                  layout.size[i]);
    layout.bindings.push_back({arena.Handle(), layout.offset[i], layout.size[i]});
  }

  std::lock_guard<std::mutex> tableLock(c.run.mutex);
  BindingTable* table = nullptr;
  VKDML_TRY(Bind(compiled, layout, &table));
  const Key key{c.state->serial, generation_, layout.direct};
  if (!(recorded_ == key)) {
    recorded_ = {};
    VKDML_TRY(Record(layout, *table));
    recorded_ = key;
  }
  VKDML_TRY(device_->SubmitRecorded(commands_));
  for (UINT i = layout.inputs; i < layout.count; ++i)
    std::memcpy(outputs[i - layout.inputs], staging + layout.offset[i], layout.size[i]);
  return table->IndexStatus();
}

// Large work: each tensor in a device buffer of its own (kept for the next call while large
// enough), its host bytes streamed in and out through kStagingBytes of staging, and the
// operator dispatched in a submit of its own.
Result HostRunner::RunStreamed(const CompiledOperator& compiled, Layout& layout,
                               const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs) {
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (!staging_ || staging_->Size() < kStagingBytes) {
    ++generation_;
    staging_.reset();
    VKDML_TRY(
        BufferImpl::Create(device_, kStagingBytes, usage, Buffer::Memory::HostVisible, &staging_));
  }
  streamed_.resize(std::max<size_t>(streamed_.size(), layout.count));
  for (UINT i = 0; i < layout.count; ++i) {
    std::unique_ptr<BufferImpl>& tensor = streamed_[i];
    if (!tensor || tensor->Size() < layout.size[i]) {
      ++generation_;  // binding tables that name the old buffer must bind again
      tensor.reset();
      VKDML_TRY(
          BufferImpl::Create(device_, layout.size[i], usage, Buffer::Memory::DeviceLocal, &tensor));
    }
    layout.bindings.push_back({tensor->Handle(), 0, layout.size[i]});
  }
  const auto& c = static_cast<const CompiledOperatorImpl&>(compiled);
  std::lock_guard<std::mutex> tableLock(c.run.mutex);
  BindingTable* table = nullptr;
  VKDML_TRY(Bind(compiled, layout, &table));
  for (UINT i = 0; i < layout.count; ++i)
    if (layout.upload[i])
      VKDML_TRY(Stream(*streamed_[i], layout.size[i],
                       i < layout.inputs ? inputs[i] : outputs[i - layout.inputs], nullptr));
  const auto& vk = device_->Vk();
  auto barrier = [&vk](VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
                       VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, srcAccess, dstAccess};
    vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  Result recorded;
  VKDML_TRY(device_->Submit([&](VkCommandBuffer cmd) {
    barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    recorded = static_cast<BindingTableImpl*>(table)->Record(cmd);
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  }));
  VKDML_TRY(recorded);
  for (UINT i = layout.inputs; i < layout.count; ++i)
    VKDML_TRY(Stream(*streamed_[i], layout.size[i], nullptr, outputs[i - layout.inputs]));
  return table->IndexStatus();
}

// Copies `size` bytes from host memory into a device buffer (from) or back (to), a staging
// area's worth per submit.
Result HostRunner::Stream(BufferImpl& tensor, UINT64 size, const void* from, void* to) {
  const auto& vk = device_->Vk();
  auto* staging = static_cast<char*>(staging_->Mapped());
  for (UINT64 at = 0; at < size; at += kStagingBytes) {
    const UINT64 n = std::min(kStagingBytes, size - at);
    if (from) std::memcpy(staging, static_cast<const char*>(from) + at, n);
    VKDML_TRY(device_->Submit([&](VkCommandBuffer cmd) {
      const VkBufferCopy copy{from ? 0 : at, from ? at : 0, n};
      vk.vkCmdCopyBuffer(cmd, from ? staging_->Handle() : tensor.Handle(),
                         from ? tensor.Handle() : staging_->Handle(), 1, &copy);
      VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                        VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
      vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                              VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              0, 1, &b, 0, nullptr, 0, nullptr);
    }));
    if (to) std::memcpy(static_cast<char*>(to) + at, staging, n);
  }
  return {};
}

// The arenas the layout needs, each replaced by a larger one when too small.
Result HostRunner::EnsureArenas(const Layout& layout) {
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  auto ensure = [&](std::unique_ptr<BufferImpl>* arena, Buffer::Memory memory, bool gpuReads) {
    if (*arena && (*arena)->Size() >= layout.total) return Result{};
    ++generation_;  // binding tables that name the old arena must bind again
    arena->reset();
    return BufferImpl::Create(device_, layout.total, usage, memory, arena, gpuReads);
  };
  VKDML_TRY(ensure(&staging_, Buffer::Memory::HostVisible, false));
  if (layout.direct) return ensure(&inputArena_, Buffer::Memory::HostVisible, /*gpuReads=*/true);
  return ensure(&deviceArena_, Buffer::Memory::DeviceLocal, false);
}

// The operator's Run binding table, bound to the layout's bindings.
Result HostRunner::Bind(const CompiledOperator& compiled, const Layout& layout,
                        BindingTable** table) {
  RunBinding& run = static_cast<const CompiledOperatorImpl&>(compiled).run;
  if (!run.table) VKDML_TRY(CreateBindingTable(*device_, compiled, &run.table));
  *table = run.table.get();
  const auto& b = layout.bindings;
  if (run.arena == generation_ && run.bindings.size() == b.size() &&
      std::equal(b.begin(), b.end(), run.bindings.begin(), SameBinding))
    return {};
  run.arena = 0;
  recorded_ = {};  // updating the descriptor set invalidates the recorded commands
  VKDML_TRY(run.table->BindInputs(layout.inputs, b.data()));
  VKDML_TRY(run.table->BindOutputs(layout.count - layout.inputs, b.data() + layout.inputs));
  run.bindings = b;
  run.arena = generation_;
  return {};
}

// The commands depend only on the operator and the arenas: recorded once, then replayed.
Result HostRunner::Record(const Layout& layout, BindingTable& table) {
  const auto& vk = device_->Vk();
  VkCommandBuffer cmd = commands_;
  VKDML_VK(vk.vkResetCommandBuffer(cmd, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  VKDML_VK(vk.vkBeginCommandBuffer(cmd, &begin));
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                     VkAccessFlags dstAccess) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, srcAccess, dstAccess};
    vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  if (layout.direct) {  // host writes before the submit are visible to it
    VKDML_TRY(static_cast<BindingTableImpl&>(table).Record(cmd));
  } else {
    std::vector<VkBufferCopy> in;
    for (UINT i = 0; i < layout.count; ++i)
      if (layout.upload[i]) in.push_back({layout.offset[i], layout.offset[i], layout.size[i]});
    vk.vkCmdCopyBuffer(cmd, staging_->Handle(), deviceArena_->Handle(), uint32_t(in.size()),
                       in.data());
    barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    VKDML_TRY(static_cast<BindingTableImpl&>(table).Record(cmd));
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    for (UINT i = layout.inputs; i < layout.count; ++i) {
      VkBufferCopy back{layout.offset[i], layout.offset[i], layout.size[i]};
      vk.vkCmdCopyBuffer(cmd, deviceArena_->Handle(), staging_->Handle(), 1, &back);
    }
  }
  // Host reads after the wait see the results (the dispatch's or the copies' writes).
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  VKDML_VK(vk.vkEndCommandBuffer(cmd));
  return {};
}

}  // namespace vkdml::detail
