// vkdml: DirectML's gather/scatter operators on any Vulkan 1.1 device.
//
// The flow mirrors DirectML's:
//   CreateDevice -> Device::CreateOperator (all validation) -> Device::CompileOperator (pipelines)
//   -> Device::CreateBindingTable + BindInputs/BindOutputs -> RecordDispatch into a command
//   buffer -> submit and wait (yours, or Device::Submit) -> BindingTable::IndexStatus if checked.
// Device::Run is the convenience path: host memory in, host memory out.
//
// Every call returns a Result; on failure its message names the field and the expected versus
// actual values. vkdml loads Vulkan through volk and links no libvulkan.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkdml/dml.h"
#include "vkdml/version.h"  // VKDML_VERSION_MAJOR, _MINOR, _PATCH

namespace vkdml {

enum class Status {
  Ok = 0,
  InvalidArgument,  // a descriptor, binding or call argument is wrong
  Unsupported,      // valid, but this device or vkdml cannot run it
  IndexOutOfRange,  // a checked execution met an out-of-range index
  OutOfMemory,      // a Vulkan allocation failed (VK_ERROR_OUT_OF_{DEVICE,HOST}_MEMORY)
  DeviceError,      // Vulkan failed (device lost, a wait past DeviceDesc.waitTimeoutNs, no driver)
  Internal,         // one of vkdml's own invariants failed: a bug in vkdml (please report it)
};

struct Result {
  Status status = Status::Ok;
  std::string message;

  bool ok() const { return status == Status::Ok; }
  explicit operator bool() const { return ok(); }
};

// Element size in bytes of a data type; 0 for UNKNOWN or an out-of-range value.
UINT DataTypeSize(DML_TENSOR_DATA_TYPE type);
// "FLOAT32", "INT64", ...; "UNKNOWN" for anything else.
const char* DataTypeName(DML_TENSOR_DATA_TYPE type);
// DirectML's required TotalTensorSizeInBytes: round_up((dot(Sizes-1, Strides)+1) * elemSize, 4),
// packed strides when Strides is null. Returns 0 if the arguments are not a valid tensor: an
// unknown type, no or more than 8 dimensions, a size of 0, or more than 2^32-1 elements.
UINT64 CalcBufferTensorSize(DML_TENSOR_DATA_TYPE type, UINT dimensionCount, const UINT* sizes,
                            const UINT* strides);
// The same for a tensor flagged VKDML_TENSOR_FLAG_LARGE: up to 2^56 elements. Returns 0 where
// CalcBufferTensorSize does (but for the element count), and where Strides is null and a packed
// stride would pass 2^32 - 1 elements.
UINT64 CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE type, UINT dimensionCount, const UINT* sizes,
                                 const UINT* strides);

// Optional device features vkdml uses; Device::CheckFeatureSupport says what a device runs.
// 1- and 2-byte tensors use 8-/16-bit storage buffer access where enabled; without it they move
// in 32-bit words, and their bindings' offsets must be multiples of 4. 4- and 8-byte tensors and
// every index type need nothing beyond Vulkan 1.1.
// With timelineSemaphore (VK_KHR_timeline_semaphore, or Vulkan 1.2's feature) Submit and Run
// wait on a timeline semaphore instead of a fence, about 1 us less per call on some drivers.
// The scatters with a reduction (dml.h: VKDML_REDUCE_FUNCTION) compute FLOAT64 in float64 with
// shaderFloat64 (else in 32-bit integer arithmetic, as exactly) and use the others where they
// are enabled: shaderBufferFloat32AtomicAdd
// (VK_EXT_shader_atomic_float) for FLOAT32 ADD, and shaderInt64 with shaderBufferInt64Atomics
// (VK_KHR_shader_atomic_int64) for 8-byte elements (a deterministic float64 MAX or MIN too),
// which otherwise take the sorted path of a deterministic execution (except integer ADD). The
// reductions keep float denormals, as a sequential CPU computation does: float32 where the
// device promises to when asked (shaderDenormPreserveFloat32:
// VkPhysicalDeviceFloatControlsProperties, with
// VK_KHR_shader_float_controls enabled or Vulkan 1.2) or, failing that, by computing it in
// float64 (shaderFloat64); float64 where the device promises to (shaderDenormPreserveFloat64)
// or keeps them anyway (lavapipe and NVIDIA do). FLOAT32 ADD then uses compare-and-swap rather
// than the float atomic add, which may flush them (NVIDIA's does). README: Scatter reductions.
struct DeviceFeatures {
  bool storageBuffer8BitAccess = false;
  bool storageBuffer16BitAccess = false;
  bool timelineSemaphore = false;
  bool shaderFloat64 = false;
  bool shaderInt64 = false;
  bool shaderBufferInt64Atomics = false;
  bool shaderBufferFloat32AtomicAdd = false;
  bool shaderDenormPreserveFloat32 = false;
  bool shaderDenormPreserveFloat64 = false;
};

