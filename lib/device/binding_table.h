// Binding tables: a descriptor set per source tensor (InputTensor, and a scatter's
// UpdatesTensor; on the large path, one per dispatch, each seeing the tensors through its
// windows), vkdml's scratch, the checks on each binding, the aliasing rule, recording an
// operator's dispatches, and checked mode's report.
#pragma once

#include <memory>
#include <vector>

#include "device/compiled.h"
#include "interface.h"

namespace vkdml::detail {

class BindingTableImpl final : public BindingTable {
 public:
  BindingTableImpl(DeviceImpl* device, std::shared_ptr<const CompiledState> op)
      : device_(device), op_(std::move(op)) {}
  ~BindingTableImpl() override;
  Result Init();
  Result BindInputs(UINT count, const DML_BUFFER_BINDING* bindings) override;
  Result BindOutputs(UINT count, const DML_BUFFER_BINDING* bindings) override;
  Result IndexStatus() override;
  // Device::RecordDispatch, and Device::Run's recording (host_run.cpp): both come here, not
  // through the entry point, so the check that the device is not lost is made here.
  Result Record(VkCommandBuffer cmd);

 private:
  Result Bind(bool outputs, UINT count, const DML_BUFFER_BINDING* bindings);
  Result CheckBinding(bool outputs, UINT i, const DML_BUFFER_BINDING& b, const Tensor& t) const;
  Result CheckAliasing(bool* inPlace) const;
  void Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
               VkPipelineStageFlags dst, VkAccessFlags dstAccess) const;
  void ClearScratch(VkCommandBuffer cmd, bool inPlace) const;
  void Dispatch(VkCommandBuffer cmd, const Kernel& k, Role source, Role output,
                VkDescriptorSet* bound) const;
  // The large path (kernels.h: LargeDispatch): each kernel with its source.
  struct LargeKernel {
    const Kernel* kernel;
    Role source;
  };
  std::vector<LargeKernel> LargeKernels() const;
  void BindLarge(bool outputs);
  void DispatchLarge(VkCommandBuffer cmd, const Kernel& k, size_t firstSet) const;
  const DML_BUFFER_BINDING* Bound(Role tensor) const;
  const Tensor& TensorAt(Role tensor) const;
  Span SpanAt(const Kernel& k, const LargeDispatch& d, Role tensor) const;
  VkDescriptorBufferInfo Window(Role tensor, Span span) const;
  int64_t WindowStart(Role tensor, Span span, UINT unit) const;

  DeviceImpl* device_;
  std::shared_ptr<const CompiledState> op_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  // A descriptor set per input a pass reads as its source (every one but IndicesTensor: a
  // gather's InputTensor; a scatter's InputTensor and UpdatesTensor; an embedding bag's
  // InputTensor, OffsetsTensor and PerSampleWeightsTensor), indexed by Role, with each output
  // (a MoE permute's four) at VKDML_BIND_OUTPUT, indexed by its number.
  VkDescriptorSet sourceSets_[UINT(Role::Count)][kMaxOutputs] = {};
  std::vector<VkDescriptorSet> largeSets_;  // one per large dispatch, in LargeKernels() order
  std::unique_ptr<BufferImpl> scratch_;     // KernelSet::scratchWords (BufferImpl::CreateScratch)
  std::unique_ptr<BufferImpl> status_;      // checked mode: the status words, read by the host
  bool hostStatus_ = false;  // the host reads the status words in the scratch (no status_ copy)
  std::vector<DML_BUFFER_BINDING> inputs_, outputs_;
  bool inputsBound_ = false, outputsBound_ = false;
  UINT64 delta_[UINT(Role::Count)] = {};  // binding offset minus the descriptor's offset
};

// Device::CreateBindingTable, and Device::Run's table (host_run.cpp); checks first that the device
// is not lost.
Result CreateBindingTable(DeviceImpl& device, const CompiledOperator& op,
                          std::unique_ptr<BindingTable>* out);

}  // namespace vkdml::detail
