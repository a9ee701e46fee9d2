#include "device/binding_table.h"

#include <algorithm>
#include <cstring>

#include "device/device.h"
#include "operators/error.h"

namespace vkdml::detail {

namespace {
constexpr UINT64 kStatusBytes = VKDML_STATUS_WORDS * sizeof(uint32_t);

// The tensor a pass reads at VKDML_BIND_SOURCE.
Role SourceOf(Pass::Kind kind) {
  switch (kind) {
    case Pass::Kind::Gather:
    case Pass::Kind::Dequantize:
    case Pass::Kind::Bag:
    case Pass::Kind::Blocks:
    case Pass::Kind::PagedRows:
    case Pass::Kind::PagedGather:
    case Pass::Kind::Segment:
    case Pass::Kind::SegmentCheck:  // reads IndicesTensor alone
      return Role::Input;
    case Pass::Kind::Bounds:
    case Pass::Kind::PagedStarts:  // SequenceStartsTensor
      return Role::Offsets;
    case Pass::Kind::MoeWeights:  // a MoE unpermute's WeightsTensor (inputs[2], as Updates)
      return Role::Updates;
    case Pass::Kind::MoeKeys:
    case Pass::Kind::MoePermutation:
    case Pass::Kind::MoeInverse:
    case Pass::Kind::MoeOffsets:
    case Pass::Kind::MoeRows:
    case Pass::Kind::MoeUnpermute:
      return Role::Input;
    case Pass::Kind::Weights:
    case Pass::Kind::PagedOffsets:  // TokenOffsetsTensor
    case Pass::Kind::ZeroPoints:  // a block-quantized gather's ZeroPointTensor; Scales: ScaleTensor
      return Role::Weights;
    default:
      return Role::Updates;
  }
}

// The role of inputs[i].
Role InputRole(size_t i) {
  return Role(UINT(Role::Input) + UINT(i));
}

// The role of outputs[o].
Role OutputRole(size_t o) {
  return Role(UINT(Role::Output) + UINT(o));
}
bool IsOutput(Role tensor) {
  return UINT(tensor) >= UINT(Role::Output) && UINT(tensor) < UINT(Role::Count);
}

// The binding a tensor is bound at.
UINT BindingOf(Role tensor) {
  if (tensor == Role::Indices) return VKDML_BIND_INDICES;
  return IsOutput(tensor) ? VKDML_BIND_OUTPUT : VKDML_BIND_SOURCE;
}
}  // namespace

BindingTableImpl::~BindingTableImpl() {
  device_->DrainIfLost();
  if (pool_) device_->Vk().vkDestroyDescriptorPool(device_->Handle(), pool_, nullptr);
}

// The kernels of the large path, each dispatched once per LargeDispatch with its own descriptor
// set: every step's (plain, then wide), then checked mode's report.
std::vector<BindingTableImpl::LargeKernel> BindingTableImpl::LargeKernels() const {
  std::vector<LargeKernel> kernels;
  const KernelSet& k = op_->kernels;
  if (!k.large) return kernels;
  for (const Step& step : k.steps) {
    const Role source = SourceOf(step.kind);
    kernels.push_back({&step.plain, source});
    if (step.hasWide) kernels.push_back({&step.wide, source});
  }
  if (k.checked) kernels.push_back({&k.report, Role::Input});
  return kernels;
}

// A layout of VKDML_BINDING_COUNT bindings, Vulkan's minimum of four storage buffers among
// them, fits every device: the pass's source shares a binding (so a scatter, whose copy reads
// InputTensor and whose scatter reads UpdatesTensor, has a descriptor set for each, bound per
// pass), and vkdml's own words share one buffer at offsets the uniform gives (ScratchLayout).
// Both cost little: a scatter binds a second set once, a kernel adds an offset to its scratch
// accesses; per-kernel layouts would instead bind per pass and need a layout per kernel family.
Result BindingTableImpl::Init() {
  const auto& vk = device_->Vk();
  const KernelSet& k = op_->kernels;
  size_t largeSets = 0;
  for (const LargeKernel& lk : LargeKernels()) largeSets += lk.kernel->large.size();
  const uint32_t sourceSets =  // all inputs but IndicesTensor, with each output
      uint32_t((op_->op.inputs.size() - 1) * op_->op.outputs.size());
  const uint32_t sets = uint32_t(sourceSets + largeSets);
  VkDescriptorPoolSize sizes[] = {
      {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, sets},
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * (VKDML_BINDING_COUNT - 1)}};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = sets;
  pci.poolSizeCount = 2;
  pci.pPoolSizes = sizes;
  VKDML_VK(vk.vkCreateDescriptorPool(device_->Handle(), &pci, nullptr, &pool_));
  std::vector<VkDescriptorSetLayout> layouts(sets, device_->SetLayout());
  std::vector<VkDescriptorSet> all(sets);
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = sets;
  ai.pSetLayouts = layouts.data();
  VKDML_VK(vk.vkAllocateDescriptorSets(device_->Handle(), &ai, all.data()));
  for (size_t i = 0, next = 0; i < op_->op.inputs.size(); ++i)
    for (size_t o = 0; o < op_->op.outputs.size() && InputRole(i) != Role::Indices; ++o)
      sourceSets_[UINT(InputRole(i))][o] = all[next++];
  largeSets_.assign(all.begin() + sourceSets, all.end());

