// VKDML_OPERATOR_SEGMENT_REDUCE: segments of every data type summed, averaged, multiplied,
// minimized and maximized (with their rows), bit for bit against a sequential reference written
// here (dml.h's definition, read literally: row order, each step in the type, FLOAT16 in float),
// on random ranks, axes, batch dimensions, strides, index types, offsets (empty, single-row,
// out of order, out of range) and sorted ids; by hand; huge segments (where loops are bounded,
// several dispatches a segment); checked mode's reports; every validation rule.
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include "kernels/kernels.h"
#include "segment_ref.h"
#include "test_util.h"

using namespace vt;

namespace {

Result Compile(const DML_OPERATOR_DESC& desc, UINT flags, std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  VKDML_TRY(Dev().CreateOperator(desc, &op));
  return Dev().CompileOperator(*op, flags, out);
}

// Runs c and checks every OutputTensor byte: its elements against the reference (a NaN against
// any NaN), the bytes between them untouched.
void RunCase(const SegCase& c, UINT flags = DML_EXECUTION_FLAG_NONE) {
  SegBuilt b;
  Build(c, &b);
  INFO("input " << b.input.ToString() << ", indices " << b.indices.ToString() << ", output "
                << b.output.ToString() << ", axis " << c.axis << ", function " << UINT(c.f)
                << ", empty " << UINT(c.empty) << ", sorted " << c.sorted);
  const Bytes in = SegmentInput(c, b), idx = SegmentIndices(c, b);
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Compile(b.op, flags, &compiled);
  INFO(Str(r));
  REQUIRE(r.ok());
  Bytes out = Poisoned(b.output.Total());
  r = Dev().Run(*compiled, {in.data(), idx.data()}, {out.data()});
  INFO(Str(r));
  REQUIRE(r.ok());
  CHECK(DiffSegment(c, out, Poisoned(b.output.Total())) == "");
}

// A value of the type: small integers and multiples of powers of 2, any significand at moderate
// exponents (sums round), zeros of both signs, and rarely NaN and infinities; integers over
// their whole range now and then (sums and products wrap).
uint64_t RandomBits(Rng& rng, DML_TENSOR_DATA_TYPE t, bool denormals, bool specials = true) {
  const double p = double(rng.U(0, 999)) / 1000;
  const double sign = rng.P(0.5) ? -1 : 1;
  if (IsFloat(t)) {
    double v;
    if (p < 0.4)
      v = sign * double(rng.U(0, 40)) * std::ldexp(1.0, int(rng.U(0, 6)) - 3);
    else if (p < 0.85)
      v = sign *
          std::ldexp(1.0 + double(rng.U(0, (1ull << 52) - 1)) * 0x1p-52, int(rng.U(0, 12)) - 6);
    else if (p < 0.93)
      v = sign * 0.0;
    else if (denormals && p < 0.97 && t == DML_TENSOR_DATA_TYPE_FLOAT32)
      v = sign * std::ldexp(double(rng.U(1, 1 << 20)), -149);
    else if (specials && p > 0.995)
      v = NAN;
    else if (specials && p > 0.99)
      v = sign * INFINITY;
    else
      v = sign * double(rng.U(1, 9));
    if (t == DML_TENSOR_DATA_TYPE_FLOAT64) return ToBits(v);
    if (t == DML_TENSOR_DATA_TYPE_FLOAT32) return ToBits(float(v));
    return std::isnan(v) ? 0x7E00 : NearestHalf(float(v));
  }
  const UINT bits = 8 * ref::ElementSize(t);
  const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  if (p < 0.2) return rng.U(0, ~0ull) & mask;
  const int64_t v = IsSignedType(t) ? int64_t(rng.U(0, 20)) - 10 : int64_t(rng.U(0, 20));
  return uint64_t(v) & mask;
}

bool KeepsDenormals32() {
  const DeviceInfo& info = Dev().Info();
  return info.enabled.shaderDenormPreserveFloat32 || info.enabled.shaderFloat64;
}

const VKDML_SEGMENT_REDUCE_FUNCTION kFunctions[] = {
    VKDML_SEGMENT_REDUCE_FUNCTION_SUM,   VKDML_SEGMENT_REDUCE_FUNCTION_MEAN,
    VKDML_SEGMENT_REDUCE_FUNCTION_MIN,   VKDML_SEGMENT_REDUCE_FUNCTION_MAX,
    VKDML_SEGMENT_REDUCE_FUNCTION_PROD,  VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN,
    VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX};

// Fills c.indices: offsets for `segments` segments (mostly sorted; empty and single-row ones
// common; sometimes out of order, past the rows or negative) or sorted ids (some past the
// segments' range: ids of no segment), per batch.
void RandomIndices(Rng& rng, SegCase& c, UINT64 batches, bool wild) {
  const UINT rows = c.sizes[c.axis];
  c.indices.clear();
  for (UINT64 b = 0; b < batches; ++b) {
    if (c.sorted) {
      std::vector<int64_t> ids(rows);
      for (auto& x : ids) x = int64_t(rng.U(0, c.segments + (wild ? 1 : 0)));
      std::sort(ids.begin(), ids.end());
      c.indices.insert(c.indices.end(), ids.begin(), ids.end());
      continue;
    }
    std::vector<int64_t> o(c.segments + 1);
    for (auto& x : o) x = int64_t(rng.U(0, rows));
    std::sort(o.begin(), o.end());
    if (rng.P(0.6)) o[0] = 0;
    if (rng.P(0.5)) o.back() = rows;
    if (wild && rng.P(0.2)) o[rng.U(0, c.segments)] = int64_t(rng.U(0, rows));  // out of order
    if (wild && rng.P(0.15)) o[rng.U(0, c.segments)] = int64_t(rows + rng.U(1, 5));
    if (wild && IsSignedType(c.indexType) && rng.P(0.15))
      o[rng.U(0, c.segments)] = -int64_t(rng.U(1, 3));
    c.indices.insert(c.indices.end(), o.begin(), o.end());
  }
}

SegCase RandomCase(Rng& rng, uint64_t n, bool denormals) {
  SegCase c;
  c.type = DataTypes()[n % DataTypes().size()];
  c.f = kFunctions[(n / DataTypes().size()) % 7];
  c.indexType = IndexTypes()[rng.U(0, 3)];
  c.argType = IndexTypes()[rng.U(0, 3)];
  c.sorted = rng.P(0.4);
  const UINT rank = rng.Ui(1, 4);
  c.axis = rng.Ui(0, rank - 1);
  c.sizes.resize(rank);
  for (UINT d = 0; d < rank; ++d) c.sizes[d] = d == c.axis ? rng.Ui(0, 40) : rng.Ui(1, 4);
  if (c.sizes[c.axis] == 0) c.sizes[c.axis] = 1;
  c.segments = rng.Ui(1, 12);
  if (!c.Arg()) {
    const UINT e = rng.Ui(0, 5);
    c.empty = e < 2   ? VKDML_SEGMENT_EMPTY_SCATTER
              : e < 4 ? VKDML_SEGMENT_EMPTY_TORCH
                      : VKDML_SEGMENT_EMPTY_INITIAL;
    if (c.empty == VKDML_SEGMENT_EMPTY_INITIAL) c.initial = RandomBits(rng, c.type, false);
  } else if (rng.P(0.5)) {
    c.empty = VKDML_SEGMENT_EMPTY_TORCH;
  }
  auto pads = [&](UINT dims) {
    std::vector<UINT> p(dims);
    for (auto& x : p) x = rng.P(0.3) ? rng.Ui(2, 3) : 1;
    return p;
  };
  if (rng.P(0.4)) c.inStrides = Strides(c.sizes, pads(rank));
  if (rng.P(0.4)) c.idxStrides = Strides(c.IdxSizes(), pads(rank));
  if (rng.P(0.4)) c.outStrides = Strides(c.OutSizes(), pads(rank));
  UINT64 batches = 1;
  for (UINT d = 0; d < c.axis; ++d) batches *= c.sizes[d];
  RandomIndices(rng, c, batches, true);
  c.values.resize(Count(c.sizes));
  for (auto& v : c.values) v = RandomBits(rng, c.type, denormals);
  return c;
}

}  // namespace

