// VKDML_OPERATOR_GATHER_QUANTIZED_ROWS: Q8_0 and Q4_0 rows gathered and dequantized, bit for bit
// against a reference written here (float32 products; float16 by searching every float16 for
// the nearest, ties to even), on random shapes, strides, index types and out-of-range indices,
// through Run and through bindings at offsets; every validation rule; checked mode and FILL; a
// device without 8/16-bit storage.
#include <cmath>
#include <set>

#include "kernels/kernels.h"
#include "quantized_ref.h"
#include "test_util.h"

using namespace vt;

namespace {

struct Case {
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT_Q8_0;
  UINT rows = 1, blocks = 1, rowStride = 0;  // rowStride 0: packed
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  std::vector<UINT> batch;         // IndicesTensor's sizes but the last (1)
  std::vector<UINT> indexStrides;  // empty: packed
  std::vector<UINT> outStrides;    // empty: packed
  std::vector<int64_t> indices;    // row-major over batch
  UINT Values() const { return blocks * 32; }
  UINT RowBytes() const { return blocks * BlockBytes(format); }
  UINT Stride() const { return rowStride ? rowStride : RowBytes(); }
};

struct Built {
  TensorDesc table, indices, output;
  VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

void Build(const Case& c, Built* b) {
  const UINT dims = UINT(c.batch.size()) + 1;
  std::vector<UINT> tableSizes(dims, 1), indexSizes = c.batch, outSizes = c.batch;
  tableSizes[dims - 2] = c.rows;
  tableSizes[dims - 1] = c.RowBytes();
  std::vector<UINT> tableStrides;
  if (c.rowStride) {
    tableStrides.assign(dims, 0);
    tableStrides[dims - 2] = c.rowStride;
    tableStrides[dims - 1] = 1;
  }
  indexSizes.push_back(1);
  outSizes.push_back(c.Values());
  b->table = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, tableSizes, tableStrides);
  b->indices = TensorDesc(c.indexType, indexSizes, c.indexStrides);
  b->output = TensorDesc(c.outType, outSizes, c.outStrides);
  b->desc = {b->table.Desc(), b->indices.Desc(), b->output.Desc(), c.format};
  b->op = {VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, &b->desc};
}

// DirectML's clamp: into [-n, n - 1] (signed) or [0, n - 1], negative counting from the end.
UINT ClampRow(int64_t v, UINT n, bool isSigned) {
  if (!isSigned) return uint64_t(v) >= n ? n - 1 : UINT(v);
  if (v < -int64_t(n)) v = -int64_t(n);
  if (v >= int64_t(n)) v = n - 1;
  return UINT(v < 0 ? v + n : v);
}

bool IsSigned(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
}

// Element offsets of coordinate list c over strides (packed when empty).
UINT64 Offset(const std::vector<UINT>& sizes, const std::vector<UINT>& strides,
              const std::vector<UINT>& coord) {
  UINT64 off = 0, packed = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    off += UINT64(coord[d]) * (strides.empty() ? packed : strides[d]);
    packed *= sizes[d];
  }
  return off;
}

// The index tensor's image and the expected output image (starting from `out`).
void Images(const Case& c, const Built& b, Bytes* indexImage, Bytes* out, const Bytes& table) {
  *indexImage = Bytes(b.indices.Total(), 0);
  const UINT es = ref::ElementSize(c.indexType), os = ref::ElementSize(c.outType);
  std::vector<UINT> sizes = c.batch, coord(c.batch.size(), 0);
  std::vector<UINT> idxSizes = c.batch, outSizes = c.batch;
  idxSizes.push_back(1);
  outSizes.push_back(c.Values());
  for (size_t n = 0; n < c.indices.size(); ++n) {
    std::vector<UINT> at = coord;
    at.push_back(0);
    ref::WriteIndex(c.indexType, indexImage->data() + Offset(idxSizes, c.indexStrides, at) * es,
                    c.indices[n]);
    const UINT row = ClampRow(c.indices[n], c.rows, IsSigned(c.indexType));
    for (UINT v = 0; v < c.Values(); ++v) {
      const uint8_t* block = &table[UINT64(row) * c.Stride() + v / 32 * BlockBytes(c.format)];
      const float value = BlockValue(c.format, block, v % 32);
      at.back() = v;
      uint8_t* dst = out->data() + Offset(outSizes, c.outStrides, at) * os;
      if (os == 4) {
        std::memcpy(dst, &value, 4);
      } else {
        const uint16_t h = NearestHalf(value);
        std::memcpy(dst, &h, 2);
      }
    }
    for (size_t d = coord.size(); d-- > 0;)  // the next coordinate, row-major
      if (++coord[d] < sizes[d])
        break;
      else
        coord[d] = 0;
  }
}

Result Compile(Device& device, Built& b, UINT flags, std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  VKDML_TRY(device.CreateOperator(b.op, &op));
  return device.CompileOperator(*op, flags, out);
}

// Runs c through Device::Run and checks every output byte (gaps keep their poison).
void RunAndCheck(Device& device, Rng& rng, const Case& c) {
  Built b;
  Build(c, &b);
  INFO("table " << b.table.ToString() << ", indices " << b.indices.ToString() << ", output "
                << b.output.ToString() << ", format " << UINT(c.format));
  const Bytes table = RandomTable(rng, c.format, c.rows, c.blocks, c.Stride(), b.table.Total());
  Bytes indexImage, expected = Poisoned(b.output.Total());
  Images(c, b, &indexImage, &expected, table);
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(device, b, DML_EXECUTION_FLAG_NONE, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  Bytes out = Poisoned(b.output.Total());
  r = device.Run(*compiled, {table.data(), indexImage.data()}, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  const ref::Tensor t = b.output.Ref();
  CHECK(DiffBytes(out, expected, &t) == "");
}

std::vector<int64_t> RandomIndices(Rng& rng, size_t n, UINT rows, DML_TENSOR_DATA_TYPE type) {
  std::vector<int64_t> v(n);
  for (auto& x : v) {
    if (rng.P(0.1))  // out of range: clamped
      x = IsSigned(type) ? (rng.P(0.5) ? -int64_t(rows) - int64_t(rng.U(1, 9)) : rows + 3)
                         : int64_t(rows + rng.U(0, 5));
    else if (IsSigned(type) && rng.P(0.3))
      x = -int64_t(rng.U(1, rows));
    else
      x = int64_t(rng.U(0, rows - 1));  // duplicates are common with few rows
  }
  return v;
}

// The rows of rowBytes each of a real table past the device's binding range: the 32000
// (4096 values of Q8_0, 139 MB, past lavapipe's 128 MiB), or one more than the range holds.
// false, saying so, where the device's range is over 1 GiB or the table past its allocations
// (never on lavapipe, where CI runs the [big] tests: a wider range there would skip silently).
bool RowsPastRange(UINT rowBytes, UINT* rows) {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  *rows = UINT(std::max<UINT64>(32000, range / rowBytes + 1));
  const UINT64 bytes = UINT64(*rows) * rowBytes;
  if (range <= (UINT64(1) << 30) && bytes <= MaxAllocationSize()) return true;
  CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
  WARN("skipped: a table past maxStorageBufferRange (" << range << " bytes) takes " << bytes);
  return false;
}

// A random case (rank 2 to 5): index type and output type from the case number, at least
// minRows table rows, padded rows half the time, strided indices and outputs, duplicates and
// out-of-range indices.
Case RandomCase(Rng& rng, uint64_t n, UINT minRows) {
  Case c;
  c.format = n % 2 ? VKDML_QUANTIZED_FORMAT_Q4_0 : VKDML_QUANTIZED_FORMAT_Q8_0;
  c.indexType = IndexTypes()[(n / 2) % 4];
  c.outType = (n / 8) % 2 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  c.rows = rng.Ui(minRows, 40);
  c.blocks = rng.Ui(1, 5);
  if (rng.P(0.5)) c.rowStride = c.RowBytes() + rng.Ui(1, 7);
  const UINT rank = rng.Ui(1, 4);  // index dimensions before the last
  for (UINT d = 0; d < rank; ++d) c.batch.push_back(rng.Ui(1, d == rank - 1 ? 9 : 3));
  const bool stridedIndices = rng.P(0.4), stridedOut = rng.P(0.4);
  if (stridedIndices) {  // padded, last dimension's stride anything
    std::vector<UINT> sizes = c.batch;
    sizes.push_back(1);
    c.indexStrides.assign(sizes.size(), 0);
    UINT64 s = rng.Ui(1, 3);
    for (size_t d = sizes.size(); d-- > 0;) {
      c.indexStrides[d] = UINT(s);
      s = s * sizes[d] + rng.Ui(0, 2);
    }
  }
  if (stridedOut) {  // rows padded by an even count of elements, last stride 1
    std::vector<UINT> sizes = c.batch;
    sizes.push_back(c.Values());
    c.outStrides.assign(sizes.size(), 0);
    UINT64 s = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      c.outStrides[d] = UINT(s);
      s = s * sizes[d] + 2 * rng.Ui(0, 3);
    }
  }
  size_t count = 1;
  for (UINT s : c.batch) count *= s;
  c.indices = RandomIndices(rng, count, c.rows, c.indexType);
  return c;
}

}  // namespace

