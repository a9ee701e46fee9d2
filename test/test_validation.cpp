// One test per validation rule of test/SEMANTICS.md (1-32 and the binding rules): the Status and
// the message (operator prefix, field name, actual and expected values where the doc gives them).
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "harness.h"
#include "test_util.h"
#include "vk_hooks.h"

using namespace vt;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const DML_TENSOR_DATA_TYPE F32 = DML_TENSOR_DATA_TYPE_FLOAT32;
const DML_TENSOR_DATA_TYPE F16 = DML_TENSOR_DATA_TYPE_FLOAT16;
const DML_TENSOR_DATA_TYPE I32 = DML_TENSOR_DATA_TYPE_INT32;
const DML_TENSOR_DATA_TYPE I64 = DML_TENSOR_DATA_TYPE_INT64;

// Valid baselines, D = 3.
OpSpec BaseGatherND() {
  // data {3,4} (r 2), indices {5,1} (q 2) -> output {5} + {4} = {1,5,4}
  return OpSpec::GatherND(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 5, 1}),
                          TensorDesc(F32, {1, 5, 4}), 2, 2);
}
OpSpec BaseGatherND1() {
  // data {2,3,4} (r 3), indices {2,5,1} (q 3), batch 1 -> output {2,5} + {4} = {2,5,4}
  return OpSpec::GatherND1(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {2, 5, 1}),
                           TensorDesc(F32, {2, 5, 4}), 3, 3, 1);
}
OpSpec BaseGatherElements() {
  return OpSpec::GatherElements(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 2, 4}),
                                TensorDesc(F32, {1, 2, 4}), 1);
}
OpSpec BaseScatterND() {
  return OpSpec::ScatterND(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 5, 1}),
                           TensorDesc(F32, {1, 5, 4}), TensorDesc(F32, {1, 3, 4}), 2, 2);
}

OpSpec BaseScatterElements() {
  // input {1,3,4}, axis 1: indices and updates {1,2,4}
  return OpSpec::ScatterElements(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 2, 4}),
                                 TensorDesc(F32, {1, 2, 4}), TensorDesc(F32, {1, 3, 4}), 1);
}

OpSpec BaseGather() {
  // input {1,3,4}, axis 1, indices {1,2,5} with IndexDimensions 2: {1} + {2,5} + {4}, the
  // input's leading 1 dropped -> output {2,5,4}
  return OpSpec::Gather(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 2, 5}),
                        TensorDesc(F32, {2, 5, 4}), 1, 2);
}

std::vector<std::function<OpSpec()>> AllBases() {
  return {BaseGatherND,  BaseGatherND1,       BaseGatherElements,
          BaseScatterND, BaseScatterElements, BaseGather};
}

Result Create(const DML_OPERATOR_DESC& desc) {
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(desc, &op);
  if (r.ok()) CHECK(op != nullptr);
  return r;
}

// Creates spec.op as it is now (after mutations of the typed desc / tensors).
Result CreateRaw(OpSpec& spec) {
  return Create(spec.op);
}

// Requires status and that the message starts with the operator prefix and contains every
// fragment.
void Expect(const Result& r, Status status, const std::string& prefix,
            const std::vector<std::string>& fragments) {
  INFO("result: " << Str(r));
  REQUIRE(r.status == status);
  if (!prefix.empty()) CHECK_THAT(r.message, StartsWith(prefix + ": "));
  for (const std::string& f : fragments) CHECK_THAT(r.message, Contains(f));
}

void ExpectInvalid(OpSpec& spec, const std::vector<std::string>& fragments) {
  INFO("operator: " << spec.ToString());
  Expect(CreateRaw(spec), Status::InvalidArgument, spec.Name(), fragments);
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Baselines are valid", "[validation]") {
  for (auto& base : AllBases()) {
    OpSpec spec = base();
    spec.Desc();
    INFO(spec.ToString());
    Result r = CreateRaw(spec);
    INFO(Str(r));
    REQUIRE(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Device info", "[validation][device]") {
  const DeviceInfo& info = Dev().Info();
  INFO("device " << info.name << " driver " << info.driverName);
  CHECK(!info.name.empty());
  CHECK(info.maxStorageBufferRange > 0);
  CHECK(info.apiVersion >= VK_MAKE_API_VERSION(0, 1, 1, 0));
  // 1- and 2-byte tensors need these; where the device has them vkdml must use them, or the
  // random tests would silently lose those types.
  CHECK(info.enabled.storageBuffer8BitAccess == info.available.storageBuffer8BitAccess);
  CHECK(info.enabled.storageBuffer16BitAccess == info.available.storageBuffer16BitAccess);
  CHECK(info.enabled.timelineSemaphore == info.available.timelineSemaphore);
}

// Device::CheckFeatureSupport: every data type and every reduction on every device; 1- and
// 2-byte bindings on multiples of 4 exactly where the device lacks 8/16-bit storage; and each
// malformed query refused, naming what is wrong.
TEST_CASE_METHOD(Fixture, "CheckFeatureSupport", "[validation][device]") {
  const DeviceFeatures& enabled = Dev().Info().enabled;
  for (DML_TENSOR_DATA_TYPE type : DataTypes()) {
    INFO(DataTypeName(type));
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {type};
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {-1};
    REQUIRE(Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, sizeof d,
                                      &d));
    CHECK(d.IsSupported == 1);
    for (UINT f = VKDML_REDUCE_FUNCTION_NONE; f <= VKDML_REDUCE_FUNCTION_MEAN; ++f) {
      VKDML_FEATURE_QUERY_REDUCTION_SUPPORT rq = {type, VKDML_REDUCE_FUNCTION(f)};
      VKDML_FEATURE_DATA_REDUCTION_SUPPORT rd = {-1};
      REQUIRE(Dev().CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof rq, &rq, sizeof rd,
                                        &rd));
      CHECK(rd.IsSupported == 1);
    }
    const UINT size = DataTypeSize(type);
    const bool packed = (size == 1 && !enabled.storageBuffer8BitAccess) ||
                        (size == 2 && !enabled.storageBuffer16BitAccess);
    CHECK(BindingAlignment(type) == (packed ? 4 : size));
  }
  DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {F32};
  DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {};
  auto expect = [](const Result& r, const std::string& message) {
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == message);
  };
  expect(Dev().CheckFeatureSupport(DML_FEATURE(7), sizeof q, &q, sizeof d, &d),
         "CheckFeatureSupport: feature is 7, expected DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT (0), "
         "VKDML_FEATURE_REDUCTION_SUPPORT (0x10001), VKDML_FEATURE_BINDING_ALIGNMENT (0x10002) or "
         "VKDML_FEATURE_TENSOR_SIZE (0x10003)");
  expect(Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, 8, &q, sizeof d, &d),
         "CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): query is 8 bytes, expected 4 "
         "bytes");
  expect(Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, nullptr,
                                   sizeof d, &d),
         "CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): query is null, expected 4 "
         "bytes");
  expect(Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, 1, &d),
         "CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): support is 1 bytes, "
         "expected 4 bytes");
  expect(Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, sizeof d,
                                   nullptr),
         "CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): support is null, expected 4 "
         "bytes");
  q.DataType = DML_TENSOR_DATA_TYPE(12);
  expect(
      Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, sizeof d, &d),
      "CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): DataType is 12, expected a "
      "DML_TENSOR_DATA_TYPE from FLOAT32 (1) to INT64 (11)");
  VKDML_FEATURE_QUERY_REDUCTION_SUPPORT rq = {F32, VKDML_REDUCE_FUNCTION(6)};
  VKDML_FEATURE_DATA_REDUCTION_SUPPORT rd = {};
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof rq, &rq, sizeof rd, &rd),
         "CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT): ReduceFunction is 6, expected a "
         "VKDML_REDUCE_FUNCTION (0 to 5)");
  rq = {DML_TENSOR_DATA_TYPE_UNKNOWN, VKDML_REDUCE_FUNCTION_ADD};
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof rq, &rq, sizeof rd, &rd),
         "CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT): DataType is 0, expected a "
         "DML_TENSOR_DATA_TYPE from FLOAT32 (1) to INT64 (11)");
  // The largest tensor: any size where the large path takes the operator, one descriptor's for
  // embedding bags (but their tables: test_embedding_bag.cpp compiles both sides of that line)
  // and block-quantized gathers' scales and zero points.
  const auto caps = CapabilitiesOf(Dev());
  for (DML_OPERATOR_TYPE type :
       {DML_OPERATOR_GATHER, DML_OPERATOR_SCATTER_ELEMENTS, DML_OPERATOR_GATHER_ELEMENTS,
        DML_OPERATOR_GATHER_ND, DML_OPERATOR_SCATTER_ND, DML_OPERATOR_GATHER_ND1,
        VKDML_OPERATOR_SCATTER_ND_REDUCE, VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE,
        VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS,
        VKDML_OPERATOR_EMBEDDING_BAG, VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED,
        VKDML_OPERATOR_PAGED_CACHE_WRITE, VKDML_OPERATOR_PAGED_GATHER}) {
    INFO("operator type " << UINT(type));
    VKDML_FEATURE_QUERY_TENSOR_SIZE sq = {type};
    VKDML_FEATURE_DATA_TENSOR_SIZE sd = {};
    REQUIRE(Dev().CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof sq, &sq, sizeof sd, &sd));
    const bool oneDescriptor =
        type == VKDML_OPERATOR_EMBEDDING_BAG || type == VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED ||
        type == VKDML_OPERATOR_PAGED_CACHE_WRITE || type == VKDML_OPERATOR_PAGED_GATHER;
    CHECK(sd.MaxTensorBytes ==
          (oneDescriptor ? Dev().Info().maxStorageBufferRange - caps.rangeAlign : UINT64(-1)));
  }
  VKDML_FEATURE_QUERY_TENSOR_SIZE sq = {VKDML_OPERATOR_OUT_OF_RANGE};
  VKDML_FEATURE_DATA_TENSOR_SIZE sd = {};
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof sq, &sq, sizeof sd, &sd),
         "CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE): OperatorType is "
         "VKDML_OPERATOR_OUT_OF_RANGE; ask for the operator it wraps");
  sq.OperatorType = DML_OPERATOR_INVALID;
  const Result unknown =
      Dev().CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof sq, &sq, sizeof sd, &sd);
  CHECK(unknown.status == Status::InvalidArgument);
  CHECK(unknown.message.rfind("CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE): OperatorType is 0, "
                              "expected DML_OPERATOR_GATHER (67), ",
                              0) == 0);
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof sq, &sq, 4, &sd),
         "CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE): support is 4 bytes, expected 8 bytes");
  VKDML_FEATURE_QUERY_BINDING_ALIGNMENT aq = {DML_TENSOR_DATA_TYPE(99)};
  VKDML_FEATURE_DATA_BINDING_ALIGNMENT ad = {};
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT, sizeof aq, &aq, 2, &ad),
         "CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT): support is 2 bytes, expected 4 "
         "bytes");
  expect(Dev().CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT, sizeof aq, &aq, sizeof ad, &ad),
         "CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT): DataType is 99, expected a "
         "DML_TENSOR_DATA_TYPE from FLOAT32 (1) to INT64 (11)");
}