// float32 by hand: rows {1, 2}, {-4, 0.5}, {7, -8}, {10, 11}, {3, 3}; offsets {0, 2, 2, 5}: a
// segment of two rows, an empty one, one of three. Every result is exact.
TEST_CASE_METHOD(Fixture, "Segment reductions: by hand", "[segment]") {
  SegCase c;
  c.sizes = {5, 2};
  c.segments = 3;
  c.indices = {0, 2, 2, 5};
  const float v[10] = {1, 2, -4, 0.5f, 7, -8, 10, 11, 3, 3};
  for (float x : v) c.values.push_back(ToBits(x));
  struct Want {
    VKDML_SEGMENT_REDUCE_FUNCTION f;
    VKDML_SEGMENT_EMPTY empty;
    float out[3][2];
  };
  const float inf = INFINITY;
  const Want wants[] = {
      {VKDML_SEGMENT_REDUCE_FUNCTION_SUM,
       VKDML_SEGMENT_EMPTY_SCATTER,
       {{-3, 2.5f}, {0, 0}, {20, 6}}},
      {VKDML_SEGMENT_REDUCE_FUNCTION_MEAN,
       VKDML_SEGMENT_EMPTY_SCATTER,
       {{-1.5f, 1.25f}, {0, 0}, {20 / 3.0f, 2}}},
      {VKDML_SEGMENT_REDUCE_FUNCTION_MAX,
       VKDML_SEGMENT_EMPTY_TORCH,
       {{1, 2}, {-inf, -inf}, {10, 11}}},
      {VKDML_SEGMENT_REDUCE_FUNCTION_MIN,
       VKDML_SEGMENT_EMPTY_TORCH,
       {{-4, 0.5f}, {inf, inf}, {3, -8}}},
      {VKDML_SEGMENT_REDUCE_FUNCTION_PROD,
       VKDML_SEGMENT_EMPTY_SCATTER,
       {{-4, 1}, {1, 1}, {210, -264}}},
      {VKDML_SEGMENT_REDUCE_FUNCTION_SUM,
       VKDML_SEGMENT_EMPTY_INITIAL,
       {{7, 12.5f}, {10, 10}, {30, 16}}},
  };
  for (const Want& w : wants) {
    c.f = w.f;
    c.empty = w.empty;
    const float ten = 10;
    c.initial = w.empty == VKDML_SEGMENT_EMPTY_INITIAL ? ToBits(ten) : 0;
    SegBuilt b;
    Build(c, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    float out[3][2];
    const int64_t* idx = c.indices.data();
    REQUIRE(Dev().Run(*compiled, {v, idx}, {out}).ok());
    for (UINT s = 0; s < 3; ++s)
      for (UINT k = 0; k < 2; ++k) {
        INFO("function " << UINT(w.f) << ", segment " << s << ", column " << k);
        CHECK(out[s][k] == w.out[s][k]);
      }
  }
  // ARGMAX and ARGMIN: the rows (an empty segment: the axis size, 5).
  for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX, VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN}) {
    c.f = f;
    c.empty = VKDML_SEGMENT_EMPTY_SCATTER;
    SegBuilt b;
    Build(c, &b);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(b.op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
    int64_t out[3][2];
    REQUIRE(Dev().Run(*compiled, {v, c.indices.data()}, {out}).ok());
    const int64_t want[2][3][2] = {{{0, 0}, {5, 5}, {3, 3}}, {{1, 1}, {5, 5}, {4, 2}}};
    for (UINT s = 0; s < 3; ++s)
      for (UINT k = 0; k < 2; ++k) {
        INFO("function " << UINT(f) << ", segment " << s << ", column " << k);
        CHECK(out[s][k] == want[f == VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN][s][k]);
      }
  }
}

// Random cases over every data type, function, empty value, index kind and layout, bit for bit.
TEST_CASE_METHOD(Fixture, "Segment reductions: random cases vs reference", "[segment]") {
  const bool denormals = KeepsDenormals32();
  if (!denormals) WARN(Dev().Info().name << " may flush float32 denormals: none in this sweep");
  TypeSweep sweep;
  for (uint64_t n = 0; n < 7 * 11 * 3; ++n) {
    Rng rng(BaseSeed() ^ (0x5E6 + n * 0x9E3779B97F4A7C15ull));
    const SegCase c = RandomCase(rng, n, denormals);
    if (!SweepRuns(n)) continue;
    if (!sweep.Runs(c.type)) continue;
    INFO("case " << n << " (VKDML_TEST_CASE=" << n << " replays it)");
    RunCase(c, n % 3 == 1 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : DML_EXECUTION_FLAG_NONE);
  }
}

