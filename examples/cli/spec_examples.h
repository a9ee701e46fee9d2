// The examples of the operator pages (shared/spec), written once as data: GatherND's two,
// GatherND1's two, GatherElements' and ScatterND's, with the outputs the pages give.
// `vkdml demo` (demo.cpp) runs and prints them; the library's tests (test/test_spec_examples.cpp)
// check them on every index type and execution path.
//
// Data is FLOAT32. The pages' indices are whole numbers that every index type holds; the demo
// runs them as UINT32. Where a page is read differently from how it is printed:
// - GatherElements: the page gives the output type as UINT32; it is the input's, FLOAT32
//   (spec/README.md).
// - ScatterND: the page's indices are FLOAT32 and its ranks differ. It is read in ONNX shapes,
//   input {8}, indices {4,1}, updates {4}, padded to DimensionCount 2 with leading 1s.
#pragma once

#include <cstdint>
#include <vector>

#include "vkdml/dml.h"

namespace spec_examples {

// One tensor of an example: its Sizes and its elements in row-major order.
template <typename T>
struct PageTensor {
  std::vector<vkdml::UINT> sizes;
  std::vector<T> values;
};

struct Example {
  const char* title;  // the page's heading
  vkdml::DML_OPERATOR_TYPE type;
  // InputDimensionCount, IndicesDimensionCount, BatchDimensionCount (GatherND, GatherND1,
  // ScatterND: those the operator has), Axis (GatherElements); the rest 0.
  vkdml::UINT inputDims, indicesDims, batchDims, axis;
  PageTensor<float> input;
  PageTensor<int64_t> indices;
  PageTensor<float> updates;  // ScatterND only
  PageTensor<float> output;   // the page's output
};

// One line per field of Example (clang-format would give each number a line of its own).
// clang-format off
inline const Example kGatherNDExample1 = {
    "GatherND example 1: 1D remapping",
    vkdml::DML_OPERATOR_GATHER_ND,
    2, 2, 0, 0,
    {{2, 2}, {0, 1, 2, 3}},
    {{2, 1}, {1, 0}},
    {},
    {{2, 2}, {2, 3, 0, 1}}};

inline const Example kGatherNDExample2 = {
    "GatherND example 2: 2D remapping",
    vkdml::DML_OPERATOR_GATHER_ND,
    3, 2, 0, 0,
    {{1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}},
    {{1, 1, 2, 2}, {0, 1, 1, 0}},
    {},
    {{1, 1, 2, 2}, {2, 3, 4, 5}}};

inline const Example kGatherND1Example1 = {
    "GatherND1 example 1: 1D remapping",
    vkdml::DML_OPERATOR_GATHER_ND1,
    2, 2, 0, 0,
    {{2, 2}, {0, 1, 2, 3}},
    {{2, 1}, {1, 0}},
    {},
    {{2, 2}, {2, 3, 0, 1}}};

inline const Example kGatherND1Example2 = {
    "GatherND1 example 2: 2D remapping with batch count",
    vkdml::DML_OPERATOR_GATHER_ND1,
    3, 3, 1, 0,
    {{1, 3, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {{1, 3, 2, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0}},
    {},
    {{1, 1, 3, 2}, {0, 3, 7, 4, 9, 10}}};

inline const Example kGatherElementsExample = {
    "GatherElements example",
    vkdml::DML_OPERATOR_GATHER_ELEMENTS,
    0, 0, 0, 0,
    {{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}},
    {{2, 3}, {1, 2, 0, 2, 0, 0}},
    {},
    {{2, 3}, {4, 8, 3, 7, 2, 3}}};

inline const Example kScatterNDExample = {
    "ScatterND example",
    vkdml::DML_OPERATOR_SCATTER_ND,
    1, 2, 0, 0,
    {{1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}},
    {{4, 1}, {4, 3, 1, 7}},
    {{1, 4}, {9, 10, 11, 12}},
    {{1, 8}, {1, 11, 3, 10, 9, 6, 7, 12}}};
// clang-format on

// Every example, in the pages' order.
inline const Example* const kAll[] = {&kGatherNDExample1,      &kGatherNDExample2,
                                      &kGatherND1Example1,     &kGatherND1Example2,
                                      &kGatherElementsExample, &kScatterNDExample};

}  // namespace spec_examples