struct DeviceDesc {
  // vkdml creates its own instance and device when `device` is VK_NULL_HANDLE.
  // physicalDeviceIndex < 0 picks the first discrete GPU, else the first device.
  int physicalDeviceIndex = -1;
  // Enable VK_LAYER_KHRONOS_validation (fails if it is not installed). Each message goes to
  // onValidationMessage (stderr if empty).
  bool enableValidation = false;
  std::function<void(const char* message)> onValidationMessage;

  // Or adopt the caller's Vulkan objects (all of them, with the features it enabled: a feature
  // set here that the physical device does not support is refused). vkdml borrows them and never
  // destroys them. getInstanceProcAddr may be null to use the system loader. The instance must
  // have been created with apiVersion 1.1 or later (Vulkan gives no way to check) and the
  // physical device must support 1.1. queueFamilyIndex names the queue's family, which must
  // support compute; vkdml only submits to the queue from Device::Submit,
  // Device::Run and Buffer::Write/Read of device-local buffers (see Threads below).
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamilyIndex = 0;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
  DeviceFeatures enabledFeatures;

  // The pipeline cache every pipeline vkdml creates goes through. pipelineCache: adopt the
  // caller's, made on `device` (so only with an adopted device); borrowed, never destroyed; not
  // created with VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT, since vkdml uses it from
  // any thread that compiles. Otherwise vkdml makes its own, starting from pipelineCacheData if
  // given: what Device::GetPipelineCacheData returned earlier, e.g. in the previous run of the
  // program. Data from another device or driver version is left out (the cache starts empty);
  // data without a valid Vulkan pipeline cache header is refused. Set at most one of the two.
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;
  std::vector<uint8_t> pipelineCacheData;

  // How long Submit and Run (and Buffer::Write and Read, which submit) wait for their work, in
  // nanoseconds; UINT64_MAX (the default) waits as long as it takes. A wait that gives up, or
  // any failed submit or wait, returns Status::DeviceError naming the Vulkan call, and the
  // Device then counts as lost: whether the work ran is unknown, so every later call returns
  // DeviceError at once (destroying the Device still waits for the work, as Vulkan requires).
  // Not bounded: CreateDevice's one empty submission to a queue of vkdml's own, which has the
  // driver build the queue's state while memory is there (SwiftShader crashes if it cannot).
  uint64_t waitTimeoutNs = UINT64_MAX;
};

struct DeviceInfo {
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::string driverName;  // from VkPhysicalDeviceDriverProperties where available
  std::string driverInfo;
  VkDriverId driverID = VkDriverId(0);  // likewise (0: not reported)
  uint32_t apiVersion = 0;
  uint32_t driverVersion = 0;
  uint64_t maxStorageBufferRange = 0;
  float timestampPeriod = 0;         // nanoseconds per timestamp tick
  bool timestampsSupported = false;  // on the queue vkdml uses
  DeviceFeatures available;          // what the physical device offers
  DeviceFeatures enabled;            // what this Device uses
};

// Lists the physical devices vkdml could use (with their optional features), in Vulkan's order.
// getInstanceProcAddr: as DeviceDesc's (null: the system loader).
Result EnumerateDevices(std::vector<DeviceInfo>* out,
                        PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr);