// Huge segments: 100,000 rows into 3 segments (one of nearly all of them) of 3 columns, each
// function on float32, float16 and int64, offsets and sorted ids. Where loops are bounded
// (lavapipe) a segment takes many dispatches, its fold carried between them.
TEST_CASE_METHOD(Fixture, "Segment reductions: huge segments", "[segment]") {
  const bool denormals = KeepsDenormals32();
  int n = 0;
  for (auto type :
       {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_INT64})
    for (auto f : kFunctions)
      for (bool sorted : {false, true}) {
        if (!DeviceSupports(type)) continue;
        Rng rng(BaseSeed() ^ (0xB16 + 977 * n++));
        SegCase c;
        c.type = type;
        c.f = f;
        c.sorted = sorted;
        c.sizes = {100000, 3};
        c.segments = 3;
        c.indices = sorted ? std::vector<int64_t>() : std::vector<int64_t>{0, 5, 99990, 100000};
        if (sorted) {
          c.indices.assign(100000, 1);
          for (UINT r = 0; r < 7; ++r) c.indices[r] = 0;
          for (UINT r = 99995; r < 100000; ++r) c.indices[r] = 2;
        }
        c.values.resize(300000);
        for (auto& v : c.values) v = RandomBits(rng, type, denormals, false);
        if (f == VKDML_SEGMENT_REDUCE_FUNCTION_PROD)  // mostly +-1, so products stay finite
          for (auto& v : c.values)
            v = type == DML_TENSOR_DATA_TYPE_INT64 ? (rng.P(0.5) ? 1 : ~0ull)
                : type == DML_TENSOR_DATA_TYPE_FLOAT16
                    ? (rng.P(0.5) ? 0x3C00 : 0xBC00)
                    : ToBits(rng.P(0.999) ? (rng.P(0.5) ? 1.0f : -1.0f) : 1.0009765625f);
        INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << sorted);
        RunCase(c);
      }
  // Where loops are bounded, these took more than one fold dispatch.
  SegCase c;
  c.sizes = {100000, 3};
  c.segments = 1;
  c.indices = {0, 100000};
  SegBuilt b;
  Build(c, &b);
  const vkdml::detail::KernelSet set = Chosen(b.op);
  // The fold's dispatches: "segment_w..." steps, not the long path's stages ("..._long": where
  // loops are unbounded a float sum's long segment is also streamed after the fold).
  size_t folds = 0;
  for (const auto& step : set.steps) {
    const std::string& m = step.plain.module;
    folds += m.rfind("segment_w", 0) == 0 && (m.size() < 5 || m.substr(m.size() - 5) != "_long");
  }
  if (CapabilitiesOf(Dev()).maxLoop != UINT64(-1))
    CHECK(folds > 1);
  else
    CHECK(folds == 1);
}

// Checked mode reports the first bad offset or id; unchecked, the same IndicesTensor gives the
// clamped results (the random cases check their values) and touches nothing outside the tensors.
TEST_CASE_METHOD(Fixture, "Segment reductions: checked mode reports bad indices", "[segment]") {
  struct Bad {
    bool sorted;
    std::vector<int64_t> indices;
    const char* message;
  };
  const Bad bads[] = {
      {false, {0, 3, 2, 6}, "IndicesTensor[2,0] is 2, expected offsets in [0, 6]"},    // decreasing
      {false, {0, 3, 7, 7}, "IndicesTensor[2,0] is 7, expected offsets in [0, 6]"},    // past rows
      {false, {-1, 3, 4, 6}, "IndicesTensor[0,0] is -1, expected offsets in [0, 6]"},  // negative
      {true, {0, 0, 2, 1, 2, 2}, "IndicesTensor[3,0] is 1, expected segment ids in [0, 2]"},
      {true, {0, 0, 1, 1, 2, 3}, "IndicesTensor[5,0] is 3, expected segment ids in [0, 2]"},
      {false, {0, 3, 3, 6}, nullptr},  // fine
      {true, {0, 0, 1, 1, 1, 2}, nullptr},
  };
  for (const Bad& bad : bads) {
    SegCase c;
    c.sizes = {6, 2};
    c.segments = 3;
    c.sorted = bad.sorted;
    c.indices = bad.indices;
    float values[12];
    for (UINT i = 0; i < 12; ++i) c.values.push_back(ToBits(values[i] = float(i)));
    SegBuilt b;
    Build(c, &b);
    std::string text;
    for (int64_t x : bad.indices) text += std::to_string(x) + " ";
    INFO("indices " << text);
    std::unique_ptr<CompiledOperator> compiled;
    REQUIRE(Compile(b.op, VKDML_EXECUTION_FLAG_CHECK_INDICES, &compiled).ok());
    float out[3][2];
    const Result r = Dev().Run(*compiled, {values, c.indices.data()}, {out});
    if (!bad.message) {
      CHECK(r.ok());
      continue;
    }
    CHECK(r.status == Status::IndexOutOfRange);
    CHECK_THAT(r.message, Catch::Contains(bad.message));
    CHECK_THAT(r.message, Catch::Contains("SEGMENT_REDUCE"));
  }
}

// Every validation rule, each message naming the field and what was expected.
TEST_CASE_METHOD(Fixture, "Segment reductions: validation", "[segment][validation]") {
  struct Rule {
    const char* what;
    std::function<void(SegCase&)> change;
    std::function<void(SegBuilt&)> after;
    const char* message;
  };
  const auto none = [](SegBuilt&) {};
  const auto keep = [](SegCase&) {};
  const Rule rules[] = {
      {"unknown function", keep,
       [](SegBuilt& b) { b.desc.ReduceFunction = VKDML_SEGMENT_REDUCE_FUNCTION(7); },
       "ReduceFunction is 7, expected VKDML_SEGMENT_REDUCE_FUNCTION_SUM (0)"},
      {"SortedIndices 2", keep, [](SegBuilt& b) { b.desc.SortedIndices = 2; },
       "SortedIndices is 2, expected 0 (offsets) or 1"},
      {"unknown empty value", keep, [](SegBuilt& b) { b.desc.EmptyValue = VKDML_SEGMENT_EMPTY(3); },
       "EmptyValue is 3, expected VKDML_SEGMENT_EMPTY_SCATTER (0)"},
      {"ARGMAX with INITIAL", [](SegCase& c) { c.f = VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX; },
       [](SegBuilt& b) { b.desc.EmptyValue = VKDML_SEGMENT_EMPTY_INITIAL; },
       "EmptyValue is VKDML_SEGMENT_EMPTY_INITIAL with ReduceFunction ARGMAX"},
      {"axis past the rank", keep, [](SegBuilt& b) { b.desc.Axis = 2; },
       "Axis is 2, expected below 2 (InputTensor.DimensionCount)"},
      {"float indices", [](SegCase& c) { c.indexType = DML_TENSOR_DATA_TYPE_FLOAT32; }, none,
       "IndicesTensor.DataType is FLOAT32, expected INT32"},
      {"ARGMIN into float",
       [](SegCase& c) {
         c.f = VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN;
         c.argType = DML_TENSOR_DATA_TYPE_FLOAT32;
       },
       none, "OutputTensor.DataType is FLOAT32, expected INT32, INT64, UINT32 or UINT64"},
      {"output of another type",
       [](SegCase& c) {
         c.f = VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
         c.argType = DML_TENSOR_DATA_TYPE_INT32;
       },
       [](SegBuilt& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {3, 2});
         b.desc.OutputTensor = b.output.Desc();
       },
       "OutputTensor.DataType"},
      {"offsets of the wrong length", keep,
       [](SegBuilt& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {5, 1});
         b.desc.IndicesTensor = b.indices.Desc();
       },
       "OutputTensor.Sizes[0] is 3, expected 4 (the segments: IndicesTensor.Sizes[Axis] less 1)"},
      {"ids of the wrong length",
       [](SegCase& c) {
         c.sorted = true;
         c.indices.assign(5, 0);
       },
       [](SegBuilt& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4, 1});
         b.desc.IndicesTensor = b.indices.Desc();
       },
       "IndicesTensor.Sizes[0] is 4, expected 5 (InputTensor.Sizes[Axis]"},
      {"indices past Axis", keep,
       [](SegBuilt& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4, 2});
         b.desc.IndicesTensor = b.indices.Desc();
       },
       "IndicesTensor.Sizes[1] is 2, expected 1 (a dimension after Axis)"},
      {"a batch size",
       [](SegCase& c) {
         c.axis = 1;
         c.sizes = {5, 2};
         c.segments = 1;
       },
       [](SegBuilt& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4, 2});
         b.desc.IndicesTensor = b.indices.Desc();
       },
       "IndicesTensor.Sizes[0] is 4, expected 5 (InputTensor.Sizes[0]: a batch dimension"},
      {"output columns", keep,
       [](SegBuilt& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 3});
         b.desc.OutputTensor = b.output.Desc();
       },
       "OutputTensor.Sizes[1] is 3, expected 2 (InputTensor.Sizes[1])"},
      {"overlapping output", keep,
       [](SegBuilt& b) {
         b.output = TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {3, 2}, {1, 1});
         b.desc.OutputTensor = b.output.Desc();
       },
       "OutputTensor"},
      {"rank mismatch", keep,
       [](SegBuilt& b) {
         b.indices = TensorDesc(DML_TENSOR_DATA_TYPE_INT64, {4});
         b.desc.IndicesTensor = b.indices.Desc();
       },
       "IndicesTensor.DimensionCount is 1"},
      {"initial's spare bytes",
       [](SegCase& c) {
         c.empty = VKDML_SEGMENT_EMPTY_INITIAL;
         c.initial = 1ull << 40;
       },
       none, "InitialValue.Bytes[5] is 1, expected 0: InputTensor's DataType, FLOAT32, is 4 bytes"},
  };
  for (const Rule& rule : rules) {
    SegCase c;
    c.sizes = {5, 2};
    c.segments = 3;
    c.indices = {0, 2, 2, 5};
    rule.change(c);
    SegBuilt b;
    Build(c, &b);
    rule.after(b);
    INFO(rule.what);
    std::unique_ptr<Operator> op;
    const Result r = Dev().CreateOperator(b.op, &op);
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Catch::StartsWith("SEGMENT_REDUCE: "));
    CHECK_THAT(r.message, Catch::Contains(rule.message));
  }
  // The operator wrapped in VKDML_OPERATOR_OUT_OF_RANGE.
  SegCase c;
  c.sizes = {5, 2};
  c.segments = 3;
  c.indices = {0, 2, 2, 5};
  SegBuilt b;
  Build(c, &b);
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{&b.op, VKDML_OUT_OF_RANGE_MODE_CLAMP, {}};
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};
  std::unique_ptr<Operator> op;
  const Result r = Dev().CreateOperator(outer, &op);
  CHECK(r.status == Status::InvalidArgument);
  CHECK_THAT(r.message, Catch::Contains("has no out-of-range index"));
}