  // The table's own buffers: the scratch (status words first), bound whole in every set, and
  // the host's copy of the status words.
  VKDML_TRY(BufferImpl::CreateScratch(device_, k.scratchWords * 4, k.checked, k.HostStatus(),
                                      &scratch_, &hostStatus_));
  VKDML_TRY(BufferImpl::Create(device_, kStatusBytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               Buffer::Memory::HostVisible, &status_));
  const VkDescriptorBufferInfo infos[] = {{op_->plans->Handle(), 0, op_->plans->Size()},
                                          {scratch_->Handle(), 0, scratch_->Size()}};
  VkWriteDescriptorSet writes[2];
  for (VkDescriptorSet set : all) {  // the same in every set
    for (uint32_t i = 0; i < 2; ++i) {
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i == 0 ? VKDML_BIND_PLANS : VKDML_BIND_SCRATCH;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType =
          i == 0 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vk.vkUpdateDescriptorSets(device_->Handle(), 2, writes, 0, nullptr);
  }
  std::memset((hostStatus_ ? scratch_ : status_)->Mapped(), 0xFF, kStatusBytes);
  return {};
}

// One binding's checks: its buffer, its range within a vkdml::Buffer, its size and its offset's
// alignments (the element's, the tensor's, and 4 bytes for word atomics).
Result BindingTableImpl::CheckBinding(bool outputs, UINT i, const DML_BUFFER_BINDING& b,
                                      const Tensor& t) const {
  const char* what = outputs ? "outputs" : "inputs";
  if (!b.Buffer)
    return Fail(Status::InvalidArgument, what, "[", i, "].Buffer is VK_NULL_HANDLE (", t.field,
                ")");
  if (b.SizeInBytes > UINT64_MAX - b.Offset)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset ", b.Offset, " + SizeInBytes ",
                b.SizeInBytes, " is past 2^64 (", t.field, ")");
  UINT64 bufferSize;
  if (device_->KnownBufferSize(b.Buffer, &bufferSize) &&
      (b.Offset > bufferSize || b.SizeInBytes > bufferSize - b.Offset))
    return Fail(Status::InvalidArgument, what, "[", i, "] covers bytes [", b.Offset, ", ",
                b.Offset + b.SizeInBytes, "), outside the ", bufferSize,
                "-byte vkdml::Buffer it names (", t.field, ")");
  if (b.SizeInBytes < t.totalBytes)
    return Fail(Status::InvalidArgument, what, "[", i, "].SizeInBytes is ", b.SizeInBytes,
                ", expected at least ", t.totalBytes, " (", t.field, ".TotalTensorSizeInBytes)");
  if (b.Offset % t.elemSize)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset is ", b.Offset,
                ", expected a multiple of ", t.elemSize, " (the ", DataTypeName(t.type),
                " element size of ", t.field, ")");
  if (t.alignment && b.Offset % t.alignment)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset is ", b.Offset,
                ", expected a multiple of ", t.alignment, " (", t.field,
                ".GuaranteedBaseOffsetAlignment)");
  if (outputs && op_->kernels.wordAtomics && b.Offset % 4)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset is ", b.Offset,
                ", expected a multiple of 4: ", op_->op.name, " on ", DataTypeName(t.type),
                " elements updates the 4-byte words that hold them (", t.field, ")");
  if (op_->kernels.wordBindings && b.Offset % 4)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset is ", b.Offset,
                ", expected a multiple of 4: ", op_->op.name,
                " reads and writes its tensors in 4-byte words (", t.field, ")");
  if (op_->kernels.packed && t.elemSize < 4 && b.Offset % 4)
    return Fail(Status::InvalidArgument, what, "[", i, "].Offset is ", b.Offset,
                ", expected a multiple of 4: device ", device_->Info().name, " lacks ",
                t.elemSize == 1 ? "storageBuffer8BitAccess" : "storageBuffer16BitAccess",
                ", so its kernels move ", DataTypeName(t.type),
                " elements in the 4-byte words that hold them (", t.field, ")");
  return {};
}