class Device;
class Operator;
class CompiledOperator;
class BindingTable;

// A buffer vkdml allocates, for callers without an allocator of their own (tests, tools).
class Buffer {
 public:
  enum class Memory { DeviceLocal, HostVisible };
  virtual ~Buffer() = default;
  virtual VkBuffer Handle() const = 0;
  virtual UINT64 Size() const = 0;
  // Copies through a staging buffer when the memory is not host visible. Waits for completion.
  virtual Result Write(UINT64 offset, const void* data, UINT64 size) = 0;
  virtual Result Read(UINT64 offset, void* data, UINT64 size) = 0;
  // Whole-buffer binding, or a sub-range.
  DML_BUFFER_BINDING Binding() const { return {Handle(), 0, Size()}; }
  DML_BUFFER_BINDING Binding(UINT64 offset, UINT64 size) const { return {Handle(), offset, size}; }
};

// Threads. Every Device call may run from any thread, at the same time as the others: in
// particular CreateOperator, CompileOperator, CreateBindingTable, CreateBuffer and
// RecordDispatch (into different command buffers) run concurrently, and none of them touches
// the queue. Submit, Run and Buffer::Write/Read of device-local memory use the queue: they take
// turns on the Device's own lock; if your program submits to the same VkQueue, it must not do so
// while one of them runs (Vulkan requires a queue's users to take turns), and a Submit callback
// must not call them. Operators and compiled operators never change after creation: use one
// from any number of threads at once (compile it, make binding tables from it, Run it). Use each
// BindingTable (Bind*, RecordDispatch with it, IndexStatus) from one thread at a time, and each
// Buffer's bytes as you would host memory. CreateDevice and EnumerateDevices may run from
// several threads at once. onValidationMessage may be called from several threads at once.
// Destroying an object while another thread uses it is the caller's error.
//
// Operators, compiled operators, binding tables and buffers belong to the Device that made
// them: destroy them before it. Otherwise any order works: a compiled operator keeps a copy of
// its operator, and a binding table keeps what it uses of its compiled operator.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& Info() const = 0;
  virtual VkDevice Handle() const = 0;
  virtual VkPhysicalDevice PhysicalDevice() const = 0;
  virtual VkInstance Instance() const = 0;
  virtual VkQueue Queue() const = 0;  // the queue Submit and Run use
  virtual uint32_t QueueFamilyIndex() const = 0;
  virtual PFN_vkGetDeviceProcAddr GetDeviceProcAddr() const = 0;

  // Validates desc against the operator's page and this device's features.
  virtual Result CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) = 0;
  // Builds the pipelines. flags: DML_EXECUTION_FLAGS, e.g. VKDML_EXECUTION_FLAG_CHECK_INDICES;
  // unknown bits are an error.
  virtual Result CompileOperator(const Operator& op, UINT flags,
                                 std::unique_ptr<CompiledOperator>* out) = 0;
  // One binding table per concurrent use of a compiled operator; it owns its descriptor set.
  virtual Result CreateBindingTable(const CompiledOperator& op,
                                    std::unique_ptr<BindingTable>* out) = 0;

  // Records the operator's work into cmd (compute pipeline, descriptor sets, push constants,
  // dispatches, and the barriers between its own passes). The caller orders it against other
  // work: make earlier writes to the inputs available to compute-shader reads, and put a
  // compute-shader-write barrier before reading the outputs. The binding table must stay alive
  // and unchanged until the command buffer has completed.
  virtual Result RecordDispatch(VkCommandBuffer cmd, BindingTable& table) = 0;

  // Records with `record` into a one-time command buffer, submits it and waits. `record` must
  // not call Submit, Run or Buffer::Write/Read (they wait for the same lock).
  virtual Result Submit(const std::function<void(VkCommandBuffer)>& record) = 0;

  virtual Result CreateBuffer(UINT64 size, Buffer::Memory memory, std::unique_ptr<Buffer>* out) = 0;

  // Convenience path: uploads, runs and reads back in one submit (compile once, Run many
  // times). inputs/outputs are host pointers in the operator's binding order, each holding its
  // tensor's TotalTensorSizeInBytes. Work of more than 64 MiB in all goes through a device buffer
  // per tensor, copied in and out 64 MiB at a time (a submit each): Run's own host memory stays
  // at 64 MiB of staging whatever the tensors' sizes. Output bytes between strided elements keep
  // the values the caller's buffer had. With VKDML_EXECUTION_FLAG_CHECK_INDICES an out-of-range
  // index makes Run return Status::IndexOutOfRange, and the outputs still hold the clamped results.
  // Calls on one Device run one at a time; the staging memory and the recorded commands are
  // kept between calls, so repeating an operator costs one submit and two copies.
  virtual Result Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
                     const std::vector<void*>& outputs) = 0;

  // The pipeline cache's contents (vkGetPipelineCacheData), to save and hand to a later
  // Device through DeviceDesc::pipelineCacheData. With an adopted cache, that cache's.
  virtual Result GetPipelineCacheData(std::vector<uint8_t>* out) = 0;

  // DirectML's IDMLDevice::CheckFeatureSupport: answers `query` (querySize bytes, the query
  // struct dml.h names for `feature`) in `support` (supportSize bytes, its data struct). Every
  // data type runs on every device (1- and 2-byte ones in 32-bit words where the device lacks
  // 8/16-bit storage: see VKDML_FEATURE_BINDING_ALIGNMENT), and every reduction on it (FLOAT64
  // without shaderFloat64 in integer arithmetic); a tensor larger than VKDML_FEATURE_TENSOR_SIZE
  // says is refused at CompileOperator. An unknown feature, data type
  // or operator type, or a size that is not the struct's: InvalidArgument.
  virtual Result CheckFeatureSupport(DML_FEATURE feature, UINT querySize, const void* query,
                                     UINT supportSize, void* support) const = 0;
};

