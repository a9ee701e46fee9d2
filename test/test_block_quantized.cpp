// VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED: ONNX Runtime's GatherBlockQuantized on INT4, UINT4 and
// UINT8 values (4 and 8 bits), bit for bit against a reference written here in ONNX's terms
// (dml.h's definition: (value - zero point) * scale in float32, once rounded; float16 by
// searching every float16 for the nearest), on random shapes, axes, block sizes, zero points or
// none, strides, index types, denormal scales and out-of-range indices; by hand; checked mode and
// FILL; a device without 8/16-bit storage; the kernels chosen; every validation rule.
#include <cmath>
#include <set>

#include "block_ref.h"
#include "kernels/kernels.h"
#include "test_util.h"

using namespace vt;

namespace {

std::vector<Bytes> Inputs(const BlockCase& c, const BlockBuilt& b) {
  std::vector<Bytes> in = {b.data, b.indexImage, b.scaleImage};
  if (c.zeroPoints) in.push_back(b.zeros);
  return in;
}

Result Compile(Device& device, BlockBuilt& b, UINT flags, std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  VKDML_TRY(device.CreateOperator(b.op, &op));
  return device.CompileOperator(*op, flags, out);
}

// Runs c through Device::Run and checks every output byte (gaps keep their poison).
void RunAndCheck(Device& device, Rng& rng, const BlockCase& c) {
  BlockBuilt b;
  Build(rng, c, &b);
  INFO("input " << b.input.ToString() << ", indices " << b.indices.ToString() << ", scales "
                << b.scales.ToString() << ", output " << b.output.ToString() << ", type "
                << UINT(c.type) << ", axis " << c.axis << ", quantize axis " << c.quantizeAxis
                << ", block " << c.blockSize << ", zero points " << c.zeroPoints);
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(device, b, DML_EXECUTION_FLAG_NONE, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  const std::vector<Bytes> in = Inputs(c, b);
  std::vector<const void*> ptrs;
  for (const Bytes& x : in) ptrs.push_back(x.data());
  Bytes out = Poisoned(b.output.Total());
  r = device.Run(*compiled, ptrs, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  const ref::Tensor t = b.output.Ref();
  CHECK(DiffBytes(out, Expected(c, b, Poisoned(b.output.Total())), &t) == "");
}

std::vector<int64_t> RandomIndices(Rng& rng, UINT64 count, UINT n, DML_TENSOR_DATA_TYPE type) {
  const bool isSigned = type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_INT64;
  std::vector<int64_t> v(count);
  for (auto& x : v) {
    if (rng.P(0.1))
      x = isSigned && rng.P(0.5) ? -int64_t(n) - int64_t(rng.U(1, 9)) : int64_t(n + rng.U(0, 5));
    else if (isSigned && rng.P(0.3))
      x = -int64_t(rng.U(1, n));
    else
      x = int64_t(rng.U(0, n - 1));
  }
  return v;
}

BlockCase RandomCase(Rng& rng, uint64_t n) {
  BlockCase c;
  c.type = VKDML_BLOCK_QUANTIZED_TYPE(1 + n % 4);
  c.indexType = IndexTypes()[(n / 4) % 4];
  c.outType = (n / 2) % 2 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  const UINT rank = rng.Ui(1, 3);
  for (UINT d = 0; d < rank; ++d) c.values.push_back(rng.Ui(1, d + 1 == rank ? 70 : 5));
  if (c.FourBit()) c.values.back() += c.values.back() % 2;
  // INT4 and UINT4 data as ONNX's tensors of any shape (ValueSizes), in a quarter of the cases
  // (of those, n < 32: an odd last size).
  c.wholeData = c.WholeZeros() && (n / 16) % 2;
  if (c.wholeData && n < 32) c.values.back() -= 1;
  c.axis = rng.Ui(0, rank - 1);
  c.quantizeAxis = rng.Ui(0, rank - 1);
  c.blockSize = rng.P(0.7) ? 16 : 32;
  const UINT q = rng.Ui(rank == 3 ? 0 : 1, rank == 3 ? 1 : 2);  // output rank at most 4
  for (UINT d = 0; d < q; ++d) c.indices.push_back(rng.Ui(1, 4));
  c.zeroPoints = rng.P(0.5);
  c.stridedIndices = rng.P(0.3);
  c.stridedScales = rng.P(0.3);
  c.stridedOutput = rng.P(0.3);
  c.denormals = c.outType == DML_TENSOR_DATA_TYPE_FLOAT32 && rng.P(0.3);
  c.indexValues = RandomIndices(rng, Count(c.indices), c.values[c.axis], c.indexType);
  return c;
}

}  // namespace

// UINT8 values by hand: row 2 then row 0 of a 3 x 16 table, one block a row.
TEST_CASE_METHOD(Fixture, "Block-quantized gather: UINT8 and INT4 rows by hand",
                 "[block_quantized]") {
  for (auto type : {VKDML_BLOCK_QUANTIZED_TYPE_UINT8, VKDML_BLOCK_QUANTIZED_TYPE_INT4}) {
    const bool four = type == VKDML_BLOCK_QUANTIZED_TYPE_INT4;
    const UINT bytes = four ? 8 : 16;
    TensorDesc input(DML_TENSOR_DATA_TYPE_UINT8, {3, bytes}),
        indices(DML_TENSOR_DATA_TYPE_INT32, {1, 2}), scales(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 1}),
        output(DML_TENSOR_DATA_TYPE_FLOAT32, {2, 16});
    VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC d{
        input.Desc(), indices.Desc(), scales.Desc(), nullptr, output.Desc(), type, 0, 1, 1,
        16,           nullptr};
    std::unique_ptr<Operator> op;
    Result r = Dev().CreateOperator({VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &d}, &op);
    INFO(Str(r));
    REQUIRE(r.ok());
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    Bytes table(3 * bytes);
    for (UINT k = 0; k < table.size(); ++k) table[k] = uint8_t(k * 37 + 11);
    const float scale[3] = {0.5f, -3.0f, 0.25f};
    const int32_t idx[2] = {2, -3};  // row 2, then row 0
    std::vector<float> out(32, -7);
    REQUIRE(Dev().Run(*compiled, {table.data(), idx, scale}, {out.data()}).ok());
    for (UINT n = 0; n < 2; ++n)
      for (UINT v = 0; v < 16; ++v) {
        const UINT row = n == 0 ? 2 : 0;
        const uint8_t byte = table[row * bytes + (four ? v / 2 : v)];
        const int q = four ? ((byte >> (4 * (v % 2))) & 15) - ((byte >> (4 * (v % 2))) & 8 ? 16 : 0)
                           : byte - 128;
        INFO("type " << UINT(type) << ", output row " << n << ", value " << v);
        CHECK(out[n * 16 + v] == float(q) * scale[row]);
      }
  }
}

// ONNX's int4 tensor of shape {3, 5} (ValueSizes): 15 values in 8 bytes, rows not starting on a
// byte (row 1 begins in byte 2's high nibble); rows 2 and 1 gathered, one block a row.
TEST_CASE_METHOD(Fixture, "Block-quantized gather: INT4 rows of an odd length by hand",
                 "[block_quantized]") {
  TensorDesc input(DML_TENSOR_DATA_TYPE_UINT8, {1, 8}), indices(DML_TENSOR_DATA_TYPE_INT32, {1, 2}),
      scales(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 1}), output(DML_TENSOR_DATA_TYPE_FLOAT32, {2, 5});
  const UINT sizes[2] = {3, 5};
  VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC d{input.Desc(),
                                               indices.Desc(),
                                               scales.Desc(),
                                               nullptr,
                                               output.Desc(),
                                               VKDML_BLOCK_QUANTIZED_TYPE_INT4,
                                               0,
                                               1,
                                               1,
                                               16,
                                               sizes};
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator({VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &d}, &op);
  INFO(Str(r));
  REQUIRE(r.ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  // Values 0..14: -7, -6, ..., 7 (value n is n - 7), two a byte, the first in the low nibble.
  const uint8_t table[8] = {0xA9, 0xCB, 0xED, 0x0F, 0x21, 0x43, 0x65, 0x07};
  const float scale[3] = {0.5f, -3.0f, 0.25f};
  const int32_t idx[2] = {2, 1};
  std::vector<float> out(10, -7);
  REQUIRE(Dev().Run(*compiled, {table, idx, scale}, {out.data()}).ok());
  const std::vector<float> expected = {0.75f, 1.0f, 1.25f, 1.5f,  1.75f,   // row 2: 3 to 7
                                       6.0f,  3.0f, -0.0f, -3.0f, -6.0f};  // row 1: -2 to 2
  CHECK(out == expected);
  CHECK(std::signbit(out[7]));
}

// Random shapes (rank 1 to 3 values, 1 or 2 index dimensions), axes, block sizes, types, index
// types, FLOAT32 and FLOAT16, zero points or not, strided indices, scales and outputs, denormal
// scales, duplicates and out-of-range indices (clamped).
TEST_CASE_METHOD(Fixture, "Block-quantized gather: random vs reference", "[block_quantized]") {
  for (uint64_t n = 0; n < 64; ++n) {
    Rng rng(BaseSeed() ^ (0xB10C + n * 0x9E3779B97F4A7C15ull));  // a case replays alone
    const BlockCase c = RandomCase(rng, n);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunAndCheck(Dev(), rng, c);
  }
}

// InputTensor past the binding range, which the test knob VKDML_MAX_BINDING_RANGE narrows to 2
// to 6 windows of it (ScaleTensor and ZeroPointTensor within one; IndicesTensor and OutputTensor
// through windows too where larger): the large path, a dispatch per chunk of the output and
// window of the values, each taking the values in its window. Random cases as above, with blocks
// of 64 or 128 values (so the scales fit a window), FILL and checked mode among them, bit for
// bit.
TEST_CASE_METHOD(Fixture, "Block-quantized gather: past the binding range",
                 "[block_quantized][large]") {
  const UINT64 align = CapabilitiesOf(Dev()).rangeAlign;
  for (uint64_t n = 0; n < 32; ++n) {
    Rng rng(BaseSeed() ^ (0x1A6B10C + n * 0x9E3779B97F4A7C15ull));
    BlockCase c = RandomCase(rng, n);
    c.blockSize = rng.P(0.5) ? 64 : 128;
    c.values[c.quantizeAxis] = std::max<UINT>(c.values[c.quantizeAxis], 2) * 9;  // even
    if (n % 5 == 2) c.outOfRange = VKDML_OUT_OF_RANGE_MODE_FILL;
    c.fill = 1.5f;
    c.stridedScales = false;  // ScaleTensor within the window below
    c.indexValues = RandomIndices(rng, Count(c.indices), c.values[c.axis], c.indexType);
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    Rng build(n);
    BlockBuilt b;
    Build(build, c, &b);
    const UINT64 windows = 2 + n % 5;
    UINT64 window = (b.input.Total() / windows + 15) / 16 * 16;
    for (const TensorDesc* t : {&b.scales, &b.zeroPoints})
      window = std::max(window, (t->Total() + 15) / 16 * 16);
    const std::string range = std::to_string(align + window);
    ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range.c_str());
    INFO("VKDML_MAX_BINDING_RANGE=" << range);
    const vkdml::detail::KernelSet set = Chosen(b.op);
    REQUIRE(set.large);
    std::set<UINT64> begins;
    for (const auto& d : set.steps.back().plain.large) begins.insert(d.indexed.begin);
    CHECK(begins.size() == (b.input.Total() + window - 1) / window);
    if (!SweepRuns(n)) continue;
    RunAndCheck(Dev(), rng, c);
  }
}

