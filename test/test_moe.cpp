// VKDML_OPERATOR_MOE_PERMUTE and _UNPERMUTE: by hand; random shapes, k, expert counts, dropped
// ids, id and output index types, row types and strides, bit for bit against the NumPy-order
// reference (moe_ref.h), every output byte checked (gaps kept); a sort of many entries (several
// scan levels, two digit passes); permute then unpermute; every validation rule; two outputs
// bound over each other.
#include <cmath>
#include <functional>
#include <tuple>

#include "kernels/kernels.h"
#include "moe_ref.h"
#include "test_util.h"

using namespace vt;

namespace {

Result Compile(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  VKDML_TRY(device.CreateOperator(desc, &op));
  return device.CompileOperator(*op, flags, out);
}

bool KeepsDenormals32() {
  const DeviceInfo& info = Dev().Info();
  return info.enabled.shaderDenormPreserveFloat32 || info.enabled.shaderFloat64;
}

// A float32: small multiples of powers of 2, any significand at moderate exponents (sums round),
// zeros of both signs, and with `denormals` float32 denormals.
float RandomValue(Rng& rng, bool denormals) {
  const double p = double(rng.U(0, 999)) / 1000;
  const float sign = rng.P(0.5) ? -1.0f : 1.0f;
  if (p < 0.3) return sign * float(rng.U(0, 100)) * std::ldexp(1.0f, int(rng.U(0, 8)) - 4);
  if (p < 0.85) {
    const uint32_t bits = uint32_t(rng.U(0, 0x7FFFFF)) | uint32_t(rng.U(117, 137)) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return sign * f;
  }
  if (p < 0.92 || !denormals) return sign * 0.0f;
  const uint32_t bits = uint32_t(rng.U(1, 0x7FFFFF)) >> rng.U(0, 20);
  float f;
  std::memcpy(&f, &bits, 4);
  return sign * f;
}

// Random values of `type` at elements of a buffer of `total` bytes (the rest random bytes).
Bytes RandomRows(Rng& rng, DML_TENSOR_DATA_TYPE type, UINT rows, UINT width, UINT stride,
                 UINT64 total, bool denormals) {
  Bytes b(total);
  for (auto& x : b) x = uint8_t(rng.U(0, 255));
  for (UINT r = 0; r < rows; ++r)
    for (UINT v = 0; v < width; ++v) {
      const float f = RandomValue(rng, denormals && type == DML_TENSOR_DATA_TYPE_FLOAT32);
      WriteValue(type, b.data() + (UINT64(r) * stride + v) * ValueSize(type), f);
    }
  return b;
}

const DML_TENSOR_DATA_TYPE kIdTypes[] = {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_INT64,
                                         DML_TENSOR_DATA_TYPE_UINT32, DML_TENSOR_DATA_TYPE_UINT64};
const DML_TENSOR_DATA_TYPE kOutTypes[] = {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_INT64};
const DML_TENSOR_DATA_TYPE kValueTypes[] = {DML_TENSOR_DATA_TYPE_FLOAT32,
                                            DML_TENSOR_DATA_TYPE_FLOAT16};

// Ids of c: mostly experts, `dropped` of them outside [0, experts) (negative for signed types,
// past the experts, past 2^32 for 64-bit ones).
Bytes RandomIds(Rng& rng, const MoePermuteCase& c, UINT64 total, double dropped) {
  Bytes b(total);
  for (auto& x : b) x = uint8_t(rng.U(0, 255));
  const bool isSigned =
      c.idType == DML_TENSOR_DATA_TYPE_INT32 || c.idType == DML_TENSOR_DATA_TYPE_INT64;
  const bool wide = IntSize(c.idType) == 8;
  // A few experts take most entries (as routers do), so runs are long and some experts empty.
  const UINT hot = rng.Ui(1, c.experts);
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT j = 0; j < c.k; ++j) {
      int64_t id;
      if (rng.P(dropped)) {
        const UINT kind = rng.Ui(0, 2);
        id = kind == 0 && isSigned ? -int64_t(rng.U(1, 3))
             : kind == 1 && wide   ? int64_t(rng.U(1, 3)) << 32 | rng.U(0, 3)
                                   : int64_t(c.experts) + int64_t(rng.U(0, 5));
      } else {
        id = rng.P(0.7) ? int64_t(rng.U(0, hot - 1)) : int64_t(rng.U(0, c.experts - 1));
      }
      const UINT64 at = UINT64(t) * c.idStride[0] + UINT64(j) * c.idStride[1];
      WriteInt(c.idType, b.data() + at * IntSize(c.idType), id);
    }
  return b;
}

