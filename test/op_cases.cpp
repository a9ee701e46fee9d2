#include "op_cases.h"

#include <algorithm>
#include <numeric>

namespace vt {

namespace {

Bytes Floats(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.U(0, 1 << 20)) - float(1 << 19);
  return ToBytes(v);
}

Bytes Ints(Rng& rng, size_t n) {
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = int32_t(rng.U(0, 2000)) - 1000;
  return ToBytes(v);
}

}  // namespace

OpCase MakeOpCase(int kind, Rng& rng) {
  const auto f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32,
             i64 = DML_TENSOR_DATA_TYPE_INT64;
  OpCase c;
  std::vector<int64_t> idx;
  switch (kind) {
    case 0: {  // GatherElements {7, 33} axis 1, indices {7, 20} in [-33, 32]
      c.spec = OpSpec::GatherElements(TensorDesc(f32, {7, 33}), TensorDesc(i64, {7, 20}),
                                      TensorDesc(f32, {7, 20}), 1);
      for (int i = 0; i < 7 * 20; ++i) idx.push_back(int64_t(rng.U(0, 65)) - 33);
      c.inputs = {Floats(rng, 7 * 33)};
      break;
    }
    case 1: {  // GatherND: rows of {16, 9}
      c.spec = OpSpec::GatherND(TensorDesc(f32, {16, 9}), TensorDesc(i32, {12, 1}),
                                TensorDesc(f32, {12, 9}), 2, 2);
      for (int i = 0; i < 12; ++i) idx.push_back(int64_t(rng.U(0, 31)) - 16);
      c.inputs = {Floats(rng, 16 * 9)};
      break;
    }
    case 2: {  // Gather along axis 2 of {1, 3, 10, 5}, indices {1, 1, 1, 4}
      c.spec = OpSpec::Gather(TensorDesc(f32, {1, 3, 10, 5}), TensorDesc(i32, {1, 1, 1, 4}),
                              TensorDesc(f32, {1, 3, 4, 5}), 2, 1);
      for (int i = 0; i < 4; ++i) idx.push_back(int64_t(rng.U(0, 9)));
      c.inputs = {Floats(rng, 3 * 10 * 5)};
      break;
    }
    case 3: {  // ScatterND: 5 distinct rows of {12, 6}
      c.spec = OpSpec::ScatterND(TensorDesc(f32, {12, 6}), TensorDesc(i64, {5, 1}),
                                 TensorDesc(f32, {5, 6}), TensorDesc(f32, {12, 6}), 2, 2);
      std::vector<int64_t> rows(12);
      std::iota(rows.begin(), rows.end(), 0);
      std::shuffle(rows.begin(), rows.end(), rng.g);
      idx.assign(rows.begin(), rows.begin() + 5);
      c.inputs = {Floats(rng, 12 * 6)};
      break;
    }
    case 4: {  // ScatterElements {4, 16} axis 1: each row's indices a permutation; checked
      c.spec = OpSpec::ScatterElements(TensorDesc(f32, {4, 16}), TensorDesc(i32, {4, 16}),
                                       TensorDesc(f32, {4, 16}), TensorDesc(f32, {4, 16}), 1);
      for (int r = 0; r < 4; ++r) {
        std::vector<int64_t> row(16);
        std::iota(row.begin(), row.end(), -16);  // negative: counted from the end
        std::shuffle(row.begin(), row.end(), rng.g);
        idx.insert(idx.end(), row.begin(), row.end());
      }
      c.inputs = {Floats(rng, 64)};
      c.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
      break;
    }
    case 6: {  // GatherND1 with one batch dimension: rows of each of 3 batches of {5, 4}
      c.spec = OpSpec::GatherND1(TensorDesc(f32, {3, 5, 4}), TensorDesc(i64, {3, 2, 1}),
                                 TensorDesc(f32, {3, 2, 4}), 3, 3, 1);
      for (int i = 0; i < 6; ++i) idx.push_back(int64_t(rng.U(0, 9)) - 5);
      c.inputs = {Floats(rng, 3 * 5 * 4)};
      break;
    }
    case 7: {  // ScatterND MAX on INT32 {10}, 30 updates with duplicates
      c.spec = OpSpec::ScatterND(TensorDesc(i32, {1, 10}), TensorDesc(i32, {30, 1}),
                                 TensorDesc(i32, {1, 30}), TensorDesc(i32, {1, 10}), 1, 2);
      c.spec.WithReduce(VKDML_REDUCE_FUNCTION_MAX);
      for (int i = 0; i < 30; ++i) idx.push_back(int64_t(rng.U(0, 9)));
      c.inputs = {Ints(rng, 10)};
      break;
    }
    default: {  // ScatterElements ADD on INT32 {40}, 200 updates with duplicates, deterministic
      c.spec = OpSpec::ScatterElements(TensorDesc(i32, {40}), TensorDesc(i32, {200}),
                                       TensorDesc(i32, {200}), TensorDesc(i32, {40}), 0);
      c.spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      for (int i = 0; i < 200; ++i) idx.push_back(int64_t(rng.U(0, 39)));
      c.inputs = {Ints(rng, 40)};
      c.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
      break;
    }
  }
  c.spec.Desc();
  c.inputs.push_back(IndexBytes(c.spec.tensors[1].Type(), idx, c.spec.tensors[1].Total()));
  if (c.spec.IsScatter()) {
    const TensorDesc& u = c.spec.tensors[2];
    const size_t n = u.Total() / ref::ElementSize(u.Type());
    c.inputs.push_back(u.Type() == i32 ? Ints(rng, n) : Floats(rng, n));
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) c.inputs[i].resize(c.spec.tensors[i].Total(), 0);
  c.expected = Poisoned(c.spec.Output().Total());
  c.spec.Reference(c.inputs, &c.expected);
  return c;
}

std::string RunOpCase(Device& device, OpCase& c) {
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  Result r = device.CreateOperator(c.spec.Desc(), &op);
  if (r) r = device.CompileOperator(*op, c.flags, &compiled);
  std::vector<const void*> in;
  for (const Bytes& b : c.inputs) in.push_back(b.data());
  Bytes out = Poisoned(c.expected.size());
  if (r) r = device.Run(*compiled, in, {out.data()});
  if (!r) return c.spec.ToString() + ": " + Str(r);
  std::string diff = DiffBytes(out, c.expected, nullptr);
  return diff.empty() ? "" : c.spec.ToString() + ": output differs: " + diff;
}

}  // namespace vt