TEST_CASE("Quantized rows: the float16 reference rounds as the definition says", "[quantized]") {
  CHECK(NearestHalf(1.0f) == 0x3C00);
  CHECK(NearestHalf(-2.0f) == 0xC000);
  CHECK(NearestHalf(65504.0f) == 0x7BFF);
  CHECK(NearestHalf(65519.99f) == 0x7BFF);
  CHECK(NearestHalf(65520.0f) == 0x7C00);
  CHECK(NearestHalf(1.0f + 1.0f / 2048) == 0x3C00);     // a tie: to the even 1.0
  CHECK(NearestHalf(1.0f + 3.0f / 2048) == 0x3C02);     // a tie: to the even 1 + 2^-9
  CHECK(NearestHalf(std::ldexp(1.0f, -25)) == 0x0000);  // half the least subnormal: even 0
  CHECK(NearestHalf(std::ldexp(1.5f, -25)) == 0x0001);  // above it
  CHECK(NearestHalf(-0.0f) == 0x8000);
  CHECK(HalfValue(0x0001) == std::ldexp(1.0f, -24));
  CHECK(HalfValue(0x3555) == 0.333251953125f);
}

// ggml's layouts, written out by hand: a Q8_0 and a Q4_0 table of 3 rows of one block each.
TEST_CASE_METHOD(Fixture, "Quantized rows: a Q8_0 and a Q4_0 table by hand", "[quantized]") {
  for (auto format : {VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0}) {
    const UINT bytes = BlockBytes(format);
    Bytes table(3 * bytes + 2, 0);  // 2 bytes of padding to a word
    for (UINT r = 0; r < 3; ++r) {
      const uint16_t d = r == 0 ? 0x3C00 : r == 1 ? 0x3800 : 0xC000;  // 1, 0.5, -2
      table[r * bytes] = uint8_t(d);
      table[r * bytes + 1] = uint8_t(d >> 8);
      for (UINT k = 0; k < bytes - 2; ++k) table[r * bytes + 2 + k] = uint8_t(k * 7 + r);
    }
    Case c;
    c.format = format;
    c.rows = 3;
    c.batch = std::vector<UINT>{4};
    Built b;
    Build(c, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    const int32_t idx[4] = {2, 0, -1, 1};  // -1: the last row
    std::vector<float> out(4 * 32, -7);
    REQUIRE(Dev().Run(*compiled, {table.data(), idx}, {out.data()}).ok());
    for (UINT n = 0; n < 4; ++n) {
      const UINT r = n == 0 ? 2 : n == 1 ? 0 : n == 2 ? 2 : 1;
      const float d = r == 0 ? 1.0f : r == 1 ? 0.5f : -2.0f;
      for (UINT v = 0; v < 32; ++v) {
        const uint8_t byte = uint8_t((format == VKDML_QUANTIZED_FORMAT_Q8_0 ? v : v % 16) * 7 + r);
        const int q = format == VKDML_QUANTIZED_FORMAT_Q8_0 ? int(int8_t(byte))
                                                            : (v < 16 ? byte & 15 : byte >> 4) - 8;
        INFO("format " << UINT(format) << ", output row " << n << ", value " << v);
        CHECK(out[n * 32 + v] == d * float(q));
      }
    }
  }
}

// Random shapes (rank 2 to 5), index types, FLOAT32 and FLOAT16 outputs, padded table rows
// (any byte count: blocks across word boundaries), strided indices and outputs, duplicates and
// out-of-range indices (clamped).
TEST_CASE_METHOD(Fixture, "Quantized rows: random tables vs reference", "[quantized]") {
  for (uint64_t n = 0; n < 48; ++n) {
    Rng rng(BaseSeed() ^ (0x9A7E + n * 0x9E3779B97F4A7C15ull));  // a case replays alone
    const Case c = RandomCase(rng, n, 1);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunAndCheck(Dev(), rng, c);
  }
}

// Tables, outputs and indices past the binding range, which the test knob
// VKDML_MAX_BINDING_RANGE narrows to 2 to 6 windows of the table: the large path, a dispatch per
// chunk of output rows and window of the table, each taking the rows that start in its window
// and reading up to a row past its end (rows padded by 1 to 7 bytes straddle the windows' ends).
// Random cases as above, bit for bit; FILL and checked mode there; a range with no window for a
// row is refused, naming it. A binding a few bytes short may still read right on lavapipe, and
// Debian's GPU-assisted validation does not flag it: tableWindows checks the words read.
TEST_CASE_METHOD(Fixture, "Quantized rows: past the binding range", "[quantized]") {
  const UINT64 align = CapabilitiesOf(Dev()).rangeAlign;
  // The range leaving `windows` windows of the table (kernel_quantized.cpp: the reach).
  auto range = [&](const Case& c, const Built& b, UINT64 windows) {
    const UINT64 reach = (c.RowBytes() + 2 + 3) / 4 * 4;
    const UINT64 window = (b.table.Total() / windows + 15) / 16 * 16;
    return std::to_string(align + reach + window);
  };
  // How many windows of the table the dequantizing kernel reads through; that each dispatch's
  // binding of the table holds the words of the rows starting in its window (the words it reads:
  // glsl/quantized.glsl, tableBytes4, reads 4 bytes from a row's last 4 on).
  auto tableWindows = [](const Case& c, const Built& b, UINT flags) {
    const vkdml::detail::KernelSet set = Chosen(b.op, flags);
    REQUIRE(set.large);
    std::vector<UINT64> rows;
    for (UINT64 row = 0; row < c.rows; ++row) rows.push_back(row * c.Stride());
    return WindowsHolding(set.steps.at(0).plain, b.table.Total(), rows, c.RowBytes());
  };
  for (uint64_t n = 0; n < 24; ++n) {
    Rng rng(BaseSeed() ^ (0x1A26E + n * 0x9E3779B97F4A7C15ull));
    const Case c = RandomCase(rng, n, 8);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    Built b;
    Build(c, &b);
    const UINT64 windows = 2 + n % 5;
    ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range(c, b, windows).c_str());
    INFO("VKDML_MAX_BINDING_RANGE=" << range(c, b, windows));
    CHECK(tableWindows(c, b, DML_EXECUTION_FLAG_NONE) == windows);
    RunAndCheck(Dev(), rng, c);
  }

  // Rows starting on a window's last bytes, FILL and checked mode: 55-byte rows of 54 bytes
  // (the most read past a row's end: 2 bytes past the word holding its last) through 496-byte
  // windows, rows 9, 18 and 27 starting 1, 2 and 3 bytes before a window's end; a dropped row's
  // values come from the first window's dispatches, once.
  Rng rng(BaseSeed() ^ 0x1A26F);
  Case c;
  c.format = VKDML_QUANTIZED_FORMAT_Q4_0;
  c.rows = 36;
  c.blocks = 3;
  c.rowStride = c.RowBytes() + 1;
  c.batch = std::vector<UINT>{8};
  c.indices = std::vector<int64_t>{9, 40, 18, -37, 27, 35, 0, 10};
  Built b;
  Build(c, &b);
  const Bytes table = RandomTable(rng, c.format, c.rows, c.blocks, c.Stride(), b.table.Total());
  Bytes indexImage, expected = Poisoned(b.output.Total());
  Images(c, b, &indexImage, &expected, table);
  ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range(c, b, 4).c_str());
  CHECK(tableWindows(c, b, VKDML_EXECUTION_FLAG_CHECK_INDICES) == 4);
  {
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
    Bytes out = Poisoned(b.output.Total());
    Result r = Dev().Run(*compiled, {table.data(), indexImage.data()}, {out.data()});
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK(r.message.find("40") != std::string::npos);
    CHECK(DiffBytes(out, expected, nullptr) == "");  // clamped, as unchecked
  }
  VKDML_OUT_OF_RANGE_OPERATOR_DESC fill{&b.op, VKDML_OUT_OF_RANGE_MODE_FILL, {}};
  fill.FillValue.Float32 = 2.25f;
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &fill};
  std::unique_ptr<Operator> op;
  REQUIRE(Dev().CreateOperator(wrapped, &op).ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  const UINT values = c.Values();
  std::vector<float> out(8 * values), want(8 * values);
  REQUIRE(Dev().Run(*compiled, {table.data(), indexImage.data()}, {out.data()}).ok());
  std::memcpy(want.data(), expected.data(), want.size() * 4);
  for (UINT row : {1, 3})  // indices 40 and -37
    for (UINT v = 0; v < values; ++v) want[row * values + v] = 2.25f;
  CHECK(std::memcmp(out.data(), want.data(), out.size() * 4) == 0);

  // A range whose window cannot hold a row and what is read past it.
  ScopedSwitch tight("VKDML_MAX_BINDING_RANGE", std::to_string(align + 64).c_str());
  Result r = Compile(Dev(), b, DML_EXECUTION_FLAG_NONE, &compiled);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "GATHER_QUANTIZED_ROWS: a dispatch reaches 56 bytes of InputTensor past its window (a row "
        "or block starting in it), which leaves no window in this device's binding range (" +
            std::to_string(align + 64) + " bytes)");
}

