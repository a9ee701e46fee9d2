// Compiled operators (pipelines + plan uniforms), binding tables (descriptor sets), recording,
// and the convenience path.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "device.h"
#include "error.h"
#include "operator.h"

namespace vkdml::detail {

namespace {

constexpr UINT kGroupSize = 256;    // local_size_x of indexed.comp
constexpr UINT kMaxGroups = 65535;  // grid-stride loops cover the rest
constexpr UINT kVectorBytes = 16;   // widened plans move uvec4
// Shared memory a line of glsl/scatter_lines.comp may take (less where the device's limit is):
// 48 KiB leaves room for several workgroups per multiprocessor.
constexpr UINT64 kMaxLineBytes = 48 << 10;
constexpr UINT kLinesUnroll = 4;

// Whether ScatterElements uses glsl/scatter_lines.comp where Plan::Lines says it is better: on
// GPUs, yes; on CPU devices (lavapipe) its barriers cost more than the random writes it saves
// (examples/bench/PERF_NOTES.md, v15). VKDML_SCATTER_LINES=1 uses it for every shape it can do (the
// tests do this), VKDML_SCATTER_LINES=0 never (for A/B benchmarks).
enum class LinesPolicy { Never, WhenBetter, Always };
LinesPolicy ScatterLinesPolicy(VkPhysicalDeviceType type) {
  const char* env = std::getenv("VKDML_SCATTER_LINES");
  if (env && std::strcmp(env, "0") == 0) return LinesPolicy::Never;
  if (env && std::strcmp(env, "1") == 0) return LinesPolicy::Always;
  return type == VK_PHYSICAL_DEVICE_TYPE_CPU ? LinesPolicy::Never : LinesPolicy::WhenBetter;
}

// Workgroups per dispatch: at most 65535 and the device's limit; grid-stride loops cover the
// rest. VKDML_MAX_GROUPS=N lowers the cap so that small tests run those loops too.
UINT MaxGroups(const VkPhysicalDeviceLimits& limits) {
  UINT cap = std::min(kMaxGroups, limits.maxComputeWorkGroupCount[0]);
  const char* env = std::getenv("VKDML_MAX_GROUPS");
  long n = env ? std::strtol(env, nullptr, 10) : 0;
  return n > 0 && UINT64(n) < cap ? UINT(n) : cap;
}

// Threads in a workgroup of glsl/scatter_lines.comp: 1024 where the device allows.
UINT LinesGroupSize(const VkPhysicalDeviceLimits& limits) {
  return std::min(
      {1024u, limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]});
}
constexpr UINT kPlanWords = 80;  // one Plan in glsl/common.glsl: 20 uvec4

constexpr UINT kMaxPasses = 3;                   // ScatterND: mark, copy, scatter
constexpr UINT kPlanSlots = 2 * kMaxPasses + 1;  // each pass plain and widened; the report
constexpr UINT kReportSlot = 2 * kMaxPasses;
constexpr UINT kFlagSigned = 1, kFlagIndex64 = 2;
// Device::Run binds host memory directly up to this many bytes of tensors: for small work a
// copy to device memory costs more than the kernel's reads over the bus.
constexpr UINT64 kDirectRunBytes = 256 << 10;

// Elements each thread moves per step (indexed.comp's kUnroll): enough loads in flight to cover
// memory latency; uvec4 elements need fewer (examples/bench/PERF_NOTES.md, v3 and v11). Work of up to
// 256 workgroups' width goes one element per thread, spread over more multiprocessors: a
// thread's elements are a serial chain of index arithmetic, and small work is all latency (v16).
UINT Unroll(UINT elemSize, UINT count) {
  if (count <= 256 * kGroupSize) return 1;
  return elemSize >= 16 ? 2 : 8;
}

// Unsigned 32-bit division by d as a multiply and shifts (Granlund and Montgomery, 1994):
// with l = ceil(log2 d), magic = floor(2^32 (2^l - d) / d) + 1, t = mulhi(n, magic),
// n / d = (t + ((n - t) >> min(l, 1))) >> (max(l, 1) - 1) for every 32-bit n.
void Magic(UINT d, UINT* magic, UINT* shift) {
  UINT l = 0;
  while ((UINT64(1) << l) < d) ++l;
  *magic = UINT(((UINT64(1) << 32) * ((UINT64(1) << l) - d)) / d + 1);
  *shift = l;
}

// Writes a plan in glsl/common.glsl's std140 layout.
void PackPlan(const Plan& p, UINT flags, uint32_t* w) {
  std::memset(w, 0, kPlanWords * sizeof(uint32_t));
  w[0] = p.rank;
  w[1] = p.tuple;
  w[2] = flags;
  w[3] = p.count;
  UINT magic[kMaxDims] = {}, shift[kMaxDims] = {};
  for (UINT d = 0; d < p.rank; ++d) Magic(p.sizes[d], &magic[d], &shift[d]);
  const UINT* arrays[] = {p.sizes,   magic,      shift,       p.direct,     p.indexed,
                          p.indices, p.position, p.tupleSize, p.tupleStride};
  for (UINT a = 0; a < 9; ++a) std::memcpy(w + 4 + 8 * a, arrays[a], 8 * sizeof(uint32_t));
  w[76] = p.componentStride;
}

// glsl/CMakeLists.txt names the modules.
std::string ModuleName(Pass::Kind kind, bool lines, UINT elemSize, UINT indexSize) {
  if (kind == Pass::Kind::Mark) return Str("mark_i", indexSize * 8);
  if (lines) return Str("lines_e", elemSize, "_i", indexSize * 8);
  return Str(kind == Pass::Kind::Gather ? "gather_e" : "scatter_e", elemSize, "_i", indexSize * 8);
}

// What a compiled operator's binding tables use. They share it, so a table may outlive the
// CompiledOperator that made it (DirectML's binding tables keep theirs alive too).
struct CompiledState {
  struct PassState {
    Pass pass;
    Plan wide;           // valid when widePipeline is set
    bool lines = false;  // glsl/scatter_lines.comp: one workgroup per line (Plan::Lines)
    VkPipeline pipeline = VK_NULL_HANDLE, widePipeline = VK_NULL_HANDLE;  // the Device's
  };
  OperatorImpl op;
  UINT flags = 0;
  bool checked = false;
  std::vector<PassState> passes;
  VkPipeline report = VK_NULL_HANDLE;
  std::unique_ptr<BufferImpl> plans;  // uniform buffer, kPlanSlots plans
  UINT64 serial = 0;                  // DeviceImpl::NextSerial, names it in Run's recorded commands
  UINT maxGroups = 1;                 // MaxGroups() when compiled
};

class CompiledOperatorImpl final : public CompiledOperator {
 public:
  std::shared_ptr<const CompiledState> state;
  // Device::Run's binding table, made on first use, and the arena layout it is bound to.
  mutable std::mutex runMutex;
  mutable std::unique_ptr<BindingTable> runTable;
  mutable std::vector<DML_BUFFER_BINDING> runBindings;
  mutable UINT64 runArena = 0;  // DeviceImpl's arena generation when runBindings were bound