// EnumerateDevices creates and destroys an instance of its own; the live Device must survive it
// (and its destruction at exit, in main, must not crash).
TEST_CASE_METHOD(Fixture, "EnumerateDevices while a Device is alive", "[validation][device]") {
  const DeviceInfo& info = Dev().Info();
  std::vector<DeviceInfo> all;
  Result r = EnumerateDevices(&all);
  INFO(Str(r));
  REQUIRE(r.ok());
  REQUIRE(!all.empty());
  bool found = false;
  for (const DeviceInfo& d : all) found = found || d.name == info.name;
  CHECK(found);
  // The device still works.
  OpSpec spec =
      OpSpec::GatherElements(TensorDesc(F32, {2}), TensorDesc(I32, {2}), TensorDesc(F32, {2}), 0);
  const Bytes in = ToBytes(std::vector<float>{1, 2});
  const Bytes idx = IndexBytes(I32, {1, 0}, 8);
  ExecResult res = Execute(spec, {in, idx}, {Poisoned(8)}, ExecOptions{});
  CHECK(res.outputs[0] == ToBytes(std::vector<float>{2, 1}));
}

TEST_CASE_METHOD(Fixture, "DataTypeSize, DataTypeName, CalcBufferTensorSize", "[validation]") {
  // DirectML's names, written out here: the tests' messages print DataTypeName.
  const std::map<DML_TENSOR_DATA_TYPE, std::string> names = {
      {DML_TENSOR_DATA_TYPE_FLOAT32, "FLOAT32"}, {DML_TENSOR_DATA_TYPE_FLOAT16, "FLOAT16"},
      {DML_TENSOR_DATA_TYPE_UINT32, "UINT32"},   {DML_TENSOR_DATA_TYPE_UINT16, "UINT16"},
      {DML_TENSOR_DATA_TYPE_UINT8, "UINT8"},     {DML_TENSOR_DATA_TYPE_INT32, "INT32"},
      {DML_TENSOR_DATA_TYPE_INT16, "INT16"},     {DML_TENSOR_DATA_TYPE_INT8, "INT8"},
      {DML_TENSOR_DATA_TYPE_FLOAT64, "FLOAT64"}, {DML_TENSOR_DATA_TYPE_UINT64, "UINT64"},
      {DML_TENSOR_DATA_TYPE_INT64, "INT64"}};
  for (DML_TENSOR_DATA_TYPE t : DataTypes()) {
    CHECK(DataTypeSize(t) == ref::ElementSize(t));
    CHECK(DataTypeName(t) == names.at(t));
  }
  CHECK(DataTypeSize(DML_TENSOR_DATA_TYPE_UNKNOWN) == 0);
  for (int v : {12, 99, -1}) {  // not in the enum
    CHECK(DataTypeSize(static_cast<DML_TENSOR_DATA_TYPE>(v)) == 0);
    CHECK(std::string(DataTypeName(static_cast<DML_TENSOR_DATA_TYPE>(v))) == "UNKNOWN");
  }

  const UINT s1[] = {2, 3};
  const UINT st1[] = {4, 1};
  CHECK(CalcBufferTensorSize(F32, 2, s1, nullptr) == 24);
  // (1*4 + 2*1 + 1) * 2 = 14 -> 16
  CHECK(CalcBufferTensorSize(F16, 2, s1, st1) == 16);
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 2, s1, nullptr) == 8);
  const UINT s2[] = {3};
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 1, s2, nullptr) == 4);
  const UINT st0[] = {0};
  CHECK(CalcBufferTensorSize(I64, 1, s2, st0) == 8);  // broadcast: one element
  const UINT s8[] = {2, 1, 2, 1, 2, 1, 2, 3};
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT16, 8, s8, nullptr) == 96);
  // Against the reference's formula on a few strided shapes.
  const UINT s3[] = {3, 1, 5};
  const UINT st3[] = {7, 0, 2};
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_INT8, 3, s3, st3) ==
        ref::Tensor(DML_TENSOR_DATA_TYPE_INT8, {3, 1, 5}, {7, 0, 2}).RequiredBytes());
  CHECK(ref::Tensor(DML_TENSOR_DATA_TYPE_INT8, {3, 1, 5}, {7, 0, 2}).RequiredBytes() == 24);
  // Not a tensor: 0.
  CHECK(CalcBufferTensorSize(F32, 0, s1, nullptr) == 0);
  CHECK(CalcBufferTensorSize(F32, 9, s8, nullptr) == 0);
  CHECK(CalcBufferTensorSize(F32, 2, nullptr, nullptr) == 0);
  const UINT z[] = {2, 0};
  CHECK(CalcBufferTensorSize(F32, 2, z, nullptr) == 0);
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UNKNOWN, 2, s1, nullptr) == 0);
  // More than 2^32-1 elements (rule 7), packed or not; one fewer is a tensor.
  const UINT big[] = {65536, 65536}, bigStrides[] = {65536, 1}, under[] = {65535, 65537};
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 2, big, nullptr) == 0);
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 2, big, bigStrides) == 0);
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 2, under, nullptr) == 4294967296ull);
}

TEST_CASE_METHOD(Fixture, "Rule 1: a tensor pointer is null", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      spec.Desc();
      *spec.TensorSlot(i) = nullptr;
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) + " is null"});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 2: Type is not DML_TENSOR_TYPE_BUFFER", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      // Any 32-bit value is defined behaviour (dml.h's enums are UINTs) and named in the message.
      for (UINT type : {0u, 2u, 77u, 0x80000000u, 0xFFFFFFFFu}) {
        OpSpec spec = base();
        spec.Desc();
        spec.tensors[i].desc.Type = static_cast<DML_TENSOR_TYPE>(type);
        ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".Type is " + std::to_string(type) +
                             ", expected DML_TENSOR_TYPE_BUFFER (1)"});
      }
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 3: Desc is null", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      spec.Desc();
      spec.tensors[i].desc.Desc = nullptr;
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".Desc is null"});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 4: DimensionCount not in 1..8", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      for (UINT dims : {0u, 9u}) {
        OpSpec spec = base();
        spec.tensors[i].sizes.assign(9, 1);  // readable, should the library look
        spec.tensors[i].strides.clear();
        spec.Desc();
        spec.tensors[i].buf.DimensionCount = dims;
        ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".DimensionCount is " +
                             std::to_string(dims) + ", expected 1 to 8"});
      }
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 5: Sizes is null", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      spec.Desc();
      spec.tensors[i].buf.Sizes = nullptr;
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".Sizes is null"});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 6: a size is 0", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      spec.tensors[i].sizes[1] = 0;
      spec.Desc();
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".Sizes[1] is 0"});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 7: more than 4294967295 elements", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i : {size_t(0), base().tensors.size() - 1}) {
      OpSpec spec = base();
      spec.tensors[i].sizes = {65536, 65536, 2};
      spec.tensors[i].buf.TotalTensorSizeInBytes = (UINT64(1) << 33) * 4;
      spec.Desc();
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) + " has", "elements"});
    }
  }
  // Exactly 2^32 elements (one too many), strided: still too many elements.
  OpSpec spec = BaseGatherElements();
  spec.tensors[0].sizes = {65536, 65536, 1};
  spec.tensors[0].buf.TotalTensorSizeInBytes = (UINT64(1) << 32) * 4;
  spec.Desc();
  ExpectInvalid(spec, {"InputTensor has", "elements"});
}

// vkdml's VKDML_TENSOR_FLAG_LARGE lifts DirectML's 2^32 - 1 elements to 2^56; packed strides that
// pass 32 bits cannot be described, and CalcLargeBufferTensorSize sizes such tensors.
TEST_CASE_METHOD(Fixture, "Rule 7b: VKDML_TENSOR_FLAG_LARGE", "[validation]") {
  const UINT64 twoTo32 = UINT64(1) << 32;
  // GatherND from 2^32 broadcast elements (16 bytes of memory): accepted with the flag.
  auto gatherND = [](std::vector<UINT> inputSizes, std::vector<UINT> inputStrides) {
    const UINT dims = UINT(inputSizes.size());
    std::vector<UINT> ix(dims, 1), out(dims, 1);
    ix[dims - 2] = ix[dims - 1] = 2;  // two 2-tuples
    out[dims - 2] = 2;
    out[dims - 1] = inputSizes[dims - 1];
    TensorDesc input(F32, inputSizes, inputStrides, 16 * inputSizes[dims - 1]);
    return OpSpec::GatherND(input, TensorDesc(I32, ix), TensorDesc(F32, out), dims, dims);
  };
  OpSpec spec = gatherND({65536, 65536, 4}, {0, 0, 1});
  spec.Desc();
  ExpectInvalid(spec, {"InputTensor has more than 4294967295 elements",
                       "VKDML_TENSOR_FLAG_LARGE allows more"});
  spec.tensors[0].buf.Flags = VKDML_TENSOR_FLAG_LARGE;
  spec.Desc();
  CHECK(CreateRaw(spec).ok());
  // More than 2^56 elements, even with the flag.
  spec = gatherND({65536, 65536, 65536, 65536}, {0, 0, 0, 1});
  spec.tensors[0].buf.Flags = VKDML_TENSOR_FLAG_LARGE;
  spec.Desc();
  ExpectInvalid(spec, {"InputTensor has more than 72057594037927936 elements"});
  // Packed strides past 32 bits: the strides must be given.
  spec = gatherND({2, 65536, 65536}, {});
  spec.tensors[0].buf.Flags = VKDML_TENSOR_FLAG_LARGE;
  spec.tensors[0].buf.TotalTensorSizeInBytes = 2 * twoTo32 * 4;
  spec.Desc();
  ExpectInvalid(spec, {"InputTensor.Strides is null", "give Strides"});
  const UINT packed[] = {3, 65536, 32768}, strided[] = {65536, 65536, 3};
  const UINT big[] = {2, 65536, 65536}, bigStrides[] = {UINT(1) << 31, 65536, 1};
  CHECK(CalcBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 3, packed, nullptr) == 0);
  CHECK(CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 3, packed, nullptr) ==
        3 * twoTo32 / 2);
  CHECK(CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT16, 3, strided, nullptr) ==
        (UINT64(65536) * 65536 * 3) * 2);
  CHECK(CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 3, big, nullptr) == 0);
  CHECK(CalcLargeBufferTensorSize(DML_TENSOR_DATA_TYPE_UINT8, 3, big, bigStrides) ==
        3 * twoTo32 / 2);  // the last element at 2^31 + 2^32 - 1
}

