// Every example of the four operator pages (shared/spec) and of DirectML's and ONNX's Gather and
// ScatterElements pages, with the outputs the pages give, on every index type; and the pages'
// size-formula examples as validation successes. The four pages' examples are data in
// examples/cli/spec_examples.h, which `vkdml demo` shows.
#include <catch2/catch.hpp>

#include "harness.h"
#include "spec_examples.h"
#include "test_util.h"

using namespace vt;

namespace {

const DML_TENSOR_DATA_TYPE F32 = DML_TENSOR_DATA_TYPE_FLOAT32;

std::vector<float> Iota(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + float(i);
  return v;
}

// Checks the example: the reference agrees with the page, and so does the library on all paths.
void CheckExample(OpSpec& spec, const std::vector<Bytes>& inputs, const std::vector<float>& page) {
  const Bytes expected = ToBytes(page, spec.Output().Total());
  REQUIRE(expected.size() == spec.Output().Total());
  Bytes refOut(expected.size(), 0);
  ref::IndexError err = spec.Reference(inputs, &refOut);
  REQUIRE_FALSE(err.found);
  REQUIRE(refOut == expected);  // the reference reads the page the same way
  CheckAllPaths(spec, inputs, expected, Poisoned(expected.size()));
}

// The operator pages' examples (spec_examples.h): FLOAT32 data, indices of the test's type.
using spec_examples::Example;

TensorDesc Data(const spec_examples::PageTensor<float>& t) {
  return TensorDesc(F32, t.sizes);
}

TensorDesc Indices(const Example& ex, DML_TENSOR_DATA_TYPE it) {
  return TensorDesc(it, ex.indices.sizes);
}

// CheckExample on the example's input, indices (as spec's IndicesTensor) and updates.
void CheckExample(OpSpec& spec, const Example& ex) {
  std::vector<Bytes> inputs = {
      ToBytes(ex.input.values),
      IndexBytes(spec.tensors[1].Type(), ex.indices.values, spec.tensors[1].Total())};
  if (spec.InputCount() == 3) inputs.push_back(ToBytes(ex.updates.values));
  CheckExample(spec, inputs, ex.output.values);
}

}  // namespace

TEST_CASE_METHOD(Fixture, "GatherND example 1: 1D remapping", "[spec][gather_nd]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  const Example& ex = spec_examples::kGatherNDExample1;
  OpSpec spec = OpSpec::GatherND(Data(ex.input), Indices(ex, it), Data(ex.output), ex.inputDims,
                                 ex.indicesDims);
  CheckExample(spec, ex);
}

TEST_CASE_METHOD(Fixture, "GatherND example 2: 2D remapping", "[spec][gather_nd]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  const Example& ex = spec_examples::kGatherNDExample2;
  OpSpec spec = OpSpec::GatherND(Data(ex.input), Indices(ex, it), Data(ex.output), ex.inputDims,
                                 ex.indicesDims);
  CheckExample(spec, ex);
}

TEST_CASE_METHOD(Fixture, "GatherND1 example 1: 1D remapping", "[spec][gather_nd1]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  const Example& ex = spec_examples::kGatherND1Example1;
  OpSpec spec = OpSpec::GatherND1(Data(ex.input), Indices(ex, it), Data(ex.output), ex.inputDims,
                                  ex.indicesDims, ex.batchDims);
  CheckExample(spec, ex);
}

TEST_CASE_METHOD(Fixture, "GatherND1 example 2: 2D remapping with batch count",
                 "[spec][gather_nd1]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  const Example& ex = spec_examples::kGatherND1Example2;
  OpSpec spec = OpSpec::GatherND1(Data(ex.input), Indices(ex, it), Data(ex.output), ex.inputDims,
                                  ex.indicesDims, ex.batchDims);
  CheckExample(spec, ex);
}

TEST_CASE_METHOD(Fixture, "GatherElements example (axis 0)", "[spec][gather_elements]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  // The page gives the output type as UINT32; it is the input's, FLOAT32 (spec/README.md).
  const Example& ex = spec_examples::kGatherElementsExample;
  OpSpec spec = OpSpec::GatherElements(Data(ex.input), Indices(ex, it), Data(ex.output), ex.axis);
  CheckExample(spec, ex);
}

TEST_CASE_METHOD(Fixture, "ScatterND example (ONNX shapes padded to equal rank)",
                 "[spec][scatter_nd]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  // Input {8}, indices {4,1}, updates {4}: DimensionCount 2 with leading 1s.
  const Example& ex = spec_examples::kScatterNDExample;
  OpSpec spec = OpSpec::ScatterND(Data(ex.input), Indices(ex, it), Data(ex.updates),
                                  Data(ex.output), ex.inputDims, ex.indicesDims);
  CheckExample(spec, ex);
}

