// VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED: ONNX Runtime's GatherBlockQuantized on INT4, UINT4 and
// UINT8 values (4 and 8 bits), bit for bit against a reference written here in ONNX's terms
// (dml.h's definition: (value - zero point) * scale in float32, once rounded; float16 by
// searching every float16 for the nearest), on random shapes, axes, block sizes, zero points or
// none, strides, index types, denormal scales and out-of-range indices; by hand; checked mode and
// FILL; a device without 8/16-bit storage; the kernels chosen; every validation rule.
#include <cmath>

#include "kernels.h"
#include "quantized_ref.h"
#include "test_util.h"

using namespace vt;

namespace {

using Shape = std::vector<UINT>;

struct BlockCase {
  VKDML_BLOCK_QUANTIZED_TYPE type = VKDML_BLOCK_QUANTIZED_TYPE_UINT4;
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT32;
  Shape values;   // ONNX's data shape, in values (4-bit: an even last size)
  Shape indices;  // ONNX's indices shape
  UINT axis = 0, quantizeAxis = 0, blockSize = 16;
  bool zeroPoints = false;
  bool stridedIndices = false, stridedScales = false, stridedOutput = false;
  bool denormals = false;  // scales may be float32 denormals
  VKDML_OUT_OF_RANGE_MODE outOfRange = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  float fill = 0;
  std::vector<int64_t> indexValues;  // row-major over `indices`