TEST_CASE_METHOD(Fixture, "Rule 8: data type not supported for the role", "[validation]") {
  for (auto& base : AllBases()) {
    const size_t n = base().tensors.size();
    // Index types: only INT32, UINT32, INT64, UINT64.
    for (DML_TENSOR_DATA_TYPE t :
         {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_INT16,
          DML_TENSOR_DATA_TYPE_UINT16, DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT8,
          DML_TENSOR_DATA_TYPE_FLOAT64, DML_TENSOR_DATA_TYPE_UNKNOWN,
          static_cast<DML_TENSOR_DATA_TYPE>(12)}) {
      OpSpec spec = base();
      spec.tensors[1].buf.DataType = t;
      spec.Desc();
      INFO("indices type " << int(t));
      ExpectInvalid(spec, {"IndicesTensor.DataType"});
    }
    // Data tensors: UNKNOWN or out of the enum.
    for (size_t i = 0; i < n; ++i) {
      if (i == 1) continue;
      for (UINT t : {0u, 12u, 1000u, 0x80000000u, 0xFFFFFFFFu}) {
        OpSpec spec = base();
        spec.tensors[i].buf.DataType = static_cast<DML_TENSOR_DATA_TYPE>(t);
        spec.Desc();
        INFO("data type " << t);
        ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".DataType is " + std::to_string(t) +
                             " (not a data type)"});
      }
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 9: TotalTensorSizeInBytes below the required size",
                 "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      const UINT64 required = spec.tensors[i].Total();
      REQUIRE(required == spec.tensors[i].Ref().RequiredBytes());
      spec.tensors[i].buf.TotalTensorSizeInBytes = required - 4;
      spec.Desc();
      ExpectInvalid(
          spec, {std::string(spec.TensorName(i)) + ".TotalTensorSizeInBytes is " +
                 std::to_string(required - 4) + ", expected at least " + std::to_string(required)});
    }
  }
  // Strided, with the round-up: FLOAT16 {2,3} strides {4,1} needs (4+2+1)*2 = 14 -> 16 bytes.
  OpSpec spec = OpSpec::GatherElements(TensorDesc(F16, {2, 3}, {4, 1}, 12), TensorDesc(I32, {2, 3}),
                                       TensorDesc(F16, {2, 3}), 0);
  spec.Desc();
  ExpectInvalid(spec, {"InputTensor.TotalTensorSizeInBytes is 12, expected at least 16"});
  // A larger size than required is fine.
  OpSpec ok = OpSpec::GatherElements(TensorDesc(F16, {2, 3}, {4, 1}, 1000), TensorDesc(I32, {2, 3}),
                                     TensorDesc(F16, {2, 3}, {}, 64), 0);
  Result r = Create(ok.Desc());
  INFO(Str(r));
  if (DeviceSupports(F16))
    CHECK(r.ok());
  else  // valid, and refused only for the device's want of 16-bit storage
    CHECK(r.status == Status::Unsupported);
}

TEST_CASE_METHOD(Fixture, "Rule 10: GuaranteedBaseOffsetAlignment not 0 or a power of two",
                 "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 0; i < base().tensors.size(); ++i) {
      for (UINT a : {3u, 6u, 24u, 0x80000001u}) {
        OpSpec spec = base();
        spec.tensors[i].buf.GuaranteedBaseOffsetAlignment = a;
        spec.Desc();
        INFO("alignment " << a);
        ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".GuaranteedBaseOffsetAlignment"});
      }
      for (UINT a : {0u, 1u, 2u, 16u, 256u, 0x80000000u}) {
        OpSpec spec = base();
        spec.tensors[i].buf.GuaranteedBaseOffsetAlignment = a;
        Result r = Create(spec.Desc());
        INFO("alignment " << a << ": " << Str(r));
        CHECK(r.ok());
      }
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 11: output strides broadcast or overlap", "[validation]") {
  for (auto& base : {BaseGatherND, BaseScatterND}) {
    // Output sizes {1,5,4} (GatherND) / {1,3,4} (ScatterND).
    const bool scatter = base().type == DML_OPERATOR_SCATTER_ND;
    const UINT rows = scatter ? 3 : 5;
    for (std::vector<UINT> strides :
         std::vector<std::vector<UINT>>{{20, 0, 1},     // broadcast rows
                                        {20, 4, 0},     // broadcast columns
                                        {20, 1, 1},     // rows and columns overlap
                                        {20, 2, 1},     // partial overlap
                                        {20, 3, 1}}) {  // (rows 3 apart, 4 columns)
      OpSpec spec = base();
      TensorDesc& out = spec.Output();
      out = TensorDesc(F32, out.sizes, strides, 4 * 64);
      spec.Desc();
      INFO("strides " << strides[0] << "," << strides[1] << "," << strides[2]);
      ExpectInvalid(spec, {"OutputTensor.Strides"});
    }
    // Not overlapping: padded, transposed, and a size-1 dimension with any stride.
    for (std::vector<UINT> strides :
         std::vector<std::vector<UINT>>{{100, 5, 1}, {1, 1, rows}, {7, 1, rows + 1}}) {
      OpSpec spec = base();
      TensorDesc& out = spec.Output();
      out = TensorDesc(F32, out.sizes, strides);
      Result r = Create(spec.Desc());
      INFO("strides " << strides[0] << "," << strides[1] << "," << strides[2] << ": " << Str(r));
      CHECK(r.ok());
    }
  }
  {  // Gather: output {2,5,4}
    OpSpec spec = BaseGather();
    spec.Output() = TensorDesc(F32, {2, 5, 4}, {20, 0, 1}, 4 * 64);
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Strides[1] is 0"});
    spec.Output() = TensorDesc(F32, {2, 5, 4}, {1, 8, 2});  // transposed and padded: fine
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
  // Inputs may broadcast.
  OpSpec spec = BaseGatherND();
  spec.tensors[0] = TensorDesc(F32, {1, 3, 4}, {0, 0, 0});
  spec.tensors[1] = TensorDesc(I32, {1, 5, 1}, {0, 0, 0});
  Result r = Create(spec.Desc());
  INFO(Str(r));
  CHECK(r.ok());
}