  const Operator& Op() const override { return state->op; }
  UINT Flags() const override { return state->flags; }
};

class BindingTableImpl final : public BindingTable {
 public:
  BindingTableImpl(DeviceImpl* device, std::shared_ptr<const CompiledState> op)
      : device_(device), op_(std::move(op)) {}
  ~BindingTableImpl() override {
    if (pool_) device_->Vk().vkDestroyDescriptorPool(device_->Handle(), pool_, nullptr);
  }
  Result Init();
  Result BindInputs(UINT count, const DML_BUFFER_BINDING* bindings) override;
  Result BindOutputs(UINT count, const DML_BUFFER_BINDING* bindings) override;
  Result IndexStatus() override;
  Result Record(VkCommandBuffer cmd);

 private:
  Result Bind(bool outputs, UINT count, const DML_BUFFER_BINDING* bindings);
  Result CheckAliasing(bool* inPlace) const;
  void Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
               VkPipelineStageFlags dst, VkAccessFlags dstAccess) const;

  DeviceImpl* device_;
  std::shared_ptr<const CompiledState> op_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  std::unique_ptr<BufferImpl> status_;  // checked mode: position, lo, hi
  std::unique_ptr<BufferImpl> mask_;    // ScatterND: the slices its scatter overwrites
  std::vector<DML_BUFFER_BINDING> inputs_, outputs_;
  bool inputsBound_ = false, outputsBound_ = false;
  UINT64 delta_[kBindingCount] = {};  // binding offset minus the descriptor's aligned offset
};