  bool FourBit() const { return type != VKDML_BLOCK_QUANTIZED_TYPE_UINT8; }
  UINT Rank() const { return UINT(values.size()); }
  UINT D() const { return std::max<UINT>(Rank(), Rank() - 1 + UINT(indices.size())); }
  Shape Scales() const {
    Shape s = values;
    s[quantizeAxis] = (s[quantizeAxis] + blockSize - 1) / blockSize;
    return s;
  }
  Shape Output() const {
    Shape o(values.begin(), values.begin() + axis);
    o.insert(o.end(), indices.begin(), indices.end());
    o.insert(o.end(), values.begin() + axis + 1, values.end());
    return o;
  }
};

// {1, ..., 1} + s, of rank d (coordinates: {0, ..., 0} + s).
Shape Pad(const Shape& s, UINT d, UINT lead = 1) {
  Shape p(d - s.size(), lead);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

UINT64 Count(const Shape& s) {
  UINT64 n = 1;
  for (UINT v : s) n *= v;
  return n;
}

// Row-major strides, each dimension padded by a few elements when `padded`.
Shape Strides(Rng& rng, const Shape& s, bool padded) {
  if (!padded) return {};
  Shape st(s.size());
  UINT64 at = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = UINT(at);
    at = at * s[d] + rng.Ui(0, 2);
  }
  return st;
}

// The row-major number of `c` in `s`, or its offset over `strides` (row-major when empty).
UINT64 At(const Shape& s, const Shape& strides, const Shape& c) {
  UINT64 off = 0, packed = 1;
  for (size_t d = s.size(); d-- > 0;) {
    off += UINT64(c[d]) * (strides.empty() ? packed : strides[d]);
    packed *= s[d];
  }
  return off;
}

// Advances c through s in row-major order; false after the last.
bool Next(const Shape& s, Shape& c) {
  for (size_t d = s.size(); d-- > 0;) {
    if (++c[d] < s[d]) return true;
    c[d] = 0;
  }
  return false;
}

struct BlockBuilt {
  TensorDesc input, indices, scales, zeroPoints, output;
  VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC gather{};
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{};
  DML_OPERATOR_DESC op{};
  // The images in ONNX's layouts (the data's bytes, the zero points' bytes a row of the last
  // dimension each) and as bound.
  Bytes data, zeros, indexImage, scaleImage;
  Shape indexStrides, scaleStrides, outStrides;
};

Shape Bytes4(Shape s, bool fourBit) {  // a 4-bit tensor's last size in bytes
  if (fourBit) s.back() = (s.back() + 1) / 2;
  return s;
}

// A float32 scale: random magnitudes around 1, or (denormals) down to float32's least.
float RandomScale(Rng& rng, bool denormals) {
  const float m = float(rng.U(1, 1 << 20)) / float(1 << 20) * (rng.P(0.5) ? 1 : -1);
  if (rng.P(0.05)) return 0.0f;
  return std::ldexp(m, denormals && rng.P(0.5) ? -int(rng.U(120, 149)) : -int(rng.U(0, 12)));
}

void Build(Rng& rng, const BlockCase& c, BlockBuilt* b) {
  const UINT D = c.D();
  const bool four = c.FourBit();
  const Shape data = Bytes4(c.values, four), scales = c.Scales(), zeros = Bytes4(scales, four);
  b->indexStrides = Strides(rng, Pad(c.indices, D), c.stridedIndices);
  b->scaleStrides = Strides(rng, Pad(scales, D), c.stridedScales);
  b->outStrides = Strides(rng, Pad(c.Output(), D), c.stridedOutput);
  b->input = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, Pad(data, D));
  b->indices = TensorDesc(c.indexType, Pad(c.indices, D), b->indexStrides);
  b->scales = TensorDesc(c.outType, Pad(scales, D), b->scaleStrides);
  b->zeroPoints = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, Pad(zeros, D));
  b->output = TensorDesc(c.outType, Pad(c.Output(), D), b->outStrides);
  const UINT lead = D - c.Rank();
  b->desc = {b->input.Desc(),       b->indices.Desc(),
             b->scales.Desc(),      c.zeroPoints ? b->zeroPoints.Desc() : nullptr,
             b->output.Desc(),      c.type,
             c.axis + lead,         UINT(c.indices.size()),
             c.quantizeAxis + lead, c.blockSize};
  b->gather = {VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &b->desc};
  b->op = b->gather;
  if (c.outOfRange != VKDML_OUT_OF_RANGE_MODE_CLAMP) {
    b->wrap.Operator = &b->gather;
    b->wrap.Mode = c.outOfRange;
    if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32)
      b->wrap.FillValue.Float32 = c.fill;
    else
      b->wrap.FillValue.UInt16 = NearestHalf(c.fill);
    b->op = {VKDML_OPERATOR_OUT_OF_RANGE, &b->wrap};
  }

  b->data = Bytes(b->input.Total());
  for (auto& x : b->data) x = uint8_t(rng.U(0, 255));
  b->zeros = Bytes(b->zeroPoints.Total());
  for (auto& x : b->zeros) x = uint8_t(rng.U(0, 255));
  b->indexImage = Bytes(b->indices.Total(), 0);
  Shape at(c.indices.size(), 0);
  const UINT es = ref::ElementSize(c.indexType);
  for (size_t n = 0; n < c.indexValues.size(); ++n, Next(c.indices, at))
    ref::WriteIndex(
        c.indexType,
        b->indexImage.data() + At(Pad(c.indices, D), b->indexStrides, Pad(at, D, 0)) * es,
        c.indexValues[n]);
  b->scaleImage = Poisoned(b->scales.Total());
  Shape s(scales.size(), 0);
  do {
    const float f = RandomScale(rng, c.denormals);
    const UINT64 off = At(Pad(scales, D), b->scaleStrides, Pad(s, D, 0));
    if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32) {
      std::memcpy(&b->scaleImage[off * 4], &f, 4);
    } else {
      const uint16_t h = NearestHalf(f);
      std::memcpy(&b->scaleImage[off * 2], &h, 2);
    }
  } while (Next(scales, s));
}

