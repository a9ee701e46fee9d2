// The fuzz target's decoder of vkdml's MoE permute and unpermute (VKDML_OPERATOR_MOE_PERMUTE,
// _UNPERMUTE; an input whose first byte is 0xC4 to 0xC7): tokens, k, experts, ids in and out of
// [0, experts) (negative, past the experts, past 2^32), every id and output index type, FLOAT32
// and FLOAT16 rows, padded rows and strided or transposed ids, inverses and weights; finite
// values from the input, compared byte for byte (gaps included) with test/moe_ref.h. In raw mode
// one field of the descriptor comes from the input (most of them invalid): where vkdml accepts
// it, the run must succeed, its outputs unchecked.
#include <cstring>

#include "fuzz_common.h"
#include "moe_ref.h"

namespace fz {

namespace {

const DML_TENSOR_DATA_TYPE kValue[2] = {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16};
const DML_TENSOR_DATA_TYPE kOut[2] = {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_INT64};

// Rows of finite values from the input (a non-finite one's exponent loses its top bit), the
// gaps from it too.
vt::Bytes Rows(Decoder& d, DML_TENSOR_DATA_TYPE type, UINT rows, UINT width, UINT stride,
               UINT64 total) {
  vt::Bytes b(total);
  for (auto& x : b) x = d.Byte();
  for (UINT r = 0; r < rows; ++r)
    for (UINT v = 0; v < width; ++v) {
      uint8_t* at = b.data() + (UINT64(r) * stride + v) * vt::ValueSize(type);
      if (type == DML_TENSOR_DATA_TYPE_FLOAT16) {
        if ((at[1] & 0x7C) == 0x7C) at[1] &= 0xBF;  // exponent 31 becomes 15
      } else if ((at[3] & 0x7F) == 0x7F && (at[2] & 0x80)) {
        at[3] &= 0xBF;
      }
    }
  return b;
}

// An id or row near [0, n): negative ones, a few past n, one past 2^32 for 64-bit types.
int64_t Near(Decoder& d, UINT n, DML_TENSOR_DATA_TYPE type) {
  const uint8_t b = d.Byte();
  if (b == 0xFF && vt::IntSize(type) == 8) return int64_t(1) << 32;
  return int64_t(b % (n + 4)) - 2;
}

void WriteIds(Decoder& d, vt::Bytes* image, DML_TENSOR_DATA_TYPE type, UINT tokens, UINT k,
              const UINT stride[2], UINT n) {
  for (auto& x : *image) x = d.Byte();
  for (UINT t = 0; t < tokens; ++t)
    for (UINT j = 0; j < k; ++j)
      vt::WriteInt(
          type, image->data() + (UINT64(t) * stride[0] + UINT64(j) * stride[1]) * vt::IntSize(type),
          Near(d, n, type));
}

// Strides of a {tokens, k} tensor: packed, padded or transposed.
void Strides(Decoder& d, UINT tokens, UINT k, UINT s[2]) {
  switch (d.Byte() % 3) {
    case 0:
      s[0] = k, s[1] = 1;
      break;
    case 1:
      s[0] = k + d.In(1, 2), s[1] = 1;
      break;
    default:
      s[0] = 1, s[1] = tokens;
      break;
  }
}

int RunPermute(Decoder& d, bool raw) {
  vt::MoePermuteCase c;
  c.idType = kIndex[d.Byte() % 4];
  c.valueType = kValue[d.Byte() % 2];
  c.offsetType = kOut[d.Byte() % 2];
  c.permType = kOut[d.Byte() % 2];
  c.invType = kOut[d.Byte() % 2];
  c.rank = d.In(2, 4);
  c.tokens = d.In(1, 12);
  c.k = d.In(1, 4);
  c.experts = d.In(1, 9);
  const bool f16 = c.valueType == DML_TENSOR_DATA_TYPE_FLOAT16;
  c.width = f16 ? 2 * d.In(1, 5) : d.In(1, 9);
  c.xStride = c.width + (f16 ? 2 : 1) * d.In(0, 2);
  c.outStride = c.width + (f16 ? 2 : 1) * d.In(0, 2);
  Strides(d, c.tokens, c.k, c.idStride);
  Strides(d, c.tokens, c.k, c.invStride);
  c.offsetStride = d.In(1, 2);
  c.permStride = d.In(1, 2);
  vt::MoePermuteBuilt b;
  vt::Build(c, &b);
  if (raw) {
    if (d.Byte() % 2)
      RawSize(d, {&b.x, &b.ids, &b.rows, &b.offsets, &b.perm, &b.inv}, 40);
    else
      b.desc.ExpertCount = d.Raw32() >> (d.Byte() % 32);
  }
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(b.op, DML_EXECUTION_FLAG_NONE, &compiled)) return 0;
  const vt::Bytes x = Rows(d, c.valueType, c.tokens, c.width, c.xStride, b.x.Total());
  vt::Bytes ids(b.ids.Total());
  if (!raw) WriteIds(d, &ids, c.idType, c.tokens, c.k, c.idStride, c.experts);
  std::vector<vt::Bytes> poison = {vt::Bytes(b.rows.Total(), 0xA5),
                                   vt::Bytes(b.offsets.Total(), 0xA5),
                                   vt::Bytes(b.perm.Total(), 0xA5), vt::Bytes(b.inv.Total(), 0xA5)};
  std::vector<vt::Bytes> got = poison, want;
  const Result r = Dev().Run(*compiled, {x.data(), ids.data()},
                             {got[0].data(), got[1].data(), got[2].data(), got[3].data()});
  ++gStats.ran;
  ++gStats.moe;
  if (raw) {
    CheckRawRun(r, "MoE permute");
    return 0;
  }
  if (!r) Die("MoE permute: Run: " + r.message);
  vt::PermuteReference(c, x, ids, poison, &want);
  const std::string what = "MoE permute: x " + b.x.ToString() + ", ids " + b.ids.ToString() +
                           ", experts " + std::to_string(c.experts) + ", output ";
  const char* names[4] = {"rows", "offsets", "permutation", "inverse"};
  for (size_t i = 0; i < 4; ++i) CheckOutput(got[i], want[i], what + names[i]);
  return 0;
}

int RunUnpermute(Decoder& d, bool raw) {
  vt::MoeUnpermuteCase c;
  c.invType = kIndex[d.Byte() % 4];
  c.valueType = kValue[d.Byte() % 2];
  c.weightType = kValue[d.Byte() % 2];
  c.outType = kValue[d.Byte() % 2];
  c.rank = d.In(2, 4);
  c.tokens = d.In(1, 10);
  c.k = d.In(1, 4);
  c.rows = d.In(1, 12);
  c.width = 2 * d.In(1, 5);
  c.yStride = c.width + 2 * d.In(0, 1);
  c.outStride = c.width + 2 * d.In(0, 1);
  Strides(d, c.tokens, c.k, c.invStride);
  Strides(d, c.tokens, c.k, c.weightStride);
  vt::MoeUnpermuteBuilt b;
  vt::Build(c, &b);
  if (raw) RawSize(d, {&b.y, &b.inv, &b.weights, &b.out}, 40);
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(b.op, DML_EXECUTION_FLAG_NONE, &compiled)) return 0;
  const vt::Bytes y = Rows(d, c.valueType, c.rows, c.width, c.yStride, b.y.Total());
  const UINT ws[2] = {c.weightStride[0], c.weightStride[1]};
  vt::Bytes w = Rows(d, c.weightType, 1, 0, 0, b.weights.Total());
  for (UINT t = 0; t < c.tokens && !raw; ++t)  // finite weights
    for (UINT j = 0; j < c.k; ++j) {
      uint8_t* at =
          w.data() + (UINT64(t) * ws[0] + UINT64(j) * ws[1]) * vt::ValueSize(c.weightType);
      if (c.weightType == DML_TENSOR_DATA_TYPE_FLOAT16)
        at[1] &= 0xBF;
      else
        at[3] &= 0xBF;
    }
  vt::Bytes inv(b.inv.Total());
  if (!raw) WriteIds(d, &inv, c.invType, c.tokens, c.k, c.invStride, c.rows);
  const vt::Bytes poison(b.out.Total(), 0xA5);
  vt::Bytes got = poison;
  const Result r = Dev().Run(*compiled, {y.data(), inv.data(), w.data()}, {got.data()});
  ++gStats.ran;
  ++gStats.moe;
  if (raw) {
    CheckRawRun(r, "MoE unpermute");
    return 0;
  }
  if (!r) Die("MoE unpermute: Run: " + r.message);
  // A sum may overflow to infinity; inf - inf is a NaN, whose bits the definition leaves free:
  // compare those values as NaNs.
  vt::Bytes want = vt::UnpermuteReference(c, y, inv, w, poison);
  const UINT os = vt::ValueSize(c.outType);
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT v = 0; v < c.width; ++v) {
      const UINT64 at = (UINT64(t) * c.outStride + v) * os;
      const float a = vt::ReadValue(c.outType, got.data() + at);
      const float e = vt::ReadValue(c.outType, want.data() + at);
      if (a != a && e != e) {
        std::memcpy(want.data() + at, got.data() + at, os);
        ++gStats.nanResults;
      }
    }
  CheckOutput(got, want,
              "MoE unpermute: y " + b.y.ToString() + ", inv " + b.inv.ToString() + ", weights " +
                  b.weights.ToString() + ", out " + b.out.ToString());
  return 0;
}

}  // namespace

int RunMoe(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  return mode & 1 ? RunUnpermute(d, mode & 0x80) : RunPermute(d, mode & 0x80);
}

}  // namespace fz
