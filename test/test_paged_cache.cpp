// VKDML_OPERATOR_PAGED_CACHE_WRITE and VKDML_OPERATOR_PAGED_GATHER (vLLM's reshape_and_cache_flash
// and gather_cache): float32, float16, Q8_0 and Q4_0 caches in both layouts, bit for bit against
// a CPU reference written here from dml.h (quantized blocks through test/quantized_ref.h's ggml
// rule), on random shapes, strides, index types, duplicate, negative and out-of-range slots, out
// of place through Run and in place through bindings; the deterministic flag; ERROR, DROP, FILL
// and CLAMP; every validation rule with its message.
#include <cmath>

#include "kernels/kernels.h"
#include "quantized_ref.h"
#include "test_util.h"

using namespace vt;

namespace {

bool Signed(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
}

// A cache's shape: its values' kind (Format 0: FLOAT32 or FLOAT16 elements), sizes and padding.
struct CacheShape {
  VKDML_PAGED_CACHE_LAYOUT layout = VKDML_PAGED_CACHE_LAYOUT_NHD;
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT(0);
  DML_TENSOR_DATA_TYPE valueType = DML_TENSOR_DATA_TYPE_FLOAT32;  // Format 0: the cache's too
  UINT blocks = 2, blockSize = 4, heads = 2, headSize = 32;
  UINT pad[3] = {0, 0, 0};  // extra elements in strides 0 to 2 (0: packed)
  DML_TENSOR_DATA_TYPE CacheType() const { return format ? DML_TENSOR_DATA_TYPE_UINT8 : valueType; }
  UINT Elem() const { return format ? 1 : ref::ElementSize(valueType); }
  UINT RowElems() const {  // a head's row, in the cache's elements
    return format ? headSize / 32 * BlockBytes(format) : headSize;
  }
  std::vector<UINT> Sizes() const {
    return layout == VKDML_PAGED_CACHE_LAYOUT_NHD
               ? std::vector<UINT>{blocks, blockSize, heads, RowElems()}
               : std::vector<UINT>{blocks, heads, blockSize, RowElems()};
  }
  std::vector<UINT> Strides() const {
    const std::vector<UINT> s = Sizes();
    std::vector<UINT> st(4);
    st[3] = 1;
    st[2] = s[3] + pad[2];
    st[1] = s[2] * st[2] + pad[1];
    st[0] = s[1] * st[1] + pad[0];
    return st;
  }
  // The first byte of slot s's row of head h.
  UINT64 RowByte(UINT s, UINT h) const {
    const std::vector<UINT> st = Strides();
    const UINT block = s / blockSize, row = s % blockSize;
    const bool nhd = layout == VKDML_PAGED_CACHE_LAYOUT_NHD;
    return (UINT64(block) * st[0] + UINT64(row) * st[nhd ? 1 : 2] + UINT64(h) * st[nhd ? 2 : 1]) *
           Elem();
  }
};

// Random padding that keeps FLOAT16 strides even.
void RandomPad(Rng& rng, CacheShape* c) {
  for (UINT& p : c->pad) p = rng.P(0.5) ? rng.Ui(1, 5) : 0;
  if (c->Elem() == 2)
    for (UINT& p : c->pad) p += p % 2;
}

// A random shape: `n` picks the format and value type.
CacheShape RandomShape(Rng& rng, uint64_t n) {
  CacheShape c;
  switch (n % 5) {
    case 0:
      c.valueType = DML_TENSOR_DATA_TYPE_FLOAT32;
      break;
    case 1:
      c.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;
      break;
    case 2:
      c.format = VKDML_QUANTIZED_FORMAT_Q8_0;
      break;
    case 3:
      c.format = VKDML_QUANTIZED_FORMAT_Q4_0;
      break;
    default:
      c.format = rng.P(0.5) ? VKDML_QUANTIZED_FORMAT_Q8_0 : VKDML_QUANTIZED_FORMAT_Q4_0;
      c.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;  // float16 values into a quantized cache
      break;
  }
  if (c.format && n % 5 != 4) c.valueType = DML_TENSOR_DATA_TYPE_FLOAT32;
  c.layout = VKDML_PAGED_CACHE_LAYOUT((n / 5) % 2);
  c.blocks = rng.Ui(1, 6);
  c.blockSize = rng.Pick(std::vector<UINT>{1, 2, 3, 4, 5, 8, 16});
  c.heads = rng.Ui(1, 3);
  c.headSize = c.format ? 32 * rng.Ui(1, 3) : 4 * rng.Ui(1, 10);
  RandomPad(rng, &c);
  return c;
}

// Value tensor {n, heads, head_size} strides with random padding (FLOAT16: even).
std::vector<UINT> ValueStrides(Rng& rng, const CacheShape& c, UINT n) {
  (void)n;
  UINT p1 = rng.P(0.5) ? rng.Ui(1, 3) : 0, p0 = rng.P(0.5) ? rng.Ui(1, 3) : 0;
  if (ref::ElementSize(c.valueType) == 2) {
    p1 += p1 % 2;
    p0 += p0 % 2;
  }
  const UINT s1 = c.headSize + p1;
  return {c.heads * s1 + p0, s1, 1};
}

// Random finite values (as float32 or float16 bits) for quantizing, with zero blocks and wide
// scales; random bits for float caches (copied as bits).
Bytes RandomValues(Rng& rng, const CacheShape& c, UINT64 total) {
  Bytes b(total);
  for (auto& x : b) x = uint8_t(rng.U(0, 255));
  if (!c.format) return b;
  const UINT es = ref::ElementSize(c.valueType);
  std::normal_distribution<float> normal(0, 1);
  // float16 values stay finite (dml.h: updates must be): scales up to 2^10 there.
  const float scale = es == 4 ? std::ldexp(1.0f, int(rng.Ui(0, 40)) - 20)
                              : std::ldexp(1.0f, int(rng.Ui(0, 20)) - 12);
  const bool zeros = rng.P(0.1);
  for (UINT64 i = 0; i + es <= total; i += es) {
    const float v = zeros ? 0.0f : normal(rng.g) * scale;
    if (es == 4) {
      std::memcpy(&b[i], &v, 4);
    } else {
      const uint16_t h = NearestHalf(v);
      std::memcpy(&b[i], &h, 2);
    }
  }
  return b;
}

// Value `v` of a value tensor image (float32 or float16 bits) as float.
float ValueAt(const Bytes& image, DML_TENSOR_DATA_TYPE type, UINT64 element) {
  if (type == DML_TENSOR_DATA_TYPE_FLOAT32) {
    float f;
    std::memcpy(&f, &image[element * 4], 4);
    return f;
  }
  return HalfValue(uint16_t(image[element * 2] | image[element * 2 + 1] << 8));
}

// The cache row (slot s, head h) of `cache` from the value row at element `from` of `values`:
// copied (Format 0) or quantized block by block.
void WriteRow(const CacheShape& c, Bytes& cache, UINT s, UINT h, const Bytes& values, UINT64 from) {
  const UINT64 at = c.RowByte(s, h);
  if (!c.format) {
    const UINT es = c.Elem();
    std::memcpy(&cache[at], &values[from * es], UINT64(c.headSize) * es);
    return;
  }
  for (UINT k = 0; k < c.headSize / 32; ++k) {
    float x[32];
    for (UINT j = 0; j < 32; ++j) x[j] = ValueAt(values, c.valueType, from + k * 32 + j);
    QuantizeBlock(c.format, x, &cache[at + k * BlockBytes(c.format)]);
  }
}

// ---- the write ----

struct WriteCase {
  CacheShape cache;
  DML_TENSOR_DATA_TYPE slotType = DML_TENSOR_DATA_TYPE_INT64;
  std::vector<int64_t> slots;
  std::vector<UINT> updateStrides;
  UINT slotStride = 1;
  UINT Slots() const { return cache.blocks * cache.blockSize; }
};

struct WriteBuilt {
  TensorDesc input, slots, updates, output;
  VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

void BuildWrite(const WriteCase& c, WriteBuilt* b) {
  const UINT tokens = UINT(c.slots.size());
  b->input = TensorDesc(c.cache.CacheType(), c.cache.Sizes(), c.cache.Strides());
  b->output = b->input;
  b->slots = TensorDesc(c.slotType, {tokens}, {c.slotStride});
  b->updates =
      TensorDesc(c.cache.valueType, {tokens, c.cache.heads, c.cache.headSize}, c.updateStrides);
  b->desc = {b->input.Desc(),  b->slots.Desc(), b->updates.Desc(),
             b->output.Desc(), c.cache.layout,  c.cache.format};
  b->op = {VKDML_OPERATOR_PAGED_CACHE_WRITE, &b->desc};
}

// The expected cache after the write: `cache` (the output's image, already holding the input)
// with each valid token's rows written in token order.
Bytes ExpectedWrite(const WriteCase& c, Bytes cache, const Bytes& updates) {
  const std::vector<UINT> us =
      c.updateStrides.empty()
          ? std::vector<UINT>{c.cache.heads * c.cache.headSize, c.cache.headSize, 1}
          : c.updateStrides;
  for (size_t t = 0; t < c.slots.size(); ++t) {
    const int64_t s = c.slots[t];
    if ((Signed(c.slotType) && s < 0) || uint64_t(s) >= c.Slots()) continue;
    for (UINT h = 0; h < c.cache.heads; ++h)
      WriteRow(c.cache, cache, UINT(s), h, updates, UINT64(t) * us[0] + UINT64(h) * us[1]);
  }
  return cache;
}

Bytes SlotBytes(const WriteCase& c, UINT64 total) {
  Bytes b(total, 0);
  const UINT es = ref::ElementSize(c.slotType);
  for (size_t t = 0; t < c.slots.size(); ++t)
    ref::WriteIndex(c.slotType, b.data() + t * c.slotStride * es, c.slots[t]);
  return b;
}

WriteCase RandomWrite(Rng& rng, uint64_t n, bool outOfRange) {
  WriteCase c;
  c.cache = RandomShape(rng, n);
  c.slotType = IndexTypes()[(n / 10) % 4];
  // Some writes span several workgroups' chunks of the fused kernel (kernel_paged.cpp).
  const UINT tokens = rng.P(0.25) ? rng.Ui(25, 700) : rng.Ui(1, 24);
  c.slotStride = rng.P(0.3) ? rng.Ui(2, 3) : 1;
  for (UINT t = 0; t < tokens; ++t) {
    int64_t s = int64_t(rng.U(0, c.Slots() - 1));  // duplicates are common: few slots
    if (Signed(c.slotType) && rng.P(0.15)) s = -int64_t(rng.U(1, 3));  // padding
    if (outOfRange && rng.P(0.1)) s = c.Slots() + rng.U(0, 4);
    c.slots.push_back(s);
  }
  if (rng.P(0.5)) c.updateStrides = ValueStrides(rng, c.cache, tokens);
  return c;
}

// Runs c out of place through Device::Run (wrapped in `mode` unless ERROR) with `flags`, and
// checks every output byte; returns Run's result.
Result RunWrite(Rng& rng, const WriteCase& c, VKDML_OUT_OF_RANGE_MODE mode, UINT flags) {
  WriteBuilt b;
  BuildWrite(c, &b);
  INFO("cache " << b.input.ToString() << ", slots " << b.slots.ToString() << ", updates "
                << b.updates.ToString() << ", layout " << UINT(c.cache.layout) << ", format "
                << UINT(c.cache.format));
  std::string slotList;
  for (int64_t s : c.slots) slotList += std::to_string(s) + " ";
  INFO("slots " << slotList);
  Bytes cache(b.input.Total());
  for (auto& x : cache) x = uint8_t(rng.U(0, 255));
  const Bytes updates = RandomValues(rng, c.cache, b.updates.Total());
  const Bytes slots = SlotBytes(c, b.slots.Total());
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{&b.op, mode, {}};
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Dev().CreateOperator(mode == VKDML_OUT_OF_RANGE_MODE_ERROR ? b.op : wrapped, &op);
  INFO(Str(r));
  REQUIRE(r.ok());
  r = Dev().CompileOperator(*op, flags, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  // The output starts poisoned; the copy fills each element from the input, gaps keep poison.
  Bytes initial = Poisoned(b.output.Total());
  {
    const std::vector<UINT> sizes = c.cache.Sizes(), st = c.cache.Strides();
    const UINT es = c.cache.Elem();
    for (UINT i0 = 0; i0 < sizes[0]; ++i0)
      for (UINT i1 = 0; i1 < sizes[1]; ++i1)
        for (UINT i2 = 0; i2 < sizes[2]; ++i2) {
          const UINT64 at = (UINT64(i0) * st[0] + UINT64(i1) * st[1] + UINT64(i2) * st[2]) * es;
          std::memcpy(&initial[at], &cache[at], UINT64(sizes[3]) * es);
        }
  }
  const Bytes expected = ExpectedWrite(c, initial, updates);
  Bytes out = Poisoned(b.output.Total());
  r = Dev().Run(*compiled, {cache.data(), slots.data(), updates.data()}, {out.data()});
  CHECK(DiffBytes(out, expected, nullptr) == "");
  return r;
}

bool HasOutOfRange(const WriteCase& c) {
  for (int64_t s : c.slots)
    if (!(Signed(c.slotType) && s < 0) && uint64_t(s) >= c.Slots()) return true;
  return false;
}

// ---- the gather ----

struct GatherCase {
  CacheShape cache;
  DML_TENSOR_DATA_TYPE tableType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  UINT maxBlocks = 1, extraRows = 0;
  std::vector<int64_t> table;  // {sequences, maxBlocks} row-major
  std::vector<int64_t> starts, offsets;
  // Non-empty: the operator takes SequenceLengthsTensor, these lengths, which `starts` must
  // follow (dml.h: each length and sum clamped into [0, total_tokens]).
  std::vector<int64_t> lengths;
  std::vector<UINT> tableStrides, outStrides;
  UINT Sequences() const { return UINT(starts.size()) - 1; }
  UINT Total() const { return UINT(starts.back()) + extraRows; }
};

struct GatherBuilt {
  TensorDesc input, table, starts, offsets, output;
  VKDML_PAGED_GATHER_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

void BuildGather(const GatherCase& c, GatherBuilt* b) {
  const UINT seqs = c.Sequences();
  b->input = TensorDesc(c.cache.CacheType(), c.cache.Sizes(), c.cache.Strides());
  b->table = TensorDesc(c.tableType, {seqs, c.maxBlocks}, c.tableStrides);
  const bool lengths = !c.lengths.empty();
  b->starts = TensorDesc(c.tableType, {lengths ? seqs : seqs + 1});
  b->offsets = TensorDesc(c.tableType, {seqs});
  b->output = TensorDesc(c.outType, {c.Total(), c.cache.heads, c.cache.headSize}, c.outStrides);
  b->desc = {b->input.Desc(),
             b->table.Desc(),
             lengths ? nullptr : b->starts.Desc(),
             c.offsets.empty() ? nullptr : b->offsets.Desc(),
             b->output.Desc(),
             c.cache.layout,
             c.cache.format,
             lengths ? b->starts.Desc() : nullptr};
  b->op = {VKDML_OPERATOR_PAGED_GATHER, &b->desc};
}

// The expected output from a poisoned image: each sequence's rows (the out-of-range blocks'
// clamped, or with `fill` its bits).
Bytes ExpectedGather(const GatherCase& c, const Bytes& cache, const GatherBuilt& b,
                     const uint32_t* fill) {
  Bytes out = Poisoned(b.output.Total());
  const UINT os = ref::ElementSize(c.outType);
  const std::vector<UINT> st =
      c.outStrides.empty()
          ? std::vector<UINT>{c.cache.heads * c.cache.headSize, c.cache.headSize, 1}
          : c.outStrides;
  const std::vector<UINT> ts =
      c.tableStrides.empty() ? std::vector<UINT>{c.maxBlocks, 1} : c.tableStrides;
  for (UINT b2 = 0; b2 < c.Sequences(); ++b2) {
    for (int64_t t = c.starts[b2]; t < c.starts[b2 + 1]; ++t) {
      const int64_t offset = c.offsets.empty() ? 0 : c.offsets[b2];
      const UINT64 position = UINT64(t - c.starts[b2]) +
                              (offset < 0 || offset >= (int64_t(1) << 31) ? 1u << 31 : offset);
      const UINT64 entry = position / c.cache.blockSize, row = position % c.cache.blockSize;
      const UINT j = UINT(std::min<UINT64>(entry, c.maxBlocks - 1));
      const int64_t v = c.table[UINT64(b2) * c.maxBlocks + j];
      const bool negative = Signed(c.tableType) && v < 0;
      const bool inRange = entry < c.maxBlocks && !negative && uint64_t(v) < c.cache.blocks;
      const UINT block = negative                        ? 0
                         : uint64_t(v) >= c.cache.blocks ? c.cache.blocks - 1
                                                         : UINT(v);
      (void)ts;
      for (UINT h = 0; h < c.cache.heads; ++h) {
        const UINT64 src = c.cache.RowByte(UINT(block * c.cache.blockSize + row), h);
        for (UINT d = 0; d < c.cache.headSize; ++d) {
          uint8_t* dst = &out[(UINT64(t) * st[0] + UINT64(h) * st[1] + d) * os];
          if (fill && !inRange) {
            std::memcpy(dst, fill, os);
          } else if (!c.cache.format) {
            std::memcpy(dst, &cache[src + UINT64(d) * os], os);
          } else {
            const float value = BlockValue(
                c.cache.format, &cache[src + d / 32 * BlockBytes(c.cache.format)], d % 32);
            if (os == 4) {
              std::memcpy(dst, &value, 4);
            } else {
              const uint16_t half = NearestHalf(value);
              std::memcpy(dst, &half, 2);
            }
          }
        }
      }
    }
  }
  return out;
}

GatherCase RandomGather(Rng& rng, uint64_t n, bool outOfRange) {
  GatherCase c;
  c.cache = RandomShape(rng, n);
  c.tableType = IndexTypes()[(n / 10) % 4];
  c.outType = c.cache.format
                  ? (rng.P(0.5) ? DML_TENSOR_DATA_TYPE_FLOAT32 : DML_TENSOR_DATA_TYPE_FLOAT16)
                  : c.cache.valueType;
  const UINT seqs = rng.Ui(1, 5);
  const bool offsets = rng.P(0.5);
  c.maxBlocks = rng.P(0.25) ? rng.Ui(6, 48) : rng.Ui(1, 5);  // some: several chunks
  const UINT capacity = c.maxBlocks * c.cache.blockSize;
  c.starts.push_back(0);
  for (UINT s = 0; s < seqs; ++s) {
    UINT off = offsets ? rng.Ui(0, capacity - 1) : 0;
    const UINT len = rng.Ui(0, capacity - off);
    c.starts.push_back(c.starts.back() + len);
    if (offsets) c.offsets.push_back(off);
  }
  if (c.starts.back() == 0) c.starts.back() = 1, c.starts[1] = std::max<int64_t>(c.starts[1], 0);
  // Keep starts non-decreasing after that fix: rebuild from lengths where needed.
  for (size_t i = 1; i < c.starts.size(); ++i) c.starts[i] = std::max(c.starts[i], c.starts[i - 1]);
  if (offsets)
    for (UINT s = 0; s < seqs; ++s)  // the fix may lengthen the first sequence
      while (c.offsets[s] + (c.starts[s + 1] - c.starts[s]) > int64_t(capacity)) --c.offsets[s];
  c.extraRows = rng.P(0.3) ? rng.Ui(1, 3) : 0;  // rows past the last sequence: not written
  for (UINT i = 0; i < seqs * c.maxBlocks; ++i) {
    int64_t v = int64_t(rng.U(0, c.cache.blocks - 1));
    if (outOfRange && rng.P(0.15))
      v = Signed(c.tableType) && rng.P(0.5) ? -1 : int64_t(c.cache.blocks + rng.U(0, 3));
    c.table.push_back(v);
  }
  if (rng.P(0.4)) c.tableStrides = {c.maxBlocks + rng.Ui(1, 3), 1};
  if (rng.P(0.3)) c.tableStrides = {1, seqs};  // column-major
  if (rng.P(0.5)) {
    CacheShape v = c.cache;
    v.valueType = c.outType;
    c.outStrides = ValueStrides(rng, v, c.Total());
  }
  if (rng.P(0.4)) {  // the lengths instead: an empty sequence's negative, the last's clamped
    for (UINT s = 0; s < seqs; ++s) c.lengths.push_back(c.starts[s + 1] - c.starts[s]);
    for (auto& len : c.lengths)
      if (len == 0 && Signed(c.tableType) && rng.P(0.5)) len = -int64_t(rng.U(1, 1000));
    if (c.extraRows == 0 && rng.P(0.5)) c.lengths.back() += int64_t(rng.U(1, 5));
  }
  return c;
}

Bytes TableBytes(const GatherCase& c, UINT64 total) {
  Bytes b(total, 0);
  const UINT es = ref::ElementSize(c.tableType);
  const std::vector<UINT> ts =
      c.tableStrides.empty() ? std::vector<UINT>{c.maxBlocks, 1} : c.tableStrides;
  for (UINT s = 0; s < c.Sequences(); ++s)
    for (UINT j = 0; j < c.maxBlocks; ++j)
      ref::WriteIndex(c.tableType, b.data() + (UINT64(s) * ts[0] + UINT64(j) * ts[1]) * es,
                      c.table[UINT64(s) * c.maxBlocks + j]);
  return b;
}

bool GatherOutOfRange(const GatherCase& c) {
  for (UINT s = 0; s < c.Sequences(); ++s) {
    const int64_t len = c.starts[s + 1] - c.starts[s];
    if (!len) continue;
    const UINT64 off = c.offsets.empty() ? 0 : c.offsets[s];
    for (UINT64 e = off / c.cache.blockSize; e <= (off + len - 1) / c.cache.blockSize; ++e) {
      const int64_t v = c.table[UINT64(s) * c.maxBlocks + e];
      if ((Signed(c.tableType) && v < 0) || uint64_t(v) >= c.cache.blocks) return true;
    }
  }
  return false;
}

// `runs` runs of one compiled operator, each checked against the reference: the last's result.
Result RunGather(Rng& rng, const GatherCase& c, VKDML_OUT_OF_RANGE_MODE mode, int runs = 1) {
  GatherBuilt b;
  BuildGather(c, &b);
  INFO("cache " << b.input.ToString() << ", table " << b.table.ToString() << ", output "
                << b.output.ToString() << ", layout " << UINT(c.cache.layout) << ", format "
                << UINT(c.cache.format) << ", offsets " << !c.offsets.empty() << ", lengths "
                << !c.lengths.empty());
  Bytes cache(b.input.Total());
  for (auto& x : cache) x = uint8_t(rng.U(0, 255));
  if (c.cache.format) {  // finite scales (NaN bits are unspecified)
    const std::vector<UINT> sizes = c.cache.Sizes();
    for (UINT s = 0; s < c.cache.blocks * c.cache.blockSize; ++s)
      for (UINT h = 0; h < c.cache.heads; ++h)
        for (UINT k = 0; k < c.cache.headSize / 32; ++k)
          MakeScaleFinite(&cache[c.cache.RowByte(s, h) + k * BlockBytes(c.cache.format) + 0]);
  }
  const Bytes table = TableBytes(c, b.table.Total());
  const Bytes starts =
      IndexBytes(c.tableType, c.lengths.empty() ? c.starts : c.lengths, b.starts.Total());
  const Bytes offsets = IndexBytes(c.tableType, c.offsets, b.offsets.Total());
  const UINT os = ref::ElementSize(c.outType);
  DML_SCALAR_UNION fill{};
  const uint32_t fillBits = os == 4 ? 0x7FC01234u : 0x7E12u;
  std::memcpy(fill.Bytes, &fillBits, os);
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{
      &b.op, mode, mode == VKDML_OUT_OF_RANGE_MODE_FILL ? fill : DML_SCALAR_UNION{}};
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Dev().CreateOperator(mode == VKDML_OUT_OF_RANGE_MODE_ERROR ? b.op : wrapped, &op);
  INFO(Str(r));
  REQUIRE(r.ok());
  r = Dev().CompileOperator(*op, 0, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  const Bytes expected =
      ExpectedGather(c, cache, b, mode == VKDML_OUT_OF_RANGE_MODE_FILL ? &fillBits : nullptr);
  std::vector<const void*> inputs = {cache.data(), table.data(), starts.data()};
  if (!c.offsets.empty()) inputs.push_back(offsets.data());
  for (int k = 0; k < runs; ++k) {
    INFO("run " << k);
    Bytes out = Poisoned(b.output.Total());
    r = Dev().Run(*compiled, inputs, {out.data()});
    CHECK(DiffBytes(out, expected, nullptr) == "");
  }
  return r;
}

}  // namespace

// Random caches of every format and both layouts; duplicate slots (the last token wins),
// negative ones (skipped), slot and update strides; out of place through Run, by default
// (ERROR: no slot past the cache here, so Run succeeds) and with the deterministic flag (the
// same bits).
TEST_CASE_METHOD(Fixture, "Paged cache: random writes vs reference", "[paged]") {
  for (uint64_t n = 0; n < 40; ++n) {
    Rng rng(BaseSeed() ^ (0x9A6E + n * 0x9E3779B97F4A7C15ull));
    const WriteCase c = RandomWrite(rng, n, false);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    const UINT flags = n % 3 == 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0;
    const Result r = RunWrite(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR, flags);
    INFO(Str(r));
    CHECK(r.ok());
  }
}

// Slots past the cache: ERROR (the default) skips and reports them, DROP skips them silently.
TEST_CASE_METHOD(Fixture, "Paged cache: writes with slots past the cache", "[paged]") {
  int reported = 0;
  // Case n; `always`: whether or not the sweep's share holds it.
  const auto run = [&](uint64_t n, bool always) {
    Rng rng(BaseSeed() ^ (0x9A6F + n * 0x9E3779B97F4A7C15ull));
    const WriteCase c = RandomWrite(rng, n, true);
    if (!always && !SweepRuns(n)) return false;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    const bool drop = n % 2;
    if (always && (drop || !HasOutOfRange(c))) return false;
    const Result r =
        RunWrite(rng, c, drop ? VKDML_OUT_OF_RANGE_MODE_DROP : VKDML_OUT_OF_RANGE_MODE_ERROR, 0);
    INFO(Str(r));
    if (drop || !HasOutOfRange(c)) {
      CHECK(r.ok());
      return false;
    }
    CHECK(r.status == Status::IndexOutOfRange);
    ++reported;
    return true;
  };
  for (uint64_t n = 0; n < 20; ++n) run(n, false);
  // A share may hold no case that reports: the first such case runs anyway.
  for (uint64_t n = 0; !SweepReplaysOne() && reported == 0 && n < 20; ++n) run(n, true);
  if (!SweepReplaysOne()) CHECK(reported > 0);
}

// The message of a slot past the cache: its token and the slots' range.
TEST_CASE_METHOD(Fixture, "Paged cache: a slot past the cache is reported", "[paged]") {
  Rng rng(BaseSeed() ^ 0x5107);
  WriteCase c;
  c.cache.blocks = 3;
  c.cache.blockSize = 4;
  c.slotType = DML_TENSOR_DATA_TYPE_INT32;
  c.slots = {5, -1, 12, 3, 40};
  const Result r = RunWrite(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR, 0);
  CHECK(r.status == Status::IndexOutOfRange);
  CHECK(r.message ==
        "PAGED_CACHE_WRITE: SlotMappingTensor[2] is 12, outside the valid range [0, 11]");
}

// In place through bindings at word offsets with guard bytes: only the written rows change; the
// deterministic flag changes nothing.
TEST_CASE_METHOD(Fixture, "Paged cache: writes in place", "[paged]") {
  for (uint64_t n = 0; n < 10; ++n) {
    Rng rng(BaseSeed() ^ (0x1F1A + n * 0x9E3779B97F4A7C15ull));
    WriteCase c = RandomWrite(rng, n, false);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    WriteBuilt b;
    BuildWrite(c, &b);
    Bytes cache(b.input.Total());
    for (auto& x : cache) x = uint8_t(rng.U(0, 255));
    const Bytes updates = RandomValues(rng, c.cache, b.updates.Total());
    const Bytes slots = SlotBytes(c, b.slots.Total());
    std::unique_ptr<Operator> op;
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Dev().CreateOperator(b.op, &op).ok());
    REQUIRE(
        Dev().CompileOperator(*op, n % 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0, &compiled).ok());
    const UINT64 at = 4 * rng.Ui(1, 5), guard = 64;
    Bytes before = Poisoned(at + cache.size() + guard);
    std::copy(cache.begin(), cache.end(), before.begin() + at);
    std::unique_ptr<Buffer> buf, idx, upd;
    REQUIRE(Dev().CreateBuffer(before.size(), Buffer::Memory::DeviceLocal, &buf).ok());
    REQUIRE(buf->Write(0, before.data(), before.size()).ok());
    REQUIRE(Dev().CreateBuffer(slots.size(), Buffer::Memory::DeviceLocal, &idx).ok());
    REQUIRE(idx->Write(0, slots.data(), slots.size()).ok());
    REQUIRE(Dev().CreateBuffer(updates.size(), Buffer::Memory::DeviceLocal, &upd).ok());
    REQUIRE(upd->Write(0, updates.data(), updates.size()).ok());
    std::unique_ptr<BindingTable> bt;
    REQUIRE(Dev().CreateBindingTable(*compiled, &bt).ok());
    const DML_BUFFER_BINDING in[3] = {buf->Binding(at, cache.size()), idx->Binding(),
                                      upd->Binding()};
    REQUIRE(bt->BindInputs(3, in).ok());
    REQUIRE(bt->BindOutputs(1, &in[0]).ok());
    REQUIRE(Dev()
                .Submit([&](VkCommandBuffer cmd) { REQUIRE(Dev().RecordDispatch(cmd, *bt).ok()); })
                .ok());
    REQUIRE(bt->IndexStatus().ok());
    Bytes after(before.size());
    REQUIRE(buf->Read(0, after.data(), after.size()).ok());
    Bytes want = before;
    const Bytes rows = ExpectedWrite(c, cache, updates);
    std::copy(rows.begin(), rows.end(), want.begin() + at);
    CHECK(DiffBytes(after, want, nullptr) == "");
  }
}

// Random gathers of every format and both layouts, with and without token offsets, table
// strides (column-major too), output strides and rows past the last sequence.
TEST_CASE_METHOD(Fixture, "Paged cache: random gathers vs reference", "[paged]") {
  for (uint64_t n = 0; n < 40; ++n) {
    Rng rng(BaseSeed() ^ (0x6A7E + n * 0x9E3779B97F4A7C15ull));
    const GatherCase c = RandomGather(rng, n, false);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    const Result r = RunGather(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR);
    INFO(Str(r));
    CHECK(r.ok());
  }
}

// SequenceLengthsTensor summed on the device, a workgroup's chunk of lengths at a time: 700
// sequences (several chunks), lengths 0 to 8 and, by index type, negative ones (0) and a last
// one past total_tokens (clamped; 64-bit types: 2^32), against the starts that dml.h's rule
// gives.
TEST_CASE_METHOD(Fixture, "Paged cache: lengths of many sequences", "[paged]") {
  for (UINT n = 0; n < 4; ++n) {
    Rng rng(BaseSeed() ^ (0x1E57 + n));
    GatherCase c;
    c.tableType = IndexTypes()[n];
    c.cache.blocks = 8;
    c.cache.blockSize = 4;
    c.cache.heads = 1;
    c.cache.headSize = 4;
    c.maxBlocks = 2;
    const UINT seqs = 700;
    for (UINT s = 0; s < seqs; ++s) {
      int64_t len = int64_t(rng.U(0, 8));
      if (Signed(c.tableType) && rng.P(0.05)) len = -int64_t(rng.U(1, 1) << rng.U(0, 30));
      if (s == seqs - 1) len = ref::ElementSize(c.tableType) == 8 ? int64_t(1) << 32 : 8;
      c.lengths.push_back(len);
    }
    int64_t total = 5;  // the last sequence's first 5 rows
    for (UINT s = 0; s + 1 < seqs; ++s) total += std::max<int64_t>(c.lengths[s], 0);
    c.starts = {0};
    for (int64_t len : c.lengths)
      c.starts.push_back(std::min(c.starts.back() + std::max<int64_t>(len, 0), total));
    for (UINT i = 0; i < seqs * c.maxBlocks; ++i) c.table.push_back(int64_t(rng.U(0, 7)));
    INFO("index type " << UINT(c.tableType));
    const Result r = RunGather(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR);
    INFO(Str(r));
    CHECK(r.ok());
  }
}

// Many sequences with token offsets, on CPU and GPU kernels: 40 (the fused gather's bounds and
// offsets in shared memory) and 300 (past them: read from the scratch), with 2 workgroups a
// dispatch (VKDML_MAX_GROUPS) so that each walks several chunks.
TEST_CASE_METHOD(Fixture, "Paged cache: many sequences with token offsets", "[paged]") {
  for (UINT seqs : {40u, 300u})
    for (bool gpu : {false, true}) {
      Rng rng(BaseSeed() ^ (0x0FF5 + seqs * 2 + gpu));
      GatherCase c;
      c.tableType = IndexTypes()[(seqs / 40 + gpu) % 4];
      c.cache.blocks = 16;
      c.cache.blockSize = 4;
      c.cache.heads = 2;
      c.cache.headSize = 8;
      c.maxBlocks = 3;
      c.starts = {0};
      for (UINT s = 0; s < seqs; ++s) {
        const int64_t off = int64_t(rng.U(0, 11)), len = int64_t(rng.U(0, 12 - uint64_t(off)));
        c.offsets.push_back(off);
        c.starts.push_back(c.starts.back() + len);
      }
      for (UINT i = 0; i < seqs * c.maxBlocks; ++i) c.table.push_back(int64_t(rng.U(0, 15)));
      INFO("sequences " << seqs << ", GPU kernels " << gpu);
      ScopedSwitch kernels("VKDML_KERNELS", gpu ? "gpu" : "");
      ScopedSwitch groups("VKDML_MAX_GROUPS", "2");
      const Result r = RunGather(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR);
      INFO(Str(r));
      CHECK(r.ok());
    }
}

// Gathers of more groups than 256 workgroups take an invocation each (kernels.cpp: Unroll), so
// each invocation gathers several, with rows past the sequences (unwritten) and, with FILL,
// blocks out of range among them.
TEST_CASE_METHOD(Fixture, "Paged cache: gathers of many groups", "[paged]") {
  for (int n = 0; n < 4; ++n) {
    Rng rng(BaseSeed() ^ (0x6A80 + n));
    GatherCase c;
    c.cache.valueType = n % 2 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
    c.outType = c.cache.valueType;
    c.cache.layout = VKDML_PAGED_CACHE_LAYOUT(n / 2);
    c.cache.blocks = 40;
    c.cache.blockSize = 16;
    c.cache.heads = 4;
    c.cache.headSize = n % 2 ? 128 : 64;  // 16 groups of 16 bytes a head
    c.maxBlocks = 40;
    c.starts = {0, 600, 600, 1100};
    c.extraRows = 5;
    for (UINT i = 0; i < 3 * c.maxBlocks; ++i)
      c.table.push_back(n >= 2 && rng.P(0.1) ? int64_t(c.cache.blocks + rng.U(0, 3))
                                             : int64_t(rng.U(0, c.cache.blocks - 1)));
    INFO("case " << n);
    const Result r =
        RunGather(rng, c, n >= 2 ? VKDML_OUT_OF_RANGE_MODE_FILL : VKDML_OUT_OF_RANGE_MODE_ERROR);
    INFO(Str(r));
    CHECK(r.ok());
  }
}

// Blocks out of range: ERROR (the default) reports and clamps, CLAMP clamps, FILL fills.
TEST_CASE_METHOD(Fixture, "Paged cache: gathers with blocks out of range", "[paged]") {
  int reported = 0;
  // Case n; `always`: whether or not the sweep's share holds it.
  const auto run = [&](uint64_t n, bool always) {
    Rng rng(BaseSeed() ^ (0x6A7F + n * 0x9E3779B97F4A7C15ull));
    const GatherCase c = RandomGather(rng, n, true);
    if (!always && !SweepRuns(n)) return;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    const VKDML_OUT_OF_RANGE_MODE mode = n % 3 == 0   ? VKDML_OUT_OF_RANGE_MODE_ERROR
                                         : n % 3 == 1 ? VKDML_OUT_OF_RANGE_MODE_CLAMP
                                                      : VKDML_OUT_OF_RANGE_MODE_FILL;
    const bool reports = mode == VKDML_OUT_OF_RANGE_MODE_ERROR && GatherOutOfRange(c);
    if (always && !reports) return;
    const Result r = RunGather(rng, c, mode);
    INFO(Str(r));
    if (reports) {
      CHECK(r.status == Status::IndexOutOfRange);
      ++reported;
    } else {
      CHECK(r.ok());
    }
  };
  for (uint64_t n = 0; n < 30; ++n) run(n, false);
  // A share may hold no case that reports: the first such case runs anyway.
  for (uint64_t n = 0; !SweepReplaysOne() && reported == 0 && n < 30; ++n) run(n, true);
  if (!SweepReplaysOne()) CHECK(reported > 0);
}

// A decode step: write one new token's keys into two sequences' caches, then gather both
// (the README's worked example, at its sizes).
TEST_CASE_METHOD(Fixture, "Paged cache: the README's decode step", "[paged]") {
  Rng rng(BaseSeed() ^ 0xDEC0DE);
  CacheShape shape;
  shape.blocks = 8;
  shape.blockSize = 4;
  shape.heads = 2;
  shape.headSize = 8;
  WriteCase w;
  w.cache = shape;
  w.slots = {4 * 5 + 1, 4 * 2 + 3};  // sequence 0's 6th token (block 5), sequence 1's 4th (block 2)
  CHECK(RunWrite(rng, w, VKDML_OUT_OF_RANGE_MODE_ERROR, 0).ok());
  GatherCase g;
  g.cache = shape;
  g.maxBlocks = 2;
  g.table = {3, 5, 2, 0};
  g.starts = {0, 6, 10};
  CHECK(RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR).ok());
}

namespace {

struct Rule {
  const char* message;
  std::function<void(WriteBuilt&)> write;
  std::function<void(GatherBuilt&)> gather;
};

}  // namespace

// Every rule of dml.h's two descriptors, with its message (hostile descriptors included:
// block_size 0, head sizes off a quantized block, mismatched shapes and types).
TEST_CASE_METHOD(Fixture, "Paged cache: validation", "[paged][validation]") {
  WriteCase wc;
  wc.cache.headSize = 64;
  wc.slots = {0, 1, 2};
  GatherCase gc;
  gc.cache.headSize = 64;
  gc.maxBlocks = 2;
  gc.table = {0, 1, 1, 0};
  gc.starts = {0, 3, 5};
  gc.offsets = {0, 1};
  auto cacheOf = [](DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes,
                    std::vector<UINT> strides = {}) { return TensorDesc(type, sizes, strides); };
  const auto F32 = DML_TENSOR_DATA_TYPE_FLOAT32, F16 = DML_TENSOR_DATA_TYPE_FLOAT16,
             U8 = DML_TENSOR_DATA_TYPE_UINT8, I32 = DML_TENSOR_DATA_TYPE_INT32;
  const std::vector<Rule> writeRules = {
      {"Layout is 2, expected VKDML_PAGED_CACHE_LAYOUT_NHD (0) or VKDML_PAGED_CACHE_LAYOUT_HND "
       "(1)",
       [](WriteBuilt& b) { b.desc.Layout = VKDML_PAGED_CACHE_LAYOUT(2); }},
      {"Format is 3, expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or VKDML_QUANTIZED_FORMAT_Q4_0 (2)",
       [](WriteBuilt& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT(3); }},
      {"InputTensor.Sizes[1] is 0, expected at least 1",
       [&](WriteBuilt& b) {
         b.input = cacheOf(F32, {2, 0, 2, 64});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.DimensionCount is 3, expected 4 ({blocks, block_size, heads, head_size} "
       "(Layout NHD))",
       [&](WriteBuilt& b) {
         b.input = cacheOf(F32, {8, 2, 64});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.DataType is INT32, expected FLOAT32 or FLOAT16 (or UINT8 blocks with a "
       "Format)",
       [&](WriteBuilt& b) {
         b.input = cacheOf(I32, {2, 4, 2, 64});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.Sizes[3] is 62, expected a multiple of 4 (head_size: the kernels move 4 "
       "values at a time)",
       [&](WriteBuilt& b) {
         b.input = cacheOf(F32, {2, 4, 2, 62});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.DataType is FLOAT32, expected UINT8 (the cache's Q8_0 blocks)",
       [&](WriteBuilt& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT_Q8_0; }},
      {"InputTensor.Sizes[3] is 50, expected a multiple of 34 (the bytes of a Q8_0 block of 32 "
       "values: a head's row is head_size / 32 blocks)",
       [&](WriteBuilt& b) {
         b.desc.Format = VKDML_QUANTIZED_FORMAT_Q8_0;
         b.input = cacheOf(U8, {2, 4, 2, 50});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.Strides[3] is 2, expected 1 (a head's row is consecutive)",
       [&](WriteBuilt& b) {
         b.input = cacheOf(F32, {2, 4, 2, 64}, {1024, 256, 128, 2});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.Strides[2] is 65, expected an even stride (FLOAT16 rows start on 4-byte "
       "words)",
       [&](WriteBuilt& b) {
         b.input = cacheOf(F16, {2, 4, 2, 64}, {1024, 256, 65, 1});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"OutputTensor.DataType is FLOAT16, expected FLOAT32 (InputTensor.DataType)",
       [&](WriteBuilt& b) {
         b.output = cacheOf(F16, {2, 4, 2, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Sizes[0] is 3, expected 2 (InputTensor.Sizes[0])",
       [&](WriteBuilt& b) {
         b.output = cacheOf(F32, {3, 4, 2, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"SlotMappingTensor.DimensionCount is 2, expected 1 ({tokens})",
       [&](WriteBuilt& b) {
         b.slots = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {3, 1});
         b.desc.SlotMappingTensor = b.slots.Desc();
       }},
      {"SlotMappingTensor.DataType is FLOAT32, expected INT32, UINT32, INT64 or UINT64",
       [&](WriteBuilt& b) {
         b.slots = TensorDesc(F32, {3});
         b.desc.SlotMappingTensor = b.slots.Desc();
       }},
      {"UpdatesTensor.Sizes[0] is 4, expected 3 (SlotMappingTensor's tokens)",
       [&](WriteBuilt& b) {
         b.updates = TensorDesc(F32, {4, 2, 64});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"UpdatesTensor.Sizes[2] is 32, expected 64 (InputTensor's head_size)",
       [&](WriteBuilt& b) {
         b.updates = TensorDesc(F32, {3, 2, 32});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"UpdatesTensor.DataType is FLOAT16, expected FLOAT32 (InputTensor.DataType)",
       [&](WriteBuilt& b) {
         b.updates = TensorDesc(F16, {3, 2, 64});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"UpdatesTensor.DimensionCount is 2, expected 3 ({tokens, heads, head_size})",
       [&](WriteBuilt& b) {
         b.updates = TensorDesc(F32, {3, 128});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
  };
  for (const Rule& rule : writeRules) {
    INFO(rule.message);
    WriteBuilt b;
    BuildWrite(wc, &b);
    rule.write(b);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("PAGED_CACHE_WRITE: ") + rule.message);
  }
  const std::vector<Rule> gatherRules = {
      {"InputTensor.DimensionCount is 3, expected 4 ({blocks, heads, block_size, head_size} "
       "(Layout HND))",
       nullptr,
       [&](GatherBuilt& b) {
         b.desc.Layout = VKDML_PAGED_CACHE_LAYOUT_HND;
         b.input = cacheOf(F32, {8, 2, 64});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"InputTensor.Sizes[3] is 40, expected a multiple of 18 (the bytes of a Q4_0 block of 32 "
       "values: a head's row is head_size / 32 blocks)",
       nullptr,
       [&](GatherBuilt& b) {
         b.desc.Format = VKDML_QUANTIZED_FORMAT_Q4_0;
         b.input = cacheOf(U8, {2, 4, 2, 40});
         b.desc.InputTensor = b.input.Desc();
       }},
      {"BlockTableTensor.DimensionCount is 1, expected 2 ({sequences, max_blocks})", nullptr,
       [&](GatherBuilt& b) {
         b.table = TensorDesc(I32, {4});
         b.desc.BlockTableTensor = b.table.Desc();
       }},
      {"SequenceStartsTensor.Sizes[0] is 2, expected 3 (sequences + 1: BlockTableTensor.Sizes[0] "
       "plus the last sequence's end)",
       nullptr,
       [&](GatherBuilt& b) {
         b.starts = TensorDesc(I32, {2});
         b.desc.SequenceStartsTensor = b.starts.Desc();
       }},
      {"SequenceStartsTensor.DataType is INT64, expected INT32 (BlockTableTensor.DataType)",
       nullptr,
       [&](GatherBuilt& b) {
         b.starts = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {3});
         b.desc.SequenceStartsTensor = b.starts.Desc();
       }},
      {"SequenceStartsTensor and SequenceLengthsTensor are both null, expected exactly one of "
       "them",
       nullptr, [&](GatherBuilt& b) { b.desc.SequenceStartsTensor = nullptr; }},
      {"SequenceStartsTensor and SequenceLengthsTensor are both given, expected exactly one of "
       "them",
       nullptr, [&](GatherBuilt& b) { b.desc.SequenceLengthsTensor = b.starts.Desc(); }},
      {"SequenceLengthsTensor.Sizes[0] is 3, expected 2 (BlockTableTensor.Sizes[0])", nullptr,
       [&](GatherBuilt& b) {
         b.desc.SequenceStartsTensor = nullptr;
         b.desc.SequenceLengthsTensor = b.starts.Desc();  // {3}: the starts' sizes
       }},
      {"SequenceLengthsTensor.DataType is INT64, expected INT32 (BlockTableTensor.DataType)",
       nullptr,
       [&](GatherBuilt& b) {
         b.starts = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {2});
         b.desc.SequenceStartsTensor = nullptr;
         b.desc.SequenceLengthsTensor = b.starts.Desc();
       }},
      {"TokenOffsetsTensor.Sizes[0] is 3, expected 2 (BlockTableTensor.Sizes[0])", nullptr,
       [&](GatherBuilt& b) {
         b.offsets = TensorDesc(I32, {3});
         b.desc.TokenOffsetsTensor = b.offsets.Desc();
       }},
      {"OutputTensor.DataType is FLOAT16, expected FLOAT32 (InputTensor.DataType)", nullptr,
       [&](GatherBuilt& b) {
         b.output = TensorDesc(F16, {5, 2, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.DataType is UINT8, expected FLOAT32 or FLOAT16 (the values of a quantized "
       "cache)",
       nullptr,
       [&](GatherBuilt& b) {
         b.desc.Format = VKDML_QUANTIZED_FORMAT_Q8_0;
         b.input = cacheOf(U8, {2, 4, 2, 68});
         b.desc.InputTensor = b.input.Desc();
         b.output = TensorDesc(U8, {5, 2, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Sizes[1] is 3, expected 2 (InputTensor's heads)", nullptr,
       [&](GatherBuilt& b) {
         b.output = TensorDesc(F32, {5, 3, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Strides[2] is 1, expected more than 1: output elements would overlap "
       "(each output element needs its own address)",
       nullptr,
       [&](GatherBuilt& b) {
         b.output = TensorDesc(F32, {5, 2, 64}, {64, 1, 1});
         b.desc.OutputTensor = b.output.Desc();
       }},
  };
  for (const Rule& rule : gatherRules) {
    INFO(rule.message);
    GatherBuilt b;
    BuildGather(gc, &b);
    rule.gather(b);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("PAGED_GATHER: ") + rule.message);
  }
  {  // a cache write does not clamp, a gather does not drop
    WriteBuilt b;
    BuildWrite(wc, &b);
    VKDML_OUT_OF_RANGE_OPERATOR_DESC clamp{&b.op, VKDML_OUT_OF_RANGE_MODE_CLAMP, {}};
    std::unique_ptr<Operator> op;
    Result r = Dev().CreateOperator({VKDML_OPERATOR_OUT_OF_RANGE, &clamp}, &op);
    CHECK(r.message ==
          "PAGED_CACHE_WRITE: Mode is VKDML_OUT_OF_RANGE_MODE_CLAMP, which a cache write "
          "refuses: a slot past the cache is skipped, with VKDML_OUT_OF_RANGE_MODE_DROP (2) or "
          "_ERROR (3)");
    GatherBuilt g;
    BuildGather(gc, &g);
    VKDML_OUT_OF_RANGE_OPERATOR_DESC drop{&g.op, VKDML_OUT_OF_RANGE_MODE_DROP, {}};
    r = Dev().CreateOperator({VKDML_OPERATOR_OUT_OF_RANGE, &drop}, &op);
    CHECK(r.status == Status::InvalidArgument);
  }
}

// No large path yet: a cache past the binding range is refused, naming it (here a narrowed
// range, VKDML_MAX_BINDING_RANGE), and VKDML_FEATURE_TENSOR_SIZE says so.
TEST_CASE_METHOD(Fixture, "Paged cache: a cache past the binding range is refused", "[paged]") {
  const UINT64 align = CapabilitiesOf(Dev()).rangeAlign;
  const std::string range = std::to_string(align + 4096);
  ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range.c_str());
  WriteCase c;
  c.cache.blocks = 4;
  c.cache.heads = 2;
  c.cache.headSize = 64;  // 8192 bytes of float32
  c.slots = {1, 2};
  WriteBuilt b;
  BuildWrite(c, &b);
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
  vkdml::detail::KernelSet set;
  const Result r = vkdml::detail::ChooseKernels(op, 0, CapabilitiesOf(Dev()), &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "PAGED_CACHE_WRITE: InputTensor takes 8192 bytes, past this device's "
        "maxStorageBufferRange (" +
            range + " bytes) less its offset alignment (" + std::to_string(align) +
            "): a paged cache's tensors each fit one descriptor");
  VKDML_FEATURE_QUERY_TENSOR_SIZE q = {VKDML_OPERATOR_PAGED_GATHER};
  VKDML_FEATURE_DATA_TENSOR_SIZE d = {};
  REQUIRE(Dev().CheckFeatureSupport(VKDML_FEATURE_TENSOR_SIZE, sizeof q, &q, sizeof d, &d).ok());
  CHECK(d.MaxTensorBytes == 4096);  // the narrowed range less its alignment
}

// A token offset below 0 (or from 2^31) puts its sequence's tokens out of range: FILL's value.
TEST_CASE_METHOD(Fixture, "Paged cache: a negative token offset is out of range", "[paged]") {
  Rng rng(BaseSeed() ^ 0x0FF5E7);
  GatherCase g;
  g.cache.blocks = 3;
  g.cache.headSize = 8;
  g.maxBlocks = 2;
  g.table = {0, 1, 2, 1};
  g.starts = {0, 3, 5};
  g.offsets = {-1, 1};
  for (auto type : {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_INT64}) {
    g.tableType = type;
    const Result r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_FILL);  // (the fill: sequence 0)
    INFO(Str(r));
    CHECK(r.ok());
  }
}

// The write's first slot past the cache is found wherever it is (the fused kernel's first chunk
// compares every token; past kFusedTokens, the claims' pass records it), its later ones and the
// duplicates around it changing nothing: up to 4096 tokens and past them (kernel_paged.cpp).
TEST_CASE_METHOD(Fixture, "Paged cache: many tokens, duplicates and a late slot past the cache",
                 "[paged]") {
  for (UINT tokens : {300u, 1500u, 4200u}) {
    INFO(tokens << " tokens");
    Rng rng(BaseSeed() ^ (0x70CE + tokens));
    WriteCase c;
    c.cache.blocks = 5;
    c.cache.blockSize = 4;
    c.cache.heads = 2;
    c.cache.headSize = 64;
    c.cache.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;
    c.slotType = DML_TENSOR_DATA_TYPE_INT32;
    for (UINT t = 0; t < tokens; ++t)  // 20 slots: every slot named many times
      c.slots.push_back(rng.P(0.1) ? -1 : int64_t(rng.U(0, c.Slots() - 1)));
    const Result ok = RunWrite(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR, 0);
    INFO(Str(ok));
    CHECK(ok.ok());
    c.slots[tokens - 40] = 20;
    c.slots[tokens - 7] = 99;
    const Result dropped = RunWrite(rng, c, VKDML_OUT_OF_RANGE_MODE_DROP, 0);
    CHECK(dropped.ok());
    const Result r = RunWrite(rng, c, VKDML_OUT_OF_RANGE_MODE_ERROR, 0);
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK(r.message == "PAGED_CACHE_WRITE: SlotMappingTensor[" + std::to_string(tokens - 40) +
                           "] is 20, outside the valid range [0, 19]");
  }
}

// The message of a block out of range names the first one read (row-major in BlockTableTensor;
// entries past a sequence's tokens are not read), float caches and quantized ones, one workgroup
// or several.
// On both kernel families (GPU kernels: the fused gather), twice with one compiled operator (the
// second run's report as fresh as the first's).
TEST_CASE_METHOD(Fixture, "Paged cache: the first block out of range is reported", "[paged]") {
  Rng rng(BaseSeed() ^ 0xB10C);
  for (auto format : {VKDML_QUANTIZED_FORMAT(0), VKDML_QUANTIZED_FORMAT_Q8_0})
    for (bool gpu : {false, true}) {
      INFO("format " << UINT(format) << ", GPU kernels " << gpu);
      ScopedSwitch kernels("VKDML_KERNELS", gpu ? "gpu" : "");
      GatherCase g;
      g.cache.blocks = 3;
      g.cache.blockSize = 2;
      g.cache.heads = 1;
      g.cache.format = format;
      g.cache.headSize = format ? 32 : 4;
      g.outType = DML_TENSOR_DATA_TYPE_FLOAT32;
      g.maxBlocks = 3;
      g.table = {0, 9, 2, -1, 7, 0};  // sequence 1 reads entries 0 and 1; 9 comes first
      g.starts = {0, 6, 9};
      Result r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR);
      CHECK(r.message ==
            "PAGED_GATHER: BlockTableTensor[0,1] is 9, outside the valid range [0, 2]");
      g.table = {0, 1, 2, 2, 7, -5};  // entries past a sequence's tokens (-5) are not read
      r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR);
      CHECK(r.message ==
            "PAGED_GATHER: BlockTableTensor[1,1] is 7, outside the valid range [0, 2]");
      // 64 sequences of 64 tokens (several workgroups): entry 17 of sequence 40 comes first.
      g.maxBlocks = 32;
      g.table.assign(64 * 32, 1);
      g.starts.clear();
      for (int64_t s = 0; s <= 64; ++s) g.starts.push_back(s * 64);
      g.table[50 * 32 + 3] = 3;
      g.table[40 * 32 + 17] = 4;
      g.table[40 * 32 + 30] = -2;
      r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR, 2);
      CHECK(r.message ==
            "PAGED_GATHER: BlockTableTensor[40,17] is 4, outside the valid range [0, 2]");
      // 300 sequences of 2 tokens (the bounds past shared memory): entry 0 of sequence 257.
      g.maxBlocks = 1;
      g.table.assign(300, 2);
      g.starts.clear();
      for (int64_t s = 0; s <= 300; ++s) g.starts.push_back(s * 2);
      g.table[281] = 5;
      g.table[257] = 3;
      r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR, 2);
      CHECK(r.message ==
            "PAGED_GATHER: BlockTableTensor[257,0] is 3, outside the valid range [0, 2]");
      // 20000 sequences of a token: a scratch past 64 KiB, whose status words the host reads
      // from a copy (buffer.h: CreateScratch) instead of in place.
      g.table.assign(20000, 1);
      g.starts.clear();
      for (int64_t s = 0; s <= 20000; ++s) g.starts.push_back(s);
      g.table[19999] = 6;
      r = RunGather(rng, g, VKDML_OUT_OF_RANGE_MODE_ERROR, 2);
      CHECK(r.message ==
            "PAGED_GATHER: BlockTableTensor[19999,0] is 6, outside the valid range [0, 2]");
    }
}

// Perf choices no output shows, pinned on the CPU: the write of up to 4096 tokens is one
// dispatch that writes checked mode's status words itself (no claims, no fill, no report);
// past that, the claims' pass. The gather is its starts (which write the status words: no fill),
// its token rows and its values, then the report.
TEST_CASE("Kernels: the paged cache's steps", "[paged][kernels]") {
  using vkdml::detail::Pass;
  using K = Pass::Kind;
  using Kernels = vkdml::detail::Capabilities::Kernels;
  vkdml::detail::Capabilities device;
  device.storage8 = device.storage16 = true;
  device.maxSharedMemory = 16 << 10;
  device.maxGroups = 65535;
  const auto choose = [&](const DML_OPERATOR_DESC& desc, UINT flags) {
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(desc, &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, flags, device, &set).ok());
    return set;
  };
  const auto modules = [](const vkdml::detail::KernelSet& set) {
    std::vector<std::string> names;
    for (const auto& step : set.steps) names.push_back(step.plain.module);
    return names;
  };
  for (UINT tokens : {256u, 768u, 769u, 4096u, 4097u}) {
    INFO(tokens << " tokens");
    WriteCase c;
    c.cache.blocks = 4096;
    c.cache.blockSize = 16;
    c.cache.heads = 8;
    c.cache.headSize = 128;
    c.cache.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;
    c.slots.assign(tokens, 0);
    WriteBuilt b;
    BuildWrite(c, &b);
    const auto set = choose(b.op, 0);
    const bool fused = tokens <= 4096;
    CHECK(set.checked);
    CHECK(set.statusInKernel == fused);
    CHECK(set.reportInKernel == fused);
    CHECK(set.tallyWords == (fused ? 0u : 4096u * 16));
    // Fused, the scratch is the status words alone: the binding table makes it host visible.
    if (fused) CHECK(set.scratchWords == VKDML_STATUS_WORDS);
    REQUIRE(set.steps.size() == (fused ? 2u : 3u));
    CHECK(set.steps[0].kind == K::Gather);  // the copy (skipped in place)
    CHECK(set.steps[0].skipInPlace);
    CHECK(modules(set).back() == (fused ? "paged_write_fused_f_i64" : "paged_write_f_i64"));
    if (!fused) CHECK(set.steps[1].kind == K::PagedClaim);
    c.cache.format = VKDML_QUANTIZED_FORMAT_Q8_0;
    c.cache.valueType = DML_TENSOR_DATA_TYPE_FLOAT32;
    BuildWrite(c, &b);
    CHECK(modules(choose(b.op, 0)).back() ==
          (fused ? "paged_write_fused_q8_0_i64" : "paged_write_q8_0_i64"));
    // Rows of one 16-byte group: each invocation would compare its tokens with 256 others, so
    // past 768 tokens the claims' pass is cheaper.
    c.cache.format = VKDML_QUANTIZED_FORMAT(0);
    c.cache.heads = 1;
    c.cache.headSize = 4;
    BuildWrite(c, &b);
    CHECK(modules(choose(b.op, 0)).back() ==
          (tokens <= 768 ? "paged_write_fused_f_i64" : "paged_write_f_i64"));
  }
  for (auto format : {VKDML_QUANTIZED_FORMAT(0), VKDML_QUANTIZED_FORMAT_Q4_0})
    for (bool offsets : {false, true}) {
      INFO("format " << UINT(format) << ", offsets " << offsets);
      GatherCase g;
      g.cache.blocks = 8192;
      g.cache.blockSize = 16;
      g.cache.heads = 8;
      g.cache.headSize = 128;
      g.cache.format = format;
      g.cache.valueType = DML_TENSOR_DATA_TYPE_FLOAT16;
      g.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
      g.maxBlocks = 128;
      g.table.assign(64 * 128, 0);
      for (UINT s = 0; s <= 64; ++s) g.starts.push_back(int64_t(s) * 2048);
      if (offsets) g.offsets.assign(64, 0);
      GatherBuilt b;
      BuildGather(g, &b);
      // GPU kernels: the rows found where the values are copied (paged_gather_fused), the 65
      // bounds (and 64 offsets) in shared memory, 4 groups an invocation; CPU kernels: the rows'
      // own pass, then the values.
      for (bool cpu : {false, true}) {
        INFO("CPU kernels " << cpu);
        device.kernels = cpu ? Kernels::Cpu : Kernels::Gpu;
        g.lengths.clear();
        BuildGather(g, &b);
        const auto set = choose(b.op, 0);
        CHECK(set.checked);
        CHECK(set.statusInKernel);
        CHECK_FALSE(set.reportInKernel);
        std::vector<std::string> want = {"paged_starts_i32"};
        if (offsets) want.push_back("paged_starts_i32");
        if (cpu) want.push_back("paged_rows_i32");
        const std::string cache = format ? "q4_0_i32" : "f_i32";
        want.push_back((cpu ? "paged_gather_" : "paged_gather_fused_") + cache);
        CHECK(modules(set) == want);
        CHECK(set.rowWords == (cpu ? 64u * 2048 : 0u));
        CHECK(set.boundsWords == 65);
        CHECK(set.steps[0].plain.groups == 1);
        CHECK(set.plans[set.steps[0].plain.slot].params[1] == 0u);
        const auto& values = set.steps.back().plain;
        const UINT64 groups = 64u * 2048 * 8 * (128 / 8);  // 8 float16 values a group
        if (!cpu) {
          CHECK(values.spec[VKDML_SPEC_UNROLL] == 4);
          CHECK(values.groups == (groups + 4 * VKDML_GROUP_SIZE - 1) / (4 * VKDML_GROUP_SIZE));
          // ROWS' params: the offsets given, the sequences; the bounds in shared memory
          CHECK(set.plans[values.slot].params[0] == (offsets ? 1u : 0u));
          CHECK(set.plans[values.slot].params[1] == 64u);
          CHECK(set.plans[values.slot].params[2] == 1u);
        }
        // With the lengths: the same modules, the starts' pass one workgroup summing them
        // (params y 2) into one more bound.
        g.lengths.assign(64, 2048);
        BuildGather(g, &b);
        const auto summed = choose(b.op, 0);
        CHECK(modules(summed) == want);
        CHECK(summed.boundsWords == 65);
        CHECK(summed.steps[0].plain.groups == 1);
        CHECK(summed.plans[summed.steps[0].plain.slot].params[1] == 2u);
      }
      device.kernels = Kernels::Gpu;
    }
  // The bounds and offsets in shared memory while they fit a word an invocation (VKDML_GROUP_SIZE
  // of them: 255 sequences, or 127 with offsets), 4 groups an invocation; past that the
  // bisections read the scratch, 8 groups an invocation.
  for (bool offsets : {false, true})
    for (UINT extra : {0u, 1u}) {
      const UINT seqs = (offsets ? (VKDML_GROUP_SIZE - 1) / 2 : VKDML_GROUP_SIZE - 1) + extra;
      INFO("offsets " << offsets << ", sequences " << seqs);
      GatherCase g;
      g.maxBlocks = 1;
      g.table.assign(seqs, 0);
      for (UINT k = 0; k <= seqs; ++k) g.starts.push_back(k);
      if (offsets) g.offsets.assign(seqs, 0);
      GatherBuilt b;
      BuildGather(g, &b);
      const auto set = choose(b.op, 0);
      const auto& values = set.steps.back().plain;
      CHECK(values.module == "paged_gather_fused_f_i32");
      CHECK(set.plans[values.slot].params[2] == (extra ? 0u : 1u));
      CHECK(values.spec[VKDML_SPEC_UNROLL] == (extra ? 8u : 4u));
    }
  // Where the chunks a workgroup walks pass a CPU device's loop bound, the GPU kernels keep the
  // rows' pass: here 128 tokens of 256 float32 groups, 32 chunks of 1024 over 4 workgroups.
  {
    GatherCase g;
    g.cache.blocks = 8;
    g.cache.blockSize = 16;
    g.cache.heads = 8;
    g.cache.headSize = 128;
    g.maxBlocks = 8;
    g.table.assign(8, 0);
    g.starts = {0, 128};
    GatherBuilt b;
    BuildGather(g, &b);
    device.maxGroups = 4;
    device.maxLoop = 7;
    CHECK(modules(choose(b.op, 0)).back() == "paged_gather_f_i32");
    device.maxLoop = 8;
    CHECK(modules(choose(b.op, 0)).back() == "paged_gather_fused_f_i32");
    device.maxGroups = 65535;
    device.maxLoop = UINT64(-1);
  }
  // Where loops are bounded (CPU devices), lengths past what one workgroup sums within the bound
  // are refused, naming the starts instead.
  GatherCase g;
  g.maxBlocks = 1;
  const UINT many = 500000;
  g.table.assign(many, 0);
  g.lengths.assign(many, 0);
  g.starts.assign(many + 1, 0);
  g.extraRows = 1;
  GatherBuilt b;
  BuildGather(g, &b);
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
  vkdml::detail::KernelSet set;
  CHECK(vkdml::detail::ChooseKernels(op, 0, device, &set).ok());
  device.maxLoop = 16384;
  set = {};
  const Result r = vkdml::detail::ChooseKernels(op, 0, device, &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "PAGED_GATHER: SequenceLengthsTensor holds 500000 lengths, more than this device sums in "
        "one kernel (419328): give SequenceStartsTensor, the cumulative lengths");
}