// Checked mode reports the first out-of-range index (the output as clamped); FILL writes its
// value instead.
TEST_CASE_METHOD(Fixture, "Block-quantized gather: checked mode and FILL", "[block_quantized]") {
  Rng rng(BaseSeed() ^ 0xB1F1);
  BlockCase c;
  c.values = {5, 32};
  c.indices = {4};
  c.quantizeAxis = 1;
  c.indexValues = {1, 9, -2, 5};
  {
    BlockBuilt b;
    Build(rng, c, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
    Bytes out = Poisoned(b.output.Total());
    Result r = Dev().Run(*compiled, {b.data.data(), b.indexImage.data(), b.scaleImage.data()},
                         {out.data()});
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK(r.message.find("is 9") != std::string::npos);
    CHECK(DiffBytes(out, Expected(c, b, Poisoned(b.output.Total())), nullptr) == "");
  }
  for (auto outType : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16}) {
    c.outType = outType;
    c.outOfRange = VKDML_OUT_OF_RANGE_MODE_FILL;
    c.fill = -1.5f;
    RunAndCheck(Dev(), rng, c);
  }
}

// Without 8/16-bit storage the kernels are the same (32-bit words throughout).
TEST_CASE_METHOD(Fixture, "Block-quantized gather: a device without 8/16-bit storage",
                 "[block_quantized]") {
  std::unique_ptr<Device> plain;
  REQUIRE(CreateDevice(Borrowed(Dev(), DeviceFeatures{}), &plain).ok());
  for (uint64_t n = 0; n < 8; ++n) {
    Rng rng(BaseSeed() ^ (0xB8B8 + n));
    BlockCase c = RandomCase(rng, n);
    c.zeroPoints = true;
    RunAndCheck(*plain, rng, c);
  }
}

