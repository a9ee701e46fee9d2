// The fuzz target's decoder of vkdml's paged KV cache (VKDML_OPERATOR_PAGED_CACHE_WRITE and
// _GATHER; an input whose first byte is 0xC0 to 0xC3, its mode's bit 0x40 choosing the write):
// FLOAT32, FLOAT16, Q8_0 and Q4_0 caches in both layouts with padded strides, float16 values
// into quantized caches, duplicate, negative and out-of-range slots, block tables with entries
// out of range, token offsets, rows past the last sequence; ERROR (the default), DROP, FILL and
// CLAMP, where each applies (the others must be refused), checked and deterministic runs. The
// values come from the input (finite where they are quantized), compared with a reference
// written here from dml.h (test/quantized_ref.h's ggml rule). In raw mode one field comes from
// the input (most of them invalid): where vkdml accepts it, the run must succeed or meet an
// out-of-range index, its output unchecked.
#include <cstring>

#include "fuzz_common.h"
#include "quantized_ref.h"

namespace fz {

namespace {

bool Signed(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
}

// Row-major strides with each dimension's rows padded from the input (FLOAT16: by even counts).
std::vector<UINT> Padded(Decoder& d, const std::vector<UINT>& sizes, UINT elemSize) {
  std::vector<UINT> strides(sizes.size(), 1);
  for (size_t i = sizes.size() - 1; i-- > 0;)
    strides[i] = strides[i + 1] * sizes[i + 1] + d.In(0, 2) * (elemSize == 2 ? 2 : 1);
  return strides;
}

vt::TensorDesc Strided(Decoder& d, DML_TENSOR_DATA_TYPE type, const std::vector<UINT>& sizes) {
  return vt::TensorDesc(type, sizes, Padded(d, sizes, ref::ElementSize(type)));
}

// An index near [0, n): negative ones for signed types, a few past n.
int64_t Near(Decoder& d, UINT n, DML_TENSOR_DATA_TYPE type) {
  return int64_t(d.Byte() % (n + 4)) - (Signed(type) && (d.Byte() & 3) == 0 ? 3 : 0);
}

uint64_t Offset(const vt::TensorDesc& t, const std::vector<UINT>& c) {
  return t.Ref().ByteOffset(ref::Coord(c.begin(), c.end()));
}

}  // namespace

int RunPaged(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80, write = mode & 0x40;
  const UINT flags = (mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                     (mode & 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  const UINT kind = d.Byte() % 5;  // FLOAT32, FLOAT16, Q8_0, Q4_0, Q8_0 from FLOAT16
  const auto format = kind < 2    ? VKDML_QUANTIZED_FORMAT(0)
                      : kind == 3 ? VKDML_QUANTIZED_FORMAT_Q4_0
                                  : VKDML_QUANTIZED_FORMAT_Q8_0;
  const DML_TENSOR_DATA_TYPE valueType =
      kind == 1 || kind == 4 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  const DML_TENSOR_DATA_TYPE cacheType = format ? DML_TENSOR_DATA_TYPE_UINT8 : valueType;
  const auto layout = VKDML_PAGED_CACHE_LAYOUT(d.Byte() & 1);
  const bool nhd = layout == VKDML_PAGED_CACHE_LAYOUT_NHD;
  const UINT blocks = d.In(1, 4), bs = d.In(1, 4), heads = d.In(1, 3);
  const UINT headSize = format ? 32 * d.In(1, 2) : 4 * d.In(1, 3);
  const UINT rowElems = format ? headSize / 32 * vt::BlockBytes(format) : headSize;
  const UINT ce = ref::ElementSize(cacheType), ve = ref::ElementSize(valueType);
  const std::vector<UINT> cacheSizes = nhd ? std::vector<UINT>{blocks, bs, heads, rowElems}
                                           : std::vector<UINT>{blocks, heads, bs, rowElems};
  vt::TensorDesc cache = Strided(d, cacheType, cacheSizes);
  const DML_TENSOR_DATA_TYPE it = kIndex[d.Byte() % 4];
  const UINT wrap = (mode >> 2) & 3;
  // The modes each takes (the others must be refused): the write ERROR and DROP, the gather
  // ERROR, FILL and CLAMP.
  const VKDML_OUT_OF_RANGE_MODE m =
      wrap == 0   ? VKDML_OUT_OF_RANGE_MODE_ERROR
      : wrap == 1 ? (write ? VKDML_OUT_OF_RANGE_MODE_DROP : VKDML_OUT_OF_RANGE_MODE_FILL)
      : wrap == 2 ? (write ? VKDML_OUT_OF_RANGE_MODE_CLAMP : VKDML_OUT_OF_RANGE_MODE_DROP)
                  : (write ? VKDML_OUT_OF_RANGE_MODE_FILL : VKDML_OUT_OF_RANGE_MODE_CLAMP);
  const bool refusedMode =
      write ? m == VKDML_OUT_OF_RANGE_MODE_CLAMP || m == VKDML_OUT_OF_RANGE_MODE_FILL
            : m == VKDML_OUT_OF_RANGE_MODE_DROP;

  // The write's tensors.
  std::vector<int64_t> slots;
  vt::TensorDesc slotDesc, values, output;
  VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC w{};
  // The gather's.
  std::vector<int64_t> table, starts, offsets;
  vt::TensorDesc tableDesc, startsDesc, offsetsDesc;
  VKDML_PAGED_GATHER_OPERATOR_DESC g{};
  const DML_TENSOR_DATA_TYPE outType =
      write || !format
          ? cacheType
          : (d.Byte() & 1 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32);
  UINT tokens = 0, seqs = 0, maxBlocks = 0, total = 0;
  const bool hasOffsets = d.Byte() & 1;
  const bool lengths = !write && (d.Byte() & 1);  // SequenceLengthsTensor: the starts' steps
  const UINT slotCount = blocks * bs;
  if (write) {
    tokens = d.In(1, 6);
    for (UINT t = 0; t < tokens; ++t) slots.push_back(Near(d, slotCount, it));
    slotDesc = vt::TensorDesc(it, {tokens}, {d.In(1, 2)});
    values = Strided(d, valueType, {tokens, heads, headSize});
    output = Strided(d, cacheType, cacheSizes);
    w = {cache.Desc(), slotDesc.Desc(), values.Desc(), output.Desc(), layout, format};
  } else {
    seqs = d.In(1, 3);
    maxBlocks = d.In(1, 3);
    const UINT capacity = maxBlocks * bs;
    starts.push_back(0);
    for (UINT b = 0; b < seqs; ++b) {
      const UINT off = hasOffsets ? d.In(0, capacity - 1) : 0;
      starts.push_back(starts.back() + d.In(0, capacity - off));
      offsets.push_back(off);
    }
    total = UINT(starts.back()) + d.In(starts.back() ? 0 : 1, 2);
    for (UINT i = 0; i < seqs * maxBlocks; ++i) table.push_back(Near(d, blocks, it));
    tableDesc = Strided(d, it, {seqs, maxBlocks});
    startsDesc = vt::TensorDesc(it, {lengths ? seqs : seqs + 1}, {d.In(1, 2)});
    offsetsDesc = vt::TensorDesc(it, {seqs}, {d.In(1, 2)});
    output = Strided(d, outType, {total, heads, headSize});
    g = {cache.Desc(),
         tableDesc.Desc(),
         lengths ? nullptr : startsDesc.Desc(),
         hasOffsets ? offsetsDesc.Desc() : nullptr,
         output.Desc(),
         layout,
         format,
         lengths ? startsDesc.Desc() : nullptr};
  }
  if (raw) {  // one field from the input
    switch (d.Byte() % 3) {
      case 0:
        (write ? w.Layout : g.Layout) = VKDML_PAGED_CACHE_LAYOUT(d.Byte() % 4);
        break;
      case 1:
        (write ? w.Format : g.Format) = VKDML_QUANTIZED_FORMAT(d.Byte() % 4);
        break;
      default:
        if (write)
          RawSize(d, {&cache, &slotDesc, &values, &output}, 40);
        else
          RawSize(d, {&cache, &tableDesc, &startsDesc, &output}, 40);
        w.InputTensor = g.InputTensor = cache.Desc();
        break;
    }
  }
  const DML_OPERATOR_DESC inner = write ? DML_OPERATOR_DESC{VKDML_OPERATOR_PAGED_CACHE_WRITE, &w}
                                        : DML_OPERATOR_DESC{VKDML_OPERATOR_PAGED_GATHER, &g};
  DML_SCALAR_UNION fill{};
  if (m == VKDML_OUT_OF_RANGE_MODE_FILL && !write)
    for (UINT b = 0; b < ref::ElementSize(outType); ++b) fill.Bytes[b] = d.Byte();
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrapped{&inner, m, fill};
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrapped};
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(wrap ? outer : inner, flags, &compiled)) return 0;
  if (refusedMode && !raw) Die("a paged operator accepted an out-of-range mode it must refuse");

  // Accepted: the cache's bytes from the input (quantized blocks with finite scales), the
  // values finite where they are quantized.
  vt::Bytes cacheImage = Image(d, cache, false, 0);
  if (format && !raw)
    for (UINT i0 = 0; i0 < cacheSizes[0]; ++i0)
      for (UINT i1 = 0; i1 < cacheSizes[1]; ++i1)
        for (UINT i2 = 0; i2 < cacheSizes[2]; ++i2)
          for (UINT k = 0; k < headSize / 32; ++k)
            vt::MakeScaleFinite(
                &cacheImage[Offset(cache, {i0, i1, i2, 0}) + k * vt::BlockBytes(format)]);
  vt::Bytes got(output.Total(), 0xA5), expected = got;
  Result r;
  bool outOfRange = false;  // a reported index: ERROR, or a checked run
  const bool reports =
      m == VKDML_OUT_OF_RANGE_MODE_ERROR || (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES);
  auto rowAt = [&](const vt::TensorDesc& t, UINT s, UINT h) {
    const UINT block = s / bs, row = s % bs;
    return Offset(t,
                  nhd ? std::vector<UINT>{block, row, h, 0} : std::vector<UINT>{block, h, row, 0});
  };
  if (write) {
    vt::Bytes valueImage = Image(d, values, false, 0);
    for (size_t b = 0; format && b + ve <= valueImage.size(); b += ve) {
      // finite: a non-finite one's exponent loses its top bit
      if (ve == 4 && (valueImage[b + 3] & 0x7F) == 0x7F && (valueImage[b + 2] & 0x80))
        valueImage[b + 3] &= 0xBF;
      else if (ve == 2 && (valueImage[b + 1] & 0x7C) == 0x7C)
        valueImage[b + 1] &= 0xBF;
    }
    vt::Bytes slotImage(slotDesc.Total(), 0);
    for (UINT t = 0; t < tokens; ++t)
      ref::WriteIndex(it, slotImage.data() + Offset(slotDesc, {t}), slots[t]);
    r = Dev().Run(*compiled, {cacheImage.data(), slotImage.data(), valueImage.data()},
                  {got.data()});
    if (raw) {
      CheckRawRun(r, "paged cache write");
      ++gStats.ran;
      ++gStats.paged;
      return 0;
    }
    for (UINT i0 = 0; i0 < cacheSizes[0]; ++i0)  // the copy
      for (UINT i1 = 0; i1 < cacheSizes[1]; ++i1)
        for (UINT i2 = 0; i2 < cacheSizes[2]; ++i2)
          std::memcpy(&expected[Offset(output, {i0, i1, i2, 0})],
                      &cacheImage[Offset(cache, {i0, i1, i2, 0})], UINT64(rowElems) * ce);
    for (UINT t = 0; t < tokens; ++t) {
      const int64_t s = slots[t];
      if (Signed(it) && s < 0) continue;
      if (uint64_t(s) >= slotCount) {
        outOfRange = outOfRange || reports;
        continue;
      }
      for (UINT h = 0; h < heads; ++h) {
        const uint64_t from = Offset(values, {t, h, 0}), to = rowAt(output, UINT(s), h);
        if (!format) {
          std::memcpy(&expected[to], &valueImage[from], UINT64(headSize) * ve);
          continue;
        }
        for (UINT k = 0; k < headSize / 32; ++k) {
          float x[32];
          for (UINT j = 0; j < 32; ++j) {
            const uint8_t* v = &valueImage[from + (k * 32 + j) * ve];
            if (ve == 4)
              std::memcpy(&x[j], v, 4);
            else
              x[j] = vt::HalfValue(uint16_t(v[0] | v[1] << 8));
          }
          vt::QuantizeBlock(format, x, &expected[to + k * vt::BlockBytes(format)]);
        }
      }
    }
  } else {
    vt::Bytes tableImage(tableDesc.Total(), 0), startsImage(startsDesc.Total(), 0),
        offsetsImage(offsetsDesc.Total(), 0);
    for (UINT b = 0; b < seqs; ++b) {
      for (UINT j = 0; j < maxBlocks; ++j)
        ref::WriteIndex(it, tableImage.data() + Offset(tableDesc, {b, j}),
                        table[b * maxBlocks + j]);
      ref::WriteIndex(it, offsetsImage.data() + Offset(offsetsDesc, {b}), offsets[b]);
    }
    for (UINT b = 0; b < (lengths ? seqs : seqs + 1); ++b)
      ref::WriteIndex(it, startsImage.data() + Offset(startsDesc, {b}),
                      lengths ? starts[b + 1] - starts[b] : starts[b]);
    std::vector<const void*> inputs = {cacheImage.data(), tableImage.data(), startsImage.data()};
    if (hasOffsets) inputs.push_back(offsetsImage.data());
    r = Dev().Run(*compiled, inputs, {got.data()});
    if (raw) {
      CheckRawRun(r, "paged gather");
      ++gStats.ran;
      ++gStats.paged;
      return 0;
    }
    const UINT oe = ref::ElementSize(outType);
    for (UINT b = 0; b < seqs; ++b)
      for (int64_t t = starts[b]; t < starts[b + 1]; ++t) {
        const UINT64 position = UINT64(t - starts[b]) + offsets[b];
        const UINT64 entry = position / bs, row = position % bs;
        const UINT j = UINT(std::min<UINT64>(entry, maxBlocks - 1));
        const int64_t v = table[b * maxBlocks + j];
        const bool negative = Signed(it) && v < 0;
        const bool inRange = entry < maxBlocks && !negative && uint64_t(v) < blocks;
        outOfRange = outOfRange || (!inRange && reports);
        const UINT block = negative ? 0 : uint64_t(v) >= blocks ? blocks - 1 : UINT(v);
        for (UINT h = 0; h < heads; ++h) {
          const uint64_t from = rowAt(cache, UINT(block * bs + row), h);
          for (UINT e = 0; e < headSize; ++e) {
            uint8_t* to = &expected[Offset(output, {UINT(t), h, e})];
            if (!inRange && m == VKDML_OUT_OF_RANGE_MODE_FILL) {
              std::memcpy(to, fill.Bytes, oe);
            } else if (!format) {
              std::memcpy(to, &cacheImage[from + UINT64(e) * oe], oe);
            } else {
              const float value = vt::BlockValue(
                  format, &cacheImage[from + e / 32 * vt::BlockBytes(format)], e % 32);
              if (oe == 4) {
                std::memcpy(to, &value, 4);
              } else {
                const uint16_t h16 = vt::NearestHalf(value);
                std::memcpy(to, &h16, 2);
              }
            }
          }
        }
      }
  }
  if (outOfRange != (r.status == Status::IndexOutOfRange) || (!outOfRange && !r.ok()))
    Die(std::string(write ? "paged cache write" : "paged gather") + ": expected " +
        (outOfRange ? "an out-of-range report" : "success") + ", got '" + r.message + "'");
  if (outOfRange) ++gStats.checkedOutOfRange;
  CheckOutput(got, expected, write ? "paged cache write" : "paged gather");
  ++gStats.ran;
  ++gStats.paged;
  return 0;
}

}  // namespace fz
