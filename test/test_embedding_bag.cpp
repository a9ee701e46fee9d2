// VKDML_OPERATOR_EMBEDDING_BAG: bags of FLOAT32, FLOAT16, Q8_0 and Q4_0 rows summed, averaged
// or maxed, bit for bit against a sequential reference written here (dml.h's definition: entry
// order, each step rounded in float32), on random shapes, strides, index types, offsets (out of
// order and out of range), weights, padding rows and out-of-range modes; by hand; through
// bindings at offsets; every validation rule.
#include <cmath>
#include <set>

#include "bag_ref.h"
#include "kernels/kernels.h"
#include "test_util.h"

using namespace vt;

namespace {

// A float32 for a table or a weight: small multiples of powers of 2 (sums often exact), any
// significand at moderate exponents (sums round), zeros, a few NaNs and huge values (sums
// overflow), and with `denormals` float32 denormals.
float RandomValue(Rng& rng, bool denormals, bool specials) {
  const double p = double(rng.U(0, 999)) / 1000;
  const float sign = rng.P(0.5) ? -1.0f : 1.0f;
  if (p < 0.35) return sign * float(rng.U(0, 100)) * std::ldexp(1.0f, int(rng.U(0, 8)) - 4);
  if (p < 0.80) {
    const uint32_t bits = uint32_t(rng.U(0, 0x7FFFFF)) | uint32_t(rng.U(117, 137)) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return sign * f;
  }
  if (p < 0.88) return sign * 0.0f;
  if (denormals && p < 0.96) {
    const uint32_t bits = uint32_t(rng.U(1, 0x7FFFFF)) >> rng.U(0, 20);
    float f;
    std::memcpy(&f, &bits, 4);
    return sign * f;
  }
  if (specials && p > 0.995) return NAN;
  if (specials && p > 0.985) return sign * std::ldexp(1.5f, 126);  // two add to infinity
  return sign * float(rng.U(1, 9));
}

// The table's bytes and its values (row-major, rows x width, as float).
void RandomTableValues(Rng& rng, const BagCase& c, UINT64 total, Bytes* bytes,
                       std::vector<float>* values) {
  values->assign(size_t(c.rows) * c.width, 0);
  if (c.format) {
    *bytes = RandomTable(rng, c.format, c.rows, c.width / 32, c.RowStride(), total);
    for (UINT r = 0; r < c.rows; ++r)
      for (UINT v = 0; v < c.width; ++v)
        (*values)[size_t(r) * c.width + v] = BlockValue(
            c.format, &(*bytes)[UINT64(r) * c.RowStride() + v / 32 * BlockBytes(c.format)], v % 32);
    return;
  }
  *bytes = Bytes(total);
  for (auto& b : *bytes) b = uint8_t(rng.U(0, 255));  // the gaps keep anything
  const bool f16 = c.valueType == DML_TENSOR_DATA_TYPE_FLOAT16;
  for (UINT r = 0; r < c.rows; ++r)
    for (UINT v = 0; v < c.width; ++v) {
      const UINT64 at = UINT64(r) * c.RowStride() + v;
      float f = RandomValue(rng, c.denormals && !f16, true);
      if (f16) {
        const uint16_t h = std::isnan(f) ? 0x7E00 : NearestHalf(f);
        std::memcpy(bytes->data() + at * 2, &h, 2);
        f = HalfValue(h);
      } else {
        std::memcpy(bytes->data() + at * 4, &f, 4);
      }
      (*values)[size_t(r) * c.width + v] = f;
    }
}

Result Compile(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  VKDML_TRY(device.CreateOperator(desc, &op));
  return device.CompileOperator(*op, flags, out);
}

// Builds, fills and runs c (flags: the compile flags), and checks it.
// Runs c (its descriptors `built` from it, or built here) and checks every output byte.
void RunCase(Rng& rng, const BagCase& c, UINT flags = DML_EXECUTION_FLAG_NONE,
             const BagBuilt* built = nullptr) {
  BagBuilt own;
  if (!built) {
    Build(c, &own);
    built = &own;
  }
  const BagBuilt& b = *built;
  INFO("table " << b.table.ToString() << ", indices " << b.indices.ToString() << ", offsets "
                << b.offsets.ToString() << (c.weighted ? ", weights " : "")
                << (c.weighted ? b.weights.ToString() : "") << ", output " << b.output.ToString()
                << ", mode " << UINT(c.mode) << ", format " << UINT(c.format) << ", include last "
                << c.includeLast << ", padding " << (c.hasPadding ? int64_t(c.padding) : -1)
                << ", out of range " << UINT(c.outOfRange));
  Bytes table;
  std::vector<float> values;
  RandomTableValues(rng, c, b.table.Total(), &table, &values);
  std::vector<float> weights(c.Entries());
  Bytes weightBytes(b.weights.Total(), 0x5A);
  const bool f16 = c.outType == DML_TENSOR_DATA_TYPE_FLOAT16;
  for (UINT e = 0; e < c.Entries(); ++e) {
    float w = RandomValue(rng, c.denormals && !f16, false);
    if (f16) {
      const uint16_t h = NearestHalf(w);
      std::memcpy(weightBytes.data() + UINT64(e) * c.weightStride * 2, &h, 2);
      w = HalfValue(h);
    } else {
      std::memcpy(weightBytes.data() + UINT64(e) * c.weightStride * 4, &w, 4);
    }
    weights[e] = w;
  }
  const Bytes indexBytes = BagIndexBytes(c, b.indices, c.indices, c.indexStride);
  const Bytes offsetBytes = BagIndexBytes(c, b.offsets, c.offsets, c.offsetStride);
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(Dev(), b.op, flags, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  Bytes out = Poisoned(b.output.Total());
  std::vector<const void*> inputs = {table.data(), indexBytes.data(), offsetBytes.data()};
  if (c.weighted) inputs.push_back(weightBytes.data());
  r = Dev().Run(*compiled, inputs, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  CHECK(DiffBag(c, out, Poisoned(b.output.Total()), Reference(c, values, weights)) == "");
}

// Whether this device keeps float32 denormals in vkdml's arithmetic (as the float32 reductions:
// asked to, or computed in float64).
bool KeepsDenormals32() {
  const DeviceInfo& info = Dev().Info();
  return info.enabled.shaderDenormPreserveFloat32 || info.enabled.shaderFloat64;
}

// Random offsets for n entries and `bags` bags: usually sorted from 0, sometimes not from 0,
// out of order, negative or past n.
std::vector<int64_t> RandomOffsets(Rng& rng, UINT n, UINT bounds, DML_TENSOR_DATA_TYPE type) {
  std::vector<int64_t> o(bounds);
  for (auto& x : o) x = int64_t(rng.U(0, n));
  std::sort(o.begin(), o.end());
  if (rng.P(0.7)) o[0] = 0;
  if (rng.P(0.2)) o[rng.U(0, bounds - 1)] = int64_t(rng.U(0, n));       // out of order
  if (rng.P(0.15)) o[rng.U(0, bounds - 1)] = int64_t(n + rng.U(1, 5));  // past the end
  if (IsSigned(type) && rng.P(0.15)) o[rng.U(0, bounds - 1)] = -int64_t(rng.U(1, 3));
  return o;
}

std::vector<int64_t> RandomIndices(Rng& rng, UINT n, UINT rows, DML_TENSOR_DATA_TYPE type,
                                   double outside) {
  std::vector<int64_t> v(n);
  for (auto& x : v) {
    if (rng.P(outside))
      x = IsSigned(type) && rng.P(0.5) ? -int64_t(rows) - int64_t(rng.U(1, 4))
                                       : int64_t(rows + rng.U(0, 4));
    else if (IsSigned(type) && rng.P(0.2))
      x = -int64_t(rng.U(1, rows));
    else
      x = int64_t(rng.U(0, rows - 1));
  }
  return v;
}

// A random case (test "random bags vs reference"): its layout, output, mode and index type from
// the case number; rows in [minRows, maxRows], 1 to maxEntries entries.
BagCase RandomBagCase(Rng& rng, uint64_t n, bool denormals, UINT minRows, UINT maxRows,
                      UINT maxEntries) {
  BagCase c;
  const UINT layout = n % 4;  // f32, f16, q8_0, q4_0
  if (layout >= 2)
    c.format = layout == 2 ? VKDML_QUANTIZED_FORMAT_Q8_0 : VKDML_QUANTIZED_FORMAT_Q4_0;
  c.valueType = layout == 1 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  c.outType = c.format ? ((n / 4) % 2 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32)
                       : c.valueType;
  c.mode = VKDML_EMBEDDING_BAG_MODE((n / 8) % 3);
  c.indexType = IndexTypes()[(n / 2 + n / 24) % 4];
  c.rank = rng.Ui(2, 4);
  c.rows = rng.Ui(minRows, maxRows);
  c.width = c.format ? 32 * rng.Ui(1, 3) : rng.Ui(1, 23);
  if (rng.P(0.4)) c.rowPad = rng.Ui(1, 5);
  if (rng.P(0.4)) c.outPad = 2 * rng.Ui(1, 3);
  if (rng.P(0.3)) c.indexStride = rng.Ui(2, 3);
  if (rng.P(0.3)) c.offsetStride = rng.Ui(2, 3);
  c.includeLast = rng.P(0.4);
  c.weighted = c.mode == VKDML_EMBEDDING_BAG_MODE_SUM && rng.P(0.6);
  if (c.weighted && rng.P(0.3)) c.weightStride = rng.Ui(2, 3);
  c.hasPadding = rng.P(0.3);
  c.padding = rng.Ui(0, c.rows - 1);
  const UINT modes = rng.Ui(0, 5);  // CLAMP more often than the others
  c.outOfRange = modes < 3 ? VKDML_OUT_OF_RANGE_MODE(modes == 0   ? 1
                                                     : modes == 1 ? 2
                                                                  : 0)
                           : VKDML_OUT_OF_RANGE_MODE_CLAMP;
  c.fill = RandomValue(rng, false, false);
  c.denormals = denormals;
  const UINT entries = rng.Ui(1, maxEntries);
  c.indices = RandomIndices(rng, entries, c.rows, c.indexType, 0.1);
  c.offsets = RandomOffsets(rng, entries, rng.Ui(c.includeLast ? 2 : 1, 10), c.indexType);
  return c;
}

}  // namespace

// A table by hand: 4 rows of 3 values; bags {0, 2}, {2}, {}, {1, 1, 3} with weights, padding
// and each mode, the values small integers, so every result is exact.
TEST_CASE_METHOD(Fixture, "Embedding bags: by hand", "[bag]") {
  const float table[4][3] = {{1, 2, 3}, {-4, 5, 0.5f}, {7, -8, 9}, {10, 11, -12}};
  const int64_t indices[6] = {0, 2, 2, 1, 1, 3};
  const int64_t offsets[4] = {0, 2, 3, 3};  // bag 2 is empty
  const float weights[6] = {2, 1, -1, 0.5f, 0.5f, 1};
  struct Want {
    VKDML_EMBEDDING_BAG_MODE mode;
    bool weighted, padding;
    float out[4][3];
  };
  const Want wants[] = {
      {VKDML_EMBEDDING_BAG_MODE_SUM,
       false,
       false,
       {{8, -6, 12}, {7, -8, 9}, {0, 0, 0}, {2, 21, -11}}},
      {VKDML_EMBEDDING_BAG_MODE_SUM,
       true,
       false,
       {{9, -4, 15}, {-7, 8, -9}, {0, 0, 0}, {6, 16, -11.5f}}},
      {VKDML_EMBEDDING_BAG_MODE_MEAN,
       false,
       false,
       {{4, -3, 6}, {7, -8, 9}, {0, 0, 0}, {2 / 3.0f, 7, -11 / 3.0f}}},
      {VKDML_EMBEDDING_BAG_MODE_MAX,
       false,
       false,
       {{7, 2, 9}, {7, -8, 9}, {0, 0, 0}, {10, 11, 0.5f}}},
      // Row 1 the padding: skipped, not counted.
      {VKDML_EMBEDDING_BAG_MODE_MEAN,
       false,
       true,
       {{4, -3, 6}, {7, -8, 9}, {0, 0, 0}, {10, 11, -12}}},
  };
  for (const Want& w : wants) {
    BagCase c;
    c.mode = w.mode;
    c.weighted = w.weighted;
    c.hasPadding = w.padding;
    c.padding = 1;
    c.rows = 4;
    c.width = 3;
    c.indexType = DML_TENSOR_DATA_TYPE_INT64;
    c.indices.assign(indices, indices + 6);
    c.offsets.assign(offsets, offsets + 4);
    BagBuilt b;
    Build(c, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    float out[4][3];
    std::vector<const void*> inputs = {table, indices, offsets};
    if (c.weighted) inputs.push_back(weights);
    REQUIRE(Dev().Run(*compiled, inputs, {out}).ok());
    for (UINT bag = 0; bag < 4; ++bag)
      for (UINT v = 0; v < 3; ++v) {
        INFO("mode " << UINT(w.mode) << (w.weighted ? ", weighted" : "")
                     << (w.padding ? ", padding" : "") << ", bag " << bag << ", value " << v);
        CHECK(out[bag][v] == w.out[bag][v]);
      }
  }
}

// Random bags over every table layout, output type, mode and option, bit for bit.
TEST_CASE_METHOD(Fixture, "Embedding bags: random bags vs reference", "[bag]") {
  const bool denormals = KeepsDenormals32();
  if (!denormals) WARN(Dev().Info().name << " may flush float32 denormals: none in this sweep");
  for (uint64_t n = 0; n < 40; ++n) {
    Rng rng(BaseSeed() ^ (0xBA6 + n * 0x9E3779B97F4A7C15ull));  // a case replays alone
    const BagCase c = RandomBagCase(rng, n, denormals, 1, 30, 40);
    if (!SweepRuns(n)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunCase(rng, c, n % 3 == 1 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : DML_EXECUTION_FLAG_NONE);
  }
}

// A table past the binding range, which the test knob VKDML_MAX_BINDING_RANGE narrows to 2 to 6
// windows of it (its other tensors within one): the large path, the entries in chunks of a few,
// each chunk's rows fetched from the windows into the scratch (a row starting in a window, read
// up to its last word past it) and then folded, bags crossing chunks. Random cases as above, bit
// for bit, and each fetch's binding of the table holds the words of every row starting in its
// window (GPU-assisted validation may not flag a read past it: test_quantized.cpp).
TEST_CASE_METHOD(Fixture, "Embedding bags: a table past the binding range", "[bag][large]") {
  const bool denormals = KeepsDenormals32();
  const UINT64 align = CapabilitiesOf(Dev()).rangeAlign;
  int chunked = 0;  // cases whose entries take 3 chunks or more
  for (uint64_t n = 0; n < 24; ++n) {
    Rng rng(BaseSeed() ^ (0x1A6BA6 + n * 0x9E3779B97F4A7C15ull));
    const BagCase c = RandomBagCase(rng, n, denormals, 120, 200, 160);
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    BagBuilt b;
    Build(c, &b);
    const UINT64 rowBytes = UINT64(c.RowElements()) * ref::ElementSize(b.table.Type());
    const UINT64 reach = (rowBytes + 2) / 4 * 4, windows = 2 + n % 5;
    UINT64 window = (b.table.Total() / windows + 15) / 16 * 16;
    for (const TensorDesc* t : {&b.indices, &b.offsets, &b.weights, &b.output})
      window = std::max(window, (t->Total() + reach + 15) / 16 * 16);  // they fit one
    const std::string range = std::to_string(align + reach + window);
    ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", range.c_str());
    INFO("VKDML_MAX_BINDING_RANGE=" << range);
    const vkdml::detail::KernelSet set = Chosen(b.op);
    REQUIRE(set.large);
    std::vector<UINT64> rows;
    for (UINT64 row = 0; row < c.rows; ++row)
      rows.push_back(row * c.RowStride() * ref::ElementSize(b.table.Type()));
    size_t fetches = 0, folds = 0;
    for (const auto& step : set.steps) {
      const vkdml::detail::Kernel& k = step.plain;
      CHECK(k.whole == k.large.empty());
      if (!k.whole)
        CHECK(WindowsHolding(k, b.table.Total(), rows, rowBytes) ==
              (b.table.Total() + window - 1) / window);
      fetches += !k.whole;
      folds += k.module.find("_fetched") != std::string::npos;
    }
    CHECK(fetches >= 1);
    CHECK(folds >= 1);
    chunked += folds >= 3;
    if (!SweepRuns(n)) continue;  // every case's kernels are chosen, for the count below
    INFO(fetches << " fetch steps, " << folds << " folds");
    RunCase(rng, c, n % 3 == 1 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : DML_EXECUTION_FLAG_NONE, &b);
  }
  CHECK(chunked >= 6);  // 15 of 24 at the default seed
}

// A real table past the device's binding range: the 128-value float32 rows, past
// lavapipe's 128 MiB, 64 bags of 20 entries (the last row among them) summed and averaged.
TEST_CASE_METHOD(Fixture, "Embedding bags: a table past maxStorageBufferRange",
                 "[bag][large][big]") {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  const UINT64 rows = std::max<UINT64>(32000, range / 512 + 1);
  if (range > (UINT64(1) << 30) || rows * 512 > MaxAllocationSize()) {
    CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
    WARN("skipped: a table past maxStorageBufferRange (" << range << " bytes) takes "
                                                         << rows * 512);
    return;
  }
  for (auto mode : {VKDML_EMBEDDING_BAG_MODE_SUM, VKDML_EMBEDDING_BAG_MODE_MEAN}) {
    Rng rng(BaseSeed() ^ (0xB16BA6 + UINT(mode)));
    BagCase c;
    c.mode = mode;
    c.rows = UINT(rows);
    c.width = 128;
    c.indices = RandomIndices(rng, 64 * 20, c.rows, c.indexType, 0);
    c.indices[37] = c.rows - 1;
    for (UINT bag = 0; bag < 64; ++bag) c.offsets.push_back(bag * 20);
    INFO("mode " << UINT(mode));
    BagBuilt b;
    Build(c, &b);
    CHECK(Chosen(b.op).large);
    RunCase(rng, c);
  }
}

// Checked mode (and ERROR) reports the first entry out of range, in IndicesTensor's order, and
// still gives the clamped result; entries in no bag are not read, so not reported.
TEST_CASE_METHOD(Fixture, "Embedding bags: checked mode and ERROR", "[bag]") {
  Rng rng(BaseSeed() ^ 0xC4EC);
  BagCase c;
  c.rows = 5;
  c.width = 6;
  c.indexType = DML_TENSOR_DATA_TYPE_INT32;
  c.indices = {0, 1, 9, 2, -7, 3, 44};
  c.offsets = {0, 3, 5};  // entry 6 (44) is in the last bag; none is outside a bag here
  for (const bool error : {false, true}) {
    BagCase k = c;
    if (error) k.outOfRange = VKDML_OUT_OF_RANGE_MODE_ERROR;
    BagBuilt b;
    Build(k, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(Dev(), b.op, error ? 0 : VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
    Bytes table(b.table.Total(), 0);
    std::vector<float> out(3 * 6);
    const Result r = Dev().Run(*compiled,
                               {table.data(), BagIndexBytes(k, b.indices, k.indices, 1).data(),
                                BagIndexBytes(k, b.offsets, k.offsets, 1).data()},
                               {out.data()});
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK(r.message == "EMBEDDING_BAG: IndicesTensor[0,2] is 9, outside the valid range [-5, 4]");
  }
  (void)rng;
}

// Through bindings at word offsets of one buffer, with guard bytes that must not change; an
// offset off a word is refused, naming the reason.
TEST_CASE_METHOD(Fixture, "Embedding bags: bindings at offsets", "[bag]") {
  Rng rng(BaseSeed() ^ 0xB1D5);
  BagCase c;
  c.valueType = c.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  c.rows = 9;
  c.width = 7;  // odd: each row's last float16 shares a word with what is not the tensor's
  c.rowPad = 1;
  c.outPad = 2;
  c.weighted = true;
  c.indexType = DML_TENSOR_DATA_TYPE_UINT64;
  c.indices = RandomIndices(rng, 12, c.rows, c.indexType, 0.1);
  c.offsets = {0, 4, 4, 9};
  BagBuilt b;
  Build(c, &b);
  Bytes table;
  std::vector<float> values;
  RandomTableValues(rng, c, b.table.Total(), &table, &values);
  std::vector<float> weights(12);
  Bytes weightBytes(b.weights.Total(), 0);
  for (UINT e = 0; e < 12; ++e) {
    const uint16_t h = NearestHalf(float(rng.U(0, 8)) / 4 - 1);
    std::memcpy(weightBytes.data() + 2 * e, &h, 2);
    weights[e] = HalfValue(h);
  }
  const Bytes images[4] = {table, BagIndexBytes(c, b.indices, c.indices, 1),
                           BagIndexBytes(c, b.offsets, c.offsets, 1), weightBytes};
  std::unique_ptr<CompiledOperator> compiled;
  REQUIRE(Compile(Dev(), b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  // Inputs from byte 12, each after the last and 20 guard bytes, on its element size (8: the
  // indices); then the output.
  std::vector<DML_BUFFER_BINDING> in(4);
  UINT64 at = 12;
  for (UINT i = 0; i < 4; ++i) {
    const UINT64 align = i == 1 || i == 2 ? 8 : 4;
    at = (at + align - 1) / align * align;
    in[i] = {VK_NULL_HANDLE, at, images[i].size()};
    at += images[i].size() + 20;
  }
  at = (at + 3) / 4 * 4;
  DML_BUFFER_BINDING out{VK_NULL_HANDLE, at, b.output.Total()};
  Bytes image = Poisoned(at + b.output.Total() + 16);
  for (UINT i = 0; i < 4; ++i)
    std::copy(images[i].begin(), images[i].end(), image.begin() + in[i].Offset);
  std::unique_ptr<Buffer> buffer;
  REQUIRE(Dev().CreateBuffer(image.size(), Buffer::Memory::DeviceLocal, &buffer).ok());
  REQUIRE(buffer->Write(0, image.data(), image.size()).ok());
  for (auto& binding : in) binding.Buffer = buffer->Handle();
  out.Buffer = buffer->Handle();
  std::unique_ptr<BindingTable> bt;
  REQUIRE(Dev().CreateBindingTable(*compiled, &bt).ok());
  INFO(Str(bt->BindInputs(4, in.data())));
  REQUIRE(bt->BindInputs(4, in.data()).ok());
  REQUIRE(bt->BindOutputs(1, &out).ok());
  REQUIRE(Dev()
              .Submit([&](VkCommandBuffer cmd) { REQUIRE(Dev().RecordDispatch(cmd, *bt).ok()); })
              .ok());
  Bytes result(image.size());
  REQUIRE(buffer->Read(0, result.data(), result.size()).ok());
  for (UINT64 i = 0; i < image.size(); ++i)
    if (i < out.Offset || i >= out.Offset + b.output.Total())
      REQUIRE(result[i] == image[i]);  // inputs and guards untouched
  const Bytes got(result.begin() + out.Offset, result.begin() + out.Offset + b.output.Total());
  const Bytes before(image.begin() + out.Offset, image.begin() + out.Offset + b.output.Total());
  CHECK(DiffBag(c, got, before, Reference(c, values, weights)) == "");

  in[2].Offset += 2;  // OffsetsTensor's elements are 8 bytes: its own rule speaks first
  CHECK(bt->BindInputs(4, in.data()).message ==
        "inputs[2].Offset is " + std::to_string(in[2].Offset) +
            ", expected a multiple of 8 (the UINT64 element size of OffsetsTensor)");
  in[2].Offset -= 2;
  in[3].Offset += 2;
  CHECK(bt->BindInputs(4, in.data()).message ==
        "inputs[3].Offset is " + std::to_string(in[3].Offset) +
            ", expected a multiple of 4: EMBEDDING_BAG reads and writes its tensors in 4-byte "
            "words (PerSampleWeightsTensor)");
}

// Bags longer than one dispatch may fold where loops are bounded (lavapipe:
// lib/kernels/kernel_bag.cpp folds them a chunk at a time; in one dispatch, lavapipe stops this bag
// of 276997 entries after 4 x 65535 of them): every entry counts, in order, in each mode. And
// 280000 entries in bags of 20, where the dispatches after the first have no workgroups (none
// reaches their entries).
TEST_CASE_METHOD(Fixture, "Embedding bags: bags of hundreds of thousands of entries", "[bag]") {
  for (auto mode : {VKDML_EMBEDDING_BAG_MODE_SUM, VKDML_EMBEDDING_BAG_MODE_MEAN,
                    VKDML_EMBEDDING_BAG_MODE_MAX}) {
    Rng rng(BaseSeed() ^ (0x1096 + UINT(mode)));
    BagCase c;
    c.mode = mode;
    c.weighted = mode == VKDML_EMBEDDING_BAG_MODE_SUM;
    c.rows = 50;
    c.width = 5;
    c.hasPadding = true;
    c.padding = 7;
    c.indices = RandomIndices(rng, 280000, c.rows, c.indexType, 0.01);
    c.offsets = {0, 3, 3, 277000, 279999};  // bags of 3, 0, 276997, 2999 and 1 entries
    INFO("mode " << UINT(mode));
    RunCase(rng, c);
    c.offsets.clear();
    for (UINT e = 0; e < 280000; e += 20) c.offsets.push_back(e);
    INFO("bags of 20");
    RunCase(rng, c);
  }
}

// The same through the large path: a table of 3-value rows past a binding range of 320 KiB, its
// chunks of 10,240 entries (half the range in 16-byte row slots) past what a dispatch folds of a
// bag where loops are bounded (8192 on lavapipe), so a long bag takes indirect dispatches within
// each chunk as well as the chunks.
TEST_CASE_METHOD(Fixture, "Embedding bags: long bags past the binding range", "[bag][large]") {
  const UINT64 range = CapabilitiesOf(Dev()).rangeAlign + 320 * 1024;
  const std::string text = std::to_string(range);
  ScopedSwitch narrow("VKDML_MAX_BINDING_RANGE", text.c_str());
  for (auto mode : {VKDML_EMBEDDING_BAG_MODE_SUM, VKDML_EMBEDDING_BAG_MODE_MEAN,
                    VKDML_EMBEDDING_BAG_MODE_MAX}) {
    Rng rng(BaseSeed() ^ (0x10B6 + UINT(mode)));
    BagCase c;
    c.mode = mode;
    c.weighted = mode == VKDML_EMBEDDING_BAG_MODE_SUM;
    c.rows = 30000;  // 360,000 bytes
    c.width = 3;
    c.hasPadding = true;
    c.padding = 7;
    c.indices = RandomIndices(rng, 40000, c.rows, c.indexType, 0.01);
    c.offsets = {0, 3, 3, 9000, 39999};  // bags of 3, 0, 8997, 30999 and 1 entries
    INFO("mode " << UINT(mode));
    BagBuilt b;
    Build(c, &b);
    const vkdml::detail::KernelSet set = Chosen(b.op);
    REQUIRE(set.large);
    UINT indirect = 0;
    for (const auto& step : set.steps) indirect += step.plain.indirect != 0;
    // 4 chunks, each fold's first dispatch taking its workgroups from the chunk's span; where
    // loops are bounded, each chunk's second part too.
    CHECK(indirect == (CapabilitiesOf(Dev()).maxLoop == UINT64(-1) ? 4 : 8));
    RunCase(rng, c, DML_EXECUTION_FLAG_NONE, &b);
    c.offsets.clear();
    for (UINT e = 0; e < 40000; e += 20) c.offsets.push_back(e);
    INFO("bags of 20");
    RunCase(rng, c);
  }
}

// Kernel choice, without a GPU: the bounds, the weights (when given) and the bags, each table
// layout's module with the float arithmetic the device needs; every binding on a word; the bags
// in chunks where loops are bounded; the large path (a table past the binding range) and what it
// refuses.
TEST_CASE("Embedding bags: kernel choice", "[kernels][bag]") {
  using vkdml::detail::Capabilities;
  using vkdml::detail::KernelSet;
  using vkdml::detail::Specialization;
  auto choose = [](const BagCase& c, const Capabilities& caps, KernelSet* set, UINT flags = 0) {
    BagBuilt b;
    Build(c, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    return vkdml::detail::ChooseKernels(op, flags, caps, set);
  };
  BagCase c;
  c.rows = 10;
  c.width = 6;  // 2 groups of 4 values a bag
  c.indices.assign(30, 1);
  c.offsets = {0, 5, 9, 20, 29};
  c.weighted = true;
  Capabilities gpu;
  gpu.maxGroups = 65535;
  struct Want {
    bool denormPreserve32, float64;
    const char* suffix;
  };
  for (const Want& w : {Want{false, false, ""}, Want{false, true, "_w"}, Want{true, true, "_dp"}}) {
    gpu.denormPreserve32 = w.denormPreserve32;
    gpu.float64 = w.float64;
    KernelSet set;
    REQUIRE(choose(c, gpu, &set).ok());
    REQUIRE(set.steps.size() == 3);
    CHECK(set.steps[0].plain.module == "bag_bounds_i32");
    CHECK(set.steps[1].plain.module == "bag_weights");
    CHECK(set.steps[2].plain.module == std::string("embedding_bag_f32_i32") + w.suffix);
    CHECK(set.plans[set.steps[2].plain.slot].count == 5 * 2);
    // The options are the plan's, not the pipeline's (interface.h: PackedPlan::params).
    const auto& options = set.plans[set.steps[2].plain.slot].params;
    CHECK((options[0] == VKDML_BAG_WEIGHTED && options[1] == VKDML_NO_PADDING && options[2] == 6));
    CHECK(set.steps[2].plain.end == 0xFFFFFFFFu);  // every entry in one dispatch
    CHECK(set.wordBindings);
    CHECK(set.boundsWords == 6);
    CHECK(set.weightWords == 30);
    CHECK(set.partialWords == 0);
    // Every run folds in entry order already: the deterministic mode takes the same kernels.
    KernelSet deterministic;
    REQUIRE(choose(c, gpu, &deterministic, VKDML_EXECUTION_FLAG_DETERMINISTIC).ok());
    REQUIRE(deterministic.steps.size() == set.steps.size());
    for (size_t i = 0; i < set.steps.size(); ++i) {
      CHECK(deterministic.steps[i].plain.module == set.steps[i].plain.module);
      CHECK(deterministic.steps[i].plain.spec == set.steps[i].plain.spec);
    }
  }
  // Another width, padding row and options: the same pipelines (their specialization), so a
  // model's bags of any shape share them.
  {
    BagCase other = c;
    other.width = 9;
    other.hasPadding = true;
    other.padding = 2;
    other.includeLast = true;
    other.outOfRange = VKDML_OUT_OF_RANGE_MODE_DROP;
    KernelSet a, b;
    REQUIRE(choose(c, gpu, &a).ok());
    REQUIRE(choose(other, gpu, &b).ok());
    for (size_t i = 0; i < a.steps.size(); ++i) {
      CHECK(a.steps[i].plain.module == b.steps[i].plain.module);
      const bool drop = b.steps[i].plain.spec[VKDML_SPEC_DROP] == 1;  // DROP's own, as any op's
      Specialization expected = a.steps[i].plain.spec;
      expected[VKDML_SPEC_DROP] = drop ? 1 : 0;
      CHECK(b.steps[i].plain.spec == expected);
    }
    const auto& options = b.plans[b.steps[2].plain.slot].params;
    CHECK((options[0] == (VKDML_BAG_WEIGHTED | VKDML_BAG_LAST_OFFSET) && options[1] == 2 &&
           options[2] == 9));
  }
  // MAX only compares, and FLOAT16 tables' sums are never denormal: no float arithmetic module.
  gpu.float64 = true;
  gpu.denormPreserve32 = false;
  BagCase max = c;
  max.weighted = false;
  max.mode = VKDML_EMBEDDING_BAG_MODE_MAX;
  max.indexType = DML_TENSOR_DATA_TYPE_INT64;
  BagCase half = c;
  half.valueType = half.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  BagCase q4 = c;
  q4.format = VKDML_QUANTIZED_FORMAT_Q4_0;
  q4.width = 64;
  q4.outType = DML_TENSOR_DATA_TYPE_FLOAT16;
  for (const auto& [k, module] :
       {std::pair{max, "embedding_bag_f32_i64"}, std::pair{half, "embedding_bag_f16_i32"},
        std::pair{q4, "embedding_bag_q4_0_i32_w"}}) {
    KernelSet set;
    REQUIRE(choose(k, gpu, &set).ok());
    CHECK(set.steps.back().plain.module == module);
    CHECK(set.steps.back().plain.spec[VKDML_SPEC_OUTPUT_SIZE] == (k.outType == c.outType ? 4 : 2));
  }
  // Bounded loops (lavapipe's 16384 iterations an invocation): a bag of every entry folds in
  // dispatches of at most 8192 of its entries, each carrying 5 words per group of 4 values. The
  // first records the longest bag; bag_dispatches then gives each later one its workgroups (all,
  // or none where no bag reaches its part), which it takes from the scratch (indirect).
  Capabilities cpu = gpu;
  cpu.maxLoop = 16384;
  BagCase longer = c;
  longer.indices.assign(20000, 3);
  longer.offsets = {0, 10};
  KernelSet set;
  REQUIRE(choose(longer, cpu, &set).ok());
  REQUIRE(set.steps.size() == 2 + 1 + 1 + 2);
  const UINT folds[] = {2, 4, 5};
  for (UINT d = 0; d < 3; ++d) {
    const auto& fold = set.steps[folds[d]].plain;
    CHECK(fold.module == "embedding_bag_f32_i32_w");
    CHECK((fold.begin == 0 && fold.end == 0xFFFFFFFFu));          // every entry
    CHECK((fold.from == d * 8192 && fold.to == (d + 1) * 8192));  // of each bag's
    CHECK(fold.indirect == (d ? d + 1 : 0));  // part d from the scratch's command d
  }
  const auto& dispatches = set.steps[3].plain;
  CHECK(dispatches.module == "bag_dispatches");
  CHECK(dispatches.indirect == 0);
  const auto& g = set.plans[dispatches.slot].params;  // later dispatches, entries, workgroups
  CHECK((g[0] == 2 && g[1] == 8192 && g[2] == set.steps[2].plain.groups));
  CHECK(set.dispatchWords == 1 + 3 * 3);
  CHECK(set.scratchAt.dispatches + set.dispatchWords <= set.scratchWords);
  CHECK(set.partialWords == 2 * 2 * VKDML_BAG_PARTIAL_WORDS);
  CHECK(set.scratchAt.partials + set.partialWords <= set.scratchWords);
  // A scratch past the binding range is refused, saying what it holds.
  Capabilities tiny = cpu;
  tiny.scratchRange = 1000;
  const Result refused = choose(longer, tiny, &set);
  CHECK(refused.status == Status::Unsupported);
  CHECK(refused.message ==
        "EMBEDDING_BAG: it keeps the bounds of 2 bags, 20000 weights, 20 words of partial folds, "
        "10 words of dispatches, which needs 80148 bytes of scratch, more than this device's "
        "maxStorageBufferRange 1000");
  // A table past the binding range takes the large path; MaxTensorBytes (what
  // CheckFeatureSupport's VKDML_FEATURE_TENSOR_SIZE answers) bounds the other tensors: a table of
  // 64 rows of 6 values fits one descriptor, 65 do not.
  Capabilities small = gpu;
  small.maxRange = small.rangeAlign + 64 * 6 * 4;
  CHECK(vkdml::detail::MaxTensorBytes(VKDML_OPERATOR_EMBEDDING_BAG, small) == 64 * 6 * 4);
  BagCase wide = c;
  wide.rows = 64;
  REQUIRE(choose(wide, small, &set).ok());
  CHECK(!set.large);
  wide.rows = 65;
  REQUIRE(choose(wide, small, &set).ok());
  CHECK(set.large);
  // The bounds (noting whether they are in order) and the weights as off it; then per chunk of
  // entries a fetch of their rows (7 words: 24 bytes and what a row starting on a word's byte 3
  // would need) per window of the table, each reading up to a row's 24 bytes past it; the span of
  // bags with entries in the chunk (bag_spans: their groups of 4 values and the fold's
  // workgroups); and the fold of those bags, carried from chunk to chunk.
  // A chunk's rows take at most half the binding range: 192 bytes of 28-byte slots, 6 entries.
  small.maxRange = 384;
  REQUIRE(choose(wide, small, &set).ok());
  REQUIRE(set.large);
  const UINT64 slot = 7, chunk = small.maxRange / 2 / (slot * 4);
  CHECK(chunk == 6);
  CHECK(set.rowWords == chunk * slot);
  CHECK(set.partialWords == 5 * 2 * VKDML_BAG_PARTIAL_WORDS);
  CHECK(set.scratchAt.rows + set.rowWords <= set.scratchWords);
  REQUIRE(set.steps.size() == 2 + 3 * 5);  // 30 entries, 5 chunks
  CHECK((set.steps[0].plain.whole && set.steps[1].plain.whole));
  CHECK(set.plans[set.steps[0].plain.slot].params[3] == 1);  // the bounds' order
  CHECK(set.spanWords == VKDML_BAG_SPAN_WORDS);
  CHECK(set.dispatchWords == 4);  // the longest bag, the fold's command
  CHECK(set.scratchAt.spans + set.spanWords <= set.scratchWords);
  CHECK(set.scratchAt.dispatches + set.dispatchWords <= set.scratchWords);
  const UINT64 reach = 24;  // from a row's first byte, before a window's end, to its last word
  const UINT windowBytes = UINT((small.maxRange - small.rangeAlign - reach) / 16 * 16);
  for (UINT n = 0; n < 5; ++n) {
    const auto& fetch = set.steps[2 + 3 * n].plain;
    const auto& spans = set.steps[3 + 3 * n].plain;
    const auto& fold = set.steps[4 + 3 * n].plain;
    INFO("chunk " << n);
    CHECK(fetch.module == "bag_fetch_i32_large");
    CHECK(!fetch.whole);
    CHECK(fetch.spec[VKDML_SPEC_CHECKED] == 0);
    CHECK(fetch.indexedReach == reach);
    CHECK((fetch.begin == n * chunk && fetch.end == std::min<UINT64>((n + 1) * chunk, 30)));
    const UINT windows = (65 * 24 + windowBytes - 1) / windowBytes;
    CHECK(windows >= 4);
    REQUIRE(fetch.large.size() == windows);  // 65 x 24 bytes through windows of windowBytes
    for (UINT w = 0; w < windows; ++w) {
      CHECK(fetch.large[w].indexed.begin == w * windowBytes);
      CHECK(fetch.large[w].indexed.end == std::min<UINT>((w + 1) * windowBytes, 65 * 24));
      CHECK(fetch.large[w].count == (fetch.end - fetch.begin) * 2);  // 2 groups of 4 words
    }
    CHECK(fold.module == "embedding_bag_f32_i32_w_fetched");
    CHECK(fold.whole);
    CHECK(fold.large.empty());
    CHECK(fold.begin == fetch.begin);
    CHECK(fold.end == (n < 4 ? fetch.end : 0xFFFFFFFFu));  // the last: bags starting at the end
    CHECK(fold.indirect == 1);
    CHECK(spans.module == "bag_spans");
    CHECK((spans.whole && spans.groups == 1 && !spans.indirect));
    CHECK((spans.begin == fold.begin && spans.end == fold.end));
    const auto& span = set.plans[spans.slot].params;  // bags, groups of 4 values a bag, workgroups
    CHECK((span[0] == 5 && span[1] == 2 && span[2] == fold.groups));
  }
  CHECK(set.plans[set.steps[4].plain.slot].params[3] == slot);
  CHECK(set.plans[set.steps[2].plain.slot].params[0] == 24);  // a row's bytes
  CHECK(set.plans[set.steps[2].plain.slot].params[1] == slot);
  // Bounded loops bound each chunk's folds (chunks of 77 entries, as 4 KiB windows take them, in
  // parts of 64 entries of a bag), the later parts as many workgroups as the first (params.w).
  Capabilities bounded = gpu;
  bounded.maxRange = bounded.rangeAlign + 4096;
  BagCase tall = c;
  tall.rows = 400;
  tall.indices.assign(200, 1);
  tall.offsets = {0, 100};
  for (const UINT64 maxLoop : {UINT64(128), UINT64(-1)}) {
    INFO("maxLoop " << maxLoop);
    bounded.maxLoop = maxLoop;
    REQUIRE(choose(tall, bounded, &set).ok());
    REQUIRE(set.large);
    std::vector<std::array<UINT, 4>> fetched;  // begin, from, to, indirect
    std::string order;
    for (const auto& step : set.steps) {
      const vkdml::detail::Kernel& k = step.plain;
      if (k.module.find("_fetched") != std::string::npos)
        fetched.push_back({k.begin, k.from, k.to, k.indirect});
      order += k.module == "bag_fetch_i32_large" ? "F"
               : k.module == "bag_dispatches"    ? "D"
               : k.module == "bag_spans"         ? "S"
               : k.whole && !k.indirect          ? "B"
                                                 : "b";
      if (k.module == "bag_dispatches") CHECK(set.plans[k.slot].params[3] == 1);
      if (k.module != "bag_fetch_i32_large") CHECK(k.whole);  // dispatched as off the large path
    }
    using Folds = std::vector<std::array<UINT, 4>>;
    constexpr UINT all = 0xFFFFFFFFu;
    if (maxLoop == 128) {
      CHECK(
          fetched ==
          Folds{
              {0, 0, 64, 1}, {0, 64, 128, 2}, {77, 0, 64, 1}, {77, 64, 128, 2}, {154, 0, all, 1}});
      CHECK(order == "BBFSbDbFSbDbFSb");
      CHECK(set.dispatchWords == 1 + 3 * 2);
    } else {
      CHECK(fetched == Folds{{0, 0, all, 1}, {77, 0, all, 1}, {154, 0, all, 1}});
      CHECK(order == "BBFSbFSbFSb");
      CHECK(set.dispatchWords == 4);
    }
  }
  // What the large path refuses, naming it: another tensor past the range; a row that leaves no
  // window; more fetches than its bound (64 KiB rows, chunks of 7 of 200000 entries, 3 windows).
  BagCase many = wide;
  many.offsets.assign(20, 0);
  Result r = choose(many, small, &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "EMBEDDING_BAG: OutputTensor takes 480 bytes, past this device's "
        "maxStorageBufferRange (" +
            std::to_string(small.maxRange) + " bytes) less its offset alignment (" +
            std::to_string(small.rangeAlign) + "): only InputTensor, the table, may pass it");
  small.maxRange = small.rangeAlign + 4010;  // room for the output's 4000 bytes, not for a row's
  wide.width = 1000;
  wide.indices = {0};
  wide.offsets = {0};
  wide.weighted = false;
  r = choose(wide, small, &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "EMBEDDING_BAG: a row of InputTensor takes 4000 bytes, which leaves no window "
        "of it in this device's binding range (" +
            std::to_string(small.maxRange) + " bytes)");
  small.maxRange = 1 << 20;
  BagCase huge = c;
  huge.weighted = false;
  huge.rows = 40;
  huge.width = 16384;
  huge.indices.assign(200000, 0);
  huge.offsets = {0};
  r = choose(huge, small, &set);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "EMBEDDING_BAG: its 200000 entries would take 85716 fetches of 65536-byte "
        "rows through windows of this device's binding range (1048576 bytes); at "
        "most 65536");
}

// Every validation rule, one case each, with its message (test/SEMANTICS.md, rule 39).
TEST_CASE_METHOD(Fixture, "Embedding bags: validation", "[bag][validation]") {
  struct Rule {
    const char* message;
    std::function<void(BagBuilt&)> change;  // after Build, before CreateOperator
  };
  const auto f32 = DML_TENSOR_DATA_TYPE_FLOAT32, f16 = DML_TENSOR_DATA_TYPE_FLOAT16;
  const auto i32 = DML_TENSOR_DATA_TYPE_INT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  // The base: a FLOAT32 table {4, 3}, 5 INT32 entries, 2 bags.
  const Rule rules[] = {
      {"Mode is 3, expected VKDML_EMBEDDING_BAG_MODE_SUM (0), _MEAN (1) or _MAX (2)",
       [](BagBuilt& b) { b.desc.Mode = VKDML_EMBEDDING_BAG_MODE(3); }},
      {"Format is 3, expected VKDML_QUANTIZED_FORMAT_Q8_0 (1) or VKDML_QUANTIZED_FORMAT_Q4_0 (2)",
       [](BagBuilt& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT(3); }},
      {"IncludeLastOffset is 2, expected 0 or 1",
       [](BagBuilt& b) { b.desc.IncludeLastOffset = 2; }},
      {"HasPaddingIndex is -1, expected 0 or 1", [](BagBuilt& b) { b.desc.HasPaddingIndex = -1; }},
      {"InputTensor.DataType is INT32, expected FLOAT32 or FLOAT16 (or UINT8 blocks with a Format)",
       [=](BagBuilt& b) {
         b.table = TensorDesc(i32, {4, 3});
         b.desc.InputTensor = b.table.Desc();
       }},
      {"InputTensor.DimensionCount is 1, expected 2 to 8 (its last two dimensions are the "
       "table's rows and values per row)",
       [=](BagBuilt& b) {
         b.table = TensorDesc(f32, {12});
         b.indices = TensorDesc(i32, {5});
         b.offsets = TensorDesc(i32, {2});
         b.output = TensorDesc(f32, {6});
         b.desc.InputTensor = b.table.Desc();
         b.desc.IndicesTensor = b.indices.Desc();
         b.desc.OffsetsTensor = b.offsets.Desc();
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"InputTensor.Sizes[0] is 2, expected 1 (leading dimension)",
       [=](BagBuilt& b) {
         b.table = TensorDesc(f32, {2, 4, 3});
         b.indices = TensorDesc(i32, {1, 1, 5});
         b.offsets = TensorDesc(i32, {1, 1, 2});
         b.output = TensorDesc(f32, {1, 2, 3});
         b.desc.InputTensor = b.table.Desc();
         b.desc.IndicesTensor = b.indices.Desc();
         b.desc.OffsetsTensor = b.offsets.Desc();
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"InputTensor.Strides[1] is 2, expected 1 (a row's values are consecutive)",
       [=](BagBuilt& b) {
         b.table = TensorDesc(f32, {4, 3}, {6, 2});
         b.desc.InputTensor = b.table.Desc();
       }},
      {"InputTensor.DataType is FLOAT32, expected UINT8 (the table's Q8_0 blocks)",
       [](BagBuilt& b) { b.desc.Format = VKDML_QUANTIZED_FORMAT_Q8_0; }},
      {"IndicesTensor.DimensionCount is 3, expected 2 (InputTensor.DimensionCount)",
       [=](BagBuilt& b) {
         b.indices = TensorDesc(i32, {1, 1, 5});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
      {"IndicesTensor.DataType is FLOAT32, expected INT32, UINT32, INT64 or UINT64",
       [=](BagBuilt& b) {
         b.indices = TensorDesc(f32, {1, 5});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
      {"IndicesTensor.Sizes[0] is 2, expected 1 (leading dimension)",
       [=](BagBuilt& b) {
         b.indices = TensorDesc(i32, {2, 5});
         b.desc.IndicesTensor = b.indices.Desc();
       }},
      {"OffsetsTensor.Sizes[0] is 2, expected 1 (leading dimension)",
       [=](BagBuilt& b) {
         b.offsets = TensorDesc(i32, {2, 1});
         b.desc.OffsetsTensor = b.offsets.Desc();
       }},
      {"OffsetsTensor.DataType is INT64, expected INT32 (IndicesTensor.DataType)",
       [=](BagBuilt& b) {
         b.offsets = TensorDesc(i64, {1, 2});
         b.desc.OffsetsTensor = b.offsets.Desc();
       }},
      {"OffsetsTensor.Sizes[1] is 1, expected at least 2 with IncludeLastOffset (a bag's start "
       "and its end)",
       [=](BagBuilt& b) {
         b.offsets = TensorDesc(i32, {1, 1});
         b.desc.OffsetsTensor = b.offsets.Desc();
         b.desc.IncludeLastOffset = 1;
       }},
      {"OutputTensor.DataType is FLOAT16, expected FLOAT32 (InputTensor.DataType)",
       [=](BagBuilt& b) {
         b.output = TensorDesc(f16, {2, 3});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.DataType is INT32, expected FLOAT32 or FLOAT16",
       [=](BagBuilt& b) {
         b.table = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, {4, 34});
         b.output = TensorDesc(i32, {2, 32});
         b.desc.InputTensor = b.table.Desc();
         b.desc.OutputTensor = b.output.Desc();
         b.desc.Format = VKDML_QUANTIZED_FORMAT_Q8_0;
       }},
      {"OutputTensor.Sizes[0] is 3, expected 2 (bags: OffsetsTensor's entries)",
       [=](BagBuilt& b) {
         b.output = TensorDesc(f32, {3, 3});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Sizes[0] is 2, expected 1 (bags: OffsetsTensor's entries, less 1)",
       [=](BagBuilt& b) { b.desc.IncludeLastOffset = 1; }},
      {"OutputTensor.Sizes[1] is 4, expected 3 (InputTensor's values per row)",
       [=](BagBuilt& b) {
         b.output = TensorDesc(f32, {2, 4});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Strides[1] is 0, expected a non-zero stride: an output cannot broadcast",
       [=](BagBuilt& b) {
         b.output = TensorDesc(f32, {2, 3}, {3, 0});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"OutputTensor.Strides[1] is 2, expected 1 (a row's values are consecutive)",
       [=](BagBuilt& b) {
         b.output = TensorDesc(f32, {2, 3}, {1, 2});
         b.desc.OutputTensor = b.output.Desc();
       }},
      {"PerSampleWeightsTensor is given with Mode MEAN, expected null: weights apply to "
       "VKDML_EMBEDDING_BAG_MODE_SUM only",
       [](BagBuilt& b) {
         b.desc.PerSampleWeightsTensor = b.weights.Desc();
         b.desc.Mode = VKDML_EMBEDDING_BAG_MODE_MEAN;
       }},
      {"PerSampleWeightsTensor.DataType is FLOAT16, expected FLOAT32 (OutputTensor.DataType)",
       [=](BagBuilt& b) {
         b.weights = TensorDesc(f16, {1, 5});
         b.desc.PerSampleWeightsTensor = b.weights.Desc();
       }},
      {"PerSampleWeightsTensor.Sizes[1] is 4, expected 5 (IndicesTensor's entries)",
       [=](BagBuilt& b) {
         b.weights = TensorDesc(f32, {1, 4});
         b.desc.PerSampleWeightsTensor = b.weights.Desc();
       }},
      {"PerSampleWeightsTensor.DimensionCount is 1, expected 2 (InputTensor.DimensionCount)",
       [=](BagBuilt& b) {
         b.weights = TensorDesc(f32, {5});
         b.desc.PerSampleWeightsTensor = b.weights.Desc();
       }},
      {"PaddingIndex is 4, expected a row of InputTensor, below 4 (PyTorch's negative "
       "padding_idx p is row 4 + p)",
       [](BagBuilt& b) {
         b.desc.HasPaddingIndex = 1;
         b.desc.PaddingIndex = 4;
       }},
  };
  for (const Rule& rule : rules) {
    BagCase c;
    c.rows = 4;
    c.width = 3;
    c.indices.assign(5, 0);
    c.offsets = {0, 2};
    BagBuilt b;
    Build(c, &b);
    rule.change(b);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("EMBEDDING_BAG: ") + rule.message);
  }
  // DROP and FILL both apply (an entry skipped, or a row of FillValue); FillValue is
  // OutputTensor's type.
  BagCase c;
  c.rows = 4;
  c.width = 3;
  c.indices.assign(5, 0);
  c.offsets = {0, 2};
  for (auto mode : {VKDML_OUT_OF_RANGE_MODE_DROP, VKDML_OUT_OF_RANGE_MODE_FILL}) {
    c.outOfRange = mode;
    BagBuilt b;
    Build(c, &b);
    std::unique_ptr<Operator> op;
    CHECK(Dev().CreateOperator(b.op, &op).ok());
    b.wrap.FillValue.Bytes[4] = 1;
    CHECK(Dev().CreateOperator(b.op, &op).message ==
          (mode == VKDML_OUT_OF_RANGE_MODE_FILL
               ? "EMBEDDING_BAG: FillValue.Bytes[4] is 1, expected 0: OutputTensor's DataType, "
                 "FLOAT32, is 4 bytes wide"
               : "EMBEDDING_BAG: FillValue.Bytes[4] is 1, expected 0: Mode DROP writes no value"));
  }
}