// Runs a permute case with random inputs and checks every output byte.
void RunPermute(Rng& rng, const MoePermuteCase& c, double dropped,
                UINT flags = DML_EXECUTION_FLAG_NONE) {
  MoePermuteBuilt b;
  Build(c, &b);
  INFO("x " << b.x.ToString() << ", ids " << b.ids.ToString() << ", rows " << b.rows.ToString()
            << ", offsets " << b.offsets.ToString() << ", perm " << b.perm.ToString() << ", inv "
            << b.inv.ToString() << ", experts " << c.experts);
  const Bytes x = RandomRows(rng, c.valueType, c.tokens, c.width, c.xStride, b.x.Total(), true);
  const Bytes ids = RandomIds(rng, c, b.ids.Total(), dropped);
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(Dev(), b.op, flags, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  const std::vector<Bytes> poison = {Poisoned(b.rows.Total()), Poisoned(b.offsets.Total()),
                                     Poisoned(b.perm.Total()), Poisoned(b.inv.Total())};
  std::vector<Bytes> out = poison, want;
  PermuteReference(c, x, ids, poison, &want);
  r = Dev().Run(*compiled, {x.data(), ids.data()},
                {out[0].data(), out[1].data(), out[2].data(), out[3].data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  const char* names[] = {"OutputTensor", "OffsetsTensor", "PermutationTensor", "InverseTensor"};
  for (size_t i = 0; i < 4; ++i) {
    INFO(names[i]);
    CHECK(DiffBytes(out[i], want[i], nullptr) == "");
  }
}

MoePermuteCase RandomPermuteCase(Rng& rng, uint64_t n) {
  MoePermuteCase c;
  c.idType = kIdTypes[n % 4];
  c.valueType = kValueTypes[(n / 4) % 2];
  c.offsetType = kOutTypes[rng.U(0, 1)];
  c.permType = kOutTypes[rng.U(0, 1)];
  c.invType = kOutTypes[rng.U(0, 1)];
  c.rank = rng.Ui(2, 4);
  c.tokens = rng.Ui(1, 200);
  c.k = rng.Ui(1, 8);
  c.experts = rng.P(0.1) ? rng.Ui(257, 700) : rng.Ui(1, 70);
  const bool f16 = c.valueType == DML_TENSOR_DATA_TYPE_FLOAT16;
  c.width = f16 ? 2 * rng.Ui(1, 40) : rng.Ui(1, 70);
  if (rng.P(0.3)) c.width = f16 ? 8 * rng.Ui(1, 8) : 4 * rng.Ui(1, 8);  // uvec4 rows
  c.xStride = c.width + (rng.P(0.4) ? (f16 ? 2 : 1) * rng.Ui(1, 4) : 0);
  c.outStride = c.width + (rng.P(0.4) ? (f16 ? 8 : 4) * rng.Ui(1, 2) : 0);
  if (f16 && rng.P(0.3)) {  // rows off 32-bit words (odd widths or strides): a thread a word
    c.width = 2 * rng.Ui(1, 40) - rng.Ui(0, 1);
    c.xStride = c.width + (rng.P(0.5) ? rng.Ui(1, 3) : 0);
    c.outStride = c.width + (rng.P(0.5) ? rng.Ui(1, 3) : 0);
  }
  if (rng.P(0.3)) {  // {tokens, k} transposed
    c.idStride[0] = 1;
    c.idStride[1] = c.tokens;
  } else {
    c.idStride[0] = c.k + (rng.P(0.3) ? rng.Ui(1, 3) : 0);
    c.idStride[1] = 1;
  }
  if (rng.P(0.2)) c.offsetStride = rng.Ui(2, 3);
  if (rng.P(0.2)) c.permStride = rng.Ui(2, 3);
  if (rng.P(0.3)) {
    c.invStride[0] = 1;
    c.invStride[1] = c.tokens;
  } else {
    c.invStride[0] = c.k + (rng.P(0.3) ? rng.Ui(1, 3) : 0);
    c.invStride[1] = 1;
  }
  return c;
}

MoeUnpermuteCase RandomUnpermuteCase(Rng& rng, uint64_t n) {
  MoeUnpermuteCase c;
  c.invType = kIdTypes[n % 4];
  c.valueType = kValueTypes[(n / 4) % 2];
  c.outType = kValueTypes[(n / 8) % 2];
  c.weightType = kValueTypes[rng.U(0, 1)];
  c.rank = rng.Ui(2, 4);
  c.tokens = rng.Ui(1, 100);
  c.k = rng.Ui(1, 8);
  c.rows = rng.Ui(1, 300);
  const bool f16 =
      c.valueType == DML_TENSOR_DATA_TYPE_FLOAT16 || c.outType == DML_TENSOR_DATA_TYPE_FLOAT16;
  c.width = f16 ? 2 * rng.Ui(1, 30) : rng.Ui(1, 60);
  c.yStride = c.width + (rng.P(0.4) ? 2 * rng.Ui(1, 3) : 0);
  c.outStride = c.width + (rng.P(0.4) ? 2 * rng.Ui(1, 3) : 0);
  if (rng.P(0.35)) {  // rows of whole uvec4s in both tensors, one type: the wide kernel
    c.outType = c.valueType;
    const UINT unit = 16 / ValueSize(c.valueType);
    c.width = unit * rng.Ui(1, 8);
    c.yStride = c.width + (rng.P(0.4) ? unit * rng.Ui(1, 2) : 0);
    c.outStride = c.width + (rng.P(0.4) ? unit * rng.Ui(1, 2) : 0);
  } else if (f16 && rng.P(0.4)) {  // float16 rows off 32-bit words: a thread a word
    c.width = 2 * rng.Ui(1, 30) - rng.Ui(0, 1);
    c.yStride = c.width + (rng.P(0.5) ? rng.Ui(1, 3) : 0);
    c.outStride = c.width + (rng.P(0.5) ? rng.Ui(1, 3) : 0);
  }
  if (rng.P(0.3)) {
    c.invStride[0] = 1;
    c.invStride[1] = c.tokens;
  } else {
    c.invStride[0] = c.k + (rng.P(0.3) ? rng.Ui(1, 2) : 0);
    c.invStride[1] = 1;
  }
  if (rng.P(0.3)) {
    c.weightStride[0] = 1;
    c.weightStride[1] = c.tokens;
  } else {
    c.weightStride[0] = c.k + (rng.P(0.3) ? rng.Ui(1, 2) : 0);
    c.weightStride[1] = 1;
  }
  return c;
}

// 10 tokens, top-4 of 40 rows of 8 float16 values, int64 ids (the kernel-choice checks').
MoeUnpermuteCase Unpermute8() {
  MoeUnpermuteCase u;
  u.tokens = 10;
  u.k = 4;
  u.rows = 40;
  u.width = u.yStride = u.outStride = 8;
  u.valueType = u.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  u.invType = DML_TENSOR_DATA_TYPE_INT64;
  u.invStride[0] = u.weightStride[0] = 4;
  return u;
}

// Runs unpermute c (built as b) on y, inv and w, and compares every output byte with the
// reference's.
void CheckUnpermute(const MoeUnpermuteCase& c, const MoeUnpermuteBuilt& b, const Bytes& y,
                    const Bytes& inv, const Bytes& w) {
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  const Bytes poison = Poisoned(b.out.Total());
  Bytes out = poison;
  r = Dev().Run(*compiled, {y.data(), inv.data(), w.data()}, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  CHECK(DiffBytes(out, UnpermuteReference(c, y, inv, w, poison), nullptr) == "");
}

void RunUnpermute(Rng& rng, const MoeUnpermuteCase& c, bool denormals) {
  MoeUnpermuteBuilt b;
  Build(c, &b);
  INFO("y " << b.y.ToString() << ", inv " << b.inv.ToString() << ", weights "
            << b.weights.ToString() << ", out " << b.out.ToString());
  const Bytes y = RandomRows(rng, c.valueType, c.rows, c.width, c.yStride, b.y.Total(), denormals);
  Bytes w(b.weights.Total());
  for (auto& x : w) x = uint8_t(rng.U(0, 255));
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT j = 0; j < c.k; ++j)
      WriteValue(c.weightType,
                 w.data() + (UINT64(t) * c.weightStride[0] + UINT64(j) * c.weightStride[1]) *
                                ValueSize(c.weightType),
                 RandomValue(rng, denormals && c.weightType == DML_TENSOR_DATA_TYPE_FLOAT32));
  Bytes inv(b.inv.Total());
  for (auto& x : inv) x = uint8_t(rng.U(0, 255));
  const bool isSigned =
      c.invType == DML_TENSOR_DATA_TYPE_INT32 || c.invType == DML_TENSOR_DATA_TYPE_INT64;
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT j = 0; j < c.k; ++j) {
      int64_t row = int64_t(rng.U(0, c.rows - 1));  // repeats too
      if (rng.P(0.15)) row = isSigned && rng.P(0.5) ? -1 : int64_t(c.rows + rng.U(0, 3));
      if (rng.P(0.03) && IntSize(c.invType) == 8) row = int64_t(1) << 32 | rng.U(0, 3);
      WriteInt(c.invType,
               inv.data() +
                   (UINT64(t) * c.invStride[0] + UINT64(j) * c.invStride[1]) * IntSize(c.invType),
               row);
    }
  CheckUnpermute(c, b, y, inv, w);
}

}  // namespace

// 3 tokens, top-2 of 3 experts; token 1's second id and token 2's first are dropped.
TEST_CASE_METHOD(Fixture, "MoE: permute and unpermute by hand", "[moe]") {
  const float x[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  const int32_t ids[3][2] = {{2, 0}, {0, -1}, {5, 2}};
  MoePermuteCase c;
  c.tokens = 3;
  c.k = 2;
  c.experts = 3;
  c.width = 2;
  c.xStride = c.outStride = 2;
  c.idStride[0] = c.invStride[0] = 2;
  MoePermuteBuilt b;
  Build(c, &b);
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  float rows[6][2];
  int32_t offsets[4], perm[6], inv[3][2];
  REQUIRE(Dev().Run(*compiled, {x, ids}, {rows, offsets, perm, inv}).ok());
  // Entries 0..5 have experts 2, 0, 0, -, -, 2: expert 0 holds 1, 2; expert 2 holds 0, 5.
  const int32_t wantOffsets[4] = {0, 2, 2, 4};
  const int32_t wantPerm[6] = {1, 2, 0, 5, -1, -1};
  const int32_t wantInv[3][2] = {{2, 0}, {1, -1}, {-1, 3}};
  const float wantRows[6][2] = {{1, 2}, {3, 4}, {1, 2}, {5, 6}, {0, 0}, {0, 0}};
  for (UINT i = 0; i < 4; ++i) CHECK(offsets[i] == wantOffsets[i]);
  for (UINT i = 0; i < 6; ++i) {
    CHECK(perm[i] == wantPerm[i]);
    CHECK(inv[i / 2][i % 2] == wantInv[i / 2][i % 2]);
    CHECK(rows[i][0] == wantRows[i][0]);
    CHECK(rows[i][1] == wantRows[i][1]);
  }
  // Each expert doubles its rows; the weights 0.5 and 0.25 (the dropped one's ignored).
  float y[6][2];
  for (UINT p = 0; p < 6; ++p)
    for (UINT v = 0; v < 2; ++v) y[p][v] = 2 * rows[p][v];
  const float weights[3][2] = {{0.5f, 0.25f}, {0.5f, 100}, {100, 0.25f}};
  MoeUnpermuteCase u;
  u.tokens = 3;
  u.k = 2;
  u.rows = 6;
  u.width = 2;
  u.invStride[0] = u.weightStride[0] = 2;
  MoeUnpermuteBuilt ub;
  Build(u, &ub);
  REQUIRE(Compile(Dev(), ub.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  float out[3][2];
  REQUIRE(Dev().Run(*compiled, {y, inv, weights}, {out}).ok());
  const float wantOut[3][2] = {{1.5f, 3}, {3, 4}, {2.5f, 3}};
  for (UINT t = 0; t < 3; ++t)
    for (UINT v = 0; v < 2; ++v) CHECK(out[t][v] == wantOut[t][v]);
}

TEST_CASE_METHOD(Fixture, "MoE: random permutes vs reference", "[moe]") {
  for (uint64_t n = 0; n < 48; ++n) {
    Rng rng(BaseSeed() ^ (0x30E + n * 0x9E3779B97F4A7C15ull));  // a case replays alone
    const MoePermuteCase c = RandomPermuteCase(rng, n);
    const double dropped = n % 5 == 0 ? 0.0 : n % 5 == 1 ? 0.9 : 0.2;
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    // The flags change nothing: out-of-range ids are defined, the order is always the same.
    RunPermute(rng, c, dropped,
               n % 4 == 3 ? VKDML_EXECUTION_FLAG_DETERMINISTIC | VKDML_EXECUTION_FLAG_CHECK_INDICES
                          : DML_EXECUTION_FLAG_NONE);
  }
}

// 2^17 + 5 entries: 65 sort blocks, so the scan takes two levels; 300 experts take two digit
// passes (the sorted keys back in the first half), 70000 three.
TEST_CASE_METHOD(Fixture, "MoE: many entries", "[moe]") {
  for (UINT experts : {64u, 300u, 70000u}) {
    Rng rng(BaseSeed() ^ (0x30F + experts));
    MoePermuteCase c;
    c.tokens = 16385;
    c.k = 8;
    c.experts = experts;
    c.width = 4;
    c.xStride = c.outStride = 4;
    c.idStride[0] = c.invStride[0] = 8;
    c.idType = DML_TENSOR_DATA_TYPE_INT64;
    c.permType = DML_TENSOR_DATA_TYPE_INT64;
    INFO("experts " << experts);
    RunPermute(rng, c, 0.1);
  }
}

TEST_CASE_METHOD(Fixture, "MoE: random unpermutes vs reference", "[moe]") {
  const bool denormals = KeepsDenormals32();
  if (!denormals) WARN(Dev().Info().name << " may flush float32 denormals: none in this sweep");
  for (uint64_t n = 0; n < 48; ++n) {
    Rng rng(BaseSeed() ^ (0x310 + n * 0x9E3779B97F4A7C15ull));
    const MoeUnpermuteCase c = RandomUnpermuteCase(rng, n);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunUnpermute(rng, c, denormals);
  }
}

// float16 rows of denormals, zeros and infinities, positive weights (no NaN: its bits are the
// device's), small enough on devices that keep float32 denormals to make denormal products:
// the wide kernel's fast fold hands every such group to the exact one, bit for bit. Widths of
// 6 take the plain kernel, beside it.
TEST_CASE_METHOD(Fixture, "MoE: unpermute of float16 denormals, zeros and infinities", "[moe]") {
  const bool denormals = KeepsDenormals32();
  for (uint64_t n = 0; n < 12; ++n) {
    Rng rng(BaseSeed() ^ (0x7A1 + n * 0x9E3779B97F4A7C15ull));
    MoeUnpermuteCase c;
    c.valueType = c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
    c.weightType = n % 2 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
    c.tokens = rng.Ui(1, 60);
    c.k = rng.Ui(1, 8);
    c.rows = rng.Ui(1, 100);
    c.width = c.yStride = c.outStride = n % 3 == 2 ? 6 : 8 * rng.Ui(1, 4);
    c.invStride[0] = c.weightStride[0] = c.k;
    INFO("case " << n << ", width " << c.width << ", k " << c.k);
    MoeUnpermuteBuilt b;
    Build(c, &b);
    Bytes y(b.y.Total());
    for (UINT64 e = 0; e + 1 < y.size(); e += 2) {
      const double p = double(rng.U(0, 999)) / 1000;
      const uint32_t sign = rng.P(0.5) ? 0x8000u : 0u;
      const uint32_t h = p < 0.4   ? sign | uint32_t(rng.U(1, 0x3FF))  // denormal
                         : p < 0.5 ? sign                              // zero
                         : p < 0.53
                             ? 0x7C00u  // +infinity
                             : sign | uint32_t(rng.U(1, 30)) << 10 | uint32_t(rng.U(0, 0x3FF));
      y[e] = uint8_t(h);
      y[e + 1] = uint8_t(h >> 8);
    }
    Bytes w(b.weights.Total());
    for (UINT64 e = 0; e < UINT64(c.tokens) * c.k; ++e) {
      const int low =
          denormals && c.weightType == DML_TENSOR_DATA_TYPE_FLOAT32 && rng.P(0.5) ? -120 : -12;
      WriteValue(c.weightType, w.data() + e * ValueSize(c.weightType),
                 std::ldexp(float(rng.U(1, 255)), int(rng.U(0, 16)) + low));
    }
    Bytes inv(b.inv.Total());
    for (UINT64 e = 0; e < UINT64(c.tokens) * c.k; ++e)
      WriteInt(c.invType, inv.data() + e * IntSize(c.invType),
               rng.P(0.1) ? -1 : int64_t(rng.U(0, c.rows - 1)));
    CheckUnpermute(c, b, y, inv, w);
  }
}

// Every tensor must fit one descriptor: past the binding range (narrowed by the test knob),
// CompileOperator refuses, naming the limit.
TEST_CASE_METHOD(Fixture, "MoE: a tensor past the binding range", "[moe][validation]") {
  ScopedSwitch env("VKDML_MAX_BINDING_RANGE", "65536");
  MoePermuteCase c;
  c.tokens = 100;
  c.k = 8;
  c.experts = 16;
  c.width = c.xStride = c.outStride = 64;  // the rows: 800 x 256 bytes
  c.idStride[0] = c.invStride[0] = 8;
  MoePermuteBuilt b;
  Build(c, &b);
  std::unique_ptr<CompiledOperator> compiled;
  const Result r = Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message.find("MOE_PERMUTE: a tensor is past this device's maxStorageBufferRange") == 0);
  CHECK(r.message.find("every tensor must fit one descriptor") != std::string::npos);
}

// Outputs may not overlap each other; inputs may not overlap them.
TEST_CASE_METHOD(Fixture, "MoE: overlapping outputs", "[moe][validation]") {
  MoePermuteCase c;
  c.tokens = 4;
  c.k = 2;
  c.experts = 4;
  c.idStride[0] = c.invStride[0] = 2;
  MoePermuteBuilt b;
  Build(c, &b);
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  auto record = [&](std::vector<UINT64> offsets) {
    std::unique_ptr<BindingTable> table;
    std::unique_ptr<Buffer> buf;
    REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
    REQUIRE(Dev().CreateBuffer(4096, Buffer::Memory::DeviceLocal, &buf).ok());
    const TensorDesc* tensors[] = {&b.x, &b.ids, &b.rows, &b.offsets, &b.perm, &b.inv};
    std::vector<DML_BUFFER_BINDING> bind;
    for (size_t i = 0; i < 6; ++i) bind.push_back(buf->Binding(offsets[i], tensors[i]->Total()));
    REQUIRE(table->BindInputs(2, bind.data()).ok());
    REQUIRE(table->BindOutputs(4, bind.data() + 2).ok());
    Result recorded;
    REQUIRE(Dev()
                .Submit([&](VkCommandBuffer cmd) {
                  if (recorded.ok()) recorded = Dev().RecordDispatch(cmd, *table);
                })
                .ok());
    return recorded;
  };
  CHECK(record({0, 256, 512, 1024, 1536, 2048}).ok());
  // PermutationTensor (8 INT32) over OffsetsTensor's last word.
  CHECK(record({0, 256, 512, 1024, 1040, 2048}).message ==
        "RecordDispatch: outputs[2] (PermutationTensor, bytes [1040, 1072)) overlaps outputs[1] "
        "(OffsetsTensor, bytes [1024, 1044)) in the same VkBuffer");
  // InverseTensor over TopkIdsTensor.
  CHECK(record({0, 256, 512, 1024, 1536, 256}).message ==
        "RecordDispatch: outputs[3] (InverseTensor, bytes [256, 288)) overlaps inputs[1] "
        "(TopkIdsTensor, bytes [256, 288)) in the same VkBuffer");
}

TEST_CASE_METHOD(Fixture, "MoE: validation", "[moe][validation]") {
  struct Rule {
    const char* message;
    std::function<void(MoePermuteBuilt&)> change;
  };
  const auto f32 = DML_TENSOR_DATA_TYPE_FLOAT32, f16 = DML_TENSOR_DATA_TYPE_FLOAT16;
  const auto i32 = DML_TENSOR_DATA_TYPE_INT32, u32 = DML_TENSOR_DATA_TYPE_UINT32;
  // The base: 4 tokens of 6 FLOAT32 values, top-2 of 5 experts.
  const Rule rules[] = {
      {"ExpertCount is 0, expected 1 to 16777216",
       [](MoePermuteBuilt& b) { b.desc.ExpertCount = 0; }},
      {"ExpertCount is 16777217, expected 1 to 16777216",
       [](MoePermuteBuilt& b) { b.desc.ExpertCount = (1u << 24) + 1; }},
      {"TopkIdsTensor.DataType is FLOAT32, expected INT32, UINT32, INT64 or UINT64",
       [=](MoePermuteBuilt& b) {
         b.ids = TensorDesc(f32, {4, 2});
         b.desc.TopkIdsTensor = b.ids.Desc();
       }},
      {"TopkIdsTensor.DimensionCount is 1, expected 2 to 8 (its last two dimensions are the "
       "tokens and k)",
       [=](MoePermuteBuilt& b) {
         b.ids = TensorDesc(i32, {8});
         b.desc.TopkIdsTensor = b.ids.Desc();
       }},
      {"InputTensor.DataType is INT32, expected FLOAT32 or FLOAT16",
       [=](MoePermuteBuilt& b) {
         b.x = TensorDesc(i32, {4, 6});
         b.desc.InputTensor = b.x.Desc();
       }},
      {"InputTensor.Sizes[0] is 3, expected 4 (TopkIdsTensor's tokens)",
       [=](MoePermuteBuilt& b) {
         b.x = TensorDesc(f32, {3, 6});
         b.desc.InputTensor = b.x.Desc();
       }},
      {"InputTensor.Strides[1] is 2, expected 1 (a row's values are consecutive)",
       [=](MoePermuteBuilt& b) {
         b.x = TensorDesc(f32, {4, 6}, {12, 2});
         b.desc.InputTensor = b.x.Desc();
       }},
      {"OutputTensor.DataType is FLOAT16, expected FLOAT32 (InputTensor.DataType)",
       [=](MoePermuteBuilt& b) {
         b.rows = TensorDesc(f16, {8, 6});
         b.desc.OutputTensor = b.rows.Desc();
       }},
      {"OutputTensor.Sizes[0] is 7, expected 8 (TopkIdsTensor's entries, tokens times k)",
       [=](MoePermuteBuilt& b) {
         b.rows = TensorDesc(f32, {7, 6});
         b.desc.OutputTensor = b.rows.Desc();
       }},
      {"OffsetsTensor.DataType is UINT32, expected INT32 or INT64",
       [=](MoePermuteBuilt& b) {
         b.offsets = TensorDesc(u32, {6});
         b.desc.OffsetsTensor = b.offsets.Desc();
       }},
      {"OffsetsTensor.Sizes[0] is 5, expected 6 (ExpertCount + 1)",
       [=](MoePermuteBuilt& b) {
         b.offsets = TensorDesc(i32, {5});
         b.desc.OffsetsTensor = b.offsets.Desc();
       }},
      {"PermutationTensor.Sizes[0] is 9, expected 8 (TopkIdsTensor's entries, tokens times k)",
       [=](MoePermuteBuilt& b) {
         b.perm = TensorDesc(i32, {9});
         b.desc.PermutationTensor = b.perm.Desc();
       }},
      {"InverseTensor.Sizes[1] is 3, expected 2 (TopkIdsTensor's k)",
       [=](MoePermuteBuilt& b) {
         b.inv = TensorDesc(i32, {4, 3});
         b.desc.InverseTensor = b.inv.Desc();
       }},
      {"InverseTensor.DataType is FLOAT32, expected INT32, UINT32, INT64 or UINT64",
       [=](MoePermuteBuilt& b) {
         b.inv = TensorDesc(f32, {4, 2});
         b.desc.InverseTensor = b.inv.Desc();
       }},
  };
  for (const Rule& rule : rules) {
    MoePermuteCase c;
    c.tokens = 4;
    c.k = 2;
    c.experts = 5;
    c.width = 6;
    c.xStride = c.outStride = 6;
    c.idStride[0] = c.invStride[0] = 2;
    MoePermuteBuilt b;
    Build(c, &b);
    rule.change(b);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("MOE_PERMUTE: ") + rule.message);
  }

  struct URule {
    const char* message;
    std::function<void(MoeUnpermuteBuilt&)> change;
  };
  // The base: 8 rows of 6 FLOAT32 values, 4 tokens of top-2.
  const URule urules[] = {
      {"InverseTensor.DataType is FLOAT16, expected INT32, UINT32, INT64 or UINT64",
       [=](MoeUnpermuteBuilt& b) {
         b.inv = TensorDesc(f16, {4, 2});
         b.desc.InverseTensor = b.inv.Desc();
       }},
      {"WeightsTensor.DataType is INT32, expected FLOAT32 or FLOAT16",
       [=](MoeUnpermuteBuilt& b) {
         b.weights = TensorDesc(i32, {4, 2});
         b.desc.WeightsTensor = b.weights.Desc();
       }},
      {"WeightsTensor.Sizes[1] is 3, expected 2 (InverseTensor's k)",
       [=](MoeUnpermuteBuilt& b) {
         b.weights = TensorDesc(f32, {4, 3});
         b.desc.WeightsTensor = b.weights.Desc();
       }},
      {"OutputTensor.Sizes[0] is 5, expected 4 (InverseTensor's tokens)",
       [=](MoeUnpermuteBuilt& b) {
         b.out = TensorDesc(f32, {5, 6});
         b.desc.OutputTensor = b.out.Desc();
       }},
      {"OutputTensor.Sizes[1] is 5, expected 6 (InputTensor's values per row)",
       [=](MoeUnpermuteBuilt& b) {
         b.out = TensorDesc(f32, {4, 5});
         b.desc.OutputTensor = b.out.Desc();
       }},
      {"InputTensor.DimensionCount is 1, expected 2 to 8 (its last two dimensions are the rows "
       "and a row's values)",
       [=](MoeUnpermuteBuilt& b) {
         b.y = TensorDesc(f32, {48});
         b.desc.InputTensor = b.y.Desc();
       }},
  };
  for (const URule& rule : urules) {
    MoeUnpermuteCase c;
    c.tokens = 4;
    c.k = 2;
    c.rows = 8;
    c.width = 6;
    c.yStride = c.outStride = 6;
    c.invStride[0] = c.weightStride[0] = 2;
    MoeUnpermuteBuilt b;
    Build(c, &b);
    rule.change(b);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("MOE_UNPERMUTE: ") + rule.message);
  }

  // VKDML_OPERATOR_OUT_OF_RANGE does not wrap them.
  MoePermuteCase c;
  c.tokens = 4;
  c.k = 2;
  c.experts = 5;
  c.idStride[0] = c.invStride[0] = 2;
  MoePermuteBuilt b;
  Build(c, &b);
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{};
  wrap.Operator = &b.op;
  wrap.Mode = VKDML_OUT_OF_RANGE_MODE_DROP;
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};
  std::unique_ptr<Operator> op;
  const Result r = Dev().CreateOperator(wrapped, &op);
  CHECK(r.message ==
        "MOE_PERMUTE: VKDML_OPERATOR_OUT_OF_RANGE does not wrap it: it defines its out-of-range "
        "ids (dropped entries, -1 rows)");
}