// A real table past the device's binding range: the 32000 x 4096 Q8_0 table (139 MB) on
// lavapipe's 128 MiB, or a row of blocks more than the range; 64 rows gathered, the last among
// them, through windows of the table.
TEST_CASE_METHOD(Fixture, "Quantized rows: a table past maxStorageBufferRange",
                 "[quantized][large][big]") {
  Case c;
  c.blocks = 4096 / 32;
  if (!RowsPastRange(c.RowBytes(), &c.rows)) return;
  Rng rng(BaseSeed() ^ 0xB16);
  c.batch = std::vector<UINT>{64};
  c.indices = RandomIndices(rng, 64, c.rows, c.indexType);
  c.indices[0] = c.rows - 1;
  c.indices[1] = -1;
  RunAndCheck(Dev(), rng, c);
}

// Through bindings at word offsets of one buffer each, with guard bytes that must not change,
// recorded into a command buffer; an offset off a word is refused, naming the reason.
TEST_CASE_METHOD(Fixture, "Quantized rows: bindings at offsets, and offsets off a word",
                 "[quantized]") {
  Rng rng(BaseSeed() ^ 0x0FF5E7);
  Case c;
  c.format = VKDML_QUANTIZED_FORMAT_Q4_0;
  c.rows = 7;
  c.blocks = 3;
  c.rowStride = 55;
  c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  c.indexType = DML_TENSOR_DATA_TYPE_INT64;
  c.batch = std::vector<UINT>{2, 5};
  c.indices = RandomIndices(rng, 10, c.rows, c.indexType);
  Built b;
  Build(c, &b);
  const Bytes table = RandomTable(rng, c.format, c.rows, c.blocks, c.Stride(), b.table.Total());
  Bytes indexImage, expected = Poisoned(b.output.Total());
  Images(c, b, &indexImage, &expected, table);
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Compile(Dev(), b, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  const UINT64 offsets[3] = {12, 8, 20}, guard = 64;
  const Bytes* images[3] = {&table, &indexImage, nullptr};
  const UINT64 sizes[3] = {b.table.Total(), b.indices.Total(), b.output.Total()};
  std::unique_ptr<Buffer> buffers[3];
  std::vector<Bytes> before(3);
  for (int i = 0; i < 3; ++i) {
    before[i] = Poisoned(offsets[i] + sizes[i] + guard);
    if (images[i]) std::copy(images[i]->begin(), images[i]->end(), before[i].begin() + offsets[i]);
    REQUIRE(Dev().CreateBuffer(before[i].size(), Buffer::Memory::DeviceLocal, &buffers[i]).ok());
    REQUIRE(buffers[i]->Write(0, before[i].data(), before[i].size()).ok());
  }
  std::unique_ptr<BindingTable> bt;
  REQUIRE(Dev().CreateBindingTable(*compiled, &bt).ok());
  const DML_BUFFER_BINDING in[2] = {buffers[0]->Binding(offsets[0], sizes[0]),
                                    buffers[1]->Binding(offsets[1], sizes[1])};
  const DML_BUFFER_BINDING out = buffers[2]->Binding(offsets[2], sizes[2]);
  REQUIRE(bt->BindInputs(2, in).ok());
  REQUIRE(bt->BindOutputs(1, &out).ok());
  REQUIRE(Dev()
              .Submit([&](VkCommandBuffer cmd) { REQUIRE(Dev().RecordDispatch(cmd, *bt).ok()); })
              .ok());
  for (int i = 0; i < 3; ++i) {
    Bytes after(before[i].size());
    REQUIRE(buffers[i]->Read(0, after.data(), after.size()).ok());
    Bytes want = before[i];
    if (i == 2) std::copy(expected.begin(), expected.end(), want.begin() + offsets[i]);
    INFO("buffer " << i);
    CHECK(DiffBytes(after, want, nullptr) == "");
  }
  const DML_BUFFER_BINDING odd[2] = {buffers[0]->Binding(offsets[0] + 2, sizes[0]),
                                     buffers[1]->Binding(offsets[1], sizes[1])};
  Result r = bt->BindInputs(2, odd);
  CHECK(r.status == Status::InvalidArgument);
  CHECK(r.message ==
        "inputs[0].Offset is 14, expected a multiple of 4: GATHER_QUANTIZED_ROWS reads and "
        "writes its tensors in 4-byte words (InputTensor)");
}

// Checked mode reports the first out-of-range index; VKDML_OUT_OF_RANGE_MODE_FILL writes its
// value for a whole row instead.
TEST_CASE_METHOD(Fixture, "Quantized rows: checked mode and FILL", "[quantized]") {
  Rng rng(BaseSeed() ^ 0xF177);
  Case c;
  c.rows = 5;
  c.blocks = 2;
  c.batch = std::vector<UINT>{4};
  c.indices = std::vector<int64_t>{1, 9, -2, 5};
  Built b;
  Build(c, &b);
  const Bytes table = RandomTable(rng, c.format, c.rows, c.blocks, c.Stride(), b.table.Total());
  Bytes indexImage, expected = Poisoned(b.output.Total());
  Images(c, b, &indexImage, &expected, table);
  {
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
    Bytes out = Poisoned(b.output.Total());
    Result r = Dev().Run(*compiled, {table.data(), indexImage.data()}, {out.data()});
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK(r.message.find("9") != std::string::npos);
    CHECK(DiffBytes(out, expected, nullptr) == "");  // clamped, as unchecked
  }
  VKDML_OUT_OF_RANGE_OPERATOR_DESC fill{&b.op, VKDML_OUT_OF_RANGE_MODE_FILL, {}};
  fill.FillValue.Float32 = -1.5f;
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &fill};
  std::unique_ptr<Operator> op;
  REQUIRE(Dev().CreateOperator(wrapped, &op).ok());
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  std::vector<float> out(4 * 64);
  REQUIRE(Dev().Run(*compiled, {table.data(), indexImage.data()}, {out.data()}).ok());
  std::vector<float> want(4 * 64);
  std::memcpy(want.data(), expected.data(), want.size() * 4);
  for (UINT v = 64; v < 128; ++v) want[v] = -1.5f;   // index 9
  for (UINT v = 192; v < 256; ++v) want[v] = -1.5f;  // index 5
  CHECK(std::memcmp(out.data(), want.data(), out.size() * 4) == 0);
}