Result BindingTableImpl::Bind(bool outputs, UINT count, const DML_BUFFER_BINDING* bindings) {
  VKDML_TRY(device_->CheckNotLost());
  const auto& tensors = outputs ? op_->op.outputs : op_->op.inputs;
  const char* what = outputs ? "outputs" : "inputs";
  const char* call = outputs ? "BindOutputs" : "BindInputs";
  if (count != tensors.size())
    return Fail(Status::InvalidArgument, call, ": count is ", count, ", expected ", tensors.size(),
                " (", op_->op.name, " has ", tensors.size(), " ", what, ")");
  if (!bindings) return Fail(Status::InvalidArgument, call, ": bindings is null");

  // Descriptor ranges start at multiples of 4 too: kernels may address a binding in 32-bit words.
  const UINT64 align = std::max<UINT64>(device_->Limits().minStorageBufferOffsetAlignment, 4);
  const UINT64 maxRange = device_->Limits().maxStorageBufferRange;
  // Each tensor in the sets that see it: a source (every input but IndicesTensor) in its own
  // sets (one per output), IndicesTensor in all, an output in those of its own.
  VkDescriptorBufferInfo infos[kMaxOutputs > 4 ? kMaxOutputs : 4];
  VkWriteDescriptorSet writes[UINT(Role::Count) * kMaxOutputs];
  UINT n = 0;
  for (UINT i = 0; i < count; ++i) {
    const DML_BUFFER_BINDING& b = bindings[i];
    const Tensor& t = tensors[i];
    VKDML_TRY(CheckBinding(outputs, i, b, t));
    UINT64 base = b.Offset / align * align, delta = b.Offset - base;
    if (delta + t.totalBytes > maxRange && !op_->kernels.large)
      return Fail(Status::Unsupported, what, "[", i, "]: ", t.field, " spans ",
                  delta + t.totalBytes, " bytes from the aligned offset ", base,
                  ", more than this device's maxStorageBufferRange ", maxRange);
    const Role tensor = outputs ? OutputRole(i) : InputRole(i);
    infos[i] = {b.Buffer, base, std::min(delta + t.totalBytes, maxRange)};
    delta_[UINT(tensor)] = delta;
    for (UINT source = 0; source < UINT(Role::Count); ++source)
      for (UINT o = 0; o < kMaxOutputs; ++o) {
        const VkDescriptorSet set = sourceSets_[source][o];
        const bool sees = outputs ? o == i : tensor == Role::Indices || source == UINT(tensor);
        if (!set || !sees) continue;
        writes[n] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[n].dstSet = set;
        writes[n].dstBinding = BindingOf(tensor);
        writes[n].descriptorCount = 1;
        writes[n].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[n].pBufferInfo = &infos[i];
        ++n;
      }
  }
  device_->Vk().vkUpdateDescriptorSets(device_->Handle(), n, writes, 0, nullptr);
  (outputs ? outputs_ : inputs_).assign(bindings, bindings + count);
  (outputs ? outputsBound_ : inputsBound_) = true;
  BindLarge(outputs);
  return {};
}