// ScatterElements has no page in shared/spec. These are the 1-D example of DirectML's
// DML_SCATTER_OPERATOR_DESC page and the two examples of ONNX's ScatterElements page.
TEST_CASE_METHOD(Fixture, "ScatterElements examples (DirectML's 1-D, ONNX's two)",
                 "[spec][scatter_elements]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  SECTION("DirectML 1-D: indices {3,1,3,0} name element 3 twice") {
    // The page prints 7 at element 3; it also says either colliding write may win.
    TensorDesc input(F32, {5}), indices(it, {4}), updates(F32, {4}), output(F32, {5});
    OpSpec spec = OpSpec::ScatterElements(input, indices, updates, output, 0);
    const std::vector<Bytes> inputs = {ToBytes(Iota(5, 0)),
                                       IndexBytes(it, {3, 1, 3, 0}, indices.Total()),
                                       ToBytes(std::vector<float>{5, 6, 7, 8})};
    for (Path path : {Path::Record, Path::Run}) {
      ExecOptions opts;
      opts.path = path;
      ExecResult res = Execute(spec, inputs, {Poisoned(output.Total())}, opts);
      REQUIRE(res.runResult.ok());
      const Bytes& got = res.outputs[0];
      INFO("output " << DiffBytes(got, ToBytes(std::vector<float>{8, 6, 2, 7, 4}), nullptr));
      CHECK((got == ToBytes(std::vector<float>{8, 6, 2, 7, 4}) ||
             got == ToBytes(std::vector<float>{8, 6, 2, 5, 4})));
    }
  }
  SECTION("ONNX example 1: axis 0") {
    TensorDesc input(F32, {3, 3}), indices(it, {2, 3}), updates(F32, {2, 3}), output(F32, {3, 3});
    OpSpec spec = OpSpec::ScatterElements(input, indices, updates, output, 0);
    CheckExample(
        spec,
        {ToBytes(std::vector<float>(9, 0.f)), IndexBytes(it, {1, 0, 2, 0, 2, 1}, indices.Total()),
         ToBytes(std::vector<float>{1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})},
        {2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f});
  }
  SECTION("ONNX example 2: axis 1") {
    TensorDesc input(F32, {1, 5}), indices(it, {1, 2}), updates(F32, {1, 2}), output(F32, {1, 5});
    OpSpec spec = OpSpec::ScatterElements(input, indices, updates, output, 1);
    CheckExample(spec,
                 {ToBytes(Iota(5, 1)), IndexBytes(it, {1, 3}, indices.Total()),
                  ToBytes(std::vector<float>{1.1f, 2.1f})},
                 {1.0f, 1.1f, 3.0f, 2.1f, 5.0f});
  }
}

// The size formula example of the GatherND / GatherND1 / ScatterND pages:
// input {3,4,5,6,7} (r 5), indices {1,1,1,2,3} (q 3) -> output / updates {1,1,2,6,7}.
TEST_CASE_METHOD(Fixture, "Size formula example {3,4,5,6,7} is valid and runs",
                 "[spec][validation]") {
  const std::vector<UINT> inSizes = {3, 4, 5, 6, 7}, idxSizes = {1, 1, 1, 2, 3};
  const std::vector<UINT> outSizes = {1, 1, 2, 6, 7};
  REQUIRE(ref::GatherNDOutputSizes(inSizes, idxSizes, 5, 3, 0) == outSizes);
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  TensorDesc input(F32, inSizes), indices(it, idxSizes), small(F32, outSizes);
  const Bytes in = ToBytes(Iota(3 * 4 * 5 * 6 * 7, 0));
  const Bytes idx = IndexBytes(it, {2, 3, 4, 0, -1, 1}, indices.Total());

  SECTION("GatherND") {
    OpSpec spec = OpSpec::GatherND(input, indices, small, 5, 3);
    Bytes expected = Poisoned(small.Total());
    spec.Reference({in, idx}, &expected);
    CheckAllPaths(spec, {in, idx}, expected, Poisoned(small.Total()));
  }
  SECTION("GatherND1, BatchDimensionCount 0") {
    OpSpec spec = OpSpec::GatherND1(input, indices, small, 5, 3, 0);
    Bytes expected = Poisoned(small.Total());
    spec.Reference({in, idx}, &expected);
    CheckAllPaths(spec, {in, idx}, expected, Poisoned(small.Total()));
  }
  SECTION("ScatterND (as UpdatesTensor.Sizes)") {
    TensorDesc output(F32, inSizes);
    OpSpec spec = OpSpec::ScatterND(input, indices, small, output, 5, 3);
    const Bytes upd = ToBytes(Iota(2 * 6 * 7, 1000));
    Bytes expected = Poisoned(output.Total());
    spec.Reference({in, idx, upd}, &expected);
    CheckAllPaths(spec, {in, idx, upd}, expected, Poisoned(output.Total()));
  }
}

