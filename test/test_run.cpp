// Device::Run records its commands once per operator and arena, then replays them: each call
// must still see its own inputs, and switching operators or arena sizes must re-record.
#include "test_util.h"

using namespace vt;

namespace {

// A compiled GatherElements over n floats along axis 0, and a host-side call of it.
struct Gather {
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  UINT n;

  explicit Gather(UINT count) : n(count) {
    OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_UINT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}), 0);
    REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
    REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  }

  // Runs with input[i] = seed + i and indices reversed; checks every output element.
  void RunAndCheck(float seed) {
    std::vector<float> in(n), out(n, -1.0f);
    std::vector<uint32_t> idx(n);
    for (UINT i = 0; i < n; ++i) {
      in[i] = seed + float(i);
      idx[i] = n - 1 - i;
    }
    Result r = Dev().Run(*compiled, {in.data(), idx.data()}, {out.data()});
    INFO("n = " << n << ", seed = " << seed << ": " << Str(r));
    REQUIRE(r.ok());
    UINT wrong = 0;
    for (UINT i = 0; i < n; ++i) wrong += out[i] != in[n - 1 - i];
    CHECK(wrong == 0);
  }
};

}  // namespace

TEST_CASE_METHOD(Fixture, "Run: replayed commands see each call's data", "[run]") {
  Gather small(1000), other(777), large(200000);  // large: past the 256 KiB direct arena
  for (float seed : {1.0f, 5000.0f, -3.0f}) small.RunAndCheck(seed);
  other.RunAndCheck(7.0f);  // another operator re-records
  small.RunAndCheck(11.0f);
  large.RunAndCheck(13.0f);  // a bigger arena: staged through device memory
  large.RunAndCheck(17.0f);
  small.RunAndCheck(19.0f);  // back to direct in the grown arena
  other.RunAndCheck(23.0f);
  RequireNoValidationMessages();
}

TEST_CASE_METHOD(Fixture, "Run: an operator destroyed and remade is not mistaken for its replay",
                 "[run]") {
  for (int round = 0; round < 3; ++round) {
    // A fresh operator may reuse the last one's address; Run must still re-record.
    Gather g(300 + 100 * round);
    g.RunAndCheck(float(round));
    g.RunAndCheck(float(round) + 0.5f);
  }
  RequireNoValidationMessages();
}

// A binding table recorded twice into one command buffer, the caller's barrier between (as a
// renderer records each frame): vkdml orders its own scratch (checked mode's status word,
// ScatterND's mask, the tie marks), which the caller cannot see, so synchronization validation
// stays silent and the second execution gives the right bytes.
TEST_CASE_METHOD(Fixture, "RecordDispatch: one table twice in a command buffer", "[run]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, u32 = DML_TENSOR_DATA_TYPE_UINT32;
  const auto t = [](DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes) {
    return TensorDesc(type, std::move(sizes));
  };
  struct Case {
    const char* what;
    OpSpec spec;
    UINT flags;
  };
  std::vector<Case> cases = {
      {"checked GatherElements (status word)",
       OpSpec::GatherElements(t(f32, {8, 128}), t(u32, {8, 128}), t(f32, {8, 128}), 1),
       VKDML_EXECUTION_FLAG_CHECK_INDICES},
      {"ScatterND with wide slices (mask)",
       OpSpec::ScatterND(t(f32, {8, 128}), t(u32, {4, 1}), t(f32, {4, 128}), t(f32, {8, 128}), 2,
                         2),
       0},
      {"deterministic ScatterElements MAX (tie marks)",
       OpSpec::ScatterElements(t(f32, {8, 128}), t(u32, {8, 128}), t(f32, {8, 128}),
                               t(f32, {8, 128}), 1)
           .WithReduce(VKDML_REDUCE_FUNCTION_MAX),
       VKDML_EXECUTION_FLAG_DETERMINISTIC}};
  auto barrier = reinterpret_cast<PFN_vkCmdPipelineBarrier>(
      Dev().GetDeviceProcAddr()(Dev().Handle(), "vkCmdPipelineBarrier"));
  REQUIRE(barrier);
  for (Case& c : cases) {
    INFO(c.what << ": " << c.spec.ToString());
    std::unique_ptr<Operator> op;
    REQUIRE(Dev().CreateOperator(c.spec.Desc(), &op).ok());
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Dev().CompileOperator(*op, c.flags, &compiled).ok());
    // Inputs of distinct values (input, updates), indices i % size of the scattered axis.
    std::vector<std::unique_ptr<Buffer>> buffers(c.spec.tensors.size());
    std::vector<DML_BUFFER_BINDING> bindings;
    std::vector<Bytes> images;
    for (size_t i = 0; i < c.spec.tensors.size(); ++i) {
      const UINT64 size = c.spec.tensors[i].Total();
      Bytes image(size);
      for (UINT64 e = 0; e < size / 4; ++e) {
        const uint32_t v = i == 1 ? uint32_t(e % (c.spec.type == DML_OPERATOR_SCATTER_ND ? 8 : 4))
                                  : 0x3F800000u + uint32_t(e * 977 + i * 131) % 4096;
        std::memcpy(image.data() + e * 4, &v, 4);
      }
      REQUIRE(Dev().CreateBuffer(size, Buffer::Memory::HostVisible, &buffers[i]).ok());
      REQUIRE(buffers[i]->Write(0, image.data(), size).ok());
      bindings.push_back(buffers[i]->Binding());
      images.push_back(image);
    }
    std::unique_ptr<BindingTable> table;
    REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
    const UINT nIn = c.spec.InputCount();
    REQUIRE(table->BindInputs(nIn, bindings.data()).ok());
    REQUIRE(table->BindOutputs(1, bindings.data() + nIn).ok());
    Result first, second;
    const Result submitted = Dev().Submit([&](VkCommandBuffer cmd) {
      first = Dev().RecordDispatch(cmd, *table);
      VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr,
                        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
      barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
              &b, 0, nullptr, 0, nullptr);
      second = Dev().RecordDispatch(cmd, *table);
    });
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    REQUIRE(submitted.ok());
    CHECK(table->IndexStatus().ok());
    // Twice is once for these: a gather, a scatter without reduction, MAX into its own result.
    Bytes expected = Poisoned(c.spec.Output().Total());
    std::vector<Bytes> inputs(images.begin(), images.begin() + nIn);
    c.spec.Reference(inputs, &expected);
    Bytes actual(c.spec.Output().Total());
    REQUIRE(buffers.back()->Read(0, actual.data(), actual.size()).ok());
    const ref::Tensor out = c.spec.Output().Ref();
    INFO(DiffBytes(actual, expected, &out));
    CHECK(actual == expected);
    CHECK(CheckNoValidationMessages());
  }
}