// The deterministic flag takes the same kernels: every fold is in row order already.
TEST_CASE_METHOD(Fixture, "Segment reductions: the deterministic flag changes nothing",
                 "[segment][kernels]") {
  for (auto f : kFunctions) {
    SegCase c;
    c.f = f;
    c.sizes = {5, 2};
    c.segments = 3;
    c.indices = {0, 2, 2, 5};
    SegBuilt b;
    Build(c, &b);
    const vkdml::detail::KernelSet plain = Chosen(b.op),
                                   det = Chosen(b.op, VKDML_EXECUTION_FLAG_DETERMINISTIC);
    REQUIRE(plain.steps.size() == det.steps.size());
    for (size_t i = 0; i < plain.steps.size(); ++i)
      CHECK(plain.steps[i].plain.module == det.steps[i].plain.module);
  }
}

// 4-byte values whose columns come in whole fours take the fold 4 columns an invocation (16-byte
// loads and stores, where the bindings start on 16 bytes): each function but ARGMIN and ARGMAX,
// with batch dimensions, offsets and ids, and segments long enough for several dispatches where
// loops are bounded. Padded columns (a row stride not of 16 bytes) keep the one-column fold.
TEST_CASE_METHOD(Fixture, "Segment reductions: four columns at a time", "[segment]") {
  int n = 0;
  for (auto type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32})
    for (auto f : kFunctions)
      for (bool sorted : {false, true}) {
        Rng rng(BaseSeed() ^ (0x4C0 + 131 * n++));
        SegCase c;
        c.type = type;
        c.f = f;
        c.sorted = sorted;
        c.axis = 1;
        c.sizes = {2, 3000, 8};
        c.segments = 5;
        RandomIndices(rng, c, 2, false);
        c.values.resize(Count(c.sizes));
        for (auto& v : c.values) v = RandomBits(rng, type, KeepsDenormals32(), false);
        SegBuilt b;
        Build(c, &b);
        const vkdml::detail::KernelSet set = Chosen(b.op);
        bool wide = false;
        for (const auto& step : set.steps)
          wide = wide || (step.hasWide && step.wide.module.rfind("segment_w4v", 0) == 0);
        INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << sorted);
        CHECK(wide == !c.Arg());
        RunCase(c);
        c.inStrides = Strides(c.sizes, {1, 1, 2});  // rows of 64 bytes, columns 8 bytes apart
        Build(c, &b);
        for (const auto& step : Chosen(b.op).steps) CHECK_FALSE(step.hasWide);
        RunCase(c);
      }
}

namespace {

// Value kind `values` of the fast-or-exact tests: plain ones (0: the fast folds kept), random bits
// with NaN, infinities and (where kept) denormals (1), tiny ones (2: float32 normals below 2^-102
// whose sums are denormals, and zeros), mostly zeros of both signs (3: MIN's and MAX's ties).
uint64_t FastOrExactValue(Rng& rng, DML_TENSOR_DATA_TYPE type, int values, bool denormals) {
  const float sign = rng.P(0.5) ? -1.0f : 1.0f;
  switch (values) {
    case 0:
      return RandomBits(rng, type, false, false);
    case 1:
      return RandomBits(rng, type, denormals);
    case 2:
      return rng.P(0.1) ? ToBits(sign * 0.0f)
                        : ToBits(sign * std::ldexp(float(rng.U(1, 7)), -int(rng.U(100, 126))));
    default:
      return ToBits(sign * (rng.P(0.8) ? 0.0f : 1.0f));
  }
}

}  // namespace