// ----- The large path -----

const DML_BUFFER_BINDING* BindingTableImpl::Bound(Role tensor) const {
  return IsOutput(tensor) ? &outputs_[UINT(tensor) - UINT(Role::Output)]
                          : &inputs_[UINT(tensor) - UINT(Role::Input)];
}

const Tensor& BindingTableImpl::TensorAt(Role tensor) const {
  const OperatorImpl& op = op_->op;
  return IsOutput(tensor) ? op.outputs[UINT(tensor) - UINT(Role::Output)]
                          : op.inputs[UINT(tensor) - UINT(Role::Input)];
}

// What dispatch d of kernel k touches of a tensor: its direct side's chunk, IndicesTensor's, or
// its indexed side's window with the kernel's reach past it; the start of a tensor the kernel does
// not use (its descriptor must still be valid).
Span BindingTableImpl::SpanAt(const Kernel& k, const LargeDispatch& d, Role tensor) const {
  const UINT64 total = TensorAt(tensor).totalBytes;
  if (tensor == k.indexedTensor)
    return {d.indexed.begin, std::min(total, d.indexed.end + k.indexedReach)};
  if (tensor == k.directTensor) return d.direct;
  if (tensor == Role::Indices) return d.indices;
  return {0, std::min(total, op_->kernels.maxRange - op_->kernels.rangeAlign)};
}

// A descriptor over the bytes `span` of a tensor, its offset aligned down.
VkDescriptorBufferInfo BindingTableImpl::Window(Role tensor, Span span) const {
  const DML_BUFFER_BINDING& b = *Bound(tensor);
  const UINT64 align = op_->kernels.rangeAlign;
  const UINT64 offset = (b.Offset + span.begin) / align * align;
  return {b.Buffer, offset, b.Offset + span.end - offset};
}

// Where that descriptor starts, in `unit`-byte elements from the tensor's element 0 (negative
// when it starts before it).
int64_t BindingTableImpl::WindowStart(Role tensor, Span span, UINT unit) const {
  return (int64_t(Window(tensor, span).offset) - int64_t(Bound(tensor)->Offset)) / unit;
}

void BindingTableImpl::BindLarge(bool outputs) {
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  size_t set = 0;
  for (const LargeKernel& lk : LargeKernels())
    for (const LargeDispatch& d : lk.kernel->large) {
      const std::vector<Role> tensors =
          outputs ? std::vector<Role>{Role::Output} : std::vector<Role>{lk.source, Role::Indices};
      for (Role tensor : tensors) {
        infos.push_back(Window(tensor, SpanAt(*lk.kernel, d, tensor)));
        VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstSet = largeSets_[set];
        w.dstBinding = BindingOf(tensor);
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes.push_back(w);
      }
      ++set;
    }
  for (size_t i = 0; i < writes.size(); ++i) writes[i].pBufferInfo = &infos[i];
  if (!writes.empty())
    device_->Vk().vkUpdateDescriptorSets(device_->Handle(), uint32_t(writes.size()), writes.data(),
                                         0, nullptr);
}

