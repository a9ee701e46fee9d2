// `vkdml bench`'s check of vkdml's own operators (quantized rows, quantizing scatters, bags,
// the block-quantized gather): sampled output elements against dml.h's definitions, written
// here from them (bench_cases.cpp's Verify checks DirectML's operators).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>

#include "bench_cases.h"

namespace bench {
namespace {

// The float16 nearest to f, ties to even (the quantizers' stored scale).
uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (x >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above: infinity
  if (x < 0x38800000u) {                        // below 2^-14: f * 2^24, rounded, is the half
    float a;
    std::memcpy(&a, &x, 4);
    return static_cast<uint16_t>(sign |
                                 static_cast<uint16_t>(std::nearbyint(double(a) * 16777216.0)));
  }
  uint32_t h = ((x >> 23) - 112) << 10 | (x & 0x7FFFFFu) >> 13;
  const uint32_t rest = x & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

// Value v of a table block: d * q in float32 (VKDML_QUANTIZED_FORMAT).
float BlockValue(vkdml::VKDML_QUANTIZED_FORMAT f, const uint8_t* block, uint32_t v) {
  const float d = HalfToFloat(static_cast<uint16_t>(block[0] | block[1] << 8));
  int q;
  if (f == vkdml::VKDML_QUANTIZED_FORMAT_Q8_0)
    q = static_cast<int8_t>(block[2 + v]);
  else
    q = (v < 16 ? block[2 + v] & 15 : block[2 + v - 16] >> 4) - 8;
  return d * static_cast<float>(q);
}

// 32 values quantized as ggml's reference quantizers do (dml.h:
// VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC), into `block`.
void QuantizeBlock(vkdml::VKDML_QUANTIZED_FORMAT f, const float* x, uint8_t* block) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const bool q8 = f == vkdml::VKDML_QUANTIZED_FORMAT_Q8_0;
  const float d = q8 ? amax / 127 : max / -8, id = d != 0 ? 1 / d : 0;
  const uint16_t half = FloatToHalf(d);
  std::memcpy(block, &half, 2);
  if (q8) {
    for (int j = 0; j < 32; ++j)
      block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
    return;
  }
  auto quant = [&](int j) {
    return static_cast<uint8_t>(
        std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f))));
  };
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(quant(j) | quant(j + 16) << 4);
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

namespace {

// MoE permute and unpermute (dml.h: VKDML_MOE_PERMUTE_OPERATOR_DESC, _UNPERMUTE_), on the
// bench's data (no dropped ids; float16 rows): sampled float16 output values.
uint64_t VerifyMoe(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                   std::string* first) {
  const uint64_t tokens = s.indices[0], k = s.indices[1], width = s.input[1];
  const uint64_t total = Product(s.Output()), samples = std::min<uint64_t>(20000, total);
  std::vector<int32_t> ids(tokens * k);
  std::memcpy(ids.data(), h.indices.data(), ids.size() * 4);
  std::vector<uint64_t> order;  // the entries by expert, stably (a counting sort)
  if (s.kind == OpKind::MoePermute) {
    std::vector<uint64_t> start(s.experts + 1, 0);
    for (int32_t e : ids) ++start[static_cast<size_t>(e) + 1];
    for (uint32_t e = 0; e < s.experts; ++e) start[e + 1] += start[e];
    order.resize(ids.size());
    for (uint64_t i = 0; i < ids.size(); ++i) order[start[static_cast<size_t>(ids[i])]++] = i;
  }
  auto half = [](const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); };
  Rng rng(12345);
  uint64_t bad = 0;
  for (uint64_t n = 0; n < samples; ++n) {
    const uint64_t o = samples == total ? n : rng.Below(total), r = o / width, v = o % width;
    uint16_t want;
    if (s.kind == OpKind::MoePermute) {
      want = half(h.input.data() + (order[r] / k * width + v) * 2);
    } else {  // in j order, each product and sum rounded to float32
      volatile float acc = 0;
      for (uint64_t j = 0; j < k; ++j) {
        const uint64_t row = static_cast<uint64_t>(ids[r * k + j]);
        volatile float p = HalfToFloat(half(h.updates.data() + (r * k + j) * 2)) *
                           HalfToFloat(half(h.input.data() + (row * width + v) * 2));
        acc = acc + p;
      }
      want = FloatToHalf(acc);
    }
    const uint16_t got = half(out + o * 2);
    if (got != want && !bad++)
      *first = Format("output element %" PRIu64 " is 0x%04x, expected 0x%04x", o, got, want);
  }
  *checked = samples;
  return bad;
}

}  // namespace

