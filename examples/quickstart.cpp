// vkdml's quick start: one GatherND (the first example of its operator page), run twice. First
// through Device::Run, with host memory in and out; then recorded into a command buffer, with the
// tensors in a buffer that vkdml allocates. Exit status 0 when both give {2, 3, 0, 1}, else 1.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include <vkdml/vkdml.h>

using namespace vkdml;

// Every vkdml call returns a Result: on failure its message says what was wrong and where.
static bool Failed(const char* call, const Result& r) {
  if (!r) std::fprintf(stderr, "%s: %s\n", call, r.message.c_str());
  return !r;
}

int main() {
  // The device: vkdml creates its own Vulkan instance and device on the first discrete GPU, else
  // the first device (or adopts yours: see Embedding in README.md).
  std::unique_ptr<Device> device;
  Result r = CreateDevice(DeviceDesc{}, &device);
  if (Failed("CreateDevice", r)) return 1;

  // The tensors, in DirectML's structs: a 2x2 FLOAT32 input, 2x1 INT64 indices (each names a row
  // of the input) and an output shaped like the input. Strides nullptr: packed.
  UINT inSizes[] = {2, 2}, idxSizes[] = {2, 1};
  UINT64 inBytes = CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_FLOAT32, 2, inSizes, nullptr);
  UINT64 idxBytes = CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_INT64, 2, idxSizes, nullptr);
  DML_BUFFER_TENSOR_DESC in{
      DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_FLAG_NONE, 2, inSizes, nullptr, inBytes, 0};
  DML_BUFFER_TENSOR_DESC idx{
      DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_FLAG_NONE, 2, idxSizes, nullptr, idxBytes, 0};
  DML_TENSOR_DESC input{DML_TENSOR_TYPE_BUFFER, &in}, indices{DML_TENSOR_TYPE_BUFFER, &idx},
      output{DML_TENSOR_TYPE_BUFFER, &in};
  // InputDimensionCount 2, IndicesDimensionCount 2.
  DML_GATHER_ND_OPERATOR_DESC gather{&input, &indices, &output, 2, 2};

  // All validation happens here: a wrong descriptor's message names the field, its value and
  // the value expected.
  std::unique_ptr<Operator> op;
  r = device->CreateOperator({DML_OPERATOR_GATHER_ND, &gather}, &op);
  if (Failed("CreateOperator", r)) return 1;
  // Compiling builds the pipelines; compile once, execute many times.
  std::unique_ptr<CompiledOperator> compiled;
  r = device->CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled);
  if (Failed("CompileOperator", r)) return 1;

  const float data[4] = {0, 1, 2, 3};  // [[0, 1], [2, 3]]
  const int64_t rows[2] = {1, 0};      // row 1, then row 0
  const float expected[4] = {2, 3, 0, 1};

  // 1. The convenience path: host memory in and out, in binding order (input, indices; output).
  float out[4] = {};
  r = device->Run(*compiled, {data, rows}, {out});
  if (Failed("Run", r)) return 1;
  if (std::memcmp(out, expected, sizeof out) != 0) {
    std::fprintf(stderr, "Run gave {%g, %g, %g, %g}, expected {2, 3, 0, 1}\n", out[0], out[1],
                 out[2], out[3]);
    return 1;
  }

  // 2. The recording path. The tensors live in Vulkan buffers, here one that vkdml allocates
  // (your own VkBuffers work the same way): input at byte offset 0, indices at 16, output at 256.
  const UINT64 inOffset = 0, idxOffset = 16, outOffset = 256;
  std::unique_ptr<Buffer> buffer;
  r = device->CreateBuffer(outOffset + inBytes, Buffer::Memory::DeviceLocal, &buffer);
  if (Failed("CreateBuffer", r)) return 1;
  // Write and Read copy through a staging buffer (the memory is device-local) and return when
  // the copy is done.
  r = buffer->Write(inOffset, data, sizeof data);
  if (Failed("Buffer::Write", r)) return 1;
  r = buffer->Write(idxOffset, rows, sizeof rows);
  if (Failed("Buffer::Write", r)) return 1;

  // A binding table tells the compiled operator where each tensor is: {buffer, offset, size}.
  std::unique_ptr<BindingTable> table;
  r = device->CreateBindingTable(*compiled, &table);
  if (Failed("CreateBindingTable", r)) return 1;
  DML_BUFFER_BINDING inBindings[] = {{buffer->Handle(), inOffset, inBytes},
                                     {buffer->Handle(), idxOffset, idxBytes}};
  DML_BUFFER_BINDING outBindings[] = {{buffer->Handle(), outOffset, inBytes}};
  r = table->BindInputs(2, inBindings);
  if (Failed("BindInputs", r)) return 1;
  r = table->BindOutputs(1, outBindings);
  if (Failed("BindOutputs", r)) return 1;

  // RecordDispatch records the work into a command buffer: here the one Device::Submit begins,
  // then submits and waits for; in your program, yours. Ordering it against other work is the
  // caller's: one barrier makes the copies that wrote the inputs visible to compute shaders, one
  // makes the shaders' output visible to the copy that Buffer::Read does. vkdml links no Vulkan
  // loader, so the Vulkan function comes from the device.
  auto cmdPipelineBarrier = reinterpret_cast<PFN_vkCmdPipelineBarrier>(
      device->GetDeviceProcAddr()(device->Handle(), "vkCmdPipelineBarrier"));
  Result recorded;
  r = device->Submit([&](VkCommandBuffer cmd) {
    VkMemoryBarrier inputsWritten{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT};
    cmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                       1, &inputsWritten, 0, nullptr, 0, nullptr);
    recorded = device->RecordDispatch(cmd, *table);
    VkMemoryBarrier outputWritten{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                                  VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT};
    cmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                       1, &outputWritten, 0, nullptr, 0, nullptr);
  });
  if (Failed("RecordDispatch", recorded) || Failed("Submit", r)) return 1;

  float result[4] = {};
  r = buffer->Read(outOffset, result, sizeof result);
  if (Failed("Buffer::Read", r)) return 1;
  if (std::memcmp(result, expected, sizeof result) != 0) {
    std::fprintf(stderr, "RecordDispatch gave {%g, %g, %g, %g}, expected {2, 3, 0, 1}\n", result[0],
                 result[1], result[2], result[3]);
    return 1;
  }
  std::printf("GatherND on %s: {2, 3, 0, 1} through Device::Run and through RecordDispatch\n",
              device->Info().name.c_str());
  return 0;
}