TEST_CASE_METHOD(Fixture, "Rule 12: DimensionCounts differ", "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 1; i < base().tensors.size(); ++i) {
      OpSpec spec = base();
      TensorDesc& t = spec.tensors[i];
      std::vector<UINT> sizes(t.sizes.begin() + 1, t.sizes.end());  // drop the leading 1
      t = TensorDesc(t.Type(), sizes);
      spec.Desc();
      ExpectInvalid(spec, {std::string(spec.TensorName(i)) +
                           ".DimensionCount is 2, expected 3 (InputTensor.DimensionCount)"});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 13: output (updates) data type differs from input",
                 "[validation]") {
  for (auto& base : AllBases()) {
    for (size_t i = 2; i < base().tensors.size(); ++i) {
      for (DML_TENSOR_DATA_TYPE t : {I32, DML_TENSOR_DATA_TYPE_UINT32}) {
        OpSpec spec = base();
        spec.tensors[i].buf.DataType = t;  // same size as FLOAT32
        spec.Desc();
        ExpectInvalid(spec, {std::string(spec.TensorName(i)) + ".DataType is " + DataTypeName(t) +
                             ", expected FLOAT32 (InputTensor.DataType)"});
      }
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 14: GatherElements Axis >= DimensionCount", "[validation]") {
  for (UINT axis : {3u, 4u, 0xFFFFFFFFu}) {
    OpSpec spec = BaseGatherElements();
    spec.axis = axis;
    spec.Desc();
    ExpectInvalid(spec, {"Axis is " + std::to_string(axis)});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 15: GatherElements Indices/Output size mismatch", "[validation]") {
  {  // input {1,3,4}, axis 1: indices {1,2,5} differs at 2
    OpSpec spec = BaseGatherElements();
    spec.tensors[1] = TensorDesc(I32, {1, 2, 5});
    spec.tensors[2] = TensorDesc(F32, {1, 2, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 5, expected 4"});
  }
  {  // indices {2,2,4} differs at 0
    OpSpec spec = BaseGatherElements();
    spec.tensors[1] = TensorDesc(I32, {2, 2, 4});
    spec.tensors[2] = TensorDesc(F32, {2, 2, 4});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 2, expected 1"});
  }
  {  // output {1,3,4} vs indices {1,2,4}
    OpSpec spec = BaseGatherElements();
    spec.tensors[2] = TensorDesc(F32, {1, 3, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[1] is 3, expected 2"});
  }
  {  // along the axis any size is fine, larger than the input's too
    OpSpec spec = BaseGatherElements();
    spec.tensors[1] = TensorDesc(I32, {1, 7, 4});
    spec.tensors[2] = TensorDesc(F32, {1, 7, 4});
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 16: InputDimensionCount / IndicesDimensionCount not in [1, D]",
                 "[validation]") {
  for (auto& base : {BaseGatherND, BaseGatherND1, BaseScatterND}) {
    for (UINT v : {0u, 4u, 100u}) {
      OpSpec spec = base();
      spec.r = v;
      spec.Desc();
      ExpectInvalid(spec, {"InputDimensionCount is " + std::to_string(v)});
      spec = base();
      spec.q = v;
      spec.Desc();
      ExpectInvalid(spec, {"IndicesDimensionCount is " + std::to_string(v)});
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 17: leading size outside the actual dims is not 1",
                 "[validation]") {
  {  // GatherND r 2: InputTensor.Sizes[0] must be 1
    OpSpec spec = BaseGatherND();
    spec.tensors[0] = TensorDesc(F32, {2, 3, 4});
    spec.Desc();
    ExpectInvalid(spec, {"InputTensor.Sizes[0] is 2, expected 1"});
  }
  {  // q 2: IndicesTensor.Sizes[0] must be 1
    OpSpec spec = BaseGatherND();
    spec.tensors[1] = TensorDesc(I32, {3, 5, 1});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 3, expected 1"});
  }
  {  // ScatterND, input and output {2,3,4} with r 2
    OpSpec spec = BaseScatterND();
    spec.tensors[0] = TensorDesc(F32, {2, 3, 4});
    spec.tensors[3] = TensorDesc(F32, {2, 3, 4});
    spec.Desc();
    ExpectInvalid(spec, {"InputTensor.Sizes[0] is 2, expected 1"});
  }
  {  // D 4, r 2: Sizes[0] and Sizes[1] must be 1; Sizes[1] is not
    OpSpec spec = OpSpec::GatherND(TensorDesc(F32, {1, 6, 3, 4}), TensorDesc(I32, {1, 1, 5, 1}),
                                   TensorDesc(F32, {1, 1, 5, 4}), 2, 2);
    spec.Desc();
    ExpectInvalid(spec, {"InputTensor.Sizes[1] is 6, expected 1"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 18: BatchDimensionCount >= q or >= r", "[validation]") {
  {  // r 3, q 3, B 3
    OpSpec spec = BaseGatherND1();
    spec.b = 3;
    spec.Desc();
    ExpectInvalid(spec, {"BatchDimensionCount is 3"});
  }
  {  // B 2 >= q 2 (r 3): data {2,3,4}, indices {1,2,1}
    OpSpec spec = OpSpec::GatherND1(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {1, 2, 1}),
                                    TensorDesc(F32, {1, 2, 4}), 3, 2, 2);
    spec.Desc();
    ExpectInvalid(spec, {"BatchDimensionCount is 2"});
  }
  {  // B 2 >= r 2 (q 3): data {1,3,4}, indices {3,4,1}
    OpSpec spec = OpSpec::GatherND1(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {3, 4, 1}),
                                    TensorDesc(F32, {1, 3, 4}), 2, 3, 2);
    spec.Desc();
    ExpectInvalid(spec, {"BatchDimensionCount is 2"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 19: tuple size k > r - B", "[validation]") {
  {  // GatherND r 2, k 3
    OpSpec spec = BaseGatherND();
    spec.tensors[1] = TensorDesc(I32, {1, 5, 3});
    spec.tensors[2] = TensorDesc(F32, {1, 1, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 3"});
  }
  {  // GatherND1 r 3, B 1, k 3
    OpSpec spec = BaseGatherND1();
    spec.tensors[1] = TensorDesc(I32, {2, 5, 3});
    spec.tensors[2] = TensorDesc(F32, {1, 2, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 3"});
  }
  {  // ScatterND r 2, k 3
    OpSpec spec = BaseScatterND();
    spec.tensors[1] = TensorDesc(I32, {1, 5, 3});
    spec.tensors[2] = TensorDesc(F32, {1, 1, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 3"});
  }
  {  // k = r - B is fine: GatherND1 k 2 -> output {2,5} + {} = {1,2,5}
    OpSpec spec = BaseGatherND1();
    spec.tensors[1] = TensorDesc(I32, {2, 5, 2});
    spec.tensors[2] = TensorDesc(F32, {1, 2, 5});
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 20: batch sizes differ between indices and input", "[validation]") {
  {  // D 3: input batch {2}, indices batch {3}
    OpSpec spec = BaseGatherND1();
    spec.tensors[1] = TensorDesc(I32, {3, 5, 1});
    spec.tensors[2] = TensorDesc(F32, {3, 5, 4});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 3, expected 2 (InputTensor.Sizes[0]"});
  }
  {  // D 4, r 3, q 4, B 1: indices batch dim is Sizes[0], input's is Sizes[1]
    OpSpec spec = OpSpec::GatherND1(TensorDesc(F32, {1, 2, 3, 4}), TensorDesc(I32, {3, 5, 5, 1}),
                                    TensorDesc(F32, {3, 5, 5, 4}), 3, 4, 1);
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 3, expected 2 (InputTensor.Sizes[1]"});
  }
  {  // B 2: the first batch sizes agree, the second do not
    OpSpec spec = OpSpec::GatherND1(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {2, 5, 1}),
                                    TensorDesc(F32, {1, 2, 5}), 3, 3, 2);
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[1] is 5, expected 3 (InputTensor.Sizes[1]"});
    OpSpec same = OpSpec::GatherND1(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {2, 3, 1}),
                                    TensorDesc(F32, {1, 2, 3}), 3, 3, 2);
    same.Desc();
    Result r = CreateRaw(same);
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 21: output (updates) would need more than D dimensions",
                 "[validation]") {
  {  // data {2,3,4} r 3, indices {5,6,1} q 3: {5,6} + {3,4} is 4 dims > 3
    OpSpec spec = OpSpec::GatherND(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {5, 6, 1}),
                                   TensorDesc(F32, {6, 3, 4}), 3, 3);
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor", "dimensions"});
  }
  {
    OpSpec spec = OpSpec::GatherND1(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {5, 6, 1}),
                                    TensorDesc(F32, {6, 3, 4}), 3, 3, 0);
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor", "dimensions"});
  }
  {
    OpSpec spec = OpSpec::ScatterND(TensorDesc(F32, {2, 3, 4}), TensorDesc(I32, {5, 6, 1}),
                                    TensorDesc(F32, {6, 3, 4}), TensorDesc(F32, {2, 3, 4}), 3, 3);
    spec.Desc();
    ExpectInvalid(spec, {"UpdatesTensor", "dimensions"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 22: output (updates) sizes differ from the formula",
                 "[validation]") {
  {
    OpSpec spec = BaseGatherND();
    spec.tensors[2] = TensorDesc(F32, {1, 5, 3});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[2] is 3, expected 4"});
  }
  {  // a leading dimension must be 1
    OpSpec spec = BaseGatherND();
    spec.tensors[2] = TensorDesc(F32, {2, 5, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[0] is 2, expected 1"});
  }
  {
    OpSpec spec = BaseGatherND1();
    spec.tensors[2] = TensorDesc(F32, {2, 4, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[1] is 4, expected 5"});
  }
  {  // left-aligned instead of right-aligned
    OpSpec spec = BaseGatherND();
    spec.tensors[2] = TensorDesc(F32, {5, 4, 1});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[0] is 5, expected 1"});
  }
  {
    OpSpec spec = BaseScatterND();
    spec.tensors[2] = TensorDesc(F32, {1, 5, 3});
    spec.Desc();
    ExpectInvalid(spec, {"UpdatesTensor.Sizes[2] is 3, expected 4"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 23: ScatterND Output.Sizes != Input.Sizes", "[validation]") {
  OpSpec spec = BaseScatterND();
  spec.tensors[3] = TensorDesc(F32, {1, 3, 5});
  spec.Desc();
  ExpectInvalid(spec, {"OutputTensor.Sizes[2] is 5, expected 4 (InputTensor.Sizes[2])"});
}

TEST_CASE_METHOD(Fixture, "Rule 26: ScatterElements Axis >= DimensionCount", "[validation]") {
  for (UINT axis : {3u, 4u, 0xFFFFFFFFu}) {
    OpSpec spec = BaseScatterElements();
    spec.axis = axis;
    spec.Desc();
    ExpectInvalid(spec, {"Axis is " + std::to_string(axis) +
                         ", expected less than 3 (OutputTensor.DimensionCount)"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 27: ScatterElements Indices/Updates/Output size mismatch",
                 "[validation]") {
  {  // input {1,3,4}, axis 1: indices {1,2,5} differs at 2
    OpSpec spec = BaseScatterElements();
    spec.tensors[1] = TensorDesc(I32, {1, 2, 5});
    spec.tensors[2] = TensorDesc(F32, {1, 2, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 5, expected 4 (InputTensor.Sizes[2]"});
  }
  {  // indices {2,2,4} differs at 0
    OpSpec spec = BaseScatterElements();
    spec.tensors[1] = TensorDesc(I32, {2, 2, 4});
    spec.tensors[2] = TensorDesc(F32, {2, 2, 4});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 2, expected 1 (InputTensor.Sizes[0]"});
  }
  {  // updates {1,3,4} vs indices {1,2,4}
    OpSpec spec = BaseScatterElements();
    spec.tensors[2] = TensorDesc(F32, {1, 3, 4});
    spec.Desc();
    ExpectInvalid(spec, {"UpdatesTensor.Sizes[1] is 3, expected 2 (IndicesTensor.Sizes[1])"});
  }
  {  // output {1,3,5} vs input {1,3,4}
    OpSpec spec = BaseScatterElements();
    spec.tensors[3] = TensorDesc(F32, {1, 3, 5});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[2] is 5, expected 4 (InputTensor.Sizes[2])"});
  }
  {  // along the axis any count of updates is fine, more than the input's size too
    OpSpec spec = BaseScatterElements();
    spec.tensors[1] = TensorDesc(I32, {1, 7, 4});
    spec.tensors[2] = TensorDesc(F32, {1, 7, 4});
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 24: unknown operator type / null desc", "[validation]") {
  OpSpec spec = BaseGatherND();
  spec.Desc();
  for (UINT t : {0u, 12345u, 0x80000000u, 0xFFFFFFFFu}) {
    DML_OPERATOR_DESC d{static_cast<DML_OPERATOR_TYPE>(t), spec.op.Desc};
    Result r = Create(d);
    INFO("type " << t << ": " << Str(r));
    REQUIRE(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Contains("DML_OPERATOR_DESC.Type is " + std::to_string(t) + ", "));
  }
  {  // the message lists the operators vkdml implements, DML_OPERATOR_GATHER among them
    DML_OPERATOR_DESC d{static_cast<DML_OPERATOR_TYPE>(66), spec.op.Desc};
    Result r = Create(d);
    INFO(Str(r));
    CHECK_THAT(r.message, Contains("DML_OPERATOR_DESC.Type is 66, expected an operator vkdml "
                                   "implements: DML_OPERATOR_GATHER (67), "));
  }
  for (DML_OPERATOR_TYPE t :
       {DML_OPERATOR_GATHER, DML_OPERATOR_GATHER_ND, DML_OPERATOR_GATHER_ND1,
        DML_OPERATOR_GATHER_ELEMENTS, DML_OPERATOR_SCATTER_ND, DML_OPERATOR_SCATTER_ELEMENTS,
        VKDML_OPERATOR_SCATTER_ND_REDUCE, VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE}) {
    DML_OPERATOR_DESC d{t, nullptr};
    Result r = Create(d);
    INFO("type " << int(t) << ": " << Str(r));
    REQUIRE(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Contains("DML_OPERATOR_DESC.Desc is null"));
  }
}

TEST_CASE_METHOD(Fixture, "Rule 28: Gather Axis >= DimensionCount", "[validation][gather]") {
  for (UINT axis : {3u, 4u, 0xFFFFFFFFu}) {
    OpSpec spec = BaseGather();
    spec.axis = axis;
    spec.Desc();
    ExpectInvalid(spec, {"Axis is " + std::to_string(axis) +
                         ", expected less than 3 (InputTensor.DimensionCount)"});
  }
  {  // Axis 2 of the same input: {1,3} + {2,5}, the leading 1 dropped -> {3,2,5}
    OpSpec spec = BaseGather();
    spec.axis = 2;
    spec.Output() = TensorDesc(F32, {3, 2, 5});
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 29: Gather IndexDimensions > DimensionCount",
                 "[validation][gather]") {
  for (UINT m : {4u, 100u, 0xFFFFFFFFu}) {
    OpSpec spec = BaseGather();
    spec.indexDims = m;
    spec.Desc();
    ExpectInvalid(spec, {"IndexDimensions is " + std::to_string(m) +
                         ", expected 0 to 3 (IndicesTensor.DimensionCount)"});
  }
  {  // 0 (a scalar index): {1} + {} + {4} -> {1,1,4}
    OpSpec spec = OpSpec::Gather(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 1, 1}),
                                 TensorDesc(F32, {1, 1, 4}), 1, 0);
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
  {  // DimensionCount itself (as the page's examples use it): {1,1} + {1,2,5}, 1s dropped
    OpSpec spec = OpSpec::Gather(TensorDesc(F32, {1, 1, 4}), TensorDesc(I32, {1, 2, 5}),
                                 TensorDesc(F32, {1, 2, 5}), 2, 3);
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
}

TEST_CASE_METHOD(Fixture, "Rule 30: Gather leading IndicesTensor size outside IndexDimensions",
                 "[validation][gather]") {
  {
    OpSpec spec = BaseGather();
    spec.tensors[1] = TensorDesc(I32, {2, 2, 5});
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[0] is 2, expected 1 (leading dimension outside "
                         "IndexDimensions = 2)"});
  }
  {  // IndexDimensions 0: every size must be 1
    OpSpec spec = OpSpec::Gather(TensorDesc(F32, {1, 3, 4}), TensorDesc(I32, {1, 1, 3}),
                                 TensorDesc(F32, {1, 1, 4}), 1, 0);
    spec.Desc();
    ExpectInvalid(spec, {"IndicesTensor.Sizes[2] is 3, expected 1 (leading dimension outside "
                         "IndexDimensions = 0)"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 31: Gather output would need more than D dimensions",
                 "[validation][gather]") {
  {  // input rank 3 (nothing to drop) + IndexDimensions 2 - 1 = 4
    OpSpec spec = BaseGather();
    spec.tensors[0] = TensorDesc(F32, {2, 3, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor would need 4 dimensions (sizes {2,2,5,4}: InputTensor's "
                         "original rank 3 + IndexDimensions 2 - 1), but its DimensionCount is 3"});
  }
  {  // Axis 0: InputTensor.Sizes[0] is 1, but it is the Axis dimension, not one before it
    OpSpec spec = BaseGather();
    spec.axis = 0;
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor would need 4 dimensions (sizes {2,5,3,4}: InputTensor's "
                         "original rank 3"});
  }
  {  // a 1 after a size that is not 1 is not a leading 1
    OpSpec spec = BaseGather();
    spec.tensors[0] = TensorDesc(F32, {3, 1, 4});
    spec.axis = 2;
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor would need 4 dimensions (sizes {3,1,2,5}"});
  }
}

TEST_CASE_METHOD(Fixture, "Rule 32: Gather output sizes differ from the formula",
                 "[validation][gather]") {
  {
    OpSpec spec = BaseGather();
    spec.Output() = TensorDesc(F32, {2, 5, 3});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[2] is 3, expected 4 (InputTensor.Sizes[2])"});
  }
  {
    OpSpec spec = BaseGather();
    spec.Output() = TensorDesc(F32, {2, 4, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[1] is 4, expected 5 (IndicesTensor.Sizes[2])"});
  }
  {  // IndexDimensions 1: {1} + {5} + {4} -> {1,5,4}; a leading dimension must be 1
    OpSpec spec = BaseGather();
    spec.tensors[1] = TensorDesc(I32, {1, 1, 5});
    spec.indexDims = 1;
    spec.Output() = TensorDesc(F32, {2, 5, 4});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[0] is 2, expected 1 (leading dimension)"});
    spec.Output() = TensorDesc(F32, {5, 4, 1});  // left-aligned instead of right-aligned
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[0] is 5, expected 1"});
    spec.Output() = TensorDesc(F32, {1, 5, 4});
    Result r = Create(spec.Desc());
    INFO(Str(r));
    CHECK(r.ok());
  }
  {  // the indices' dimensions replace the Axis dimension in place: {2,5} + {4}, not {4} + ...
    OpSpec spec = BaseGather();
    spec.Output() = TensorDesc(F32, {4, 2, 5});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[0] is 4, expected 2 (IndicesTensor.Sizes[1])"});
  }
}

// Compiles desc's operator with flags.
Result Compile(const DML_OPERATOR_DESC& desc, UINT flags) {
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(desc, &op);
  if (!r.ok()) return r;
  std::unique_ptr<CompiledOperator> compiled;
  return Dev().CompileOperator(*op, flags, &compiled);
}

// Tensors past maxStorageBufferRange are no longer refused: they take the large path (lib/
// kernels.h: LargeDispatch; "Large ..." in test_random.cpp run it), in every mode.
TEST_CASE_METHOD(Fixture, "Rule 25: tensors past maxStorageBufferRange take the large path",
                 "[validation]") {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  INFO("maxStorageBufferRange " << range);
  REQUIRE(range / 4 + 1 <= 0xFFFFFFFFull);
  const UINT fits = static_cast<UINT>(range / 4);  // FLOAT32 elements that fit
  OpSpec over = OpSpec::GatherElements(TensorDesc(F32, {fits + 1}), TensorDesc(I32, {1}),
                                       TensorDesc(F32, {1}), 0);
  REQUIRE(over.tensors[0].Total() > range);
  CHECK(Compile(over.Desc(), 0).ok());
  CHECK(Compile(over.Desc(), VKDML_EXECUTION_FLAG_CHECK_INDICES).ok());
  const UINT n = static_cast<UINT>(range / 8 + 1);  // indices and output over the range
  OpSpec indices =
      OpSpec::GatherElements(TensorDesc(F32, {2}), TensorDesc(I64, {n}), TensorDesc(F32, {n}), 0);
  CHECK(Compile(indices.Desc(), 0).ok());
  OpSpec scatter = BaseScatterND();  // a strided output that spans more than the range
  scatter.tensors[3] = TensorDesc(F32, {1, 3, 4}, {1, fits / 2, 1});
  REQUIRE(scatter.tensors[3].Total() > range);
  CHECK(Compile(scatter.Desc(), 0).ok());
  scatter.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
  CHECK(Compile(scatter.Desc(), 0).ok());
  // Deterministic too: it sorts there in chunks (lib/kernels/kernel_reduce.cpp: OrderedLarge).
  CHECK(Compile(scatter.Desc(), VKDML_EXECUTION_FLAG_DETERMINISTIC).ok());
  // An integer reduction is order-free: deterministic, it takes the default mode's kernels.
  OpSpec integer = scatter;
  for (UINT i : {0u, 2u, 3u}) {
    TensorDesc& t = integer.tensors[i];
    t = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, t.sizes, t.strides);
  }
  CHECK(Compile(integer.Desc(), VKDML_EXECUTION_FLAG_DETERMINISTIC).ok());
}

TEST_CASE_METHOD(Fixture, "1- and 2-byte data need 8-/16-bit storage", "[validation]") {
  for (DML_TENSOR_DATA_TYPE t : DataTypes()) {
    OpSpec spec = OpSpec::GatherElements(TensorDesc(t, {3, 4}), TensorDesc(I32, {2, 4}),
                                         TensorDesc(t, {2, 4}), 0);
    Result r = Create(spec.Desc());
    INFO(DataTypeName(t) << ": " << Str(r));
    if (DeviceSupports(t))
      CHECK(r.ok());
    else
      CHECK(r.status == Status::Unsupported);
  }
}

// ----- Binding rules -----

namespace {

struct Bound {
  OpSpec spec;
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  std::unique_ptr<BindingTable> table;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<DML_BUFFER_BINDING> bindings;  // valid ones, inputs then the output
};

// input {2,2} FLOAT32 (16 bytes), indices {2,1} INT64 (16 bytes), output {2,2}.
void MakeBound(Bound* b, UINT alignment = 0) {
  b->spec = OpSpec::GatherND(TensorDesc(F32, {2, 2}, {}, 0, alignment),
                             TensorDesc(I64, {2, 1}, {}, 0, alignment),
                             TensorDesc(F32, {2, 2}, {}, 0, alignment), 2, 2);
  Result r = Dev().CreateOperator(b->spec.Desc(), &b->op);
  INFO(Str(r));
  REQUIRE(r.ok());
  r = Dev().CompileOperator(*b->op, 0, &b->compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  r = Dev().CreateBindingTable(*b->compiled, &b->table);
  INFO(Str(r));
  REQUIRE(r.ok());
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<Buffer> buf;
    r = Dev().CreateBuffer(256, Buffer::Memory::DeviceLocal, &buf);
    REQUIRE(r.ok());
    b->bindings.push_back(buf->Binding(0, 16));
    b->buffers.push_back(std::move(buf));
  }
}

void ExpectBind(const Result& r, const std::string& fragment) {
  INFO("result: " << Str(r));
  REQUIRE(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message, Contains(fragment));
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Binding: count differs from the operator's", "[validation][binding]") {
  Bound b;
  MakeBound(&b);
  ExpectBind(b.table->BindInputs(1, b.bindings.data()), "BindInputs: count is 1, expected 2");
  ExpectBind(b.table->BindInputs(3, b.bindings.data()), "BindInputs: count is 3, expected 2");
  ExpectBind(b.table->BindOutputs(0, b.bindings.data() + 2), "BindOutputs: count is 0, expected 1");
  ExpectBind(b.table->BindOutputs(2, b.bindings.data() + 1), "BindOutputs: count is 2, expected 1");
  CHECK(b.table->BindInputs(2, b.bindings.data()).ok());
  CHECK(b.table->BindOutputs(1, b.bindings.data() + 2).ok());
}

TEST_CASE_METHOD(Fixture, "Binding: Buffer is VK_NULL_HANDLE", "[validation][binding]") {
  Bound b;
  MakeBound(&b);
  std::vector<DML_BUFFER_BINDING> in = {b.bindings[0], b.bindings[1]};
  in[1].Buffer = VK_NULL_HANDLE;
  ExpectBind(b.table->BindInputs(2, in.data()), "inputs[1].Buffer is VK_NULL_HANDLE");
  DML_BUFFER_BINDING out = b.bindings[2];
  out.Buffer = VK_NULL_HANDLE;
  ExpectBind(b.table->BindOutputs(1, &out), "outputs[0].Buffer is VK_NULL_HANDLE");
}

TEST_CASE_METHOD(Fixture, "Binding: SizeInBytes < TotalTensorSizeInBytes",
                 "[validation][binding]") {
  Bound b;
  MakeBound(&b);
  std::vector<DML_BUFFER_BINDING> in = {b.bindings[0], b.bindings[1]};
  in[0].SizeInBytes = 12;
  ExpectBind(b.table->BindInputs(2, in.data()),
             "inputs[0].SizeInBytes is 12, expected at least 16");
  in[0].SizeInBytes = 16;
  in[1].SizeInBytes = 8;
  ExpectBind(b.table->BindInputs(2, in.data()), "inputs[1].SizeInBytes is 8, expected at least 16");
  DML_BUFFER_BINDING out = b.bindings[2];
  out.SizeInBytes = 0;
  ExpectBind(b.table->BindOutputs(1, &out), "outputs[0].SizeInBytes is 0, expected at least 16");
  out.SizeInBytes = 100;  // more is fine
  CHECK(b.table->BindOutputs(1, &out).ok());
}

TEST_CASE_METHOD(Fixture, "Binding: Offset not a multiple of the element size / alignment",
                 "[validation][binding]") {
  SECTION("element size") {
    Bound b;
    MakeBound(&b);
    std::vector<DML_BUFFER_BINDING> in = {b.bindings[0], b.bindings[1]};
    in[0].Offset = 2;
    ExpectBind(b.table->BindInputs(2, in.data()),
               "inputs[0].Offset is 2, expected a multiple of 4");
    in[0].Offset = 4;
    in[1].Offset = 4;  // INT64 indices
    ExpectBind(b.table->BindInputs(2, in.data()),
               "inputs[1].Offset is 4, expected a multiple of 8");
    in[1].Offset = 8;
    CHECK(b.table->BindInputs(2, in.data()).ok());
    DML_BUFFER_BINDING out = b.bindings[2];
    out.Offset = 6;
    ExpectBind(b.table->BindOutputs(1, &out), "outputs[0].Offset is 6, expected a multiple of 4");
    out.Offset = 36;  // 4-aligned, not 16-aligned: fine
    CHECK(b.table->BindOutputs(1, &out).ok());
  }
  SECTION("GuaranteedBaseOffsetAlignment 16") {
    Bound b;
    MakeBound(&b, 16);
    std::vector<DML_BUFFER_BINDING> in = {b.bindings[0], b.bindings[1]};
    in[0].Offset = 8;
    ExpectBind(b.table->BindInputs(2, in.data()),
               "inputs[0].Offset is 8, expected a multiple of 16");
    in[0].Offset = 48;
    CHECK(b.table->BindInputs(2, in.data()).ok());
    DML_BUFFER_BINDING out = b.bindings[2];
    out.Offset = 4;
    ExpectBind(b.table->BindOutputs(1, &out), "outputs[0].Offset is 4, expected a multiple of 16");
  }
}

TEST_CASE_METHOD(Fixture, "Binding: RecordDispatch before both are bound",
                 "[validation][binding]") {
  Bound b;
  MakeBound(&b);
  Result recorded;
  Result r =
      Dev().Submit([&](VkCommandBuffer cmd) { recorded = Dev().RecordDispatch(cmd, *b.table); });
  INFO("Submit: " << Str(r));
  CHECK(r.ok());
  ExpectBind(recorded, "not bound");
  REQUIRE(b.table->BindInputs(2, b.bindings.data()).ok());
  r = Dev().Submit([&](VkCommandBuffer cmd) { recorded = Dev().RecordDispatch(cmd, *b.table); });
  CHECK(r.ok());
  ExpectBind(recorded, "not bound");  // the output still is not
}

// Only a scatter may write where it reads, and only as its in-place form: OutputTensor bound
// exactly over InputTensor with the same strides.
TEST_CASE_METHOD(Fixture, "Binding: an output overlapping an input", "[validation][binding]") {
  // Records spec with every tensor in one 1 KiB buffer at the given offsets.
  auto record = [](OpSpec spec, std::vector<UINT64> offsets) {
    std::unique_ptr<Operator> op;
    std::unique_ptr<CompiledOperator> compiled;
    std::unique_ptr<BindingTable> table;
    std::unique_ptr<Buffer> buf;
    REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
    REQUIRE(Dev().CompileOperator(*op, 0, &compiled).ok());
    REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
    REQUIRE(Dev().CreateBuffer(1024, Buffer::Memory::DeviceLocal, &buf).ok());
    std::vector<DML_BUFFER_BINDING> b;
    for (size_t i = 0; i < spec.tensors.size(); ++i)
      b.push_back(buf->Binding(offsets[i], spec.tensors[i].Total()));
    REQUIRE(table->BindInputs(UINT(b.size() - 1), b.data()).ok());
    REQUIRE(table->BindOutputs(1, &b.back()).ok());
    Result recorded;
    REQUIRE(Dev()
                .Submit([&](VkCommandBuffer cmd) {
                  if (recorded.ok()) recorded = Dev().RecordDispatch(cmd, *table);
                })
                .ok());
    return recorded;
  };
  const OpSpec gather = BaseGatherElements();  // input 48 bytes, indices 32, output 32
  ExpectBind(record(gather, {0, 64, 40}),
             "outputs[0] (OutputTensor, bytes [40, 72)) overlaps inputs[0] (InputTensor, bytes "
             "[0, 48)) in the same VkBuffer");
  ExpectBind(record(gather, {0, 64, 0}), "overlaps inputs[0] (InputTensor");
  ExpectBind(record(gather, {0, 64, 80}), "overlaps inputs[1] (IndicesTensor, bytes [64, 96))");
  for (const OpSpec& scatter : {BaseScatterND(), BaseScatterElements()}) {
    INFO(scatter.ToString());
    const std::string inPlace =
        std::string("; an in-place ") + scatter.Name() + " needs the same offset and strides";
    CHECK(record(scatter, {0, 128, 256, 0}).ok());  // in place
    CHECK(record(scatter, {0, 128, 256, 512}).ok());
    ExpectBind(record(scatter, {0, 128, 256, 16}),
               "overlaps inputs[0] (InputTensor, bytes [0, 48)) in the same VkBuffer" + inPlace);
    ExpectBind(record(scatter, {0, 128, 256, 256}), "overlaps inputs[2] (UpdatesTensor");
    OpSpec transposed = scatter;  // same bytes, other strides
    transposed.tensors[3] = TensorDesc(F32, {1, 3, 4}, {12, 1, 3});
    ExpectBind(record(transposed, {0, 128, 256, 0}), inPlace);
  }
}

TEST_CASE_METHOD(Fixture, "Binding: a range past the end of a vkdml::Buffer",
                 "[validation][binding]") {
  // BindingTable: "... and for a vkdml::Buffer a range inside it". vkdml made this buffer and
  // knows its size (256 bytes).
  Bound b;
  MakeBound(&b);
  std::vector<DML_BUFFER_BINDING> in = {b.buffers[0]->Binding(248, 16), b.bindings[1]};
  ExpectBind(b.table->BindInputs(2, in.data()),
             "inputs[0] covers bytes [248, 264), outside the 256-byte vkdml::Buffer");
  in[0] = b.buffers[0]->Binding(300, 16);  // starts past the end
  ExpectBind(b.table->BindInputs(2, in.data()),
             "inputs[0] covers bytes [300, 316), outside the 256-byte vkdml::Buffer");
  in[0] = b.buffers[0]->Binding(240, 16);  // the last 16 bytes: inside
  CHECK(b.table->BindInputs(2, in.data()).ok());
}

TEST_CASE_METHOD(Fixture, "Binding: Offset + SizeInBytes past 2^64", "[validation][binding]") {
  // Refused for any buffer, before any range arithmetic could wrap.
  Bound b;
  MakeBound(&b);
  DML_BUFFER_BINDING out = b.bindings[2];
  out.Offset = UINT64_MAX - 3;  // a multiple of 4
  ExpectBind(b.table->BindOutputs(1, &out),
             "outputs[0].Offset 18446744073709551612 + SizeInBytes 16 is past 2^64");
  out.Offset = 8;
  out.SizeInBytes = UINT64_MAX - 4;
  ExpectBind(b.table->BindOutputs(1, &out),
             "outputs[0].Offset 8 + SizeInBytes 18446744073709551611 is past 2^64");
  out.Offset = 0;  // the sum is 2^64 - 1: no wrap, but past the end of this 256-byte buffer
  out.SizeInBytes = UINT64_MAX;
  ExpectBind(b.table->BindOutputs(1, &out), "covers bytes [0, 18446744073709551615), outside");
}

TEST_CASE_METHOD(Fixture, "Buffer: Write and Read outside the buffer", "[validation][binding]") {
  std::unique_ptr<Buffer> buf;
  REQUIRE(Dev().CreateBuffer(64, Buffer::Memory::HostVisible, &buf).ok());
  uint8_t data[16] = {};
  Result r = buf->Write(56, data, 16);
  CHECK(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message,
             Contains("Buffer::Write: offset 56 + size 16 reaches past the buffer's 64"));
  r = buf->Read(UINT64_MAX, data, 2);  // the end wraps past 2^64: still outside
  CHECK(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message, Contains("Buffer::Read: offset 18446744073709551615 + size 2 reaches"));
  CHECK(buf->Write(48, data, 16).ok());
  CHECK(buf->Read(0, data, 16).ok());
}

TEST_CASE_METHOD(Fixture, "Device::Run: argument checks and the checked mode",
                 "[validation][run]") {
  OpSpec spec =
      OpSpec::GatherElements(TensorDesc(F32, {4}), TensorDesc(I32, {2}), TensorDesc(F32, {2}), 0);
  std::unique_ptr<Operator> op;
  REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
  std::unique_ptr<CompiledOperator> checked, plain;
  REQUIRE(Dev().CompileOperator(*op, VKDML_EXECUTION_FLAG_CHECK_INDICES, &checked).ok());
  REQUIRE(Dev().CompileOperator(*op, 0, &plain).ok());
  const float data[4] = {1, 2, 3, 4};
  const int32_t idx[2] = {1, 7};
  float out[2] = {0, 0};
  {
    Result r = Dev().Run(*plain, {data}, {out});
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    r = Dev().Run(*plain, {data, nullptr}, {out});
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    r = Dev().Run(*plain, {data, idx}, {nullptr});
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
  }
  {  // unchecked: clamps, Ok
    Result r = Dev().Run(*plain, {data, idx}, {out});
    INFO(Str(r));
    CHECK(r.ok());
    CHECK(out[0] == 2);
    CHECK(out[1] == 4);
  }
  {  // checked: clamps, and Run reports the first offending index (no binding table to ask)
    out[0] = out[1] = 0;
    Result r = Dev().Run(*checked, {data, idx}, {out});
    INFO(Str(r));
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK_THAT(r.message, Contains("IndicesTensor[1] is 7, outside the valid range [-4, 3]"));
    CHECK(out[0] == 2);
    CHECK(out[1] == 4);
  }
  {  // unknown execution flags
    std::unique_ptr<CompiledOperator> c;
    Result r = Dev().CompileOperator(*op, 0x8000, &c);
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    for (UINT f : {UINT(DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION),
                   UINT(DML_EXECUTION_FLAG_DISABLE_META_COMMANDS),
                   UINT(DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE)}) {
      r = Dev().CompileOperator(*op, f, &c);
      INFO("flag " << f << ": " << Str(r));
      CHECK(r.ok());
    }
  }
}

TEST_CASE_METHOD(Fixture, "Rule 33: ReduceFunction is not a VKDML_REDUCE_FUNCTION",
                 "[validation][reduce]") {
  for (auto base : {BaseScatterND, BaseScatterElements}) {
    for (UINT f : {6u, 0x80000000u, 0xFFFFFFFFu}) {
      OpSpec spec = base();
      spec.WithReduce(static_cast<VKDML_REDUCE_FUNCTION>(f));
      spec.Desc();
      ExpectInvalid(spec, {"ReduceFunction is " + std::to_string(f) +
                           ", expected VKDML_REDUCE_FUNCTION_NONE (0), _ADD (1), _MULTIPLY (2), "
                           "_MAX (3), _MIN (4) or _MEAN (5)"});
    }
    for (UINT f = 0; f <= 5; ++f) {
      OpSpec spec = base();
      spec.WithReduce(static_cast<VKDML_REDUCE_FUNCTION>(f));
      Result r = Create(spec.Desc());
      INFO(spec.ToString() << ": " << Str(r));
      CHECK(r.ok());
    }
  }
}

// The reduce operators check their tensors with their DirectML counterparts' rules and say so
// under their own names.
TEST_CASE_METHOD(Fixture, "Rule 34: the reduce operators check what their DirectML scatters do",
                 "[validation][reduce]") {
  {
    OpSpec spec = BaseScatterND();
    spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    spec.tensors[3] = TensorDesc(F32, {1, 3, 5});
    spec.Desc();
    ExpectInvalid(spec, {"OutputTensor.Sizes[2] is 5, expected 4 (InputTensor.Sizes[2])"});
    CHECK(std::string(spec.Name()) == "SCATTER_ND_REDUCE");
  }
  {
    OpSpec spec = BaseScatterElements();
    spec.WithReduce(VKDML_REDUCE_FUNCTION_MAX);
    spec.axis = 3;
    spec.Desc();
    ExpectInvalid(spec, {"Axis is 3, expected less than 3"});
    CHECK(std::string(spec.Name()) == "SCATTER_ELEMENTS_REDUCE");
  }
  {
    OpSpec spec = BaseScatterElements();
    spec.WithReduce(VKDML_REDUCE_FUNCTION_MIN);
    spec.tensors[2] = TensorDesc(F16, {1, 2, 4});
    spec.Desc();
    ExpectInvalid(spec, {"UpdatesTensor.DataType is FLOAT16, expected FLOAT32"});
  }
}

// Reductions on 1- and 2-byte elements update whole 4-byte words atomically: the output's binding
// offset must be a multiple of 4. A deterministic execution writes elements alone and takes any
// the device takes (a multiple of 4 where it moves them in words: BindingAlignment).
TEST_CASE_METHOD(Fixture, "Binding: a 1- or 2-byte reduction's output offset is a multiple of 4",
                 "[validation][binding][reduce]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  for (DML_TENSOR_DATA_TYPE type : {DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT16}) {
    if (!sweep.Runs(type)) continue;
    for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
      INFO(DataTypeName(type) << (flags ? ", deterministic" : ""));
      OpSpec spec = OpSpec::ScatterElements(TensorDesc(type, {8}), TensorDesc(I32, {4}),
                                            TensorDesc(type, {4}), TensorDesc(type, {8}), 0);
      spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      std::unique_ptr<Operator> op;
      REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
      std::unique_ptr<CompiledOperator> compiled;
      REQUIRE(Dev().CompileOperator(*op, flags, &compiled).ok());
      std::unique_ptr<BindingTable> table;
      REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
      std::unique_ptr<Buffer> buf;
      REQUIRE(Dev().CreateBuffer(256, Buffer::Memory::DeviceLocal, &buf).ok());
      const UINT64 es = DataTypeSize(type);
      DML_BUFFER_BINDING out = buf->Binding(es, 16);
      if (flags) {
        CHECK(table->BindOutputs(1, &out).ok() == (BindingAlignment(type) == es));
      } else {
        ExpectBind(table->BindOutputs(1, &out),
                   "outputs[0].Offset is " + std::to_string(es) +
                       ", expected a multiple of 4: SCATTER_ELEMENTS_REDUCE on " +
                       DataTypeName(type) +
                       " elements updates the 4-byte words that hold them "
                       "(OutputTensor)");
      }
      out.Offset = 4;
      CHECK(table->BindOutputs(1, &out).ok());
    }
  }
}

TEST_CASE_METHOD(Fixture, "CompileOperator: VKDML_EXECUTION_FLAG_DETERMINISTIC on every operator",
                 "[validation][reduce]") {
  for (auto base : AllBases()) {
    OpSpec spec = base();
    std::unique_ptr<Operator> op;
    REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
    std::unique_ptr<CompiledOperator> compiled;
    Result r = Dev().CompileOperator(
        *op, VKDML_EXECUTION_FLAG_DETERMINISTIC | VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled);
    INFO(spec.ToString() << ": " << Str(r));
    CHECK(r.ok());
    r = Dev().CompileOperator(*op, 0x400, &compiled);
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Contains("flags has unknown bits 0x400"));
  }
}

// Documented refusals of the calls themselves: every null `out`, a buffer of 0 bytes, a
// physicalDeviceIndex past the devices there are; each names the call and the argument.
TEST_CASE_METHOD(Fixture, "Calls: null out pointers; a buffer of 0 bytes; no such device",
                 "[validation]") {
  OpSpec spec =
      OpSpec::GatherElements(TensorDesc(F32, {4}), TensorDesc(I32, {2}), TensorDesc(F32, {2}), 0);
  std::unique_ptr<Operator> op;
  REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, 0, &compiled).ok());
  const auto refused = [](const Result& r, const char* message) {
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Contains(message));
  };
  refused(Dev().CreateOperator(spec.Desc(), nullptr), "CreateOperator: out is null");
  refused(Dev().CompileOperator(*op, 0, nullptr), "CompileOperator: out is null");
  refused(Dev().CreateBindingTable(*compiled, nullptr), "CreateBindingTable: out is null");
  refused(Dev().GetPipelineCacheData(nullptr), "GetPipelineCacheData: out is null");
  refused(EnumerateDevices(nullptr), "EnumerateDevices: out is null");
  refused(CreateDevice(DeviceDesc{}, nullptr), "CreateDevice: out is null");
  refused(Dev().CreateBuffer(16, Buffer::Memory::DeviceLocal, nullptr),
          "CreateBuffer: out is null");
  std::unique_ptr<Buffer> buffer;
  refused(Dev().CreateBuffer(0, Buffer::Memory::DeviceLocal, &buffer),
          "CreateBuffer: size is 0, expected at least 1");
  CHECK(!buffer);
  std::vector<DeviceInfo> devices;
  REQUIRE(EnumerateDevices(&devices).ok());
  DeviceDesc desc;
  desc.physicalDeviceIndex = int(devices.size());
  std::unique_ptr<Device> device;
  refused(CreateDevice(desc, &device),
          ("DeviceDesc.physicalDeviceIndex is " + std::to_string(devices.size()) +
           ", expected less than " + std::to_string(devices.size()))
              .c_str());
  CHECK(!device);
}

// DML_TENSOR_FLAG_OWNED_BY_DML is accepted and ignored (dml.h): the same operator, flagged on
// every tensor, gives the same bytes.
TEST_CASE_METHOD(Fixture, "Tensor flags: DML_TENSOR_FLAG_OWNED_BY_DML is accepted and ignored",
                 "[validation]") {
  OpSpec spec =
      OpSpec::GatherElements(TensorDesc(F32, {4}), TensorDesc(I32, {3}), TensorDesc(F32, {3}), 0);
  for (TensorDesc& t : spec.tensors) t.buf.Flags = DML_TENSOR_FLAG_OWNED_BY_DML;
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(spec.Desc(), &op);
  INFO(Str(r));
  REQUIRE(r.ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, 0, &compiled).ok());
  const float data[4] = {1, 2, 3, 4};
  const int32_t idx[3] = {3, -4, 1};
  float out[3] = {};
  REQUIRE(Dev().Run(*compiled, {data, idx}, {out}).ok());
  CHECK(out[0] == 4);
  CHECK(out[1] == 1);
  CHECK(out[2] == 2);
}

// DeviceInfo::timestampsSupported and timestampPeriod say what Vulkan says of the queue vkdml
// uses (asked here through the loader), and where supported, timestamps written around a
// dispatch on that queue come back in order.
TEST_CASE_METHOD(Fixture, "DeviceInfo: timestamps on the queue vkdml uses", "[validation]") {
  auto gipa = hooks::LoaderGetInstanceProcAddr();
  REQUIRE(gipa);
  auto families = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
      gipa(Dev().Instance(), "vkGetPhysicalDeviceQueueFamilyProperties"));
  auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(
      gipa(Dev().Instance(), "vkGetPhysicalDeviceProperties"));
  REQUIRE(families);
  REQUIRE(properties);
  uint32_t n = 0;
  families(Dev().PhysicalDevice(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> f(n);
  families(Dev().PhysicalDevice(), &n, f.data());
  REQUIRE(Dev().QueueFamilyIndex() < n);
  VkPhysicalDeviceProperties p{};
  properties(Dev().PhysicalDevice(), &p);
  const DeviceInfo& info = Dev().Info();
  CHECK(info.timestampPeriod == p.limits.timestampPeriod);
  CHECK(info.timestampsSupported ==
        (f[Dev().QueueFamilyIndex()].timestampValidBits > 0 && p.limits.timestampPeriod > 0));
  if (!info.timestampsSupported) return;
  const auto dev = [](const char* name) { return Dev().GetDeviceProcAddr()(Dev().Handle(), name); };
  auto createPool = reinterpret_cast<PFN_vkCreateQueryPool>(dev("vkCreateQueryPool"));
  auto destroyPool = reinterpret_cast<PFN_vkDestroyQueryPool>(dev("vkDestroyQueryPool"));
  auto reset = reinterpret_cast<PFN_vkCmdResetQueryPool>(dev("vkCmdResetQueryPool"));
  auto write = reinterpret_cast<PFN_vkCmdWriteTimestamp>(dev("vkCmdWriteTimestamp"));
  auto results = reinterpret_cast<PFN_vkGetQueryPoolResults>(dev("vkGetQueryPoolResults"));
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  VkQueryPool pool = VK_NULL_HANDLE;
  REQUIRE(createPool(Dev().Handle(), &qi, nullptr, &pool) == VK_SUCCESS);
  OpSpec spec = OpSpec::GatherElements(TensorDesc(F32, {1024}), TensorDesc(I32, {1024}),
                                       TensorDesc(F32, {1024}), 0);
  std::unique_ptr<Operator> op;
  REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, 0, &compiled).ok());
  std::unique_ptr<Buffer> buffer;
  REQUIRE(Dev().CreateBuffer(3 * 4096, Buffer::Memory::DeviceLocal, &buffer).ok());
  std::vector<uint8_t> zeros(3 * 4096);
  REQUIRE(buffer->Write(0, zeros.data(), zeros.size()).ok());
  std::unique_ptr<BindingTable> table;
  REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
  DML_BUFFER_BINDING in[] = {buffer->Binding(0, 4096), buffer->Binding(4096, 4096)};
  DML_BUFFER_BINDING out[] = {buffer->Binding(8192, 4096)};
  REQUIRE(table->BindInputs(2, in).ok());
  REQUIRE(table->BindOutputs(1, out).ok());
  Result recorded;
  REQUIRE(Dev()
              .Submit([&](VkCommandBuffer cmd) {
                reset(cmd, pool, 0, 2);
                write(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0);
                recorded = Dev().RecordDispatch(cmd, *table);
                write(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1);
              })
              .ok());
  REQUIRE(recorded.ok());
  uint64_t ticks[2] = {};
  CHECK(results(Dev().Handle(), pool, 0, 2, sizeof ticks, ticks, sizeof(uint64_t),
                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS);
  CHECK(ticks[1] >= ticks[0]);
  destroyPool(Dev().Handle(), pool, nullptr);
}

// VKDML_OPERATOR_OUT_OF_RANGE: its Mode against the operator it wraps, FillValue's bytes, and
// what it wraps; the wrapped operator's own rules keep their messages.
TEST_CASE_METHOD(Fixture, "Rule 36: VKDML_OPERATOR_OUT_OF_RANGE's Mode, FillValue and Operator",
                 "[validation][out_of_range]") {
  auto expect = [](OpSpec& spec, const std::string& prefix, const std::string& fragment) {
    INFO("operator: " << spec.ToString());
    Expect(Create(spec.Desc()), Status::InvalidArgument, prefix, {fragment});
  };
  for (const auto& base : AllBases()) {
    for (UINT mode : {4u, 0x80000000u, 0xFFFFFFFFu}) {
      OpSpec spec = base();
      spec.WithOutOfRange(static_cast<VKDML_OUT_OF_RANGE_MODE>(mode));
      expect(
          spec, spec.Name(),
          "Mode is " + std::to_string(mode) +
              ", expected VKDML_OUT_OF_RANGE_MODE_CLAMP (0), _FILL (1), _DROP (2) or _ERROR (3)");
    }
    OpSpec wrong = base();
    wrong.WithOutOfRange(wrong.IsScatter() ? VKDML_OUT_OF_RANGE_MODE_FILL
                                           : VKDML_OUT_OF_RANGE_MODE_DROP);
    expect(wrong, wrong.Name(),
           wrong.IsScatter()
               ? "Mode is VKDML_OUT_OF_RANGE_MODE_FILL, which is for gathers: a "
                 "scatter skips its out-of-range updates with "
                 "VKDML_OUT_OF_RANGE_MODE_DROP (2)"
               : "Mode is VKDML_OUT_OF_RANGE_MODE_DROP, which is for scatters and "
                 "embedding bags: a gather writes a value for its out-of-range indices with "
                 "VKDML_OUT_OF_RANGE_MODE_FILL (1)");
    // A FLOAT32 tensor's fill given as a double: its high bytes would be lost.
    DML_SCALAR_UNION asDouble{};
    asDouble.Float64 = 1.0;  // 0x3FF0000000000000: Bytes[6] is 0xF0
    OpSpec wide = base();
    if (!wide.IsScatter()) {
      wide.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_FILL, asDouble);
      expect(wide, wide.Name(),
             "FillValue.Bytes[6] is 240, expected 0: OutputTensor's DataType, FLOAT32, is 4 bytes "
             "wide");
    }
    for (VKDML_OUT_OF_RANGE_MODE mode :
         {VKDML_OUT_OF_RANGE_MODE_CLAMP, VKDML_OUT_OF_RANGE_MODE_ERROR}) {
      DML_SCALAR_UNION one{};
      one.Bytes[0] = 1;
      OpSpec spec = base();
      spec.WithOutOfRange(mode, one);
      expect(spec, spec.Name(),
             std::string("FillValue.Bytes[0] is 1, expected 0: Mode ") +
                 (mode == VKDML_OUT_OF_RANGE_MODE_CLAMP ? "CLAMP" : "ERROR") + " writes no value");
    }
    // Every mode the operator takes, and the wrapped operator's rules under its own name.
    for (UINT mode = 0; mode <= 3; ++mode) {
      OpSpec spec = base();
      if (mode == (spec.IsScatter() ? 1u : 2u)) continue;
      DML_SCALAR_UNION fill{};
      if (mode == VKDML_OUT_OF_RANGE_MODE_FILL) fill.Float32 = -2.5f;
      spec.WithOutOfRange(static_cast<VKDML_OUT_OF_RANGE_MODE>(mode), fill);
      std::unique_ptr<Operator> op;
      Result r = Dev().CreateOperator(spec.Desc(), &op);
      INFO(spec.ToString() << ": " << Str(r));
      REQUIRE(r.ok());
      CHECK(op->Type() == VKDML_OPERATOR_OUT_OF_RANGE);
      spec.tensors[0].sizes.assign(9, 1);  // readable, should the library look
      spec.tensors[0].strides.clear();
      spec.tensors[0].Fix();
      spec.tensors[0].buf.DimensionCount = 9;
      expect(spec, spec.Name(), "InputTensor.DimensionCount is 9, expected 1 to 8");
    }
  }
  DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, nullptr};
  Expect(Create(outer), Status::InvalidArgument, "", {"DML_OPERATOR_DESC.Desc is null"});
  VKDML_OUT_OF_RANGE_OPERATOR_DESC none{nullptr, VKDML_OUT_OF_RANGE_MODE_FILL, {}};
  outer.Desc = &none;
  Expect(Create(outer), Status::InvalidArgument, "OUT_OF_RANGE", {"Operator is null"});
  OpSpec inner = BaseGather();
  inner.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_FILL);
  VKDML_OUT_OF_RANGE_OPERATOR_DESC nested{&inner.Desc(), VKDML_OUT_OF_RANGE_MODE_FILL, {}};
  outer.Desc = &nested;
  Expect(Create(outer), Status::InvalidArgument, "OUT_OF_RANGE",
         {"Operator is itself VKDML_OPERATOR_OUT_OF_RANGE; wrap the gather or scatter directly"});
}

// The reduce operators' ExcludeSelf: 0 or 1, and 1 only with a reduction.
TEST_CASE_METHOD(Fixture, "Rule 37: ExcludeSelf is 0 or 1, and 1 only with a reduction",
                 "[validation][reduce]") {
  for (auto base : {BaseScatterND, BaseScatterElements}) {
    for (BOOL v : {2, -1, 0x40000000}) {
      OpSpec spec = base();
      spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      spec.excludeSelf = v;
      spec.Desc();
      ExpectInvalid(spec, {"ExcludeSelf is " + std::to_string(v) + ", expected 0 or 1"});
    }
    OpSpec none = base();
    none.WithReduce(VKDML_REDUCE_FUNCTION_NONE);
    none.excludeSelf = 1;
    none.Desc();
    ExpectInvalid(none, {"ExcludeSelf is 1 with ReduceFunction VKDML_REDUCE_FUNCTION_NONE: it "
                         "applies to a reduction"});
    for (UINT f = 1; f <= 4; ++f) {
      OpSpec spec = base();
      spec.WithReduce(static_cast<VKDML_REDUCE_FUNCTION>(f));
      spec.excludeSelf = 1;
      Result r = Create(spec.Desc());
      INFO(spec.ToString() << ": " << Str(r));
      CHECK(r.ok());
    }
  }
}