// vkdml's kernels fit Vulkan 1.1's minimum limits (4 storage buffers per shader stage,
// workgroups of 128 invocations); a device below them is Unsupported, naming the limit.
Result CreateDevice(const DeviceDesc& desc, std::unique_ptr<Device>* out);

// A validated operator: what DirectML calls an IDMLOperator.
class Operator {
 public:
  virtual ~Operator() = default;
  virtual DML_OPERATOR_TYPE Type() const = 0;
  // Binding order, as DirectML's: inputs (InputTensor, IndicesTensor[, UpdatesTensor]) then
  // outputs (OutputTensor).
  virtual UINT InputCount() const = 0;
  virtual UINT OutputCount() const = 0;
  // TotalTensorSizeInBytes of input i / output i.
  virtual UINT64 InputSize(UINT i) const = 0;
  virtual UINT64 OutputSize(UINT i) const = 0;
};

class CompiledOperator {
 public:
  virtual ~CompiledOperator() = default;
  virtual const Operator& Op() const = 0;
  virtual UINT Flags() const = 0;
};

class BindingTable {
 public:
  virtual ~BindingTable() = default;
  // Checks each binding: a buffer that is not null, SizeInBytes that holds the tensor's
  // TotalTensorSizeInBytes, an offset that is a multiple of the element size (of 4 where
  // Device::CheckFeatureSupport's VKDML_FEATURE_BINDING_ALIGNMENT says so) and of
  // GuaranteedBaseOffsetAlignment, and for a vkdml::Buffer a range inside it. vkdml cannot see
  // the size or lifetime of the caller's own VkBuffers: keeping those valid is the caller's.
  virtual Result BindInputs(UINT count, const DML_BUFFER_BINDING* bindings) = 0;
  virtual Result BindOutputs(UINT count, const DML_BUFFER_BINDING* bindings) = 0;
  // After a checked execution (VKDML_EXECUTION_FLAG_CHECK_INDICES) has completed: Ok, or
  // IndexOutOfRange naming the first offending index (its position in IndicesTensor, its value
  // and the valid range). Ok for an unchecked operator.
  virtual Result IndexStatus() = 0;
};

}  // namespace vkdml
