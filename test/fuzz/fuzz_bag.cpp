// The fuzz target's decoder of vkdml's embedding bags (VKDML_OPERATOR_EMBEDDING_BAG; an input
// whose first byte is 0xD0 to 0xDF): FLOAT32, FLOAT16, Q8_0 and Q4_0 tables, SUM, MEAN and MAX,
// offsets in and out of order and range, include_last_offset, weights, a padding row, FILL, DROP
// and ERROR, checked and deterministic runs, padded rows and strided indices, offsets and
// weights; finite values from the input (the tests take NaN and infinities), compared with
// test/bag_ref.h. In raw mode one field of the descriptor comes from the input (most of them
// invalid): where vkdml accepts it, the run must succeed, its output unchecked.
#include <algorithm>
#include <cstring>

#include "bag_ref.h"
#include "fuzz_common.h"

namespace fz {

namespace {

// A float32 from the input, made finite (a non-finite one's exponent loses its top bit).
float FiniteValue(Decoder& d) {
  uint32_t bits = d.Raw32();
  if ((bits & 0x7F800000u) == 0x7F800000u) bits &= ~0x40000000u;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// An index or offset near [0, n]: negative ones for signed types, a few past n.
int64_t Near(Decoder& d, UINT n, DML_TENSOR_DATA_TYPE type) {
  const bool isSigned = vt::IsSigned(type);
  return int64_t(d.Byte() % (2 * n + 3)) - (isSigned ? int64_t(n) + 1 : 0);
}

}  // namespace

int RunEmbeddingBag(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80;
  const UINT flags = (mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                     (mode & 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  vt::BagCase c;
  const UINT table = d.Byte() % 4;  // FLOAT32, FLOAT16, Q8_0, Q4_0
  c.format = table < 2    ? VKDML_QUANTIZED_FORMAT(0)
             : table == 2 ? VKDML_QUANTIZED_FORMAT_Q8_0
                          : VKDML_QUANTIZED_FORMAT_Q4_0;
  c.valueType = table == 1 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  const bool f16 = d.Byte() & 1;
  c.outType = f16 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  c.indexType = kIndex[d.Byte() % 4];
  c.mode = VKDML_EMBEDDING_BAG_MODE(d.Byte() % 3);
  c.rank = d.In(2, 4);
  c.rows = d.In(1, 6);
  c.width = c.format ? 32 * d.In(1, 2) : d.In(1, 9);
  c.rowPad = d.In(0, 3);
  c.outPad = f16 ? 2 * d.In(0, 1) : d.In(0, 2);
  c.indexStride = d.In(1, 2);
  c.offsetStride = d.In(1, 2);
  c.weightStride = d.In(1, 2);
  const uint8_t options = d.Byte();
  c.includeLast = options & 1;
  c.weighted = (options & 2) && c.mode == VKDML_EMBEDDING_BAG_MODE_SUM;
  c.hasPadding = options & 4;
  c.padding = d.In(0, c.rows - 1);
  const UINT wrap = (mode >> 2) & 3;
  c.outOfRange = wrap == 1   ? VKDML_OUT_OF_RANGE_MODE_FILL
                 : wrap == 2 ? VKDML_OUT_OF_RANGE_MODE_DROP
                 : wrap == 3 ? VKDML_OUT_OF_RANGE_MODE_ERROR
                             : VKDML_OUT_OF_RANGE_MODE_CLAMP;
  c.fill = float(int8_t(d.Byte())) / 4;
  const UINT entries = d.In(0, 12), bounds = d.In(0, 5) + (c.includeLast ? 1 : 0);
  for (UINT e = 0; e < entries; ++e) c.indices.push_back(Near(d, c.rows, c.indexType));
  for (UINT b = 0; b < bounds; ++b) c.offsets.push_back(Near(d, entries, c.indexType) / 2);
  vt::BagBuilt b;
  vt::Build(c, &b);
  if (raw) {  // one field from the input
    switch (d.Byte() % 4) {
      case 0:
        RawSize(d, {&b.table, &b.indices, &b.offsets, &b.weights, &b.output}, 40);
        break;
      case 1:
        b.desc.Mode = VKDML_EMBEDDING_BAG_MODE(d.Byte() % 5);
        break;
      case 2:
        b.desc.Format = VKDML_QUANTIZED_FORMAT(d.Byte() % 4);
        break;
      default:
        b.desc.PaddingIndex = d.In(0, 9);
        b.desc.HasPaddingIndex = 1;
        break;
    }
  }
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(b.op, flags, &compiled)) return 0;

  // Accepted. The table's values and the weights from the input, finite.
  vt::Bytes tableImage(b.table.Total(), 0);
  for (auto& byte : tableImage) byte = d.Byte();
  std::vector<float> values(size_t(c.rows) * c.width), weights(c.Entries());
  for (UINT r = 0; r < c.rows && !raw; ++r)
    for (UINT v = 0; v < c.width; ++v) {
      float& value = values[size_t(r) * c.width + v];
      if (c.format) {
        uint8_t* block = &tableImage[UINT64(r) * c.RowStride() + v / 32 * vt::BlockBytes(c.format)];
        vt::MakeScaleFinite(block);
        value = vt::BlockValue(c.format, block, v % 32);
      } else if (c.valueType == DML_TENSOR_DATA_TYPE_FLOAT16) {
        uint8_t* at = &tableImage[(UINT64(r) * c.RowStride() + v) * 2];
        vt::MakeScaleFinite(at);  // a float16: exponent 31 becomes 15
        value = vt::HalfValue(uint16_t(at[0] | at[1] << 8));
      } else {
        value = FiniteValue(d);
        std::memcpy(&tableImage[(UINT64(r) * c.RowStride() + v) * 4], &value, 4);
      }
    }
  vt::Bytes weightImage(b.weights.Total(), 0x5A);
  for (UINT e = 0; e < c.Entries() && c.weighted && !raw; ++e) {
    float w = FiniteValue(d);
    if (f16) {
      uint16_t h = vt::NearestHalf(w);
      if ((h & 0x7C00) == 0x7C00) h &= 0xBFFF;  // past float16's range: exponent 31 becomes 15
      std::memcpy(&weightImage[UINT64(e) * c.weightStride * 2], &h, 2);
      w = vt::HalfValue(h);
    } else {
      std::memcpy(&weightImage[UINT64(e) * c.weightStride * 4], &w, 4);
    }
    weights[e] = w;
  }
  const vt::Bytes indexImage = vt::BagIndexBytes(c, b.indices, c.indices, c.indexStride);
  const vt::Bytes offsetImage = vt::BagIndexBytes(c, b.offsets, c.offsets, c.offsetStride);
  vt::Bytes got(b.output.Total(), 0xA5);
  const vt::Bytes before = got;
  std::vector<const void*> inputs = {tableImage.data(), indexImage.data(), offsetImage.data()};
  if (b.desc.PerSampleWeightsTensor) inputs.push_back(weightImage.data());
  const Result r = Dev().Run(*compiled, inputs, {got.data()});
  if (raw) {
    CheckRawRun(r, "embedding bag");
    ++gStats.ran;
    ++gStats.bags;
    return 0;
  }
  // A checked run reports the first out-of-range index among the bags' entries (the others are
  // never read): the reference's, with every other entry made 0.
  std::vector<int64_t> inBags(c.Entries(), 0);
  for (UINT bag = 0; bag < c.Bags(); ++bag)
    for (UINT e = vt::BagBound(c, bag); e < vt::BagBound(c, bag + 1); ++e) inBags[e] = c.indices[e];
  const vt::Bytes checkedImage = vt::BagIndexBytes(c, b.indices, inBags, c.indexStride);
  const ref::IndexError err = ref::FirstError(b.indices.Ref(), checkedImage.data(),
                                              [&](const ref::Coord&) { return c.rows; });
  const bool checked =
      (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) || c.outOfRange == VKDML_OUT_OF_RANGE_MODE_ERROR;
  CheckStatus(r, checked, err);
  ++gStats.ran;
  ++gStats.bags;
  gStats.checkedOutOfRange += checked && err.found;
  const std::string diff = vt::DiffBag(c, got, before, vt::Reference(c, values, weights));
  if (!diff.empty())
    Die("embedding bag: " + diff + ": table " + b.table.ToString() + ", indices " +
        b.indices.ToString() + ", offsets " + b.offsets.ToString() + ", output " +
        b.output.ToString() + ", mode " + std::to_string(c.mode) + ", format " +
        std::to_string(c.format) + ", include last " + std::to_string(c.includeLast) +
        ", weighted " + std::to_string(c.weighted) + ", padding " +
        (c.hasPadding ? std::to_string(c.padding) : "none") + ", out of range " +
        std::to_string(c.outOfRange));
  return 0;
}

}  // namespace fz