// Without 8/16-bit storage the kernel is the same (32-bit words throughout).
TEST_CASE_METHOD(Fixture, "Quantized rows: a device without 8/16-bit storage", "[quantized]") {
  std::unique_ptr<Device> plain;
  REQUIRE(CreateDevice(Borrowed(Dev(), DeviceFeatures{}), &plain).ok());
  Rng rng(BaseSeed() ^ 0x8B17);
  for (auto out : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16})
    for (auto format : {VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0}) {
      Case c;
      c.format = format;
      c.outType = out;
      c.rows = 9;
      c.blocks = 3;
      c.rowStride = c.RowBytes() + 1;
      c.batch = std::vector<UINT>{3, 2};
      c.indices = RandomIndices(rng, 6, c.rows, c.indexType);
      RunAndCheck(*plain, rng, c);
    }
}

// Every rule of dml.h's VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC, with its message.
TEST_CASE_METHOD(Fixture, "Quantized rows: validation", "[quantized][validation]") {
  struct Rule {
    const char* message;
    std::function<void(Case&, Built&)> change;  // after Build, before CreateOperator
  };
  const auto u8 = DML_TENSOR_DATA_TYPE_UINT8, f32 = DML_TENSOR_DATA_TYPE_FLOAT32;
  const Rule rules[] = {
      {"GATHER_QUANTIZED_ROWS: Format is 3, expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or "
       "VKDML_QUANTIZED_FORMAT_Q4_0 (2)",
       [](Case&, Built& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT(3); }},
      {"GATHER_QUANTIZED_ROWS: InputTensor.DataType is INT8, expected UINT8 (the table's Q8_0 "
       "blocks)",
       [](Case&, Built& b) {
         b.table = TensorDesc(DML_TENSOR_DATA_TYPE_INT8, b.table.sizes);
         b.desc.InputTensor = b.table.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.DataType is INT32, expected FLOAT32 or FLOAT16",
       [](Case&, Built& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, b.output.sizes);
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: InputTensor.DimensionCount is 1, expected 2 to 8 (its last two "
       "dimensions are the table's rows and bytes per row)",
       [=](Case&, Built& b) {
         b.table = TensorDesc(u8, {68});
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {1});
         b.output = TensorDesc(f32, {64});
         b.desc = {b.table.Desc(), b.indices.Desc(), b.output.Desc(), b.desc.Format};
       }},
      {"GATHER_QUANTIZED_ROWS: IndicesTensor.DimensionCount is 3, expected 2 "
       "(InputTensor.DimensionCount)",
       [](Case&, Built& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {1, 3, 1});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: InputTensor.Sizes[0] is 2, expected 1 (only the last two "
       "dimensions, the table's rows and bytes per row, may be larger)",
       [=](Case&, Built& b) {
         b.table = TensorDesc(u8, {2, 4, 68});
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {1, 3, 1});
         b.output = TensorDesc(f32, {1, 3, 64});
         b.desc = {b.table.Desc(), b.indices.Desc(), b.output.Desc(), b.desc.Format};
       }},
      {"GATHER_QUANTIZED_ROWS: InputTensor.Sizes[1] is 70, expected a multiple of 34 (the bytes "
       "of a Q8_0 block of 32 values)",
       [=](Case&, Built& b) {
         b.table = TensorDesc(u8, {4, 70});
         b.desc.InputTensor = b.table.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: InputTensor.Strides[1] is 2, expected 1 (a row's bytes are "
       "consecutive)",
       [=](Case&, Built& b) {
         b.table = TensorDesc(u8, {4, 68}, {200, 2});
         b.desc.InputTensor = b.table.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: IndicesTensor.Sizes[1] is 2, expected 1 (one row index per output "
       "row)",
       [](Case&, Built& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {3, 2});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.Sizes[1] is 32, expected 64 (32 values per 34-byte "
       "block of an InputTensor row)",
       [=](Case&, Built& b) {
         b.output = TensorDesc(f32, {3, 32});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.Sizes[0] is 4, expected 3 (IndicesTensor.Sizes[0])",
       [=](Case&, Built& b) {
         b.output = TensorDesc(f32, {4, 64});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.Strides[1] is 0, expected a non-zero stride: an "
       "output cannot broadcast",
       [=](Case&, Built& b) {
         b.output = TensorDesc(f32, {3, 64}, {64, 0});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.Strides[1] is 3, expected 1 (a row's values are "
       "consecutive)",
       [=](Case&, Built& b) {
         b.output = TensorDesc(f32, {3, 64}, {1, 3});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: OutputTensor.Strides[0] is 65, expected an even stride (FLOAT16 "
       "rows start on 4-byte words)",
       [=](Case&, Built& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT16, {3, 64}, {65, 1});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"GATHER_QUANTIZED_ROWS: IndicesTensor.DataType is FLOAT32, expected INT32, UINT32, INT64 "
       "or UINT64",
       [](Case&, Built& b) {
         b.indices = TensorDesc(f32, {3, 1});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
  };
  for (const Rule& rule : rules) {
    Case c;
    c.rows = 4;
    c.blocks = 2;
    c.batch = std::vector<UINT>{3};
    Built b;
    Build(c, &b);
    rule.change(c, b);
    std::unique_ptr<Operator> op;
    Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == rule.message);
  }
  // A VKDML_OUT_OF_RANGE_OPERATOR_DESC's FillValue is OutputTensor's type: 4 bytes of FLOAT32.
  Case c;
  c.rows = 4;
  c.batch = std::vector<UINT>{3};
  Built b;
  Build(c, &b);
  VKDML_OUT_OF_RANGE_OPERATOR_DESC fill{&b.op, VKDML_OUT_OF_RANGE_MODE_FILL, {}};
  fill.FillValue.Bytes[4] = 1;
  const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &fill};
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(wrapped, &op);
  CHECK(r.message ==
        "GATHER_QUANTIZED_ROWS: FillValue.Bytes[4] is 1, expected 0: OutputTensor's DataType, "
        "FLOAT32, is 4 bytes wide");
}

// ---- VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS ----

namespace {

// A block of 32 values of one of the kinds the rule has edges at.
void RandomBlock(Rng& rng, float* x) {
  const UINT kind = rng.Ui(0, 8);
  const float scale = std::ldexp(1.0f, int(rng.Ui(0, 80)) - 40);
  std::normal_distribution<float> normal(0, 1);
  for (int j = 0; j < 32; ++j) x[j] = normal(rng.g) * scale;
  switch (kind) {
    case 0:  // all zeros (d = 0, or -0 for Q4_0)
      for (int j = 0; j < 32; ++j) x[j] = rng.P(0.5) ? 0.0f : -0.0f;
      break;
    case 1: {  // Q8_0's halves: amax 127 * 2^k, values (n + 0.5) * 2^k, x * id exact
      const float unit = std::ldexp(1.0f, int(rng.Ui(0, 40)) - 20);
      for (int j = 0; j < 32; ++j) x[j] = (float(int(rng.Ui(0, 252)) - 126) + 0.5f) * unit;
      x[rng.Ui(0, 31)] = (rng.P(0.5) ? 127 : -127) * unit;
      break;
    }
    case 2: {  // Q4_0's ties of magnitude: the first one's sign decides d
      const UINT a = rng.Ui(0, 30), b = rng.Ui(a + 1, 31);
      float m = 0;
      for (int j = 0; j < 32; ++j) m = std::max(m, std::fabs(x[j]));
      x[a] = rng.P(0.5) ? 2 * m : -2 * m;
      x[b] = -x[a];
      break;
    }
    case 3:  // denormals among small normals (amax at least 2^-100: 1 / d stays finite)
      for (int j = 0; j < 32; ++j)
        if (rng.P(0.5)) x[j] = std::ldexp(normal(rng.g), -130);
      x[0] = std::ldexp(1.5f, -100);
      break;
    case 4:  // large: d past float16 (infinity), 1 / d tiny
      for (int j = 0; j < 32; ++j) x[j] = normal(rng.g) * 1e37f;
      break;
    case 5: {  // Q4_0: max -8 * 2^k (or 8 * 2^k), so x * id is exact, and x * id + 8.5 whole
      const float unit = std::ldexp(1.0f, int(rng.Ui(0, 40)) - 20);
      for (int j = 0; j < 32; ++j) x[j] = (float(int(rng.Ui(0, 14)) - 7) + 0.5f) * unit;
      x[rng.Ui(0, 31)] = (rng.P(0.5) ? 8 : -8) * unit;
      break;
    }
    case 6: {  // near the least normal: d normal or denormal, denormal values with q past 0
      const int e = -int(rng.Ui(118, 127));
      for (int j = 0; j < 32; ++j) x[j] = std::ldexp(normal(rng.g), e);
      x[rng.Ui(0, 31)] = std::ldexp(rng.P(0.5) ? 1.0f : -1.0f, e + 1);
      break;
    }
    default:
      break;
  }
}

struct ScatterCase {
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT_Q8_0;
  UINT rows = 1, blocks = 1, inStride = 0, outStride = 0;  // 0: packed
  UINT updStride = 0;  // UpdatesTensor's row stride in values (0: packed)
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT32;
  std::vector<UINT> batch;
  std::vector<int64_t> indices;
  UINT RowBytes() const { return blocks * BlockBytes(format); }
  UINT In() const { return inStride ? inStride : RowBytes(); }
  UINT Out() const { return outStride ? outStride : RowBytes(); }
};

struct BuiltScatter {
  TensorDesc table, indices, updates, output;
  VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

void BuildScatter(const ScatterCase& c, BuiltScatter* b) {
  const UINT dims = UINT(c.batch.size()) + 1;
  std::vector<UINT> tableSizes(dims, 1), indexSizes = c.batch, updateSizes = c.batch;
  tableSizes[dims - 2] = c.rows;
  tableSizes[dims - 1] = c.RowBytes();
  auto strides = [&](UINT row) {
    std::vector<UINT> s(dims, 0);
    s[dims - 2] = row;
    s[dims - 1] = 1;
    return s;
  };
  indexSizes.push_back(1);
  updateSizes.push_back(c.blocks * 32);
  b->table = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, tableSizes, strides(c.In()));
  b->output = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, tableSizes, strides(c.Out()));
  b->indices = TensorDesc(c.indexType, indexSizes);
  std::vector<UINT> updateStrides;  // rows of updStride values, the outer dimensions packed
  if (c.updStride) {
    updateStrides.assign(dims, 1);
    updateStrides[dims - 2] = c.updStride;
    for (UINT d = dims - 2; d-- > 0;) updateStrides[d] = updateStrides[d + 1] * updateSizes[d + 1];
  }
  b->updates = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, updateSizes, updateStrides);
  b->desc = {b->table.Desc(), b->indices.Desc(), b->updates.Desc(), b->output.Desc(), c.format};
  b->op = {VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, &b->desc};
}

// The expected output image from `initial` (the output buffer's bytes before the run): the
// table's rows copied to the output's layout, unless in place, then each update row quantized
// in order (the last one of a row stays).
Bytes ExpectedScatter(const ScatterCase& c, const Bytes& table, const std::vector<float>& updates,
                      Bytes initial, bool inPlace) {
  if (!inPlace)
    for (UINT r = 0; r < c.rows; ++r)
      std::memcpy(&initial[UINT64(r) * c.Out()], &table[UINT64(r) * c.In()], c.RowBytes());
  for (size_t n = 0; n < c.indices.size(); ++n) {
    const UINT row = ClampRow(c.indices[n], c.rows, IsSigned(c.indexType));
    for (UINT k = 0; k < c.blocks; ++k)
      QuantizeBlock(c.format, &updates[(n * c.blocks + k) * 32],
                    &initial[UINT64(row) * c.Out() + k * BlockBytes(c.format)]);
  }
  return initial;
}

// A random scatter (rank 2 to 4): format and index type from the case number, at least
// minRows table rows, padded rows on either side half the time, duplicates and out-of-range
// indices.
ScatterCase RandomScatterCase(Rng& rng, uint64_t n, UINT minRows) {
  ScatterCase c;
  c.format = n % 2 ? VKDML_QUANTIZED_FORMAT_Q4_0 : VKDML_QUANTIZED_FORMAT_Q8_0;
  c.indexType = IndexTypes()[(n / 2) % 4];
  c.rows = rng.Ui(minRows, std::max<UINT>(minRows, 30));
  c.blocks = rng.Ui(1, 4);
  if (rng.P(0.5)) c.inStride = c.RowBytes() + rng.Ui(1, 5);
  if (rng.P(0.5)) c.outStride = c.RowBytes() + rng.Ui(1, 5);
  const UINT rank = rng.Ui(1, 3);
  for (UINT d = 0; d < rank; ++d) c.batch.push_back(rng.Ui(1, d == rank - 1 ? 12 : 2));
  size_t count = 1;
  for (UINT s : c.batch) count *= s;
  c.indices = RandomIndices(rng, count, c.rows, c.indexType);
  return c;
}

// Runs c out of place through Device::Run on a random table and update blocks, and checks every
// output byte.
void RunScatterAndCheck(Rng& rng, const ScatterCase& c) {
  BuiltScatter b;
  BuildScatter(c, &b);
  INFO("table " << b.table.ToString() << ", indices " << b.indices.ToString() << ", updates "
                << b.updates.ToString() << ", format " << UINT(c.format));
  const size_t count = c.indices.size();
  Bytes table(b.table.Total());
  for (auto& v : table) v = uint8_t(rng.U(0, 255));
  std::vector<float> updates(count * c.blocks * 32);
  for (size_t k = 0; k < count * c.blocks; ++k) RandomBlock(rng, &updates[k * 32]);
  Bytes indexImage = IndexBytes(c.indexType, c.indices, b.indices.Total());
  const Bytes expected = ExpectedScatter(c, table, updates, Poisoned(b.output.Total()), false);
  // UpdatesTensor's bytes: its rows at their stride, NaN in the gaps (never read).
  std::vector<float> updateImage = updates;
  if (c.updStride) {
    updateImage.assign(b.updates.Total() / 4, std::nanf(""));
    for (size_t r = 0; r < count; ++r)
      std::copy_n(&updates[r * c.blocks * 32], c.blocks * 32, &updateImage[r * c.updStride]);
  }
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Dev().CreateOperator(b.op, &op);
  INFO(Str(r));
  REQUIRE(r.ok());
  r = Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  Bytes out = Poisoned(b.output.Total());
  r = Dev().Run(*compiled, {table.data(), indexImage.data(), updateImage.data()}, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  CHECK(DiffBytes(out, expected, nullptr) == "");
}

}  // namespace

TEST_CASE("Quantized rows: the quantizers' reference meets ggml's examples", "[quantized]") {
  // Q8_0 of 0..31: amax 31, d = 31/127, q = round(x * 127/31).
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = float(j);
  uint8_t b[34] = {};
  QuantizeBlock(VKDML_QUANTIZED_FORMAT_Q8_0, x, b);
  CHECK((b[0] | b[1] << 8) == NearestHalf(31.0f / 127));
  CHECK(int8_t(b[2 + 31]) == 127);
  CHECK(int8_t(b[2 + 1]) == 4);  // 1 * 4.0967... rounds to 4
  // Q4_0 of -16..15: max -16 (the first of magnitude 16), d = 2, q = x / 2 + 8.
  for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
  uint8_t c[18] = {};
  QuantizeBlock(VKDML_QUANTIZED_FORMAT_Q4_0, x, c);
  CHECK((c[0] | c[1] << 8) == 0x4000);  // 2.0
  CHECK((c[2] & 15) == 0);              // -16 / 2 + 8
  CHECK((c[2 + 15] >> 4) == 15);        // 15 / 2 + 8.5 = 16, min(15, ...)
}

// Random tables, rows, index types and duplicates (the last update of a row stays), clamped
// indices, padded rows on either side, out of place through Run.
TEST_CASE_METHOD(Fixture, "Quantized rows: random quantizing scatters vs reference",
                 "[quantized]") {
  for (uint64_t n = 0; n < 32; ++n) {
    Rng rng(BaseSeed() ^ (0x5CA7 + n * 0x9E3779B97F4A7C15ull));
    const ScatterCase c = RandomScatterCase(rng, n, 1);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunScatterAndCheck(rng, c);
  }
}

// Scatters of hundreds of update rows (blocks over several workgroups of the quantizer, a row's
// blocks split between two of them; glsl/quantize_rows.comp: cooperative), rows of 1 to 9
// blocks on odd bytes of the table half the time, update rows at an odd stride (values off 16
// bytes) half the time, many duplicates (unclaimed blocks beside claimed ones); from case 4
// on with 2 workgroups a dispatch (VKDML_MAX_GROUPS), each taking several groups of blocks.
TEST_CASE_METHOD(Fixture, "Quantized rows: quantizing scatters over many workgroups",
                 "[quantized]") {
  for (uint64_t n = 0; n < 8; ++n) {
    Rng rng(BaseSeed() ^ (0x5CA9 + n * 0x9E3779B97F4A7C15ull));
    ScatterCase c;
    c.format = n % 2 ? VKDML_QUANTIZED_FORMAT_Q4_0 : VKDML_QUANTIZED_FORMAT_Q8_0;
    c.indexType = IndexTypes()[(n / 2) % 4];
    c.rows = rng.Ui(40, 300);
    c.blocks = rng.Ui(1, 9);
    if (rng.P(0.5)) c.inStride = c.RowBytes() + rng.Ui(1, 5);
    if (n % 4 != 3) c.outStride = c.RowBytes() + rng.Ui(1, 3);  // blocks off words
    if (n % 4 != 2) c.updStride = c.blocks * 32 + rng.Ui(1, 3);
    c.batch = std::vector<UINT>{rng.Ui(100, 400)};
    c.indices = RandomIndices(rng, c.batch[0], c.rows, c.indexType);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    std::unique_ptr<ScopedSwitch> groups;
    if (n >= 4) groups = std::make_unique<ScopedSwitch>("VKDML_MAX_GROUPS", "2");
    BuiltScatter b;
    BuildScatter(c, &b);
    const vkdml::detail::Kernel k = Chosen(b.op).steps.back().plain;
    const vkdml::detail::Capabilities caps = CapabilitiesOf(Dev());
    const UINT64 blocks = UINT64(c.batch[0]) * c.blocks, size = caps.groupSize;
    CHECK(k.groups == std::min<UINT64>(caps.maxGroups, (blocks + size - 1) / size));
    CHECK((n < 4 || caps.maxGroups == 2));
    RunScatterAndCheck(rng, c);
  }
}

// GPU-free: the quantizer takes a workgroup per groupSize blocks, the gather one per groupSize
// pairs of loop elements (8 values), within maxGroups (the rest in their loops).
TEST_CASE("Quantized rows: the workgroups chosen", "[quantized][kernels]") {
  ScatterCase c;
  c.blocks = 5;
  c.rows = 8;
  c.batch = std::vector<UINT>{1000};
  c.indices.assign(1000, 3);
  BuiltScatter b;
  BuildScatter(c, &b);
  Case g;
  g.rows = 8;
  g.blocks = 5;
  g.batch = std::vector<UINT>{1000};
  Built gb;
  Build(g, &gb);
  vkdml::detail::OperatorImpl scatter, gather;
  REQUIRE(vkdml::detail::BuildOperator(b.op, &scatter).ok());
  REQUIRE(vkdml::detail::BuildOperator(gb.op, &gather).ok());
  for (UINT size : {128u, 256u}) {
    for (UINT maxGroups : {65535u, 7u}) {
      vkdml::detail::Capabilities caps;
      caps.groupSize = size;
      caps.maxGroups = maxGroups;
      vkdml::detail::KernelSet set;
      REQUIRE(vkdml::detail::ChooseKernels(scatter, 0, caps, &set).ok());
      const vkdml::detail::Kernel& k = set.steps.back().plain;
      CHECK(k.module == "quantize_q8_0_i32");
      CHECK(k.groups == std::min<UINT>(maxGroups, (5000 + size - 1) / size));  // 5000 blocks
      vkdml::detail::KernelSet gset;
      REQUIRE(vkdml::detail::ChooseKernels(gather, 0, caps, &gset).ok());
      const vkdml::detail::Kernel& d = gset.steps.back().plain;
      CHECK(d.module == "dequantize_q8_0_i32");
      CHECK(d.groups == std::min<UINT>(maxGroups, (20000 + size - 1) / size));  // 40000 quads
    }
  }
}

// The same through 2 to 6 windows of the table (VKDML_MAX_BINDING_RANGE: the large path, the
// copy's and the quantizer's dispatches per window, each quantizer's taking the blocks that
// start in its window and writing up to a block past its end), updates and indices windowed
// too; each dispatch's binding holds every word its blocks are written in.
TEST_CASE_METHOD(Fixture, "Quantized rows: quantizing scatters past the binding range",
                 "[quantized]") {
  const UINT64 align = CapabilitiesOf(Dev()).rangeAlign;
  for (uint64_t n = 0; n < 16; ++n) {
    Rng rng(BaseSeed() ^ (0x5CA8 + n * 0x9E3779B97F4A7C15ull));
    const ScatterCase c = RandomScatterCase(rng, n, 16);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    BuiltScatter b;
    BuildScatter(c, &b);
    const UINT blockBytes = BlockBytes(c.format);
    const UINT64 reach = (blockBytes + 2 + 3) / 4 * 4, total = b.output.Total();
    // A window of at least 128 bytes: an update block's 32 values must fit one of the updates'.
    const UINT64 window = std::max<UINT64>(128, (total / (2 + n % 5) + 15) / 16 * 16);
    const std::string range = std::to_string(align + reach + window);
    ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range.c_str());
    INFO("VKDML_MAX_BINDING_RANGE=" << range);
    const vkdml::detail::KernelSet set = Chosen(b.op);
    REQUIRE(set.large);
    std::vector<UINT64> blocks;
    for (UINT64 row = 0; row < c.rows; ++row)
      for (UINT64 block = 0; block < c.blocks; ++block)
        blocks.push_back(row * c.Out() + block * blockBytes);
    CHECK(WindowsHolding(set.steps.back().plain, total, blocks, blockBytes) ==  // the quantizer
          (total + window - 1) / window);
    RunScatterAndCheck(rng, c);
  }
}

// 64 rows quantized into the real table past the binding range (RowsPastRange), the last row
// and a duplicate among them, through windows of the table.
TEST_CASE_METHOD(Fixture,
                 "Quantized rows: a quantizing scatter into a table past "
                 "maxStorageBufferRange",
                 "[quantized][large][big]") {
  ScatterCase c;
  c.blocks = 4096 / 32;
  if (!RowsPastRange(c.RowBytes(), &c.rows)) return;
  Rng rng(BaseSeed() ^ 0xB17);
  c.batch = std::vector<UINT>{64};
  c.indices = RandomIndices(rng, 64, c.rows, c.indexType);
  c.indices[0] = c.rows - 1;
  c.indices[1] = c.indices[5];
  RunScatterAndCheck(rng, c);
}

// In place (the output bound to the table's own range) through bindings at word offsets, with
// guard bytes; DROP skips an out-of-range row and checked mode reports it: each also through
// 2 windows of the table (the large path); a block whose d is below 2^-128 stores q = 0 (dml.h).
TEST_CASE_METHOD(Fixture, "Quantized rows: a quantizing scatter in place, DROP, checked, tiny",
                 "[quantized]") {
  for (bool large : {false, true}) {  // then through 2 windows of 144 of the table's 236 bytes
    const std::string range = std::to_string(CapabilitiesOf(Dev()).rangeAlign + 20 + 144);
    std::unique_ptr<ScopedSwitch> narrow;
    if (large) narrow = std::make_unique<ScopedSwitch>("VKDML_MAX_BINDING_RANGE", range.c_str());
    INFO((large ? "VKDML_MAX_BINDING_RANGE=" + range : std::string("the device's range")));
    Rng rng(BaseSeed() ^ 0x1A9CE);
    ScatterCase c;
    c.format = VKDML_QUANTIZED_FORMAT_Q4_0;
    c.rows = 6;
    c.blocks = 2;
    c.inStride = c.outStride = 39;  // rows on odd bytes
    c.batch = std::vector<UINT>{5};
    c.indices = std::vector<int64_t>{4, -1, 9, 0, 4};  // 9: out of range; row 4 twice
    BuiltScatter b;
    BuildScatter(c, &b);
    CHECK(Chosen(b.op).large == large);
    Bytes table(b.table.Total());
    for (auto& v : table) v = uint8_t(rng.U(0, 255));
    std::vector<float> updates(5 * 64);
    for (size_t k = 0; k < 10; ++k) RandomBlock(rng, &updates[k * 32]);
    const Bytes indexImage = IndexBytes(c.indexType, c.indices, b.indices.Total());
    {  // in place, clamped: index 9 is row 5
      std::unique_ptr<Operator> op;
      std::unique_ptr<CompiledOperator> compiled;
      REQUIRE(Dev().CreateOperator(b.op, &op).ok());
      REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
      const UINT64 at = 8, guard = 64;
      Bytes before = Poisoned(at + table.size() + guard);
      std::copy(table.begin(), table.end(), before.begin() + at);
      std::unique_ptr<Buffer> buf, idx, upd;
      REQUIRE(Dev().CreateBuffer(before.size(), Buffer::Memory::DeviceLocal, &buf).ok());
      REQUIRE(buf->Write(0, before.data(), before.size()).ok());
      REQUIRE(Dev().CreateBuffer(indexImage.size(), Buffer::Memory::DeviceLocal, &idx).ok());
      REQUIRE(idx->Write(0, indexImage.data(), indexImage.size()).ok());
      REQUIRE(Dev().CreateBuffer(updates.size() * 4, Buffer::Memory::DeviceLocal, &upd).ok());
      REQUIRE(upd->Write(0, updates.data(), updates.size() * 4).ok());
      std::unique_ptr<BindingTable> bt;
      REQUIRE(Dev().CreateBindingTable(*compiled, &bt).ok());
      const DML_BUFFER_BINDING in[3] = {buf->Binding(at, table.size()), idx->Binding(),
                                        upd->Binding()};
      REQUIRE(bt->BindInputs(3, in).ok());
      REQUIRE(bt->BindOutputs(1, &in[0]).ok());
      REQUIRE(
          Dev()
              .Submit([&](VkCommandBuffer cmd) { REQUIRE(Dev().RecordDispatch(cmd, *bt).ok()); })
              .ok());
      Bytes after(before.size());
      REQUIRE(buf->Read(0, after.data(), after.size()).ok());
      Bytes want = before;
      const Bytes rows = ExpectedScatter(c, table, updates, table, true);
      std::copy(rows.begin(), rows.end(), want.begin() + at);
      CHECK(DiffBytes(after, want, nullptr) == "");
    }
    {  // DROP, checked: index 9 skipped and reported
      VKDML_OUT_OF_RANGE_OPERATOR_DESC drop{&b.op, VKDML_OUT_OF_RANGE_MODE_DROP, {}};
      const DML_OPERATOR_DESC wrapped{VKDML_OPERATOR_OUT_OF_RANGE, &drop};
      std::unique_ptr<Operator> op;
      std::unique_ptr<CompiledOperator> compiled;
      REQUIRE(Dev().CreateOperator(wrapped, &op).ok());
      REQUIRE(Dev().CompileOperator(*op, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
      Bytes out = Poisoned(b.output.Total());
      Result r =
          Dev().Run(*compiled, {table.data(), indexImage.data(), updates.data()}, {out.data()});
      CHECK(r.status == Status::IndexOutOfRange);
      ScatterCase kept = c;
      kept.indices = std::vector<int64_t>{4, -1, 0, 4};
      std::vector<float> keptUpdates(updates.begin(), updates.begin() + 128);
      keptUpdates.insert(keptUpdates.end(), updates.begin() + 192, updates.end());
      CHECK(DiffBytes(out, ExpectedScatter(kept, table, keptUpdates, Poisoned(out.size()), false),
                      nullptr) == "");
    }
  }
  {  // a block of magnitude 2^-125: d = 2^-125 / 8 = 2^-128 ... below, 1 / d overflows
    ScatterCase t;
    t.format = VKDML_QUANTIZED_FORMAT_Q8_0;
    t.batch = std::vector<UINT>{1};
    t.indices = std::vector<int64_t>{0};
    BuiltScatter tb;
    BuildScatter(t, &tb);
    std::vector<float> x(32, std::ldexp(1.0f, -125));
    x[3] = -x[3];
    Bytes tableBytes(tb.table.Total(), 0x77), out(tb.output.Total());
    const Bytes index = IndexBytes(t.indexType, t.indices, tb.indices.Total());
    std::unique_ptr<Operator> op;
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Dev().CreateOperator(tb.op, &op).ok());
    REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    REQUIRE(Dev().Run(*compiled, {tableBytes.data(), index.data(), x.data()}, {out.data()}).ok());
    const float d = std::ldexp(1.0f, -125) / 127;
    CHECK((out[0] | out[1] << 8) == NearestHalf(d));  // a float16 0
    for (int j = 0; j < 32; ++j) CHECK(out[2 + j] == 0);
  }
}

// Each rule the scatter adds to the gather's, with its message.
TEST_CASE_METHOD(Fixture, "Quantized rows: scatter validation", "[quantized][validation]") {
  struct Rule {
    const char* message;
    std::function<void(BuiltScatter&)> change;
  };
  const auto u8 = DML_TENSOR_DATA_TYPE_UINT8;
  const Rule rules[] = {
      {"SCATTER_QUANTIZED_ROWS: Format is 0, expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or "
       "VKDML_QUANTIZED_FORMAT_Q4_0 (2)",
       [](BuiltScatter& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT(0); }},
      {"SCATTER_QUANTIZED_ROWS: UpdatesTensor.DataType is FLOAT16, expected FLOAT32",
       [](BuiltScatter& b) {
         b.updates = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT16, b.updates.sizes);
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"SCATTER_QUANTIZED_ROWS: OutputTensor.Sizes[0] is 5, expected 4 (InputTensor.Sizes[0])",
       [=](BuiltScatter& b) {
         b.output = TensorDesc(u8, {5, 68});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"SCATTER_QUANTIZED_ROWS: OutputTensor.DataType is INT8, expected UINT8 "
       "(InputTensor.DataType)",
       [](BuiltScatter& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_INT8, b.output.sizes);
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"SCATTER_QUANTIZED_ROWS: UpdatesTensor.Sizes[1] is 32, expected 64 (32 values per 34-byte "
       "block of an InputTensor row)",
       [](BuiltScatter& b) {
         b.updates = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 32});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"SCATTER_QUANTIZED_ROWS: UpdatesTensor.Strides[1] is 3, expected 1 (a row's values are "
       "consecutive)",
       [](BuiltScatter& b) {
         b.updates = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 64}, {1, 3});
         b.desc.UpdatesTensor = b.updates.Desc();
       }},
      {"SCATTER_QUANTIZED_ROWS: IndicesTensor.Sizes[1] is 2, expected 1 (one row index per "
       "update row)",
       [](BuiltScatter& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {3, 2});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
  };
  for (const Rule& rule : rules) {
    ScatterCase c;
    c.rows = 4;
    c.blocks = 2;
    c.batch = std::vector<UINT>{3};
    BuiltScatter b;
    BuildScatter(c, &b);
    rule.change(b);
    std::unique_ptr<Operator> op;
    Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == rule.message);
  }
}