// GPU-free: each pass's module and what the scratch holds.
TEST_CASE("Block-quantized gather: the kernels chosen", "[block_quantized][kernels]") {
  Rng rng(1);
  BlockCase c;
  c.type = VKDML_BLOCK_QUANTIZED_TYPE_INT4;
  c.indexType = DML_TENSOR_DATA_TYPE_INT64;
  c.values = {6, 64};
  c.indices = {3};
  c.quantizeAxis = 1;
  c.blockSize = 32;
  c.zeroPoints = true;
  c.indexValues = {0, 1, 2};
  BlockBuilt b;
  Build(rng, c, &b);
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
  vkdml::detail::KernelSet set;
  REQUIRE(vkdml::detail::ChooseKernels(op, 0, vkdml::detail::Capabilities{}, &set).ok());
  REQUIRE(set.steps.size() == 3);
  CHECK(set.steps[0].plain.module == "block_scales");
  CHECK(set.steps[1].plain.module == "block_zero_points_b4");
  CHECK(set.steps[2].plain.module == "dequantize_blocks_b4_i64");
  CHECK(set.steps[2].plain.spec[VKDML_SPEC_ELEMENT_KIND] == VKDML_KIND_SIGNED);
  CHECK(set.blockWords == 2 * 6 * 2);  // a scale and a zero point for each of 6 x 2 blocks
  CHECK(set.wordBindings);
  const auto& g = set.plans[set.steps[2].plain.slot].params;  // inner, along, blocks, size
  CHECK((g[0] == 1 && g[1] == 64 && g[2] == 2 && g[3] == 32));
  CHECK(set.plans[set.steps[0].plain.slot].params[3] == 0);  // INT4's zero point
  // Rows of whole eights of values along the quantize axis (the innermost), in blocks of whole
  // eights: eight values an invocation, FLOAT32 or FLOAT16.
  CHECK(set.steps[2].plain.spec[VKDML_SPEC_UNIT] == 8);
  {  // an invocation per eight values, all at once: 2000 rows of 64, 16000 invocations
    BlockCase many = c;
    many.indices = {2000};
    many.indexValues.assign(2000, 1);
    BlockBuilt m;
    Build(rng, many, &m);
    vkdml::detail::OperatorImpl manyOp;
    REQUIRE(vkdml::detail::BuildOperator(m.op, &manyOp).ok());
    vkdml::detail::Capabilities wide;
    wide.groupSize = 128;
    wide.maxGroups = 65535;
    vkdml::detail::KernelSet manySet;
    REQUIRE(vkdml::detail::ChooseKernels(manyOp, 0, wide, &manySet).ok());
    REQUIRE(manySet.steps.size() == 3);
    CHECK(manySet.steps.back().plain.spec[VKDML_SPEC_UNIT] == 8);
    CHECK(manySet.steps.back().plain.groups == 125);
    CHECK(manySet.steps[0].plain.groups == 1);  // 6 x 2 scales, zero points: one each
    CHECK(manySet.steps[1].plain.groups == 1);
  }
  // Otherwise, FLOAT16: a word of two values an invocation where the output's rows are even and
  // contiguous, else each value alone (atomically); FLOAT32, a value an invocation.
  auto unit = [&rng](const BlockCase& k, Shape* outStrides) {
    BlockBuilt h;
    Build(rng, k, &h);
    *outStrides = h.outStrides;
    vkdml::detail::OperatorImpl half;
    REQUIRE(vkdml::detail::BuildOperator(h.op, &half).ok());
    vkdml::detail::KernelSet kernels;
    REQUIRE(vkdml::detail::ChooseKernels(half, 0, vkdml::detail::Capabilities{}, &kernels).ok());
    return kernels.steps.back().plain.spec[VKDML_SPEC_UNIT];
  };
  c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  c.zeroPoints = false;
  Shape strides;
  c.type = VKDML_BLOCK_QUANTIZED_TYPE_UINT8;
  c.values = {6, 33};  // 33 values a row
  CHECK(unit(c, &strides) == 1);
  c.values = {6, 64};
  CHECK(unit(c, &strides) == 8);
  c.values = {6, 20};  // 20 values a row: pairs, not eights
  c.blockSize = 16;
  CHECK(unit(c, &strides) == 2);
  c.outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  CHECK(unit(c, &strides) == 1);
  c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  c.quantizeAxis = 0;  // along the rows: a row's values in different blocks
  c.values = {16, 64};
  CHECK(unit(c, &strides) == 2);
  c.quantizeAxis = 1;
  c.stridedOutput = true;  // rows padded by 0 to 2 values: an odd stride now and then
  UINT pairs = 0, alone = 0, eights = 0;
  for (int k = 0; k < 16; ++k) {
    const UINT u = unit(c, &strides);
    CHECK(u == 8);  // eights go out in words where they start on one (the shader looks)
    eights += u == 8;
  }
  c.values = {6, 20};
  for (int k = 0; k < 16; ++k) {
    const UINT u = unit(c, &strides);
    CHECK(u == (strides[0] % 2 ? 1u : 2u));
    (u == 2 ? pairs : alone) += 1;
  }
  CHECK((pairs > 0 && alone > 0 && eights == 16));
}

