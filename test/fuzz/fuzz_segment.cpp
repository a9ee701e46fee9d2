// The fuzz target's decoder of vkdml's segment reductions (VKDML_OPERATOR_SEGMENT_REDUCE; an
// input whose first byte is 0xB8 to 0xBF): every data type and function, offsets (in and out of
// order and range) or sorted ids, batch dimensions, padded strides, every empty value, checked
// and deterministic runs; values from the input, compared with test/segment_ref.h bit for bit
// (a NaN with any NaN). In raw mode one field of the descriptor comes from the input (most of
// them invalid): where vkdml accepts it, the run must succeed or report a bad index, its output
// unchecked.
#include <algorithm>
#include <cstring>

#include "fuzz_common.h"
#include "segment_ref.h"

namespace fz {

int RunSegment(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80;
  const UINT flags = (mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                     (mode & 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  vt::SegCase c;
  c.type = kData[d.Byte() % 11];
  c.indexType = kIndex[d.Byte() % 4];
  c.argType = kIndex[d.Byte() % 4];
  c.f = VKDML_SEGMENT_REDUCE_FUNCTION(d.Byte() % 7);
  c.empty = c.Arg() ? VKDML_SEGMENT_EMPTY(d.Byte() % 2) : VKDML_SEGMENT_EMPTY(d.Byte() % 3);
  c.sorted = d.Byte() & 1;
  const UINT rank = d.In(1, 3);
  c.axis = d.In(0, rank - 1);
  c.sizes.resize(rank);
  for (UINT k = 0; k < rank; ++k) c.sizes[k] = k == c.axis ? d.In(1, 12) : d.In(1, 3);
  c.segments = d.In(1, 5);
  for (UINT b = 0; b < 8; ++b) reinterpret_cast<uint8_t*>(&c.initial)[b] = d.Byte();
  const UINT size = ref::ElementSize(c.type);
  if (size < 8) c.initial &= (1ull << (8 * size)) - 1;
  auto pads = [&](std::vector<UINT> sizes) {
    std::vector<UINT> p(rank);
    bool any = false;
    for (auto& x : p) any |= (x = d.In(1, 2)) > 1;
    return any ? vt::Strides(sizes, p) : std::vector<UINT>();
  };
  c.inStrides = pads(c.sizes);
  c.idxStrides = pads(c.IdxSizes());
  c.outStrides = pads(c.OutSizes());
  UINT64 batches = 1;
  for (UINT k = 0; k < c.axis; ++k) batches *= c.sizes[k];
  const UINT rows = c.sizes[c.axis];
  const bool isSigned = vt::IsSigned(c.indexType);
  for (UINT64 b = 0; b < batches; ++b) {
    const UINT n = c.sorted ? rows : c.segments + 1;
    int64_t prev = 0;
    for (UINT i = 0; i < n; ++i) {  // mostly non-decreasing; a byte's top bits break that
      const uint8_t x = d.Byte();
      int64_t v = (x & 0xC0) == 0xC0   ? int64_t(x & 0x0F) - (isSigned ? 3 : 0)
                  : (x & 0xC0) == 0x80 ? prev
                                       : prev + (x & 1);
      if (c.sorted && (x & 0xC0) != 0xC0) v = std::min<int64_t>(v, c.segments);
      if (!c.sorted && (x & 0xC0) != 0xC0) v = std::min<int64_t>(v, rows);
      c.indices.push_back(v);
      prev = v;
    }
  }
  // What checked mode reports: an offset outside [0, rows] or an id outside [0, segments), or
  // one below the one before it. Sorted ids out of order give unspecified segments.
  bool bad = false, sortedOk = true;
  const UINT per = c.sorted ? rows : c.segments + 1;
  for (size_t i = 0; i < c.indices.size(); ++i) {
    const int64_t v = c.indices[i];
    const bool down = i % per != 0 && v < c.indices[i - 1];
    bad |= v < 0 || (c.sorted ? v >= int64_t(c.segments) : v > int64_t(rows)) || down;
    sortedOk &= !(c.sorted && down);
  }
  c.values.resize(vt::Count(c.sizes));
  for (auto& v : c.values)
    for (UINT b = 0; b < size; ++b) v |= uint64_t(d.Byte()) << (8 * b);
  vt::SegBuilt b;
  vt::Build(c, &b);
  if (raw) {  // one field from the input
    switch (d.Byte() % 4) {
      case 0:
        RawSize(d, {&b.input, &b.indices, &b.output}, 14);
        break;
      case 1:
        b.desc.ReduceFunction = VKDML_SEGMENT_REDUCE_FUNCTION(d.Byte() % 9);
        break;
      case 2:
        b.desc.Axis = d.In(0, 4);
        break;
      default:
        b.desc.EmptyValue = VKDML_SEGMENT_EMPTY(d.Byte() % 4);
        b.desc.SortedIndices = d.Byte() % 3;
        break;
    }
  }
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(b.op, flags, &compiled)) return 0;
  const vt::Bytes in = vt::SegmentInput(c, b), idx = vt::SegmentIndices(c, b);
  vt::Bytes got(b.output.Total(), 0xA5);
  const vt::Bytes before = got;
  const Result r = Dev().Run(*compiled, {in.data(), idx.data()}, {got.data()});
  const bool checked = flags & VKDML_EXECUTION_FLAG_CHECK_INDICES;
  ++gStats.ran;
  ++gStats.segments;
  if (raw) {
    CheckRawRun(r, "segment reduction");
    return 0;
  }
  if (checked && bad) {
    if (r.status != Status::IndexOutOfRange)
      Die("segment reduction: checked mode did not report a bad index: " + r.message);
    ++gStats.checkedOutOfRange;
  } else if (!r.ok()) {
    Die("segment reduction: " + r.message);
  }
  if (!sortedOk) return 0;
  const std::string diff = vt::DiffSegment(c, got, before);
  if (!diff.empty())
    Die("segment reduction: " + diff + ": input " + b.input.ToString() + ", indices " +
        b.indices.ToString() + ", output " + b.output.ToString() + ", axis " +
        std::to_string(c.axis) + ", function " + std::to_string(c.f) + ", empty " +
        std::to_string(c.empty) + ", sorted " + std::to_string(c.sorted));
  return 0;
}

}  // namespace fz