// The pages' member examples combined: input {1,1,4,6} with InputDimensionCount 3 (actual
// {1,4,6}) and indices {1,4,5,2} with IndicesDimensionCount 3 (a 4x5 array of 2-tuples):
// output = {4,5} + {6} -> {1,4,5,6}.
TEST_CASE_METHOD(Fixture, "Member examples {1,1,4,6} / {1,4,5,2} are valid and run",
                 "[spec][validation]") {
  const std::vector<UINT> inSizes = {1, 1, 4, 6}, idxSizes = {1, 4, 5, 2};
  REQUIRE(ref::GatherNDOutputSizes(inSizes, idxSizes, 3, 3, 0) == std::vector<UINT>{1, 4, 5, 6});
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_UINT32;
  TensorDesc input(F32, inSizes), indices(it, idxSizes), output(F32, {1, 4, 5, 6});
  std::vector<int64_t> values;
  for (int i = 0; i < 20; ++i) {
    values.push_back(0);  // the size-1 dimension
    values.push_back(i % 4);
  }
  const Bytes in = ToBytes(Iota(24, 0)), idx = IndexBytes(it, values, indices.Total());
  OpSpec spec = OpSpec::GatherND(input, indices, output, 3, 3);
  Bytes expected = Poisoned(output.Total());
  REQUIRE_FALSE(spec.Reference({in, idx}, &expected).found);
  // Spot-check the reference against the page's pseudocode: output[i, j, x] = input[0, i', x].
  std::vector<float> out(120);
  std::memcpy(out.data(), expected.data(), 480);
  for (int i = 0; i < 20; ++i)
    for (int x = 0; x < 6; ++x) REQUIRE(out[i * 6 + x] == float((i % 4) * 6 + x));
  CheckAllPaths(spec, {in, idx}, expected, Poisoned(output.Total()));
}