Result BindingTableImpl::Init() {
  const auto& vk = device_->Vk();
  const UINT64 maskBytes = std::max<UINT64>(op_->op.maskWords * 4, 4);
  VKDML_TRY(device_->CreateInternalBuffer(
      maskBytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      Buffer::Memory::DeviceLocal, &mask_));
  VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1},
                                  {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBindingCount - 1}};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = 1;
  pci.poolSizeCount = 2;
  pci.pPoolSizes = sizes;
  VKDML_VK(vk.vkCreateDescriptorPool(device_->Handle(), &pci, nullptr, &pool_));
  VkDescriptorSetLayout layout = device_->SetLayout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VKDML_VK(vk.vkAllocateDescriptorSets(device_->Handle(), &ai, &set_));
  VKDML_TRY(device_->CreateInternalBuffer(
      16, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      Buffer::Memory::HostVisible, &status_));
  std::memset(status_->Mapped(), 0xFF, 16);

  VkDescriptorBufferInfo plans{op_->plans->Handle(), 0, op_->plans->Size()};
  VkDescriptorBufferInfo status{status_->Handle(), 0, 16};
  VkDescriptorBufferInfo mask{mask_->Handle(), 0, maskBytes};
  VkWriteDescriptorSet w[3] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET},
                               {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET},
                               {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
  w[0].dstSet = w[1].dstSet = w[2].dstSet = set_;
  w[0].descriptorCount = w[1].descriptorCount = w[2].descriptorCount = 1;
  w[0].dstBinding = kBindPlans;
  w[0].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
  w[0].pBufferInfo = &plans;
  w[1].dstBinding = kBindStatus;
  w[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w[1].pBufferInfo = &status;
  w[2].dstBinding = kBindMask;
  w[2].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w[2].pBufferInfo = &mask;
  vk.vkUpdateDescriptorSets(device_->Handle(), 3, w, 0, nullptr);
  return {};
}

Result BindingTableImpl::Bind(bool outputs, UINT count, const DML_BUFFER_BINDING* bindings) {
  const auto& tensors = outputs ? op_->op.outputs : op_->op.inputs;
  const char* what = outputs ? "outputs" : "inputs";
  const char* call = outputs ? "BindOutputs" : "BindInputs";
  if (count != tensors.size())
    return Fail(Status::InvalidArgument, call, ": count is ", count, ", expected ", tensors.size(),
                " (", op_->op.name, " has ", tensors.size(), " ", what, ")");
  if (!bindings) return Fail(Status::InvalidArgument, call, ": bindings is null");

  const UINT64 align = std::max<UINT64>(device_->Limits().minStorageBufferOffsetAlignment, 1);
  const UINT64 maxRange = device_->Limits().maxStorageBufferRange;
  VkDescriptorBufferInfo infos[kBindingCount];
  VkWriteDescriptorSet writes[kBindingCount];
  UINT64 deltas[kBindingCount];
  UINT n = 0;
  for (UINT i = 0; i < count; ++i) {
    const DML_BUFFER_BINDING& b = bindings[i];
    const Tensor& t = tensors[i];
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
    UINT64 base = b.Offset / align * align, delta = b.Offset - base;
    if (delta + t.totalBytes > maxRange)
      return Fail(Status::Unsupported, what, "[", i, "]: ", t.field, " spans ",
                  delta + t.totalBytes, " bytes from the aligned offset ", base,
                  ", more than this device's maxStorageBufferRange ", maxRange);
    UINT binding = outputs ? kBindOutput
                           : (i == 0   ? kBindInput
                              : i == 1 ? kBindIndices
                                       : kBindUpdates);
    infos[n] = {b.Buffer, base, delta + t.totalBytes};
    writes[n] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[n].dstSet = set_;
    writes[n].dstBinding = binding;
    writes[n].descriptorCount = 1;
    writes[n].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    deltas[n] = delta;
    ++n;
    if (!outputs && i == 0 && count == 2) {  // gathers have no updates: give the slot the input
      infos[n] = infos[n - 1];
      writes[n] = writes[n - 1];
      writes[n].dstBinding = kBindUpdates;
      deltas[n] = delta;
      ++n;
    }
  }
  for (UINT i = 0; i < n; ++i) {
    writes[i].pBufferInfo = &infos[i];
    delta_[writes[i].dstBinding] = deltas[i];
  }
  device_->Vk().vkUpdateDescriptorSets(device_->Handle(), n, writes, 0, nullptr);
  (outputs ? outputs_ : inputs_).assign(bindings, bindings + count);
  (outputs ? outputsBound_ : inputsBound_) = true;
  return {};
}

Result BindingTableImpl::BindInputs(UINT count, const DML_BUFFER_BINDING* bindings) {
  return Bind(false, count, bindings);
}

Result BindingTableImpl::BindOutputs(UINT count, const DML_BUFFER_BINDING* bindings) {
  return Bind(true, count, bindings);
}

// An output may share memory with an input only as a scatter's in-place form: OutputTensor bound
// exactly where InputTensor is, with the same strides.
Result BindingTableImpl::CheckAliasing(bool* inPlace) const {
  *inPlace = false;
  const auto& in = op_->op.inputs;
  const Tensor& out = op_->op.outputs[0];
  const DML_BUFFER_BINDING& o = outputs_[0];
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const DML_BUFFER_BINDING& b = inputs_[i];
    if (b.Buffer != o.Buffer) continue;
    bool disjoint =
        b.Offset + in[i].totalBytes <= o.Offset || o.Offset + out.totalBytes <= b.Offset;
    if (disjoint) continue;
    bool same = i == 0 && op_->op.InPlaceAllowed() && b.Offset == o.Offset &&
                std::equal(out.strides, out.strides + out.dims, in[0].strides);
    if (same) {
      *inPlace = true;
      continue;
    }
    return Fail(Status::InvalidArgument, "RecordDispatch: outputs[0] (", out.field, ", bytes [",
                o.Offset, ", ", o.Offset + out.totalBytes, ")) overlaps inputs[", i, "] (",
                in[i].field, ", bytes [", b.Offset, ", ", b.Offset + in[i].totalBytes,
                ")) in the same VkBuffer",
                op_->op.InPlaceAllowed() && i == 0
                    ? Str("; an in-place ", op_->op.name, " needs the same offset and strides")
                    : "");
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

Result BindingTableImpl::Record(VkCommandBuffer cmd) {
  if (!inputsBound_ || !outputsBound_)
    return Fail(Status::InvalidArgument, "RecordDispatch: ", !inputsBound_ ? "inputs" : "outputs",
                " are not bound (call BindingTable::", !inputsBound_ ? "BindInputs" : "BindOutputs",
                " first)");
  if (!cmd) return Fail(Status::InvalidArgument, "RecordDispatch: cmd is VK_NULL_HANDLE");
  bool inPlace;
  VKDML_TRY(CheckAliasing(&inPlace));

  const auto& vk = device_->Vk();
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags readWrite = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  VkPipelineLayout layout = device_->PipelineLayout();
  vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set_, 0, nullptr);
  const bool clearMask = op_->op.maskWords && !inPlace;
  if (op_->checked) vk.vkCmdFillBuffer(cmd, status_->Handle(), 0, 16, 0xFFFFFFFFu);
  if (clearMask) vk.vkCmdFillBuffer(cmd, mask_->Handle(), 0, op_->op.maskWords * 4, 0);
  if (op_->checked || clearMask)
    Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, compute, readWrite);
  const UINT elemSize = op_->op.ElemSize();
  const UINT indexBase = UINT(delta_[kBindIndices] / op_->op.Indices().elemSize);
  bool first = true;
  for (size_t i = 0; i < op_->passes.size(); ++i) {
    const auto& s = op_->passes[i];
    if (s.pass.skipInPlace && inPlace) continue;
    const UINT src = s.pass.kind == Pass::Kind::Gather ? kBindInput : kBindUpdates;
    const bool wide = s.widePipeline && delta_[src] % kVectorBytes == 0 &&
                      delta_[kBindOutput] % kVectorBytes == 0;
    const UINT unit = wide ? kVectorBytes : elemSize;
    const Plan& plan = wide ? s.wide : s.pass.plan;
    uint32_t push[4] = {UINT(2 * i + (wide ? 1 : 0)), UINT(delta_[src] / unit), indexBase,
                        UINT(delta_[kBindOutput] / unit)};
    if (!first) Barrier(cmd, compute, readWrite, compute, readWrite);
    first = false;
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, wide ? s.widePipeline : s.pipeline);
    vk.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
    const UINT64 perGroup = kGroupSize * Unroll(wide ? kVectorBytes : elemSize, plan.count);
    const UINT64 work = s.lines ? plan.count / plan.sizes[plan.rank - 1]  // a group per line
                                : (UINT64(plan.count) + perGroup - 1) / perGroup;
    UINT groups = UINT(std::min<UINT64>(work, op_->maxGroups));
    vk.vkCmdDispatch(cmd, groups, 1, 1);
  }
  if (op_->checked) {
    Barrier(cmd, compute, readWrite, compute, readWrite);
    uint32_t push[4] = {kReportSlot, 0, indexBase, 0};
    vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, op_->report);
    vk.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
    vk.vkCmdDispatch(cmd, 1, 1, 1);
    Barrier(cmd, compute, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  return {};
}

