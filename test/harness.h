// Test harness: one shared vkdml::Device (with the validation layer) and Execute(), which runs an
// operator (op_spec.h) through the recording path or Device::Run with every buffer byte accounted
// for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "op_spec.h"
#include "vkdml/vkdml.h"

namespace vt {

// Points the loader at the driver the build found for the tests (lavapipe) unless the caller
// chose drivers (VK_DRIVER_FILES / VK_ICD_FILENAMES set); before any Vulkan call.
void PinTestDriver();
// The device every test shares, created on first use with validation on. Validation messages
// are collected; Fixture fails a test that produced any.
Device& Dev();
// The shared device's limits, as Vulkan reports them.
VkPhysicalDeviceLimits Limits();
// The device's maxMemoryAllocationSize (VkPhysicalDeviceMaintenance3Properties).
UINT64 MaxAllocationSize();
bool HaveDevice();
void DestroyDevice();
std::vector<std::string> TakeValidationMessages();
// FAILs (REQUIRE-style) with the text of every validation message that arrived.
void RequireNoValidationMessages();
// The same, but a non-fatal failure (each distinct message printed once per process); returns
// whether none arrived.
bool CheckNoValidationMessages();

// Every TEST_CASE_METHOD(vt::Fixture, ...) fails if a validation message arrived during it.
struct Fixture {
  Fixture();
  ~Fixture();
};

// The poison byte written into every output buffer before a run.
constexpr uint8_t kPoison = 0xA5;

enum class Path { Record, Run };

struct ExecOptions {
  Path path = Path::Record;
  Buffer::Memory memory = Buffer::Memory::DeviceLocal;
  UINT flags = DML_EXECUTION_FLAG_NONE;
  // Record path: byte offset of each binding (inputs, then outputs) in its buffer; missing = 0.
  std::vector<UINT64> offsets;
  bool oneBuffer = false;  // every binding a sub-range of one buffer
  UINT64 guard = 64;       // bytes after each binding that must stay untouched
  bool inPlace = false;    // bind the output to input 0's exact range (a scatter in place)
};

struct ExecResult {
  std::vector<Bytes> outputs;   // each output's TotalTensorSizeInBytes bytes after the run
  Result indexStatus;           // BindingTable::IndexStatus() (record path)
  Result runResult;             // Device::Run's result (run path)
  bool outsideClean = true;     // record path: nothing outside the output changed
  bool validationClean = true;  // no validation message during the run (else a failed check)
};

// Runs spec once. inputs: one image per input (TotalTensorSizeInBytes each); outputs: the initial
// image of each output. REQUIREs every API call to succeed (except Run's result, which is
// returned), CHECKs that every byte outside the output tensors, inputs included, is unchanged
// and that no validation message arrived.
ExecResult Execute(OpSpec& spec, const std::vector<Bytes>& inputs,
                   const std::vector<Bytes>& outputs, const ExecOptions& opts);

// VKDML_TEST_LARGE=1: what happened to the compiles Execute made. taken: through the large
// path's windows; tiny: every tensor within 16 bytes, a window's least (windows hold whole
// 16-byte vectors); tupleWide: an index tuple spanning about as much as the largest tensor (a
// tuple must fit one window). The last two run off the large path; nothing else may.
struct LargeTally {
  int taken = 0, tiny = 0, tupleWide = 0;
  int belowSmallest = 0;  // of `taken`, through windows below every tensor past 16 bytes
  int deterministic = 0;  // of `taken`, compiled with VKDML_EXECUTION_FLAG_DETERMINISTIC
};
LargeTally& TheLargeTally();

// Compiles op as Execute does under VKDML_TEST_LARGE (harness.cpp says how it picks the range).
Result CompileLarge(OpSpec& spec, const Operator& op, UINT flags,
                    std::unique_ptr<CompiledOperator>* out);

// Empty when equal; else a description of the first differing bytes (and how many differ).
// `tensor` (optional) names element coordinates of mismatching bytes.
std::string DiffBytes(const Bytes& actual, const Bytes& expected, const ref::Tensor* tensor);

Bytes Poisoned(UINT64 size);
std::string Str(const Result& r);

}  // namespace vt