// Gather has no page in shared/spec. These are the five examples of DirectML's
// DML_GATHER_OPERATOR_DESC page, ONNX's two Gather examples and its scalar-indices rows, and the
// page's IndexDimensions member example.
TEST_CASE_METHOD(Fixture, "Gather examples (DirectML's page)", "[spec][gather]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  SECTION("Example 1: 1D remapping") {
    TensorDesc input(F32, {4}), indices(it, {5}), output(F32, {5});
    OpSpec spec = OpSpec::Gather(input, indices, output, 0, 1);
    CheckExample(spec, {ToBytes(Iota(4, 11)), IndexBytes(it, {3, 1, 3, 0, 2}, indices.Total())},
                 {14, 12, 14, 11, 13});
  }
  SECTION("Example 2: 2D output, 1D indices, Axis 0, concatenate rows") {
    TensorDesc input(F32, {3, 2}), indices(it, {1, 4}), output(F32, {4, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 0, 1);
    CheckExample(spec, {ToBytes(Iota(6, 1)), IndexBytes(it, {0, 1, 1, 2}, indices.Total())},
                 {1, 2, 3, 4, 3, 4, 5, 6});
  }
  SECTION("Example 3: 2D, Axis 1, swap columns") {
    // The page gives IndexDimensions 2, which its own rule refuses: input rank 2 +
    // IndexDimensions 2 - 1 = 3 output dimensions, more than DimensionCount 2 (the formula's
    // sizes are {3,1,2}). With IndexDimensions 1 (indices {1,2} holding one actual dimension)
    // the output is the page's.
    TensorDesc input(F32, {3, 2}), indices(it, {1, 2}), output(F32, {3, 2});
    OpSpec asWritten = OpSpec::Gather(input, indices, output, 1, 2);
    std::unique_ptr<Operator> op;
    Result r = Dev().CreateOperator(asWritten.Desc(), &op);
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message ==
          "GATHER: OutputTensor would need 3 dimensions (sizes {3,1,2}: InputTensor's original "
          "rank 2 + IndexDimensions 2 - 1), but its DimensionCount is 2");
    CHECK(ref::GatherOutputSizes({3, 2}, {1, 2}, 1, 2).empty());
    OpSpec spec = OpSpec::Gather(input, indices, output, 1, 1);
    CheckExample(spec, {ToBytes(Iota(6, 1)), IndexBytes(it, {1, 0}, indices.Total())},
                 {2, 1, 4, 3, 6, 5});
  }
  SECTION("Example 4: 2D, Axis 1, nested indices") {
    // The page's heading says Axis 1; its descriptor says Axis 2 of the padded {1,3,3}.
    TensorDesc input(F32, {1, 3, 3}), indices(it, {1, 1, 2}), output(F32, {3, 1, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 2, 2);
    CheckExample(spec, {ToBytes(Iota(9, 1)), IndexBytes(it, {0, 2}, indices.Total())},
                 {1, 3, 4, 6, 7, 9});
  }
  SECTION("Example 5: 2D, Axis 0, nested indices") {
    TensorDesc input(F32, {1, 3, 2}), indices(it, {1, 2, 2}), output(F32, {2, 2, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 1, 2);
    CheckExample(spec, {ToBytes(Iota(6, 1)), IndexBytes(it, {0, 1, 1, 2}, indices.Total())},
                 {1, 2, 3, 4, 3, 4, 5, 6});
  }
}

TEST_CASE_METHOD(Fixture, "Gather examples (ONNX's, as DirectML descriptors)", "[spec][gather]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  SECTION("ONNX example 1: data (3,2), indices (2,2), axis 0 -> (2,2,2)") {
    // DimensionCount 3: the input padded to {1,3,2}, gathered along its Axis 1.
    TensorDesc input(F32, {1, 3, 2}), indices(it, {1, 2, 2}), output(F32, {2, 2, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 1, 2);
    CheckExample(spec,
                 {ToBytes(std::vector<float>{1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}),
                  IndexBytes(it, {0, 1, 1, 2}, indices.Total())},
                 {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f});
  }
  SECTION("ONNX example 2: data (3,3), indices (1,2), axis 1 -> (3,1,2)") {
    TensorDesc input(F32, {1, 3, 3}), indices(it, {1, 1, 2}), output(F32, {3, 1, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 2, 2);
    CheckExample(spec,
                 {ToBytes(std::vector<float>{1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f}),
                  IndexBytes(it, {0, 2}, indices.Total())},
                 {1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f});
  }
  SECTION("ONNX scalar indices: data (P,Q), axis 0 -> (Q), IndexDimensions 0") {
    TensorDesc input(F32, {3, 2}), indices(it, {1, 1}), output(F32, {1, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 0, 0);
    CheckExample(spec, {ToBytes(Iota(6, 0)), IndexBytes(it, {2}, indices.Total())}, {4, 5});
  }
  SECTION("ONNX scalar indices: data (P,Q,R), axis 1 -> (P,R)") {
    // A negative index for the signed types, its unsigned equivalent otherwise.
    const int64_t index = ref::IsSignedIndexType(it) ? -2 : 1;
    TensorDesc input(F32, {2, 3, 2}), indices(it, {1, 1, 1}), output(F32, {1, 2, 2});
    OpSpec spec = OpSpec::Gather(input, indices, output, 1, 0);
    CheckExample(spec, {ToBytes(Iota(12, 0)), IndexBytes(it, {index}, indices.Total())},
                 {2, 3, 8, 9});
  }
}

// The page's IndexDimensions member example: indices {1,1,4,6} with IndexDimensions 3 mean the
// actual indices {1,4,6}. With input {1,1,5,7} along Axis 2 (original rank 2) the output is
// {1,4,6} + {7} = {1,4,6,7}: the size-1 index dimension is kept, the input's leading 1s go.
TEST_CASE_METHOD(Fixture, "Gather member example {1,1,4,6} / IndexDimensions 3 is valid and runs",
                 "[spec][gather][validation]") {
  const std::vector<UINT> inSizes = {1, 1, 5, 7}, idxSizes = {1, 1, 4, 6};
  REQUIRE(ref::GatherOutputSizes(inSizes, idxSizes, 2, 3) == std::vector<UINT>{1, 4, 6, 7});
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  TensorDesc input(F32, inSizes), indices(it, idxSizes), output(F32, {1, 4, 6, 7});
  std::vector<int64_t> values(24);
  for (int i = 0; i < 24; ++i) values[i] = i % 5 - (i % 3 == 0 ? 5 : 0);  // some negative
  const Bytes in = ToBytes(Iota(35, 0)), idx = IndexBytes(it, values, indices.Total());
  OpSpec spec = OpSpec::Gather(input, indices, output, 2, 3);
  Bytes expected = Poisoned(output.Total());
  REQUIRE_FALSE(spec.Reference({in, idx}, &expected).found);
  // Spot-check the reference against the page's pseudocode: output[0, i, j, x] =
  // input[0, 0, indices[0, 0, i, j], x].
  std::vector<float> out(168);
  std::memcpy(out.data(), expected.data(), 672);
  for (int i = 0; i < 24; ++i)
    for (int x = 0; x < 7; ++x)
      REQUIRE(out[i * 7 + x] == float((values[i] < 0 ? values[i] + 5 : values[i]) * 7 + x));
  CheckAllPaths(spec, {in, idx}, expected, Poisoned(output.Total()));
}