uint64_t VerifyOwn(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                   std::string* first) {
  if (s.kind == OpKind::MoePermute || s.kind == OpKind::MoeUnpermute)
    return VerifyMoe(s, h, out, checked, first);
  const uint64_t rows = s.input[0], rowBytes = s.input[1], total = Product(s.Output());
  const uint64_t samples = std::min<uint64_t>(20000, total);
  Rng rng(12345);
  std::vector<int64_t> owner;  // ScatterQuantized: row -> the update row written there
  if (s.kind == OpKind::ScatterQuantized) {
    owner.assign(rows, -1);
    for (uint64_t i = 0; i < s.indices[0]; ++i)
      owner[LoadIndex(h.indices.data(), s.itype, i, rows)] = static_cast<int64_t>(i);
  }
  std::vector<int64_t> token;  // PagedWrite: slot -> the token written there
  if (s.kind == OpKind::PagedWrite) {
    token.assign(uint64_t(s.input[0]) * s.input[1], -1);
    for (uint64_t t = 0; t < s.indices[0]; ++t)
      token[LoadIndex(h.indices.data(), s.itype, t, token.size())] = static_cast<int64_t>(t);
  }
  const uint64_t es = vkdml::DataTypeSize(s.dtype);
  uint64_t bad = 0;
  for (uint64_t n = 0; n < samples; ++n) {
    uint64_t o = samples == total ? n : rng.Below(total);
    uint32_t want = 0, got = 0;
    if (s.kind == OpKind::PagedWrite || s.kind == OpKind::PagedGather) {  // bits, as es bytes
      const uint64_t row = uint64_t(s.input[2]) * s.input[3];             // a token's heads
      const uint8_t* from = nullptr;
      if (s.kind == OpKind::PagedWrite) {
        if (n % 2)  // an element of a written slot
          o = LoadIndex(h.indices.data(), s.itype, rng.Below(s.indices[0]), token.size()) * row +
              rng.Below(row);
        const int64_t t = token[o / row];
        from = t >= 0 ? h.updates.data() + (static_cast<uint64_t>(t) * row + o % row) * es
                      : h.input.data() + o * es;
      } else {
        const uint64_t tok = o / row, b = tok / s.seqLen, i = tok % s.seqLen;
        const uint64_t block =
            LoadIndex(h.indices.data(), s.itype, b * s.indices[1] + i / s.input[1], s.input[0]);
        from = h.input.data() + ((block * s.input[1] + i % s.input[1]) * row + o % row) * es;
      }
      std::memcpy(&want, from, es);
      std::memcpy(&got, out + o * es, es);
    } else if (s.kind == OpKind::GatherQuantized) {
      const uint64_t r = LoadIndex(h.indices.data(), s.itype, o / s.width, rows), e = o % s.width;
      want =
          Bits(BlockValue(s.format, h.input.data() + r * rowBytes + e / 32 * BlockBytes(s.format),
                          static_cast<uint32_t>(e % 32)));
      std::memcpy(&got, out + o * 4, 4);
    } else if (s.kind == OpKind::ScatterQuantized) {
      if (n % 2)  // a byte of a written row
        o = LoadIndex(h.indices.data(), s.itype, rng.Below(s.indices[0]), rows) * rowBytes +
            rng.Below(rowBytes);
      const int64_t u = owner[o / rowBytes];
      want = h.input.data()[o];
      if (u >= 0) {
        const uint64_t block = o % rowBytes / BlockBytes(s.format);
        float x[32];
        std::memcpy(x, h.updates.data() + (static_cast<uint64_t>(u) * s.width + block * 32) * 4,
                    sizeof x);
        uint8_t q[34];
        QuantizeBlock(s.format, x, q);
        want = q[o % rowBytes % BlockBytes(s.format)];
      }
      got = out[o];
    } else if (s.kind == OpKind::GatherBlockQuantized) {  // (v - zero point) * scale, float16
      const uint64_t r = LoadIndex(h.indices.data(), s.itype, o / s.width, rows), e = o % s.width;
      const uint64_t blocks = s.width / s.blockSize, b = r * blocks + e / s.blockSize;
      auto nibble = [](const uint8_t* p, uint64_t k) { return (p[k / 2] >> (k % 2 * 4)) & 15; };
      uint16_t scale;
      std::memcpy(&scale, h.scales.data() + b * 2, 2);
      const int v = nibble(h.input.data(), r * s.width + e) - nibble(h.zeros.data(), b);
      want = FloatToHalf(static_cast<float>(v) * HalfToFloat(scale));
      uint16_t half;
      std::memcpy(&half, out + o * 2, 2);
      got = half;
    } else if (s.kind == OpKind::Segment) {  // the segment's rows in order: a sum from 0, a max
      const uint64_t k = o / s.width, c = o % s.width;
      int64_t lo, hi;
      std::memcpy(&lo, h.offsets.data() + k * 8, 8);
      std::memcpy(&hi, h.offsets.data() + (k + 1) * 8, 8);
      const bool sum = s.segmentReduce == vkdml::VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
      float acc = 0, x;
      for (int64_t r = lo; r < hi; ++r) {
        std::memcpy(&x, h.input.data() + (static_cast<uint64_t>(r) * s.width + c) * 4, 4);
        acc = sum ? acc + x : r == lo || x > acc ? x : acc;
      }
      want = Bits(acc);
      std::memcpy(&got, out + o * 4, 4);
    } else {  // EmbeddingBag: the bag's rows in entry order, from 0
      const uint64_t b = o / s.width, c = o % s.width;
      float sum = 0, x;
      for (uint64_t e = b * s.bagSize; e < (b + 1) * s.bagSize; ++e) {
        const uint64_t r = LoadIndex(h.indices.data(), s.itype, e, rows);
        std::memcpy(&x, h.input.data() + (r * s.width + c) * 4, 4);
        sum = sum + x;
      }
      if (s.bagMode == vkdml::VKDML_EMBEDDING_BAG_MODE_MEAN)
        sum = sum / static_cast<float>(s.bagSize);
      want = Bits(sum);
      std::memcpy(&got, out + o * 4, 4);
    }
    if (got != want && !bad++)
      *first = Format("output element %" PRIu64 " is 0x%x, expected 0x%x", o, got, want);
  }
  *checked = samples;
  return bad;
}

}  // namespace bench