void BindingTableImpl::DispatchLarge(VkCommandBuffer cmd, const Kernel& k, size_t firstSet) const {
  const auto& vk = device_->Vk();
  vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
  const UINT indexUnit = op_->op.Indices().elemSize;
  for (size_t i = 0; i < k.large.size(); ++i) {
    const LargeDispatch& d = k.large[i];
    // The dispatches touch different bytes, but a window's descriptor, its offset aligned down,
    // may also cover bytes that another dispatch writes: order them.
    if (i > 0) {
      const VkAccessFlags readWrite = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      Barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, readWrite,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, readWrite);
    }
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, device_->PipelineLayout(), 0, 1,
                               &largeSets_[firstSet + i], 0, nullptr);
    shader::LargePush push = {};
    for (UINT dim = 0; dim < VKDML_MAX_DIMS; ++dim) VKDML_AT(push.start, dim) = d.start[dim];
    push.base.plan = k.slot;
    push.base.begin = k.begin;  // an ordered fold's sorted positions
    push.base.end = k.end;
    push.base.from = k.from;
    push.base.to = k.to;
    push.count = d.count;
    if (k.directTensor != Role::None)
      push.directStart = UINT(WindowStart(k.directTensor, d.direct, k.DirectUnit()));
    push.indicesStart = UINT(WindowStart(Role::Indices, d.indices, indexUnit));
    // A kernel that reads no indexed side (a sort's keys) only compares offsets with its range.
    const uint64_t perUnit = k.indexedNibbles ? 2 : 1;  // elements a unit of indexedUnit bytes
    const uint64_t own = d.indexed.begin / k.indexedUnit * perUnit;
    const uint64_t start =
        k.indexedTensor == Role::None
            ? own
            : uint64_t(WindowStart(k.indexedTensor, d.indexed, k.indexedUnit)) * perUnit;
    const uint64_t end = (d.indexed.end + k.indexedUnit - 1) / k.indexedUnit * perUnit;
    push.indexedStart[0] = UINT(start);
    push.indexedStart[1] = UINT(start >> 32);
    push.indexedOwn[0] = UINT(own);
    push.indexedOwn[1] = UINT(own >> 32);
    push.indexedEnd[0] = UINT(end);
    push.indexedEnd[1] = UINT(end >> 32);
    vk.vkCmdPushConstants(cmd, device_->PipelineLayout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          sizeof(push), &push);
    vk.vkCmdDispatch(cmd, d.groups, 1, 1);
  }
}

Result BindingTableImpl::BindInputs(UINT count, const DML_BUFFER_BINDING* bindings) {
  return Bind(false, count, bindings);
}

Result BindingTableImpl::BindOutputs(UINT count, const DML_BUFFER_BINDING* bindings) {
  return Bind(true, count, bindings);
}

// An output may share memory with an input only as a scatter's in-place form: OutputTensor bound
// exactly where InputTensor is, with the same strides. Two outputs (a MoE permute's) never do.
Result BindingTableImpl::CheckAliasing(bool* inPlace) const {
  *inPlace = false;
  const auto& in = op_->op.inputs;
  const auto& outs = op_->op.outputs;
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const Tensor& out = outs[j];
    const DML_BUFFER_BINDING& o = outputs_[j];
    for (size_t i = 0; i < outputs_.size() + inputs_.size(); ++i) {
      const bool isOutput = i < outputs_.size();
      if (isOutput && i >= j) continue;  // each pair of outputs once
      const size_t at = isOutput ? i : i - outputs_.size();
      const DML_BUFFER_BINDING& b = isOutput ? outputs_[at] : inputs_[at];
      const Tensor& t = isOutput ? outs[at] : in[at];
      if (b.Buffer != o.Buffer) continue;
      bool disjoint = b.Offset + t.totalBytes <= o.Offset || o.Offset + out.totalBytes <= b.Offset;
      if (disjoint) continue;
      bool same = !isOutput && at == 0 && j == 0 && op_->op.InPlaceAllowed() &&
                  b.Offset == o.Offset &&
                  std::equal(out.strides, out.strides + out.dims, in[0].strides);
      if (same) {
        *inPlace = true;
        continue;
      }
      return Fail(Status::InvalidArgument, "RecordDispatch: outputs[", j, "] (", out.field,
                  ", bytes [", o.Offset, ", ", o.Offset + out.totalBytes, ")) overlaps ",
                  isOutput ? "outputs[" : "inputs[", at, "] (", t.field, ", bytes [", b.Offset,
                  ", ", b.Offset + t.totalBytes, ")) in the same VkBuffer",
                  op_->op.InPlaceAllowed() && !isOutput && at == 0
                      ? Str("; an in-place ", op_->op.name, " needs the same offset and strides")
                      : "");
    }
  }
  return {};
}

