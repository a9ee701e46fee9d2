// CompileOperator: an operator's kernels (kernels.h) as pipelines, and their plans in a uniform
// buffer. What binding tables need of it lives in CompiledState.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "device/buffer.h"
#include "kernels/kernels.h"
#include "operators/operator.h"

namespace vkdml::detail {

class DeviceImpl;

// What a compiled operator's binding tables use. They share it, so a table may outlive the
// CompiledOperator that made it (DirectML's binding tables keep theirs alive too).
struct CompiledState {
  OperatorImpl op;
  UINT flags = 0;
  KernelSet kernels;                  // with their pipelines (the Device's)
  std::unique_ptr<BufferImpl> plans;  // uniform buffer: kernels.plans
  UINT64 serial = 0;                  // DeviceImpl::NextSerial, names it in Run's recorded commands
};

// Device::Run's binding table for one compiled operator (host_run.cpp), bound to the arenas of
// one generation.
struct RunBinding {
  std::mutex mutex;
  std::unique_ptr<BindingTable> table;  // made on first use
  std::vector<DML_BUFFER_BINDING> bindings;
  UINT64 arena = 0;  // HostRunner's arena generation when `bindings` were bound; 0: none
};

class CompiledOperatorImpl final : public CompiledOperator {
 public:
  std::shared_ptr<const CompiledState> state;
  mutable RunBinding run;  // Device::Run's binding table for this operator

  const Operator& Op() const override { return state->op; }
  UINT Flags() const override { return state->flags; }
};

// Device::CompileOperator.
Result CompileOperator(DeviceImpl& device, const Operator& op, UINT flags,
                       std::unique_ptr<CompiledOperator>* out);

}  // namespace vkdml::detail