// The fold 4 columns an invocation (glsl/segment_reduce.comp, foldVec) on many short segments:
// float32 SUM, MEAN, MIN and MAX fold in the device's float arithmetic where that is exact and
// fold again exactly where it may not be (a denormal, a NaN, a zero MIN or MAX, a partial sum
// that may become a denormal), so each runs on values of each kind: plain ones (the fast folds
// kept), with NaN, infinities and denormals, and tiny ones (normals below 2^-102 whose sums are
// denormals), mostly zeros of both signs; an initial value that is a denormal; int32 too.
TEST_CASE_METHOD(Fixture, "Segment reductions: four columns folded fast or exactly", "[segment]") {
  const bool denormals = KeepsDenormals32();
  int n = 0;
  for (auto type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32})
    for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_SUM, VKDML_SEGMENT_REDUCE_FUNCTION_MEAN,
                   VKDML_SEGMENT_REDUCE_FUNCTION_MIN, VKDML_SEGMENT_REDUCE_FUNCTION_MAX,
                   VKDML_SEGMENT_REDUCE_FUNCTION_PROD})
      for (int values = 0; values < 4; ++values)
        for (auto empty : {VKDML_SEGMENT_EMPTY_SCATTER, VKDML_SEGMENT_EMPTY_INITIAL}) {
          if (values >= 2 && type != DML_TENSOR_DATA_TYPE_FLOAT32) continue;
          if (values == 2 && !denormals) continue;
          Rng rng(BaseSeed() ^ (0xFA57 + 977 * n++));
          SegCase c;
          c.type = type;
          c.f = f;
          c.empty = empty;
          c.sorted = rng.P(0.3);
          c.sizes = {300, 16};  // 4 invocations a segment
          c.segments = 60;      // about 5 rows each, some empty
          RandomIndices(rng, c, 1, false);
          c.values.resize(Count(c.sizes));
          for (auto& v : c.values) v = FastOrExactValue(rng, type, values, denormals);
          if (empty == VKDML_SEGMENT_EMPTY_INITIAL)
            c.initial = values == 2 ? ToBits(-0x1p-140f) : RandomBits(rng, type, false, false);
          SegBuilt b;
          Build(c, &b);
          bool wide = false;
          for (const auto& step : Chosen(b.op).steps)
            wide = wide || (step.hasWide && step.wide.module.rfind("segment_w4v", 0) == 0);
          INFO("type " << UINT(type) << ", function " << UINT(f) << ", values " << values
                       << ", empty " << UINT(empty));
          CHECK(wide);
          RunCase(c);
        }
}

// The recording path with every binding at an offset in one buffer: 16 bytes (the fold 4 columns
// an invocation) and 4 (one column), each checked against the reference, nothing outside the
// output changed, and IndexStatus reporting a bad offset in checked mode.
TEST_CASE_METHOD(Fixture, "Segment reductions: bindings at offsets, recorded", "[segment]") {
  Rng rng(BaseSeed() ^ 0x0FF5E7);
  SegCase c;
  c.sizes = {40, 8};
  c.segments = 6;
  c.f = VKDML_SEGMENT_REDUCE_FUNCTION_MEAN;
  RandomIndices(rng, c, 1, false);
  c.values.resize(Count(c.sizes));
  for (auto& v : c.values) v = RandomBits(rng, c.type, false, false);
  for (UINT64 base : {UINT64(16), UINT64(4)})
    for (bool bad : {false, true}) {
      SegCase k = c;
      if (bad) k.indices[3] = 41;  // past the rows: clamped, or reported
      SegBuilt b;
      Build(k, &b);
      const Bytes in = SegmentInput(k, b), idx = SegmentIndices(k, b);
      const UINT64 outBytes = b.output.Total();
      // (IndicesTensor's offset a multiple of its INT64 elements: 8 past 16 with base 4)
      const UINT64 at[2] = {base, (base + 64 + in.size()) / 16 * 16 + (base % 16 ? 8 : 0)};
      const UINT64 outAt = (at[1] + idx.size() + 64) / 16 * 16 + base;
      const UINT64 total = outAt + outBytes + 64;
      std::unique_ptr<Buffer> buf;
      REQUIRE(Dev().CreateBuffer(total, Buffer::Memory::DeviceLocal, &buf).ok());
      Bytes image(total, 0x5A);
      std::memcpy(&image[at[0]], in.data(), in.size());
      std::memcpy(&image[at[1]], idx.data(), idx.size());
      REQUIRE(buf->Write(0, image.data(), total).ok());
      std::unique_ptr<CompiledOperator> compiled;
      REQUIRE(Compile(b.op, bad ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0, &compiled).ok());
      std::unique_ptr<BindingTable> table;
      REQUIRE(Dev().CreateBindingTable(*compiled, &table).ok());
      const DML_BUFFER_BINDING inputs[2] = {buf->Binding(at[0], in.size()),
                                            buf->Binding(at[1], idx.size())};
      const DML_BUFFER_BINDING output = buf->Binding(outAt, outBytes);
      const Result bound = table->BindInputs(2, inputs);
      INFO(Str(bound));
      REQUIRE(bound.ok());
      REQUIRE(table->BindOutputs(1, &output).ok());
      Result recorded;
      REQUIRE(
          Dev()
              .Submit([&](VkCommandBuffer cmd) { recorded = Dev().RecordDispatch(cmd, *table); })
              .ok());
      REQUIRE(recorded.ok());
      const Result status = table->IndexStatus();
      INFO("offset " << base << (bad ? ", an offset past the rows, checked" : ""));
      if (bad) {
        CHECK(status.status == Status::IndexOutOfRange);
        CHECK_THAT(status.message, Catch::Contains("IndicesTensor[3,0] is 41"));
      } else {
        CHECK(status.ok());
      }
      Bytes after(total);
      REQUIRE(buf->Read(0, after.data(), total).ok());
      const Bytes out(after.begin() + outAt, after.begin() + outAt + outBytes);
      CHECK(DiffSegment(k, out, Bytes(image.begin() + outAt, image.begin() + outAt + outBytes)) ==
            "");
      for (UINT64 i = 0; i < total; ++i)
        if (i < outAt || i >= outAt + outBytes) REQUIRE(after[i] == image[i]);
    }
}

namespace {

// Whether f on type takes the long path where a segment is long (kernel_segment.cpp): MIN, MAX
// and their args, and integer SUM, MEAN and PROD.
bool Regroupable(DML_TENSOR_DATA_TYPE type, VKDML_SEGMENT_REDUCE_FUNCTION f) {
  return !IsFloat(type) ||
         (f != VKDML_SEGMENT_REDUCE_FUNCTION_SUM && f != VKDML_SEGMENT_REDUCE_FUNCTION_MEAN &&
          f != VKDML_SEGMENT_REDUCE_FUNCTION_PROD);
}

// Offsets (or the sorted ids they make) for `lengths` per batch: `batches` times.
void SetLengths(SegCase& c, const std::vector<UINT>& lengths, UINT64 batches) {
  c.indices.clear();
  c.segments = UINT(lengths.size());
  for (UINT64 b = 0; b < batches; ++b) {
    int64_t at = 0;
    if (!c.sorted) c.indices.push_back(0);
    for (UINT s = 0; s < lengths.size(); ++s) {
      for (UINT r = 0; c.sorted && r < lengths[s]; ++r) c.indices.push_back(s);
      at += lengths[s];
      if (!c.sorted) c.indices.push_back(at);
    }
  }
}

// 8 columns (2 elements of 4 a row) of the rows `lengths` sum to, in segments of those lengths;
// the values to fill.
SegCase ColumnsCase(DML_TENSOR_DATA_TYPE type, VKDML_SEGMENT_REDUCE_FUNCTION f, bool sorted,
                    const std::vector<UINT>& lengths) {
  SegCase c;
  c.type = type;
  c.f = f;
  c.sorted = sorted;
  UINT rows = 0;
  for (UINT l : lengths) rows += l;
  c.sizes = {rows, 8};
  SetLengths(c, lengths, 1);
  c.values.resize(Count(c.sizes));
  return c;
}

}  // namespace