void BindingTableImpl::Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src,
                               VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                               VkAccessFlags dstAccess) const {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = srcAccess;
  barrier.dstAccessMask = dstAccess;
  device_->Vk().vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

// vkdml's own scratch (checked mode's status, ScatterND's mask, the tie marks, a mean's tally) may
// still be in use by this table's previous dispatch, recorded earlier into this or another command
// buffer (its kernels, or the copy of the status words); callers order only their own tensors, so
// the fills (or without any, the kernels that write the status words) wait for it here.
void BindingTableImpl::ClearScratch(VkCommandBuffer cmd, bool inPlace) const {
  const auto& vk = device_->Vk();
  const KernelSet& kernels = op_->kernels;
  const bool clearMask = kernels.maskWords && !inPlace;  // in place, nothing reads the mask
  const bool fillStatus = kernels.checked && !kernels.statusInKernel;
  const bool fills = fillStatus || clearMask || kernels.tieMarkWords || kernels.tallyWords ||
                     kernels.dispatchWords || kernels.spanWords;
  if (!fills && !kernels.checked) return;
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags readWrite = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  const VkBuffer scratch = scratch_->Handle();
  Barrier(cmd, compute | VK_PIPELINE_STAGE_TRANSFER_BIT, readWrite | VK_ACCESS_TRANSFER_READ_BIT,
          fills ? VkPipelineStageFlags(VK_PIPELINE_STAGE_TRANSFER_BIT) : compute,
          fills ? VkAccessFlags(VK_ACCESS_TRANSFER_WRITE_BIT) : readWrite);
  if (!fills) return;
  if (fillStatus) vk.vkCmdFillBuffer(cmd, scratch, 0, kStatusBytes, 0xFFFFFFFFu);
  // Zeroes `words` words of the scratch from word `at` on.
  const auto zero = [&](UINT64 at, UINT64 words) {
    if (words) vk.vkCmdFillBuffer(cmd, scratch, at * 4, words * 4, 0);
  };
  if (clearMask) zero(kernels.scratchAt.mask, kernels.maskWords);
  zero(kernels.scratchAt.counts, kernels.tieMarkWords);
  zero(kernels.scratchAt.tally, kernels.tallyWords);
  // an embedding bag's longest bag; a segment reduction's long path's count and commands
  zero(kernels.scratchAt.dispatches, kernels.dispatchWords);
  zero(kernels.scratchAt.spans, kernels.spanWords);  // its bounds' order, on the large path
  Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, compute, readWrite);
}