Result BindingTableImpl::IndexStatus() {
  if (!op_->checked) return {};
  uint32_t s[4];
  std::memcpy(s, status_->Mapped(), sizeof(s));
  if (s[0] == 0xFFFFFFFFu) return {};
  const OperatorImpl& op = op_->op;
  const Tensor& indices = op.Indices();
  const bool isSigned = IsSignedIndexType(indices.type);
  const bool is64 = indices.elemSize == 8;
  std::string coords;
  UINT rest = s[0], c[kMaxDims];
  for (UINT d = indices.dims; d-- > 0;) {
    c[d] = rest % indices.sizes[d];
    rest /= indices.sizes[d];
  }
  for (UINT d = 0; d < indices.dims; ++d) coords += Str(d ? "," : "", c[d]);
  UINT64 raw = is64 ? (UINT64(s[2]) << 32 | s[1]) : s[1];
  std::string value = isSigned ? Str(is64 ? int64_t(raw) : int64_t(int32_t(s[1]))) : Str(raw);
  UINT64 n = op.componentSizes[s[0] % op.componentSizes.size()];
  std::string range = isSigned ? Str("[-", n, ", ", n - 1, "]") : Str("[0, ", n - 1, "]");
  return Fail(Status::IndexOutOfRange, op.name, ": IndicesTensor[", coords, "] is ", value,
              ", outside the valid range ", range);
}

}  // namespace