// Long segments (past VKDML_SEGMENT_LONG_ROWS: the long path folds their chunks at once, then
// their results in order) for every data type and every function whose result does not depend on
// the grouping, the others beside them: 70,000 rows in segments of 0 to 69,000 rows (past
// VKDML_SEGMENT_LONG_CHUNKS chunks of VKDML_SEGMENT_LONG_ROWS: longer chunks), with batch
// dimensions, offsets and ids, each empty-value rule, values with ties and NaN in every chunk;
// 4 columns at a time (int32, float32, 3,000 rows); offsets out of order, past the rows and
// negative.
TEST_CASE_METHOD(Fixture, "Segment reductions: long segments folded in chunks", "[segment]") {
  const bool denormals = KeepsDenormals32();
  // 70,000 rows; 64,000 and 5,000 rows: 250 and 20 chunks, each a last group of fewer than 16.
  const std::vector<UINT> lengths = {5, 300, 0, 257, 64000, 5000, 1, 256, 181};
  const std::vector<UINT> shorter = {5, 300, 0, 2000, 257, 438};  // 3,000
  int n = 0;
  for (auto type : DataTypes())
    for (auto f : kFunctions) {
      if (!DeviceSupports(type)) continue;
      const bool regroups = Regroupable(type, f);
      if (!regroups && n % 3 != 0) {  // the row-order chain beside them now and then
        ++n;
        continue;
      }
      Rng rng(BaseSeed() ^ (0x10C6 + 7919 * n));
      SegCase c;
      c.type = type;
      c.f = f;
      c.sorted = n % 2 == 1;
      c.indexType = IndexTypes()[n % 4];
      c.argType = IndexTypes()[(n / 4) % 4];
      ++n;
      c.axis = 1;
      c.sizes = {2, 70000, 2};
      if (!c.Arg()) {
        c.empty = VKDML_SEGMENT_EMPTY(n % 3);
        if (c.empty == VKDML_SEGMENT_EMPTY_INITIAL) c.initial = RandomBits(rng, type, false);
      }
      SetLengths(c, lengths, 2);
      c.values.resize(Count(c.sizes));
      for (auto& v : c.values) v = RandomBits(rng, type, denormals);
      INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << c.sorted);
      RunCase(c);
    }
  // 4 columns at a time (8 columns: 2 wide elements a row), then offsets out of order, past the
  // rows and negative (each segment clamped as the reference does).
  for (auto type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32})
    for (auto f : kFunctions) {
      if (!Regroupable(type, f)) continue;
      Rng rng(BaseSeed() ^ (0x4C06 + 7919 * n++));
      SegCase c = ColumnsCase(type, f, n % 2 == 1, shorter);
      for (auto& v : c.values) v = RandomBits(rng, type, denormals);
      INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << c.sorted);
      RunCase(c);
      c.sorted = false;
      c.indexType = DML_TENSOR_DATA_TYPE_INT32;
      SetLengths(c, shorter, 1);
      c.indices[2] = 2999;  // out of order: segment 1 from 2,999, segment 2 empty
      c.indices[4] = 3400;  // past the rows: clamped
      c.indices[5] = -3;    // negative: 0
      RunCase(c);
    }
  // More long elements than the list holds (2 x 1,200 columns; 4 at a time, 600 wide elements):
  // on GPUs the fold folds those past it itself (CPU devices take the fold's dispatches).
  for (auto type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT16})
    for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_MAX, VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN,
                   VKDML_SEGMENT_REDUCE_FUNCTION_SUM}) {
      if (!DeviceSupports(type)) continue;
      Rng rng(BaseSeed() ^ (0x0F10 + 7919 * n++));
      SegCase c;
      c.type = type;
      c.f = f;
      c.sizes = {600, 1200};
      SetLengths(c, {300, 300}, 1);
      c.values.resize(Count(c.sizes));
      for (auto& v : c.values) v = RandomBits(rng, type, denormals);
      INFO("type " << UINT(type) << ", function " << UINT(f) << ", past the list");
      RunCase(c);
    }
}

// The long path's chunks 4 columns an invocation (foldVec, as the fold's above): float32 MIN and
// MAX in the device's arithmetic where that is exact, folded again where it may not be, on each
// kind of values; int32 beside them. Segments of 2,000 and 257 rows: 8 and 2 chunks.
TEST_CASE_METHOD(Fixture, "Segment reductions: long segments' chunks folded fast or exactly",
                 "[segment]") {
  const bool denormals = KeepsDenormals32();
  const std::vector<UINT> lengths = {5, 300, 0, 2000, 257, 438};  // 3,000
  int n = 0;
  for (auto type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32})
    for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_MIN, VKDML_SEGMENT_REDUCE_FUNCTION_MAX,
                   VKDML_SEGMENT_REDUCE_FUNCTION_SUM})
      for (int values = 0; values < 4; ++values) {
        if (!Regroupable(type, f) || (values >= 2 && type != DML_TENSOR_DATA_TYPE_FLOAT32))
          continue;
        if (values == 2 && !denormals) continue;
        Rng rng(BaseSeed() ^ (0xC4A7 + 977 * n++));
        SegCase c = ColumnsCase(type, f, n % 2 == 1, lengths);
        for (auto& v : c.values) v = FastOrExactValue(rng, type, values, denormals);
        SegBuilt b;
        Build(c, &b);
        bool wide = false;
        for (const auto& step : Chosen(b.op).steps)
          wide = wide || (step.hasWide && step.wide.module.rfind("segment_w4v", 0) == 0 &&
                          step.wide.module.find("_long") != std::string::npos);
        INFO("type " << UINT(type) << ", function " << UINT(f) << ", values " << values
                     << ", sorted " << c.sorted);
        CHECK(wide);
        RunCase(c);
      }
}