Result BindingTableImpl::Record(VkCommandBuffer cmd) {
  VKDML_TRY(device_->CheckNotLost());
  if (!inputsBound_ || !outputsBound_)
    return Fail(Status::InvalidArgument, "RecordDispatch: ", !inputsBound_ ? "inputs" : "outputs",
                " are not bound (call BindingTable::", !inputsBound_ ? "BindInputs" : "BindOutputs",
                " first)");
  if (!cmd) return Fail(Status::InvalidArgument, "RecordDispatch: cmd is VK_NULL_HANDLE");
  bool inPlace;
  VKDML_TRY(CheckAliasing(&inPlace));

  const auto& vk = device_->Vk();
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  const VkAccessFlags readWrite = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  const KernelSet& kernels = op_->kernels;
  const VkBuffer scratch = scratch_->Handle();
  ClearScratch(cmd, inPlace);
  bool first = true;
  size_t largeSet = 0;  // the first descriptor set of the next large kernel
  VkDescriptorSet bound = VK_NULL_HANDLE;
  for (const Step& step : kernels.steps) {
    const Role dst = OutputRole(step.output);
    // A step that reads no source of its own (a MoE permute's sort) binds InputTensor's set.
    const Role src = sourceSets_[UINT(SourceOf(step.kind))][step.output] || kernels.large
                         ? SourceOf(step.kind)
                         : Role::Input;
    // Wide kernels where both sides (and for some, IndicesTensor) start on their alignment
    // within their descriptors (on the large path, whose windows start on 16 bytes, within
    // their buffers).
    const UINT align = step.wide.align ? step.wide.align : step.wide.unit;
    const bool wide =
        step.hasWide &&
        (kernels.large ? Bound(src)->Offset % align == 0 && Bound(dst)->Offset % align == 0
                       : delta_[UINT(src)] % align == 0 && delta_[UINT(dst)] % align == 0 &&
                             delta_[UINT(Role::Indices)] % step.wide.indexAlign == 0);
    const size_t setOfChosen = largeSet + (wide ? step.plain.large.size() : 0);
    largeSet += step.plain.large.size() + (step.hasWide ? step.wide.large.size() : 0);
    if (step.skipInPlace && inPlace) continue;
    // An indirect dispatch reads its workgroups from the scratch too.
    const bool indirect = step.plain.indirect != 0;
    if (!first)
      Barrier(cmd, compute, readWrite,
              compute | (indirect ? VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT : 0),
              readWrite | (indirect ? VK_ACCESS_INDIRECT_COMMAND_READ_BIT : 0));
    first = false;
    // A sort's steps touch only the scratch; a whole kernel nothing past a descriptor.
    if (kernels.large && !step.plain.sortStep && !step.plain.whole) {
      DispatchLarge(cmd, wide ? step.wide : step.plain, setOfChosen);
      bound = VK_NULL_HANDLE;  // DispatchLarge bound its own sets
      continue;
    }
    Dispatch(cmd, wide ? step.wide : step.plain, src, dst, &bound);
  }
  if (kernels.checked && !kernels.reportInKernel) {  // (else the kernels wrote it)
    Barrier(cmd, compute, readWrite, compute, readWrite);
    if (kernels.large)
      DispatchLarge(cmd, kernels.report, largeSet);
    else
      Dispatch(cmd, kernels.report, Role::Input, Role::Output, &bound);
  }
  if (!kernels.checked) return {};
  // The status words to the host's copy, which IndexStatus reads (after this table's copy
  // before, if one was recorded earlier); or the scratch's own (BufferImpl::CreateScratch).
  if (!hostStatus_) {
    Barrier(cmd, compute | transfer, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            transfer, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    const VkBufferCopy region{0, 0, kStatusBytes};
    vk.vkCmdCopyBuffer(cmd, scratch, status_->Handle(), 1, &region);
  }
  Barrier(cmd, hostStatus_ ? compute : transfer,
          hostStatus_ ? VK_ACCESS_SHADER_WRITE_BIT : VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  return {};
}

// One dispatch, with the descriptor set whose source it reads (bound unless *bound is it).
void BindingTableImpl::Dispatch(VkCommandBuffer cmd, const Kernel& k, Role source, Role output,
                                VkDescriptorSet* bound) const {
  const auto& vk = device_->Vk();
  const VkDescriptorSet set = sourceSets_[UINT(source)][UINT(output) - UINT(Role::Output)];
  if (set != *bound)
    vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, device_->PipelineLayout(), 0, 1,
                               &set, 0, nullptr);
  *bound = set;
  vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
  if (k.sortStep) {
    vk.vkCmdPushConstants(cmd, device_->PipelineLayout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          sizeof(k.sort), &k.sort);
  } else {
    const shader::Push push{k.slot,
                            UINT(delta_[UINT(source)] / k.unit),
                            UINT(delta_[UINT(Role::Indices)] / op_->op.Indices().elemSize),
                            UINT(delta_[UINT(output)] / k.unit),
                            k.begin,
                            k.end,
                            k.from,
                            k.to};
    vk.vkCmdPushConstants(cmd, device_->PipelineLayout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          sizeof(push), &push);
  }
  if (k.indirect)
    vk.vkCmdDispatchIndirect(
        cmd, scratch_->Handle(),
        (op_->kernels.scratchAt.dispatches + VKDML_BAG_COMMAND(UINT64(k.indirect) - 1)) * 4);
  else
    vk.vkCmdDispatch(cmd, k.groups, 1, 1);
}

Result BindingTableImpl::IndexStatus() {
  VKDML_TRY(device_->CheckNotLost());
  if (!op_->kernels.checked) return {};
  uint32_t s[VKDML_STATUS_WORDS];
  std::memcpy(s, (hostStatus_ ? scratch_ : status_)->Mapped(), sizeof(s));
  const UINT position = s[VKDML_STATUS_POSITION];
  if (position == VKDML_NO_POSITION) return {};
  const OperatorImpl& op = op_->op;
  const Tensor& indices = op.Indices();
  const bool isSigned = IsSignedIndexType(indices.type);
  const bool is64 = indices.elemSize == 8;
  std::string coords;
  UINT rest = position, c[kMaxDims];
  for (UINT d = indices.dims; d-- > 0;) {
    c[d] = rest % indices.sizes[d];
    rest /= indices.sizes[d];
  }
  for (UINT d = 0; d < indices.dims; ++d) coords += Str(d ? "," : "", c[d]);
  const UINT lo = s[VKDML_STATUS_LO], hi = s[VKDML_STATUS_HI];
  const UINT64 raw = is64 ? (UINT64(hi) << 32 | lo) : lo;
  std::string value = isSigned ? Str(is64 ? int64_t(raw) : int64_t(int32_t(lo))) : Str(raw);
  UINT64 n = op.componentSizes[position % op.componentSizes.size()];
  if (op.segment)
    return Fail(Status::IndexOutOfRange, op.name, ": IndicesTensor[", coords, "] is ", value,
                (op.segmentParams[0][2] & VKDML_SEGMENT_COO) != 0
                    ? Str(", expected segment ids in [0, ", n - 1,
                          "], each at least the one before it (SortedIndices)")
                    : Str(", expected offsets in [0, ", n - 1,
                          "] (the rows), each at least the one before it"));
  // A paged cache's indices (slots, blocks) have no negative form.
  std::string range =
      isSigned && !op.paged ? Str("[-", n, ", ", n - 1, "]") : Str("[0, ", n - 1, "]");
  return Fail(Status::IndexOutOfRange, op.name, ": ", indices.field, "[", coords, "] is ", value,
              ", outside the valid range ", range);
}

Result CreateBindingTable(DeviceImpl& device, const CompiledOperator& op,
                          std::unique_ptr<BindingTable>* out) {
  VKDML_TRY(device.CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateBindingTable: out is null");
  auto t = std::make_unique<BindingTableImpl>(&device,
                                              static_cast<const CompiledOperatorImpl&>(op).state);
  VKDML_TRY(t->Init());
  *out = std::move(t);
  return {};
}

}  // namespace vkdml::detail