// Device entry points -----------------------------------------------------------------------

Result DeviceImpl::CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) {
  if (!out) return Fail(Status::InvalidArgument, "CreateOperator: out is null");
  auto op = std::make_unique<OperatorImpl>();
  VKDML_TRY(BuildOperator(desc, op.get()));
  std::vector<const Tensor*> all;
  for (const Tensor& t : op->inputs) all.push_back(&t);
  for (const Tensor& t : op->outputs) all.push_back(&t);
  for (const Tensor* t : all) {
    if (t->totalBytes > limits_.maxStorageBufferRange)
      return Fail(Status::Unsupported, op->name, ": ", t->field, ".TotalTensorSizeInBytes is ",
                  t->totalBytes, ", more than this device's maxStorageBufferRange ",
                  limits_.maxStorageBufferRange);
    bool missing8 = t->elemSize == 1 && !info_.enabled.storageBuffer8BitAccess;
    bool missing16 = t->elemSize == 2 && !info_.enabled.storageBuffer16BitAccess;
    if (missing8 || missing16)
      return Fail(Status::Unsupported, op->name, ": ", t->field, ".DataType is ",
                  DataTypeName(t->type), ", which needs ",
                  missing8 ? "storageBuffer8BitAccess" : "storageBuffer16BitAccess",
                  ", not enabled on device ", info_.name);
  }
  *out = std::move(op);
  return {};
}