// Kernel choice on made-up devices: the permute's steps (keys, the sort's count, scan levels and
// scatter a digit pass each, then one pass per output, each naming the output it writes), the
// rows in uvec4s only where rows sit on 16 bytes, the unpermute's float arithmetic per device.
TEST_CASE("MoE: kernel choice", "[kernels][moe]") {
  using vkdml::detail::Capabilities;
  using vkdml::detail::KernelSet;
  using vkdml::detail::Pass;
  Capabilities gpu;
  gpu.maxGroups = 65535;
  auto permute = [&](const MoePermuteCase& c, KernelSet* set) {
    MoePermuteBuilt b;
    Build(c, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    REQUIRE(vkdml::detail::ChooseKernels(op, 0, gpu, set).ok());
  };
  MoePermuteCase c;
  c.tokens = 1000;
  c.k = 8;
  c.width = 8;  // 32 bytes a row
  c.xStride = c.outStride = 8;
  c.idStride[0] = c.invStride[0] = 8;
  for (UINT experts : {64u, 256u, 300u, 70000u}) {
    c.experts = experts;
    KernelSet set;
    permute(c, &set);
    const UINT digits = experts < 256 ? 1 : experts < 65536 ? 2 : 3;
    INFO("experts " << experts);
    REQUIRE(set.steps.size() == 1 + 3 * digits + 4);  // 8000 keys: one scan level
    CHECK(set.steps[0].plain.module == "moe_keys_i32");
    for (UINT d = 0; d < digits; ++d) {
      CHECK(set.steps[1 + 3 * d].plain.module == "sort_count");
      CHECK(set.steps[1 + 3 * d].plain.sort.shift == 8 * d);
      CHECK(set.steps[3 + 3 * d].plain.module == "sort_scatter");
    }
    const size_t out = 1 + 3 * digits;
    const char* modules[4] = {"moe_rows", "moe_offsets", "moe_permutation", "moe_inverse"};
    for (UINT o = 0; o < 4; ++o) {
      CHECK(set.steps[out + o].plain.module == modules[o]);
      CHECK(set.steps[out + o].output == o);
      CHECK(set.plans[set.steps[out + o].plain.slot].sortedBase == (digits % 2 ? 8000u : 0u));
    }
    CHECK(set.steps[out].hasWide);
    CHECK(set.steps[out].wide.module == "moe_rows_v4");
    // 8 words a row (2 uvec4s): 8 threads a row, 2 wide; 8000 rows.
    CHECK(set.plans[set.steps[out].plain.slot].params[3] == 8);
    CHECK(set.plans[set.steps[out].wide.slot].params[3] == 2);
    CHECK(set.steps[out].plain.groups == 8000 * 8 / 256);
    CHECK(set.steps[out].wide.groups == (8000 * 2 + 255) / 256);
    CHECK(set.sortWords == 16000);
    CHECK(!set.checked);
  }
  c.experts = 64;
  c.width = 6;  // 24 bytes: words only
  c.xStride = c.outStride = 6;
  KernelSet set;
  permute(c, &set);
  CHECK(!set.steps[4].hasWide);
  CHECK(set.steps[4].plain.module == "moe_rows");
  // Float16 rows that do not all start on a word (an odd width or row stride): a thread a word of
  // the output's span; even ones keep the row kernels (a single row's stride is not looked at).
  c.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;
  for (const auto& [width, xStride, outStride, tokens, halves] :
       {std::tuple{5u, 5u, 5u, 1000u, true}, std::tuple{6u, 7u, 6u, 1000u, true},
        std::tuple{6u, 6u, 9u, 1000u, true}, std::tuple{6u, 6u, 6u, 1000u, false},
        std::tuple{6u, 7u, 6u, 1u, false}}) {
    c.width = width;
    c.xStride = xStride;
    c.outStride = outStride;
    c.tokens = tokens;
    c.idStride[0] = c.invStride[0] = c.k;
    INFO("width " << width << ", strides " << xStride << " and " << outStride);
    KernelSet hs;
    permute(c, &hs);
    const vkdml::detail::Step& rows = hs.steps[4];
    CHECK(rows.plain.module == (halves ? "moe_rows_h" : "moe_rows"));
    if (!halves) continue;
    CHECK(!rows.hasWide);
    const UINT64 words = (UINT64(tokens * c.k - 1) * outStride + width + 1) / 2;
    CHECK(hs.plans[rows.plain.slot].count == words);
    CHECK(rows.plain.groups == (words + 255) / 256);
    CHECK(VKDML_AT(hs.plans[rows.plain.slot].direct, 0) == xStride);
    CHECK(VKDML_AT(hs.plans[rows.plain.slot].direct, 1) == outStride);
  }

  // Unpermute u's kernels on `gpu`.
  const auto chooseUnpermute = [&](const MoeUnpermuteCase& u) {
    MoeUnpermuteBuilt b;
    Build(u, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    KernelSet us;
    REQUIRE(vkdml::detail::ChooseKernels(op, 0, gpu, &us).ok());
    return us;
  };
  struct Want {
    bool denormPreserve32, float64;
    const char* module;
  };
  for (const Want& w :
       {Want{false, false, "moe_unpermute_f16_i64"}, Want{false, true, "moe_unpermute_f16_i64_w"},
        Want{true, true, "moe_unpermute_f16_i64_dp"}}) {
    gpu.denormPreserve32 = w.denormPreserve32;
    gpu.float64 = w.float64;
    const KernelSet us = chooseUnpermute(Unpermute8());
    REQUIRE(us.steps.size() == 2);
    CHECK(us.steps[0].kind == Pass::Kind::MoeWeights);
    CHECK(us.steps[1].plain.module == w.module);
    // 2 groups of 4 values a token: 2 threads each, 10 tokens in one workgroup.
    CHECK(us.plans[us.steps[1].plain.slot].params[3] == 2);
    CHECK(us.steps[1].plain.groups == 1);
    CHECK(us.weightWords == 40);
    // Rows of one uvec4 in both tensors: the wide kernel, a thread a token.
    REQUIRE(us.steps[1].hasWide);
    CHECK(us.steps[1].wide.module == std::string(w.module) + "_v4");
    CHECK(us.steps[1].wide.unit == 16);
    CHECK(us.plans[us.steps[1].wide.slot].params[2] == 1);
    CHECK(us.plans[us.steps[1].wide.slot].params[3] == 1);
    CHECK(VKDML_AT(us.plans[us.steps[1].wide.slot].direct, 2) == 1);
  }
  // No wide kernel where OutputTensor's type differs, a row is not whole uvec4s, or a stride
  // is not on 16 bytes.
  for (int variant = 0; variant < 3; ++variant) {
    MoeUnpermuteCase u = Unpermute8();
    if (variant == 0) u.outType = DML_TENSOR_DATA_TYPE_FLOAT32;
    if (variant == 1) u.width = 6;
    if (variant == 2) u.yStride = 10;
    INFO("variant " << variant);
    CHECK_FALSE(chooseUnpermute(u).steps[1].hasWide);
  }
  // Float16 rows off words in either tensor: the halves' module, a thread a word of the output
  // (a float32 output: a word a value).
  for (int variant = 0; variant < 3; ++variant) {
    MoeUnpermuteCase u = Unpermute8();
    if (variant == 0) u.width = u.yStride = u.outStride = 7;
    if (variant == 1) u.yStride = 9;
    if (variant == 2) {
      u.outType = DML_TENSOR_DATA_TYPE_FLOAT32;
      u.outStride = 11;
      u.yStride = 9;
    }
    INFO("variant " << variant);
    const KernelSet us = chooseUnpermute(u);
    CHECK(us.steps[1].plain.module == "moe_unpermute_f16_i64_dp_h");
    CHECK_FALSE(us.steps[1].hasWide);
    const UINT perWord = variant == 2 ? 1 : 2;
    const UINT64 words = (UINT64(u.tokens - 1) * u.outStride + u.width + perWord - 1) / perWord;
    CHECK(us.plans[us.steps[1].plain.slot].count == words);
    CHECK(us.plans[us.steps[1].plain.slot].params[3] == u.tokens);
    CHECK(VKDML_AT(us.plans[us.steps[1].plain.slot].direct, 2) == u.yStride);
    CHECK(VKDML_AT(us.plans[us.steps[1].plain.slot].direct, 3) == u.outStride);
  }
}