// Value n (row-major) of a tensor of 4-bit values whose rows of `last` values start on bytes,
// or of bytes; sign-extended for INT4.
int ValueAt(const Bytes& bytes, UINT64 n, UINT last, VKDML_BLOCK_QUANTIZED_TYPE type) {
  if (type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8) return bytes[n];
  const UINT64 row = n / last, col = n % last, byte = row * ((last + 1) / 2) + col / 2;
  const int v = (bytes[byte] >> (4 * (col % 2))) & 15;
  return type == VKDML_BLOCK_QUANTIZED_TYPE_INT4 && v >= 8 ? v - 16 : v;
}

int DefaultZero(VKDML_BLOCK_QUANTIZED_TYPE type) {
  return type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8         ? 128
         : type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4 ? 8
                                                          : 0;
}

// The expected output image (from `out`): ONNX Runtime's definition, index by index.
Bytes Expected(const BlockCase& c, const BlockBuilt& b, Bytes out) {
  const UINT D = c.D(), os = ref::ElementSize(c.outType);
  const Shape scales = c.Scales(), output = c.Output();
  const UINT64 n = c.values[c.axis];
  const bool isSigned =
      c.indexType == DML_TENSOR_DATA_TYPE_INT32 || c.indexType == DML_TENSOR_DATA_TYPE_INT64;
  Shape o(output.size(), 0);
  do {
    const Shape idx(o.begin() + c.axis, o.begin() + c.axis + c.indices.size());
    const int64_t raw = c.indexValues[At(c.indices, {}, idx)];
    const bool inRange = isSigned ? raw >= -int64_t(n) && raw < int64_t(n) : uint64_t(raw) < n;
    int64_t i = raw;
    if (!inRange) i = isSigned && raw < 0 ? -int64_t(n) : int64_t(n) - 1;
    if (i < 0) i += n;
    float value = c.fill;
    if (inRange || c.outOfRange != VKDML_OUT_OF_RANGE_MODE_FILL) {
      Shape v(o.begin(), o.begin() + c.axis);
      v.push_back(UINT(i));
      v.insert(v.end(), o.begin() + c.axis + c.indices.size(), o.end());
      Shape s = v;
      s[c.quantizeAxis] /= c.blockSize;
      const UINT64 block = At(scales, {}, s);
      const int q = ValueAt(b.data, At(c.values, {}, v), c.values.back(), c.type);
      const int zero =
          c.zeroPoints ? ValueAt(b.zeros, block, scales.back(), c.type) : DefaultZero(c.type);
      const UINT64 so = At(Pad(scales, D), b.scaleStrides, Pad(s, D, 0));
      float scale;
      if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32) {
        std::memcpy(&scale, &b.scaleImage[so * 4], 4);
      } else {
        scale = HalfValue(uint16_t(b.scaleImage[so * 2] | b.scaleImage[so * 2 + 1] << 8));
      }
      value = float(q - zero) * scale;
    }
    uint8_t* dst = out.data() + At(Pad(output, D), b.outStrides, Pad(o, D, 0)) * os;
    if (os == 4) {
      std::memcpy(dst, &value, 4);
    } else {
      const uint16_t h = NearestHalf(value);
      std::memcpy(dst, &h, 2);
    }
  } while (Next(output, o));
  return out;
}

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
        input.Desc(), indices.Desc(), scales.Desc(), nullptr, output.Desc(), type, 0, 1, 1, 16};
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
  CHECK(set.steps[2].plain.spec[VKDML_SPEC_UNIT] == 1);      // FLOAT32: a value an invocation
  // FLOAT16: a word of two values an invocation where the output's rows are even and
  // contiguous, else each value alone (atomically).
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
  CHECK(unit(c, &strides) == 2);
  c.stridedOutput = true;  // rows padded by 0 to 2 values: an odd stride now and then
  UINT pairs = 0, alone = 0;
  for (int k = 0; k < 16; ++k) {
    const UINT u = unit(c, &strides);
    CHECK(u == (strides[0] % 2 ? 1u : 2u));
    (u == 2 ? pairs : alone) += 1;
  }
  CHECK((pairs > 0 && alone > 0));
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