Result DeviceImpl::CompileOperator(const Operator& op, UINT flags,
                                   std::unique_ptr<CompiledOperator>* out) {
  if (!out) return Fail(Status::InvalidArgument, "CompileOperator: out is null");
  const UINT known = DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION |
                     DML_EXECUTION_FLAG_DISABLE_META_COMMANDS |
                     DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE | VKDML_EXECUTION_FLAG_CHECK_INDICES;
  if (flags & ~known)
    return Fail(Status::InvalidArgument, "CompileOperator: flags has unknown bits 0x", std::hex,
                flags & ~known);
  auto c = std::make_shared<CompiledState>();
  c->op = static_cast<const OperatorImpl&>(op);
  c->flags = flags;
  c->checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0;
  c->serial = NextSerial();
  c->maxGroups = MaxGroups(limits_);
  const Tensor& indices = c->op.Indices();
  const UINT indexFlags = (IsSignedIndexType(indices.type) ? kFlagSigned : 0) |
                          (indices.elemSize == 8 ? kFlagIndex64 : 0);

  if (c->op.passes.size() > kMaxPasses)
    return Fail(Status::DeviceError, "internal: ", c->op.passes.size(), " passes, at most ",
                kMaxPasses);
  std::vector<uint32_t> words(kPlanSlots * kPlanWords, 0);
  const LinesPolicy linesPolicy = ScatterLinesPolicy(info_.type);
  for (size_t i = 0; i < c->op.passes.size(); ++i) {
    CompiledState::PassState s;
    s.pass = c->op.passes[i];
    Plan striped;
    if (s.pass.kind == Pass::Kind::Gather && s.pass.plan.Stripe(c->op.ElemSize(), &striped))
      s.pass.plan = striped;
    const Plan& plan = s.pass.plan;
    const UINT indexSize = indices.elemSize;
    const UINT64 lineBytes = std::min<UINT64>(kMaxLineBytes, limits_.maxComputeSharedMemorySize);
    s.lines = s.pass.lines && linesPolicy != LinesPolicy::Never &&
              plan.Lines(c->op.ElemSize(), lineBytes, linesPolicy == LinesPolicy::Always);
    DeviceImpl::Specialization spec = {
        c->checked,
        plan.rank,
        plan.tuple,
        indexFlags,
        s.lines ? kLinesUnroll : Unroll(c->op.ElemSize(), plan.count),
        s.pass.maskSkip,
        s.lines ? plan.tupleSize[0] : 1,
        LinesGroupSize(limits_)};
    VKDML_TRY(
        Pipeline(ModuleName(s.pass.kind, s.lines, c->op.ElemSize(), indexSize), spec, &s.pipeline));
    PackPlan(plan, indexFlags, &words[(2 * i) * kPlanWords]);
    if (!s.lines && plan.Widen(c->op.ElemSize(), kVectorBytes, &s.wide)) {
      spec[4] = Unroll(kVectorBytes, s.wide.count);
      VKDML_TRY(
          Pipeline(ModuleName(s.pass.kind, false, kVectorBytes, indexSize), spec, &s.widePipeline));
      PackPlan(s.wide, indexFlags, &words[(2 * i + 1) * kPlanWords]);
    }
    c->passes.push_back(s);
  }
  if (c->checked) {
    VKDML_TRY(Pipeline("report", {}, &c->report));
    Plan report;
    for (UINT d = 0; d < indices.dims; ++d)
      report.AddDim(indices.sizes[d], 0, 0, indices.strides[d], 0);
    PackPlan(report, indexFlags, &words[kReportSlot * kPlanWords]);
  }
  // In device memory: every dispatch reads it first, and a read from host memory crosses the bus.
  const UINT64 planBytes = words.size() * sizeof(uint32_t);
  VKDML_TRY(CreateInternalBuffer(
      planBytes, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      Buffer::Memory::DeviceLocal, &c->plans));
  VKDML_TRY(c->plans->Write(0, words.data(), planBytes));
  auto compiled = std::make_unique<CompiledOperatorImpl>();
  compiled->state = std::move(c);
  *out = std::move(compiled);
  return {};
}