// Float sums, means and products of long segments (the stream: each segment's rows in row
// order through shared memory) on every float type: 3,000 rows (within a dispatch's rows where
// loops are bounded) in segments of 0 to 2,000 rows, batch dimensions, offsets and ids, each
// empty-value rule, denormals where the device keeps them; 4 columns at a time (float32).
TEST_CASE_METHOD(Fixture, "Segment reductions: long float segments streamed", "[segment]") {
  const bool denormals = KeepsDenormals32();
  const std::vector<UINT> lengths = {5, 300, 0, 2000, 257, 438};
  int n = 0;
  for (auto type :
       {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_FLOAT64})
    for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_SUM, VKDML_SEGMENT_REDUCE_FUNCTION_MEAN,
                   VKDML_SEGMENT_REDUCE_FUNCTION_PROD})
      for (bool wide : {false, true}) {
        if (!DeviceSupports(type) || (wide && type != DML_TENSOR_DATA_TYPE_FLOAT32)) continue;
        Rng rng(BaseSeed() ^ (0x57E + 7919 * n));
        SegCase c;
        c.type = type;
        c.f = f;
        c.sorted = n % 2 == 1;
        c.indexType = IndexTypes()[n % 4];
        c.empty = VKDML_SEGMENT_EMPTY(n % 3);
        ++n;
        if (c.empty == VKDML_SEGMENT_EMPTY_INITIAL) c.initial = RandomBits(rng, type, false);
        if (wide) {
          c.sizes = {3000, 8};
        } else {
          c.axis = 1;
          c.sizes = {2, 3000, 3};
        }
        SetLengths(c, lengths, wide ? 1 : 2);
        c.values.resize(Count(c.sizes));
        for (auto& v : c.values) v = RandomBits(rng, type, denormals);
        if (f == VKDML_SEGMENT_REDUCE_FUNCTION_PROD)  // mostly +-1, so products stay finite
          for (auto& v : c.values)
            if (rng.P(0.98))
              v = type == DML_TENSOR_DATA_TYPE_FLOAT64   ? ToBits(rng.P(0.5) ? 1.0 : -1.0)
                  : type == DML_TENSOR_DATA_TYPE_FLOAT16 ? (rng.P(0.5) ? 0x3C00 : 0xBC00)
                                                         : ToBits(rng.P(0.5) ? 1.0f : -1.0f);
        INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << c.sorted);
        RunCase(c);
      }
}

// Float32 sums and means of long segments streamed (glsl/segment_reduce.comp: streamTile; where
// the device may flush denormals, each tile in the device's additions and folded again exactly
// where a value or the fold so far is a denormal or a normal below 2^-102): plain values (every
// tile kept), one value in each column of a long segment 2^-120 or a denormal (its tile folded
// again, the tiles around it kept), and an initial value that is a denormal; either sign of
// zero in each; one column and 4 at a time.
TEST_CASE_METHOD(Fixture, "Segment reductions: long float sums streamed fast or exactly",
                 "[segment]") {
  const bool denormals = KeepsDenormals32();
  const std::vector<UINT> lengths = {5, 1100, 0, 700, 257};
  int n = 0;
  for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_SUM, VKDML_SEGMENT_REDUCE_FUNCTION_MEAN})
    for (int values = 0; values < 3; ++values)
      for (bool wide : {false, true}) {
        Rng rng(BaseSeed() ^ (0x57EF + 7919 * n++));
        SegCase c;
        c.type = DML_TENSOR_DATA_TYPE_FLOAT32;
        c.f = f;
        c.sorted = rng.P(0.5);
        c.indexType = IndexTypes()[rng.U(0, 3)];
        c.sizes = wide ? std::vector<UINT>{2062, 8} : std::vector<UINT>{2062, 3};
        SetLengths(c, lengths, 1);
        const UINT columns = c.sizes[1];
        c.values.resize(Count(c.sizes));
        for (auto& v : c.values) v = RandomBits(rng, c.type, false, false);
        if (values == 1)  // a tiny value at a random row of each column of each long segment
          for (UINT s = 0, start = 0; s < lengths.size(); start += lengths[s++])
            for (UINT k = 0; k < columns && lengths[s] > 256; ++k) {
              const UINT r = start + UINT(rng.U(0, lengths[s] - 1));
              const float tiny = denormals && rng.P(0.5) ? 0x1.8p-140f : 0x1.4p-120f;
              c.values[UINT64(r) * columns + k] = ToBits(rng.P(0.5) ? tiny : -tiny);
            }
        if (values == 2) {
          c.empty = VKDML_SEGMENT_EMPTY_INITIAL;
          c.initial = ToBits(denormals ? -0x1p-140f : -0x1p-110f);
        }
        INFO("function " << UINT(f) << ", values " << values << ", columns " << columns);
        RunCase(c);
      }
}

