// What the command-line tool's commands share: exit statuses, host tensors (onnx_map.h), device
// selection and running one operator (cli.cpp, which the Python module links too, through
// vkdml_cli_core), and each command's entry point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnx_map.h"  // HostTensor
#include "vkdml/vkdml.h"

namespace cli {

// Exit statuses: bad input (usage, files, shapes, indices), device failures, and memory
// exhaustion (host memory, or a Vulkan allocation: VK_ERROR_OUT_OF_{HOST,DEVICE}_MEMORY).
constexpr int kExitBadInput = 2;
constexpr int kExitDevice = 1;
constexpr int kExitOutOfMemory = 3;

// --device N: Ok for -1 (the default) or the index of a Vulkan device, else
// Status::InvalidArgument naming the valid range.
vkdml::Result CheckDeviceIndex(int index);
// Creates device `index` (-1: the first discrete GPU, else the first device), checked as above.
vkdml::Result OpenDevice(int index, std::unique_ptr<vkdml::Device>* out);

// CreateOperator (all validation) and CompileOperator(flags): everything before the output
// needs memory.
vkdml::Result Prepare(vkdml::Device& device, const vkdml::DML_OPERATOR_DESC& desc,
                      vkdml::UINT flags, std::unique_ptr<vkdml::CompiledOperator>* out);
// Device::Run: inputs in binding order, the output into `output` (its OutputSize(0) bytes, which
// hold its initial contents where the operator leaves bytes unwritten).
vkdml::Result RunPrepared(vkdml::Device& device, const vkdml::CompiledOperator& op,
                          const std::vector<HostTensor*>& inputs, void* output);
// Both, the output into output->bytes (resized to OutputSize(0)): for small work.
vkdml::Result Execute(vkdml::Device& device, const vkdml::DML_OPERATOR_DESC& desc,
                      vkdml::UINT flags, const std::vector<HostTensor*>& inputs,
                      HostTensor* output);

// kExitBadInput for InvalidArgument and IndexOutOfRange, kExitOutOfMemory for OutOfMemory,
// kExitDevice for the rest.
int ExitStatus(const vkdml::Result& r);

// Parses "--device N"-style integers; false if text is not a whole decimal integer.
bool ParseInt(const std::string& text, int64_t* out);

// value as a float16's bits, rounded to nearest even (NumPy's float16(value)).
uint16_t HalfBits(double value);

// The commands: argv[0] is the command's name, the return value the exit status.
// `vkdml run ...`, in run.cpp: an ONNX operator on .npy arrays, mapped onto DirectML.
int RunMain(int argc, char** argv);
// `vkdml run moe-permute|moe-unpermute ...`, in moe.cpp (RunMain hands them over).
int MoeMain(int argc, char** argv);
// `vkdml demo ...`, in demo.cpp: the operator pages' examples.
int DemoMain(int argc, char** argv);
// `vkdml paged-cache-write ...` and `vkdml paged-gather ...`, in paged.cpp: the paged KV cache.
int PagedWriteMain(int argc, char** argv);
int PagedGatherMain(int argc, char** argv);

}  // namespace cli
