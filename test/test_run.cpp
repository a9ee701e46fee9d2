// Device::Run records its commands once per operator and arena, then replays them: each call
// must still see its own inputs, and switching operators or arena sizes must re-record.
#include "test_util.h"

using namespace vt;

namespace {

// A compiled GatherElements over n floats along axis 0, and a host-side call of it.
struct Gather {
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  UINT n;

  explicit Gather(UINT count) : n(count) {
    OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_UINT32, {n}),
                                         TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}), 0);
    REQUIRE(Dev().CreateOperator(spec.Desc(), &op).ok());
    REQUIRE(Dev().CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled).ok());
  }

  // Runs with input[i] = seed + i and indices reversed; checks every output element.
  void RunAndCheck(float seed) {
    std::vector<float> in(n), out(n, -1.0f);
    std::vector<uint32_t> idx(n);
    for (UINT i = 0; i < n; ++i) {
      in[i] = seed + float(i);
      idx[i] = n - 1 - i;
    }
    Result r = Dev().Run(*compiled, {in.data(), idx.data()}, {out.data()});
    INFO("n = " << n << ", seed = " << seed << ": " << Str(r));
    REQUIRE(r.ok());
    UINT wrong = 0;
    for (UINT i = 0; i < n; ++i) wrong += out[i] != in[n - 1 - i];
    CHECK(wrong == 0);
  }
};

}  // namespace

TEST_CASE_METHOD(Fixture, "Run: replayed commands see each call's data", "[run]") {
  Gather small(1000), other(777), large(200000);  // large: past the 256 KiB direct arena
  for (float seed : {1.0f, 5000.0f, -3.0f}) small.RunAndCheck(seed);
  other.RunAndCheck(7.0f);  // another operator re-records
  small.RunAndCheck(11.0f);
  large.RunAndCheck(13.0f);  // a bigger arena: staged through device memory
  large.RunAndCheck(17.0f);
  small.RunAndCheck(19.0f);  // back to direct in the grown arena
  other.RunAndCheck(23.0f);
  RequireNoValidationMessages();
}

TEST_CASE_METHOD(Fixture, "Run: an operator destroyed and remade is not mistaken for its replay",
                 "[run]") {
  for (int round = 0; round < 3; ++round) {
    // A fresh operator may reuse the last one's address; Run must still re-record.
    Gather g(300 + 100 * round);
    g.RunAndCheck(float(round));
    g.RunAndCheck(float(round) + 0.5f);
  }
  RequireNoValidationMessages();
}