// Which steps the long path takes (GPU-free): on a GPU (loops unbounded) MAX and integer SUM of
// more rows than VKDML_SEGMENT_LONG_ROWS take the fold (listing long segments) and the chunks'
// stage (indirect; the last chunk of a segment to arrive combines them); float SUM, MEAN and PROD
// stream (the fold, then a workgroup per listed element); rows too few to make a long segment keep
// the one fold. Where loops are bounded, the long path needs every element to fit the list and a
// chunk's (the stream: a segment's) rows to fit a dispatch: past that, the fold's dispatches as
// before.
TEST_CASE("Kernels: segment reductions' long path", "[segment][kernels]") {
  using vkdml::detail::Capabilities;
  Capabilities gpu;
  gpu.maxGroups = 65535;
  Capabilities cpu = gpu;
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu.maxLoop = 16384;
  const auto choose = [](const SegCase& c, const Capabilities& caps) {
    SegBuilt b;
    Build(c, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, 0, caps, &set).ok());
    return set;
  };
  const auto stages = [](const vkdml::detail::KernelSet& set) {
    std::vector<UINT> s;
    for (const auto& step : set.steps) {
      if (step.plain.module.rfind("segment_w", 0) != 0) continue;
      s.push_back(step.plain.begin * 10 + step.plain.indirect);
    }
    return s;
  };
  // (The chunks' stage combines too: its last chunk to arrive.)
  const std::vector<UINT> longPath = {VKDML_SEGMENT_STAGE_FOLD * 10,
                                      VKDML_SEGMENT_STAGE_CHUNKS * 10 + 1};
  const std::vector<UINT> stream = longPath;
  SegCase c;
  c.sizes = {100000, 128};
  c.segments = 4;
  c.indices = {0, 10, 50000, 99999, 100000};
  for (bool sorted : {false, true}) {
    c.sorted = sorted;
    if (sorted) SetLengths(c, {10, 49990, 49999, 1}, 1);
    for (auto type :
         {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_DATA_TYPE_FLOAT16})
      for (auto f : kFunctions) {
        c.type = type;
        c.f = f;
        INFO("type " << UINT(type) << ", function " << UINT(f) << ", sorted " << sorted);
        const vkdml::detail::KernelSet set = choose(c, gpu);
        if (Regroupable(type, f)) {
          CHECK(stages(set) == longPath);
          // The count, command 0 and the arrivals' counts of each entry.
          CHECK(set.dispatchWords ==
                VKDML_SEGMENT_ARRIVALS + set.steps[1].plain.end * VKDML_SEGMENT_ARRIVAL_WORDS);
          CHECK(set.steps[1].plain.end > 0);  // the list's capacity
          CHECK(set.steps[1].plain.end <= 100000 * 128);
          // 4 columns at a time: 4 times the words an entry, a quarter of the entries.
          if (set.steps[1].hasWide) CHECK(set.steps[1].wide.end <= set.steps[1].plain.end);
        } else {  // the stream: a workgroup per listed element (command 0)
          CHECK(stages(set) == stream);
          CHECK(set.dispatchWords == VKDML_BAG_COMMAND(1));
          CHECK(set.steps[1].plain.end == 4 * 128);  // every element fits the list
          CHECK(set.partialWords == 4 * 128 * VKDML_SEGMENT_LIST_WORDS);
        }
      }
  }
  c.type = DML_TENSOR_DATA_TYPE_FLOAT32;
  c.f = VKDML_SEGMENT_REDUCE_FUNCTION_MAX;
  c.sorted = false;
  // Bounded loops: 4 x 128 output elements fit the list, and a chunk's rows (100,000 / 256) a
  // dispatch; 4 x 4096 do not, nor do a chunk's 2,000,000 / 256 rows: the fold's dispatches.
  c.indices = {0, 10, 50000, 99999, 100000};
  CHECK(stages(choose(c, cpu)) == longPath);
  c.sizes = {100000, 4096};
  std::vector<UINT> folds = stages(choose(c, cpu));
  CHECK(folds.size() > 3);
  CHECK(folds[0] == 0);
  CHECK(folds[1] == 2);  // the second fold's rows, from command 1 (bag_dispatches)
  c.sizes = {2000000, 1};
  c.indices = {0, 10, 50000, 99999, 2000000};
  folds = stages(choose(c, cpu));
  CHECK(folds.size() > 3);
  CHECK(folds[0] == 0);
  // A float sum streams where a segment's rows fit a dispatch (3,000 of 4,096 here), else the
  // fold's dispatches.
  c.f = VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
  c.sizes = {3000, 3};
  c.indices = {0, 10, 500, 2999, 3000};
  CHECK(stages(choose(c, cpu)) == stream);
  c.sizes = {100000, 3};
  c.indices = {0, 10, 50000, 99999, 100000};
  folds = stages(choose(c, cpu));
  CHECK(folds.size() > 3);
  CHECK(folds[0] == 0);
  CHECK(folds[1] == 2);
  // More long elements than the list holds: on GPUs the fold folds those past it itself.
  c.f = VKDML_SEGMENT_REDUCE_FUNCTION_MAX;
  c.sizes = {600, 1200};
  c.indices = {0, 300, 600};
  {
    const vkdml::detail::KernelSet set = choose(c, gpu);
    CHECK(stages(set) == longPath);
    CHECK(set.steps[0].plain.end < 2 * 1200);
    CHECK(set.steps[0].hasWide);
    CHECK(set.steps[0].wide.end < 2 * 1200 / 4);
  }
  // No segment can be long: the one fold, no list.
  for (auto f : {VKDML_SEGMENT_REDUCE_FUNCTION_SUM, VKDML_SEGMENT_REDUCE_FUNCTION_MAX}) {
    c.f = f;
    c.sizes = {VKDML_SEGMENT_LONG_ROWS, 128};
    c.indices = {0, 10, 50, 100, VKDML_SEGMENT_LONG_ROWS};
    const vkdml::detail::KernelSet set = choose(c, gpu);
    CHECK(stages(set) == std::vector<UINT>{0});
    CHECK(set.steps[0].plain.end == 0);
    CHECK(set.dispatchWords == 0);
  }
}

// Which fold takes a segment reduction (GPU-free): 4 columns an invocation ("segment_w4v", 16-byte
// loads and stores, its bindings on 16 bytes) for 4-byte values but ARGMIN's and ARGMAX's rows
// whose columns are contiguous, a multiple of 4 of them, and whose rows start on 16 bytes; else
// the column an invocation fold ("segment_w4", "segment_w8") alone. Keyed on the element size:
// float32 and int32 alike, float SUM's module the device's float arithmetic's ("_w": float64
// beside float32 that may flush denormals, as on NVIDIA).
TEST_CASE("Kernels: segment reductions' four-column fold", "[segment][kernels]") {
  vkdml::detail::Capabilities gpu;
  gpu.maxGroups = 65535;
  gpu.float64 = gpu.float64Elements = true;
  struct Want {
    DML_TENSOR_DATA_TYPE type;
    VKDML_SEGMENT_REDUCE_FUNCTION f;
    UINT columns;
    std::vector<UINT> strides;  // InputTensor's, in elements (empty: packed)
    DML_TENSOR_DATA_TYPE indexType;
    const char* wide;  // the wide fold's module, or "" for none
    const char* plain;
  };
  const auto f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  const auto i64 = DML_TENSOR_DATA_TYPE_INT64, f16 = DML_TENSOR_DATA_TYPE_FLOAT16;
  const auto f64 = DML_TENSOR_DATA_TYPE_FLOAT64;
  const auto sum = VKDML_SEGMENT_REDUCE_FUNCTION_SUM, max = VKDML_SEGMENT_REDUCE_FUNCTION_MAX;
  const auto mean = VKDML_SEGMENT_REDUCE_FUNCTION_MEAN;
  const Want wants[] = {
      {f32, sum, 128, {}, i64, "segment_w4v_i64_w", "segment_w4_i64_w"},
      {f32, mean, 128, {}, i32, "segment_w4v_i32_w", "segment_w4_i32_w"},
      {f32, max, 128, {}, i64, "segment_w4v_i64", "segment_w4_i64"},
      {i32, sum, 8, {}, i64, "segment_w4v_i64", "segment_w4_i64"},
      {f32, VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX, 128, {}, i64, "", "segment_w4_i64"},
      {f16, sum, 128, {}, i64, "", "segment_w4_i64_w"},
      {f64, max, 128, {}, i64, "", "segment_w8_i64_f64"},
      {f32, sum, 130, {}, i64, "", "segment_w4_i64_w"},
      // Columns 8 bytes apart; rows 516 bytes apart (not a multiple of 16); rows 528 apart.
      {f32, sum, 128, {256, 2}, i64, "", "segment_w4_i64_w"},
      {f32, sum, 128, {129, 1}, i64, "", "segment_w4_i64_w"},
      {f32, sum, 128, {132, 1}, i64, "segment_w4v_i64_w", "segment_w4_i64_w"}};
  for (const Want& w : wants) {
    SegCase c;
    c.type = w.type;
    c.f = w.f;
    c.indexType = w.indexType;
    c.sizes = {200, w.columns};
    c.segments = 3;
    c.indices = {0, 10, 150, 200};
    c.inStrides = w.strides;
    SegBuilt b;
    Build(c, &b);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(b.op, &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, 0, gpu, &set).ok());
    INFO("type " << UINT(w.type) << ", function " << UINT(w.f) << ", columns " << w.columns
                 << ", wide " << w.wide);
    REQUIRE(set.steps.size() == 1);  // 200 rows: no long path, loops unbounded: one fold
    const auto& step = set.steps[0];
    CHECK(step.plain.module == w.plain);
    CHECK(step.hasWide == (*w.wide != 0));
    if (step.hasWide) {
      CHECK(step.wide.module == w.wide);
      CHECK(step.wide.align == 16);
    }
  }
}
