// Embedding: a Device made from the caller's own Vulkan objects (here, the shared test device's
// handles) runs operators, honours the features the caller says it enabled, and destroys
// nothing it borrowed.
#include "test_util.h"

using namespace vt;

namespace {

// GatherElements {3} -> {3} on `device`: output = input[indices].
std::vector<float> GatherOn(Device& device) {
  OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {3}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3}), 0);
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(device.CreateOperator(spec.Desc(), &op).ok());
  REQUIRE(device.CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  const float in[3] = {10, 20, 30};
  const int32_t idx[3] = {2, -3, 1};
  std::vector<float> out(3, -1);
  Result r = device.Run(*compiled, {in, idx}, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  return out;
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Embedding: a Device over the caller's VkDevice runs operators",
                 "[embedding]") {
  std::unique_ptr<Device> borrowed;
  Result r = CreateDevice(Borrowed(Dev(), Dev().Info().enabled), &borrowed);
  INFO(Str(r));
  REQUIRE(r.ok());
  CHECK(borrowed->Handle() == Dev().Handle());
  CHECK(borrowed->Queue() == Dev().Queue());
  CHECK(borrowed->Info().name == Dev().Info().name);
  CHECK(GatherOn(*borrowed) == std::vector<float>{30, 10, 20});
  borrowed.reset();
  // The owner's VkDevice and VkInstance survived the borrower.
  CHECK(GatherOn(Dev()) == std::vector<float>{30, 10, 20});
}

// Without 8/16-bit storage, 1- and 2-byte elements move in 32-bit words: every type still runs,
// exactly, each element written without touching its neighbours in the word, and the bindings'
// offsets must be multiples of 4 (CheckFeatureSupport says so, and binding says why).
TEST_CASE_METHOD(Fixture, "Embedding: types whose storage feature the caller did not enable",
                 "[embedding]") {
  std::unique_ptr<Device> borrowed;
  REQUIRE(CreateDevice(Borrowed(Dev(), DeviceFeatures{}), &borrowed).ok());
  CHECK(!borrowed->Info().enabled.storageBuffer8BitAccess);
  CHECK(!borrowed->Info().enabled.storageBuffer16BitAccess);
  const struct {
    DML_TENSOR_DATA_TYPE type;
    const char* feature;
  } needs[] = {{DML_TENSOR_DATA_TYPE_INT8, "storageBuffer8BitAccess"},
               {DML_TENSOR_DATA_TYPE_UINT8, "storageBuffer8BitAccess"},
               {DML_TENSOR_DATA_TYPE_FLOAT16, "storageBuffer16BitAccess"},
               {DML_TENSOR_DATA_TYPE_UINT16, "storageBuffer16BitAccess"}};
  for (const auto& n : needs) {
    INFO(DataTypeName(n.type));
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {n.type};
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {0};
    REQUIRE(borrowed->CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q,
                                          sizeof d, &d));
    CHECK(d.IsSupported == 1);
    VKDML_FEATURE_QUERY_BINDING_ALIGNMENT aq = {n.type};
    VKDML_FEATURE_DATA_BINDING_ALIGNMENT ad = {0};
    REQUIRE(borrowed->CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT, sizeof aq, &aq,
                                          sizeof ad, &ad));
    CHECK(ad.OffsetAlignment == 4);
    // Seven elements (a word and a part): each output element from another word's lane.
    const UINT es = DataTypeSize(n.type);
    OpSpec spec =
        OpSpec::GatherElements(TensorDesc(n.type, {7}), TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {7}),
                               TensorDesc(n.type, {7}), 0);
    std::unique_ptr<Operator> op;
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(borrowed->CreateOperator(spec.Desc(), &op).ok());
    REQUIRE(borrowed->CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    std::vector<uint8_t> in(op->InputSize(0)), out(op->OutputSize(0), 0xEE), expected = out;
    for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(0x11 * (i + 1));
    const int32_t idx[7] = {6, 0, 5, 1, 4, 2, 3};
    for (UINT i = 0; i < 7; ++i) std::memcpy(&expected[i * es], &in[idx[i] * es], es);
    Result r = borrowed->Run(*compiled, {in.data(), idx}, {out.data()});
    INFO(Str(r));
    REQUIRE(r.ok());
    CHECK(out == expected);
    // A binding at an offset of one element: refused, naming the feature.
    std::unique_ptr<BindingTable> table;
    REQUIRE(borrowed->CreateBindingTable(*compiled, &table).ok());
    std::unique_ptr<Buffer> buffer;
    REQUIRE(borrowed->CreateBuffer(256, Buffer::Memory::DeviceLocal, &buffer).ok());
    const DML_BUFFER_BINDING inputs[2] = {buffer->Binding(es, op->InputSize(0)),
                                          buffer->Binding(128, op->InputSize(1))};
    r = table->BindInputs(2, inputs);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == "inputs[0].Offset is " + std::to_string(es) +
                           ", expected a multiple of 4: device " + Dev().Info().name + " lacks " +
                           n.feature + ", so its kernels move " + DataTypeName(n.type) +
                           " elements in the 4-byte words that hold them (InputTensor)");
  }
  // 4- and 8-byte types need nothing optional.
  CHECK(GatherOn(*borrowed) == std::vector<float>{30, 10, 20});
  OpSpec wide = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_UINT64, {4}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4}), 0);
  std::unique_ptr<Operator> op;
  CHECK(borrowed->CreateOperator(wide.Desc(), &op).ok());
}