Result DeviceImpl::CreateBindingTable(const CompiledOperator& op,
                                      std::unique_ptr<BindingTable>* out) {
  if (!out) return Fail(Status::InvalidArgument, "CreateBindingTable: out is null");
  auto t =
      std::make_unique<BindingTableImpl>(this, static_cast<const CompiledOperatorImpl&>(op).state);
  VKDML_TRY(t->Init());
  *out = std::move(t);
  return {};
}

Result DeviceImpl::RecordDispatch(VkCommandBuffer cmd, BindingTable& table) {
  return static_cast<BindingTableImpl&>(table).Record(cmd);
}

Result DeviceImpl::Run(const CompiledOperator& compiled, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  const Operator& op = compiled.Op();
  if (inputs.size() != op.InputCount() || outputs.size() != op.OutputCount())
    return Fail(Status::InvalidArgument, "Run: ", inputs.size(), " inputs and ", outputs.size(),
                " outputs, expected ", op.InputCount(), " and ", op.OutputCount());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) return Fail(Status::InvalidArgument, "Run: inputs[", i, "] is null");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i]) return Fail(Status::InvalidArgument, "Run: outputs[", i, "] is null");

  // Every tensor at a 256-byte aligned offset of a host-visible arena. Small work binds the
  // arenas themselves (one dispatch, no copies): inputs in one the GPU reads from device memory
  // where it can, outputs in host memory. Larger work goes through one staging arena, copied to
  // device memory and back, all in one submit. Outputs with bytes the operator does not write
  // (gaps between strided elements, rounding) go in too: those bytes keep the caller's values.
  auto& c = static_cast<const CompiledOperatorImpl&>(compiled);
  const UINT count = op.InputCount() + op.OutputCount();
  std::vector<bool> upload(count, true);
  for (UINT i = op.InputCount(); i < count; ++i)
    upload[i] = !FillsAllBytes(c.state->op.outputs[i - op.InputCount()]);
  std::vector<UINT64> offset(count), size(count);
  UINT64 total = 0;
  for (UINT i = 0; i < count; ++i) {
    size[i] = i < op.InputCount() ? op.InputSize(i) : op.OutputSize(i - op.InputCount());
    offset[i] = total;
    total += (size[i] + 255) / 256 * 256;
  }
  const bool direct = total <= kDirectRunBytes;
  std::lock_guard<std::mutex> lock(runMutex_);
  const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (!runStaging_ || runStaging_->Size() < total) {
    ++runArenaGeneration_;  // binding tables that name the old arena must bind again
    runStaging_.reset();
    VKDML_TRY(CreateInternalBuffer(total, usage, Buffer::Memory::HostVisible, &runStaging_));
  }
  if (direct && (!runInputs_ || runInputs_->Size() < total)) {
    ++runArenaGeneration_;
    runInputs_.reset();
    VKDML_TRY(CreateInternalBuffer(total, usage, Buffer::Memory::HostVisible, &runInputs_,
                                   /*gpuReads=*/true));
  }
  if (!direct && (!runDevice_ || runDevice_->Size() < total)) {
    ++runArenaGeneration_;
    runDevice_.reset();
    VKDML_TRY(CreateInternalBuffer(total, usage, Buffer::Memory::DeviceLocal, &runDevice_));
  }
  auto* host = static_cast<char*>(runStaging_->Mapped());
  std::vector<DML_BUFFER_BINDING> bindings(count);
  for (UINT i = 0; i < count; ++i) {
    const bool input = i < op.InputCount();
    const BufferImpl& arena = !direct ? *runDevice_ : input ? *runInputs_ : *runStaging_;
    char* to = static_cast<char*>(direct && input ? runInputs_->Mapped() : host);
    if (upload[i])
      std::memcpy(to + offset[i], input ? inputs[i] : outputs[i - op.InputCount()], size[i]);
    bindings[i] = {arena.Handle(), offset[i], size[i]};
  }
  std::lock_guard<std::mutex> tableLock(c.runMutex);
  if (!c.runTable) VKDML_TRY(CreateBindingTable(compiled, &c.runTable));
  BindingTable& table = *c.runTable;
  auto same = [](const DML_BUFFER_BINDING& a, const DML_BUFFER_BINDING& b) {
    return a.Buffer == b.Buffer && a.Offset == b.Offset && a.SizeInBytes == b.SizeInBytes;
  };
  if (c.runArena != runArenaGeneration_ || c.runBindings.size() != count ||
      !std::equal(bindings.begin(), bindings.end(), c.runBindings.begin(), same)) {
    c.runArena = 0;
    runRecorded_ = {};  // updating the descriptor set invalidates the recorded commands
    VKDML_TRY(table.BindInputs(op.InputCount(), bindings.data()));
    VKDML_TRY(table.BindOutputs(op.OutputCount(), bindings.data() + op.InputCount()));
    c.runBindings = bindings;
    c.runArena = runArenaGeneration_;
  }

  // The commands depend only on the operator and the arena: record them once, then replay.
  const RunKey key{c.state->serial, runArenaGeneration_, direct};
  if (!(runRecorded_ == key)) {
    runRecorded_ = {};
    VkCommandBuffer cmd = runCommands_;
    VKDML_VK(vk_.vkResetCommandBuffer(cmd, 0));
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VKDML_VK(vk_.vkBeginCommandBuffer(cmd, &begin));
    auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                       VkAccessFlags dstAccess) {
      VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, srcAccess, dstAccess};
      vk_.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
    };
    if (direct) {  // host writes before the submit are visible to it
      VKDML_TRY(RecordDispatch(cmd, table));
    } else {
      std::vector<VkBufferCopy> in;
      for (UINT i = 0; i < count; ++i)
        if (upload[i]) in.push_back({offset[i], offset[i], size[i]});
      vk_.vkCmdCopyBuffer(cmd, runStaging_->Handle(), runDevice_->Handle(), uint32_t(in.size()),
                          in.data());
      barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      VKDML_TRY(RecordDispatch(cmd, table));
      barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
      for (UINT i = op.InputCount(); i < count; ++i) {
        VkBufferCopy back{offset[i], offset[i], size[i]};
        vk_.vkCmdCopyBuffer(cmd, runDevice_->Handle(), runStaging_->Handle(), 1, &back);
      }
    }
    // Host reads after the wait see the results (the dispatch's or the copies' writes).
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    VKDML_VK(vk_.vkEndCommandBuffer(cmd));
    runRecorded_ = key;
  }
  VKDML_TRY(SubmitRecorded(runCommands_));
  for (UINT i = op.InputCount(); i < count; ++i)
    std::memcpy(outputs[i - op.InputCount()], host + offset[i], size[i]);
  return table.IndexStatus();
}

}  // namespace vkdml::detail