// GPU-free, the large path: InputTensor (12 rows of 32 int4 values, 192 bytes) past a binding
// range of 64 bytes after alignment: the scales and zero points as off it, the Blocks pass a
// dispatch per window of 64 bytes, which count 128 values; a FLOAT16 output's word written past
// an element (atomically); ScaleTensor past the range is refused, naming it.
TEST_CASE("Block-quantized gather: the kernels chosen on the large path",
          "[block_quantized][kernels]") {
  Rng rng(1);
  BlockCase c;
  c.type = VKDML_BLOCK_QUANTIZED_TYPE_INT4;
  c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  c.values = {12, 32};
  c.indices = {1};
  c.quantizeAxis = 1;
  c.blockSize = 32;
  c.zeroPoints = true;
  c.indexValues = {5};
  auto choose = [&](const vkdml::detail::Capabilities& caps, vkdml::detail::KernelSet* set) {
    BlockBuilt b;
    Build(rng, c, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    return vkdml::detail::ChooseKernels(op, 0, caps, set);
  };
  vkdml::detail::Capabilities caps;
  caps.maxRange = caps.rangeAlign + 64;
  vkdml::detail::KernelSet set;
  REQUIRE(choose(caps, &set).ok());
  REQUIRE(set.large);
  REQUIRE(set.steps.size() == 3);
  CHECK((set.steps[0].plain.whole && set.steps[1].plain.whole));
  const vkdml::detail::Kernel& k = set.steps[2].plain;
  CHECK(k.module == "dequantize_blocks_b4_i32_large");
  CHECK(!k.whole);
  CHECK((k.indexedNibbles && k.indexedUnit == 1 && k.indexedReach == 0));
  CHECK((k.directUnit == 2 && k.directReach == 2));
  CHECK(k.spec[VKDML_SPEC_UNIT] == 1);  // each float16 alone
  REQUIRE(k.large.size() == 3);         // the output (32 float16) fits a window
  for (UINT w = 0; w < 3; ++w)
    CHECK((k.large[w].indexed.begin == 64 * w && k.large[w].indexed.end == 64 * (w + 1)));
  c.values = {6, 512};  // 6 x 16 blocks: 384 bytes of float16 scales
  const Result r = choose(caps, &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "GATHER_BLOCK_QUANTIZED: ScaleTensor takes 192 bytes, past this device's "
        "maxStorageBufferRange (" +
            std::to_string(caps.maxRange) + " bytes) less its offset alignment (" +
            std::to_string(caps.rangeAlign) +
            "): only InputTensor, IndicesTensor and OutputTensor may pass it");
}

// Every rule of dml.h's VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC, with its message.
TEST_CASE_METHOD(Fixture, "Block-quantized gather: validation", "[block_quantized][validation]") {
  struct Rule {
    const char* message;
    std::function<void(BlockCase&)> edit;                       // on the case, before Build
    std::function<void(BlockBuilt&)> fix = [](BlockBuilt&) {};  // on the descs, after
  };
  auto setType = [](TensorDesc& t, DML_TENSOR_DATA_TYPE type) {
    t = TensorDesc(type, t.sizes, t.strides);
  };
  auto setSizes = [](TensorDesc& t, Shape sizes) { t = TensorDesc(t.Type(), sizes); };
  const std::vector<Rule> rules = {
      {"ValueType is 5, expected VKDML_BLOCK_QUANTIZED_TYPE_INT4 (1), _UINT4 (2), _UINT8_BITS4 "
       "(3) or _UINT8 (4)",
       [](BlockCase& c) { c.type = VKDML_BLOCK_QUANTIZED_TYPE(5); }},
      {"BlockSize is 24, expected a power of 2, at least 16 (as ONNX Runtime's block_size)",
       [](BlockCase& c) { c.blockSize = 24; }},
      {"BlockSize is 8, expected a power of 2, at least 16 (as ONNX Runtime's block_size)",
       [](BlockCase& c) { c.blockSize = 8; }},
      {"InputTensor.DataType is INT8, expected UINT8 (the quantized values)", [](BlockCase&) {},
       [&](BlockBuilt& b) { setType(b.input, DML_TENSOR_DATA_TYPE_INT8); }},
      {"InputTensor.Strides[0] is 17, expected 16 (the quantized values are packed: Strides null "
       "or row-major)",
       [](BlockCase&) {},
       [](BlockBuilt& b) {
         b.input = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, {3, 16}, {17, 1});
       }},
      {"OutputTensor.DataType is INT32, expected FLOAT32 or FLOAT16", [](BlockCase&) {},
       [&](BlockBuilt& b) { setType(b.output, DML_TENSOR_DATA_TYPE_INT32); }},
      {"ScaleTensor.DataType is FLOAT16, expected FLOAT32 (OutputTensor.DataType)",
       [](BlockCase&) {}, [&](BlockBuilt& b) { setType(b.scales, DML_TENSOR_DATA_TYPE_FLOAT16); }},
      {"QuantizeAxis is 2, expected less than 2 (InputTensor.DimensionCount)", [](BlockCase&) {},
       [](BlockBuilt& b) { b.desc.QuantizeAxis = 2; }},
      {"Axis is 2, expected less than 2 (InputTensor.DimensionCount)", [](BlockCase&) {},
       [](BlockBuilt& b) { b.desc.Axis = 2; }},
      {"ScaleTensor.Sizes[1] is 1, expected 2 (blocks of 16 of the 32 values along QuantizeAxis 1)",
       [](BlockCase&) {},
       [&](BlockBuilt& b) {
         setSizes(b.scales, {3, 1});
       }},
      {"ZeroPointTensor.Sizes[1] is 2, expected 1 (blocks of 16 of the 32 values along "
       "QuantizeAxis 1, 2 zero points a byte)",
       [](BlockCase& c) { c.zeroPoints = true; },
       [&](BlockBuilt& b) {
         setSizes(b.zeroPoints, {3, 2});
       }},
      {"ZeroPointTensor.Sizes[1] is 2, expected 5 with every other size 1: UINT4 zero points are "
       "packed whole, as ONNX's tensors of that type, and ScaleTensor's last size (3) is odd, so "
       "their rows do not start on a byte",
       [](BlockCase& c) {
         c.zeroPoints = true;
         c.values = {3, 48};
       },
       [&](BlockBuilt& b) {
         setSizes(b.zeroPoints, {3, 2});
       }},
      {"ValueSizes is given, expected null for ValueType 4: only INT4 (1) and UINT4 (2) values "
       "are packed whole; InputTensor's sizes give the others'",
       [](BlockCase& c) { c.type = VKDML_BLOCK_QUANTIZED_TYPE_UINT8; },
       [](BlockBuilt& b) { b.desc.ValueSizes = b.valueSizes.data(); }},
      {"ValueSizes[1] is 0, expected at least 1", [](BlockCase& c) { c.wholeData = true; },
       [](BlockBuilt& b) { b.valueSizes[1] = 0; }},
      {"ValueSizes hold 4295032832 values, expected at most 4294967295",
       [](BlockCase& c) { c.wholeData = true; },
       [](BlockBuilt& b) {
         b.valueSizes[0] = 65536;
         b.valueSizes[1] = 65537;
       }},
      {"InputTensor.Sizes[1] is 24, expected 71 with every other size 1: UINT4 values are packed "
       "whole, as ONNX's tensors of that type, and ValueSizes[1] (47) is odd, so their rows do "
       "not start on a byte",
       [](BlockCase& c) {
         c.wholeData = true;
         c.values = {3, 47};
       },
       [&](BlockBuilt& b) {
         setSizes(b.input, {3, 24});
       }},
      {"InputTensor.Sizes[1] is 15, expected 16 (ValueSizes[1], 2 values a byte)",
       [](BlockCase& c) { c.wholeData = true; },
       [&](BlockBuilt& b) {
         setSizes(b.input, {3, 15});
       }},
      {"ZeroPointTensor.DataType is INT8, expected UINT8 (the zero points)",
       [](BlockCase& c) { c.zeroPoints = true; },
       [&](BlockBuilt& b) { setType(b.zeroPoints, DML_TENSOR_DATA_TYPE_INT8); }},
      {"OutputTensor.Sizes[1] is 33, expected 32 (InputTensor's values.Sizes[1])",
       [](BlockCase&) {},
       [&](BlockBuilt& b) {
         setSizes(b.output, {2, 33});
       }},
  };
  for (const Rule& rule : rules) {
    INFO(rule.message);
    Rng rng(7);
    BlockCase c;
    c.values = {3, 32};
    c.indices = {2};
    c.quantizeAxis = 1;
    c.indexValues = {0, 2};
    rule.edit(c);
    BlockBuilt b;
    Build(rng, c, &b);
    rule.fix(b);
    b.desc.InputTensor = b.input.Desc();
    b.desc.ScaleTensor = b.scales.Desc();
    b.desc.OutputTensor = b.output.Desc();
    if (c.zeroPoints) b.desc.ZeroPointTensor = b.zeroPoints.Desc();
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.gather, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("GATHER_BLOCK_QUANTIZED: ") + rule.message);
  }
}