// A float64 value's bits that stress soft float64: zeros, denormals (tiny, mid, largest),
// normals near 1, near the overflow and underflow edges and anywhere, the largest finite,
// infinities, quiet and signalling NaNs with payloads; either sign.
uint64_t HardDouble(std::mt19937_64& rng) {
  const uint64_t sign = rng() & 1 ? uint64_t(1) << 63 : 0, mantissa = rng() >> 12;
  auto bits = [&](uint64_t exponent, uint64_t m) { return sign | exponent << 52 | m; };
  switch (rng() % 12) {
    case 0:
      return bits(0, 0);
    case 1:
      return bits(0, mantissa >> (rng() % 52));  // a denormal (or zero)
    case 2:
      return bits(0, (uint64_t(1) << 52) - 1 - (rng() % 4));  // near the smallest normal
    case 3:
      return bits(1 + rng() % 60, mantissa);  // tiny normals: products underflow
    case 4:
      return bits(2046 - rng() % 60, mantissa);  // huge: sums and products overflow
    case 5:
      return bits(2046, (uint64_t(1) << 52) - 1);  // the largest finite
    case 6:
      return bits(2047, 0);  // infinity
    case 7:
      return bits(2047, mantissa | 1);  // a NaN, quiet or signalling
    case 8:
      return bits(1023 + rng() % 3 - 1, rng() % 2 ? mantissa : mantissa & ~uint64_t(0xFFF));
    default:
      return bits(1023 - 40 + rng() % 80, mantissa);  // near 1: sums that cancel, or round
  }
}

// Without shaderFloat64, FLOAT64 reductions compute in 32-bit integer arithmetic: bit for bit
// what an x86-64 CPU computes (denormals, rounding ties, overflow, NaNs and x86-64's default
// NaN), through the atomic kernel and through a deterministic execution's sorted one. 16384
// pairs of hard operands, each pair one target's two values.
TEST_CASE_METHOD(Fixture, "Embedding: a FLOAT64 reduction without shaderFloat64",
                 "[embedding][reduce]") {
  DeviceFeatures features = Dev().Info().enabled;  // all but float64
  features.shaderFloat64 = false;
  std::unique_ptr<Device> borrowed;
  REQUIRE(CreateDevice(Borrowed(Dev(), features), &borrowed).ok());
  CHECK(!borrowed->Info().enabled.shaderFloat64);
  const DML_TENSOR_DATA_TYPE f64 = DML_TENSOR_DATA_TYPE_FLOAT64, i32 = DML_TENSOR_DATA_TYPE_INT32;
  constexpr UINT n = 1 << 14;  // pairs (x, u): output[i] = f(x[i], u[i])
  std::mt19937_64 rng(BaseSeed() ^ 0xF64);
  std::vector<uint64_t> x(n), u(n);
  for (UINT i = 0; i < n; ++i) {
    x[i] = HardDouble(rng);
    u[i] = i % 4 == 0 ? x[i] ^ (uint64_t(1) << 63) : HardDouble(rng);  // x - x too
  }
  std::vector<int32_t> identity(n);
  for (UINT i = 0; i < n; ++i) identity[i] = int32_t(i);
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
                                  VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
    VKDML_FEATURE_QUERY_REDUCTION_SUPPORT q = {f64, f};
    VKDML_FEATURE_DATA_REDUCTION_SUPPORT d = {0};
    REQUIRE(
        borrowed->CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof q, &q, sizeof d, &d));
    CHECK(d.IsSupported == 1);
    OpSpec spec = OpSpec::ScatterElements(TensorDesc(f64, {n}), TensorDesc(i32, {n}),
                                          TensorDesc(f64, {n}), TensorDesc(f64, {n}), 0);
    spec.WithReduce(f);
    std::vector<uint64_t> expected(n);
    for (UINT i = 0; i < n; ++i)
      ref::Reduce(f64, f, reinterpret_cast<uint8_t*>(&(expected[i] = x[i])),
                  reinterpret_cast<const uint8_t*>(&u[i]));
    const bool arithmetic = f == VKDML_REDUCE_FUNCTION_ADD || f == VKDML_REDUCE_FUNCTION_MULTIPLY;
    for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
      INFO("ReduceFunction " << f << (flags ? ", deterministic" : ""));
      std::unique_ptr<Operator> op;
      std::unique_ptr<CompiledOperator> compiled;
      REQUIRE(borrowed->CreateOperator(spec.Desc(), &op).ok());
      REQUIRE(borrowed->CompileOperator(*op, flags, &compiled).ok());
      std::vector<uint64_t> out(n);
      REQUIRE(borrowed->Run(*compiled, {x.data(), identity.data(), u.data()}, {out.data()}).ok());
      // Of two NaNs, IEEE 754 and x86-64 give one of them made quiet, and which one depends on
      // the order the compiler gave the operands (vkdml gives the first): either is right.
      const uint64_t quiet = uint64_t(1) << 51;
      auto isNan = [](uint64_t v) { return (v << 1) > (uint64_t(0x7FF) << 53); };
      UINT wrong = 0;
      for (UINT i = 0; i < n; ++i)
        if (out[i] != expected[i] &&
            !(arithmetic && isNan(x[i]) && isNan(u[i]) &&
              (out[i] == (x[i] | quiet) || out[i] == (u[i] | quiet))) &&
            ++wrong <= 5)
          FAIL_CHECK(std::hex << "f(0x" << x[i] << ", 0x" << u[i] << ") is 0x" << out[i]
                              << ", expected 0x" << expected[i]);
      CHECK(wrong == 0);
    }
  }
  // Integer reductions on 8-byte elements need no optional feature: without 64-bit atomics,
  // ADD takes two 32-bit atomics and the others the sorted path.
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY}) {
    OpSpec spec =
        OpSpec::ScatterElements(TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4}), TensorDesc(i32, {3}),
                                TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {3}),
                                TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4}), 0);
    spec.WithReduce(f);
    std::unique_ptr<Operator> op;
    REQUIRE(borrowed->CreateOperator(spec.Desc(), &op).ok());
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(borrowed->CompileOperator(*op, 0, &compiled).ok());
    const int64_t input[4] = {1, 2, 3, 4}, updates[3] = {10, -3, 5};
    const int32_t indices[3] = {1, 1, 3};
    int64_t out[4] = {};
    REQUIRE(borrowed->Run(*compiled, {input, indices, updates}, {out}).ok());
    const std::vector<int64_t> expected = f == VKDML_REDUCE_FUNCTION_ADD
                                              ? std::vector<int64_t>{1, 9, 3, 9}
                                              : std::vector<int64_t>{1, -60, 3, 20};
    CHECK(std::vector<int64_t>(out, out + 4) == expected);
  }
}

TEST_CASE_METHOD(Fixture, "Embedding: an incomplete DeviceDesc is refused", "[embedding]") {
  DeviceDesc d = Borrowed(Dev(), {});
  d.queue = VK_NULL_HANDLE;
  std::unique_ptr<Device> borrowed;
  Result r = CreateDevice(d, &borrowed);
  CHECK(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message, Catch::Matchers::Contains("queue"));
}

TEST_CASE_METHOD(Fixture, "Embedding: a queueFamilyIndex the device does not have is refused",
                 "[embedding]") {
  DeviceDesc d = Borrowed(Dev(), {});
  d.queueFamilyIndex = 1000;  // no Vulkan device has that many families
  std::unique_ptr<Device> borrowed;
  Result r = CreateDevice(d, &borrowed);
  INFO(Str(r));
  CHECK(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message,
             Catch::Matchers::Contains("DeviceDesc.queueFamilyIndex is 1000, expected less than "));
  CHECK(!borrowed);
}

// A binding table keeps what it uses of its compiled operator: both the Operator and the
// CompiledOperator may be destroyed first, and the table still binds, records and reports.
TEST_CASE_METHOD(Fixture, "Embedding: a binding table outlives its compiled operator",
                 "[embedding]") {
  OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {4}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {4}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {4}), 0);
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  std::unique_ptr<BindingTable> table;
  REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
  REQUIRE(Dev().CompileOperator(*op, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
  REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
  compiled.reset();
  op.reset();

  std::unique_ptr<Buffer> in, idx, out;
  REQUIRE(Dev().CreateBuffer(16, Buffer::Memory::HostVisible, &in).ok());
  REQUIRE(Dev().CreateBuffer(16, Buffer::Memory::HostVisible, &idx).ok());
  REQUIRE(Dev().CreateBuffer(16, Buffer::Memory::HostVisible, &out).ok());
  const float a[4] = {10, 20, 30, 40};
  const int32_t i[4] = {3, -4, 9, 1};  // 9 is out of range: clamped to 3, and reported
  REQUIRE(in->Write(0, a, 16).ok());
  REQUIRE(idx->Write(0, i, 16).ok());
  DML_BUFFER_BINDING ins[] = {in->Binding(), idx->Binding()}, outs[] = {out->Binding()};
  REQUIRE(table->BindInputs(2, ins).ok());
  REQUIRE(table->BindOutputs(1, outs).ok());
  Result recorded;
  Result r =
      Dev().Submit([&](VkCommandBuffer cmd) { recorded = Dev().RecordDispatch(cmd, *table); });
  INFO(Str(recorded) << " / " << Str(r));
  REQUIRE(recorded.ok());
  REQUIRE(r.ok());
  float b[4] = {};
  REQUIRE(out->Read(0, b, 16).ok());
  CHECK(std::vector<float>(b, b + 4) == std::vector<float>{40, 10, 40, 20});
  r = table->IndexStatus();
  CHECK(r.status == Status::IndexOutOfRange);
  CHECK_THAT(r.message, Catch::Matchers::Contains("9"));
}

// Submit and Run wait on a timeline semaphore where the caller enabled one, else on a fence.
// Either way the host must see every byte of work that keeps the device busy for a while.
TEST_CASE_METHOD(Fixture, "Embedding: Submit and Run wait on a fence or a timeline semaphore",
                 "[embedding]") {
  for (bool timeline : {false, true}) {
    if (timeline && !Dev().Info().enabled.timelineSemaphore) continue;
    INFO((timeline ? "timeline semaphore" : "fence"));
    DeviceFeatures features;
    features.timelineSemaphore = timeline;
    std::unique_ptr<Device> borrowed;
    REQUIRE(CreateDevice(Borrowed(Dev(), features), &borrowed).ok());
    CHECK(borrowed->Info().enabled.timelineSemaphore == timeline);

    // Buffer::Write and Read of device memory: a staging copy and a Submit each way.
    const size_t bytes = size_t(8) << 20;
    std::vector<uint8_t> data(bytes), back(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = uint8_t((i * 2654435761u) >> 13);
    std::unique_ptr<Buffer> buffer;
    REQUIRE(borrowed->CreateBuffer(bytes, Buffer::Memory::DeviceLocal, &buffer).ok());
    REQUIRE(buffer->Write(0, data.data(), bytes).ok());
    REQUIRE(buffer->Read(0, back.data(), bytes).ok());
    CHECK(back == data);

    // Run: a reversal too large to bind the host arenas directly (copies in, gather, copies out).
    const UINT n = 1u << 19;
    OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_UINT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}), 0);
    std::unique_ptr<Operator> op;
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(borrowed->CreateOperator(spec.Desc(), &op).ok());
    REQUIRE(borrowed->CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    std::vector<float> in(n), out(n, -1.0f);
    std::vector<uint32_t> idx(n);
    for (UINT i = 0; i < n; ++i) {
      in[i] = float(i);
      idx[i] = n - 1 - i;
    }
    REQUIRE(borrowed->Run(*compiled, {in.data(), idx.data()}, {out.data()}).ok());
    UINT wrong = 0;
    for (UINT i = 0; i < n; ++i) wrong += out[i] != float(n - 1 - i);
    CHECK(wrong == 0);
  }
}
