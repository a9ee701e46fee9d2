// Seeded randomized tests against the reference: every operator x data type x index type,
// DimensionCount 1..8, random strides (padding, transposition, broadcast inputs), offsets,
// memory kinds, both execution paths, in-range / negative / out-of-range / huge indices, and the
// checked mode. Set VKDML_TEST_SEED to replay another seed; the seed of each case is in its
// failure message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "harness.h"
#include "interface.h"
#include "kernels/kernels.h"
#include "test_util.h"

using namespace vt;

namespace {

// Strides of `sizes` whose lines (the last dimension) may be padded: none (packed) with
// probability `packed`, else each line followed by one element now and then, or by 0 to 2 whole
// `unit`s of elements.
std::vector<UINT> PaddedLineStrides(Rng& rng, const std::vector<UINT>& sizes, double packed,
                                    UINT unit) {
  if (rng.P(packed)) return {};
  const UINT D = UINT(sizes.size());
  std::vector<UINT> st(D);
  uint64_t cur = 1;
  for (UINT d = D; d-- > 0;) {
    st[d] = UINT(cur);
    cur *= sizes[d];
    if (d == D - 1) cur += rng.P(0.15) ? 1 : unit * rng.U(0, 2);
  }
  return st;
}

uint64_t Product(const std::vector<UINT>& v) {
  uint64_t p = 1;
  for (UINT x : v) p *= x;
  return p;
}

UINT RandomSize(Rng& rng) {
  const uint64_t x = rng.U(0, 99);
  if (x < 30) return 1;
  if (x < 60) return 2;
  if (x < 85) return 3;
  return rng.Ui(4, 6);
}

// Strides for a tensor: nullptr-packed, explicit packed, padded (gaps between elements and
// rows), transposed + padded, and (inputs only) broadcast dimensions.
std::vector<UINT> RandomStrides(Rng& rng, const std::vector<UINT>& sizes, bool output) {
  const size_t D = sizes.size();
  const uint64_t kind = rng.U(0, 99);
  if (kind < 30) return {};
  if (kind < 40) return ref::PackedStrides(sizes);
  std::vector<size_t> order(D);  // innermost first
  for (size_t i = 0; i < D; ++i) order[i] = D - 1 - i;
  if (kind >= 70) std::shuffle(order.begin(), order.end(), rng.g);
  std::vector<UINT> strides(D);
  uint64_t cur = rng.P(0.3) ? rng.U(2, 3) : 1;
  for (size_t d : order) {
    strides[d] = static_cast<UINT>(cur);
    cur = cur * sizes[d] + (rng.P(0.5) ? rng.U(0, 3) : 0);
  }
  if (!output && kind >= 85) {
    for (size_t d = 0; d < D; ++d)
      if (rng.P(0.4)) strides[d] = 0;
  }
  return strides;
}

// Index encodings: a value that addresses target t of a dimension of size n, in range or not.
struct IndexEncoder {
  DML_TENSOR_DATA_TYPE type;
  double pNegative = 0.25;  // signed types: t - n
  double pOutOfRange = 0;   // t at an end, written out of range

  std::vector<uint64_t> Over(uint64_t n) const {  // > n-1, as bit patterns of the type
    switch (type) {
      case DML_TENSOR_DATA_TYPE_INT32:
        return {n, n + 1, n + 100, 0x7FFFFFFFu, 0x7FFFFFF0u, 0x40000000u};
      case DML_TENSOR_DATA_TYPE_UINT32:
        return {n, n + 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFF0u, 0x80000001u};
      case DML_TENSOR_DATA_TYPE_INT64:
        return {n,
                n + 3,
                1ull << 31,
                1ull << 32,
                (1ull << 32) + 1,
                (1ull << 32) + n / 2,
                0x7FFFFFFFFFFFFFFFull,
                0x7FFFFFFF00000001ull,
                1ull << 40,
                0x00000001FFFFFFFFull};
      default:  // UINT64
        return {n,
                (1ull << 32),
                (1ull << 32) + 1,
                (1ull << 32) + n / 2,
                0xFFFFFFFFFFFFFFFFull,
                1ull << 63,
                0x7FFFFFFFFFFFFFFFull,
                0xFFFFFFFF00000001ull,
                0x8000000000000000ull + 1};
    }
  }
  std::vector<uint64_t> Under(uint64_t n) const {  // < -n, signed types only
    const int64_t sn = static_cast<int64_t>(n);
    if (type == DML_TENSOR_DATA_TYPE_INT32)
      return {uint64_t(-sn - 1), uint64_t(-sn - 100), uint64_t(int64_t(INT32_MIN)),
              uint64_t(int64_t(INT32_MIN) + 1), uint64_t(int64_t(-0x7FFFFFF0))};
    return {uint64_t(-sn - 1),
            uint64_t(std::numeric_limits<int64_t>::min()),
            uint64_t(std::numeric_limits<int64_t>::min() + 1),
            uint64_t(-(int64_t(1) << 32)),
            uint64_t(-(int64_t(1) << 32) + 1),
            uint64_t(-(int64_t(1) << 31) - 1),
            uint64_t(-(int64_t(1) << 40) + 3)};
  }

  // Encodes target t (0 <= t < n). May return an out-of-range value that clamps to t.
  uint64_t Encode(Rng& rng, uint32_t t, uint32_t n) const {
    const bool isSigned = ref::IsSignedIndexType(type);
    if (pOutOfRange > 0 && rng.P(pOutOfRange)) {
      if (t == n - 1 && (!isSigned || t != 0 || rng.P(0.5))) return rng.Pick(Over(n));
      if (t == 0 && isSigned) return rng.Pick(Under(n));
    }
    if (isSigned && rng.P(pNegative)) return static_cast<uint64_t>(int64_t(t) - int64_t(n));
    return t;
  }
  // A random target, pulled to the ends when out-of-range values are wanted.
  uint32_t Target(Rng& rng, uint32_t n) const {
    if (pOutOfRange > 0 && rng.P(pOutOfRange))
      return ref::IsSignedIndexType(type) && rng.P(0.5) ? 0 : n - 1;
    return rng.Ui(0, n - 1);
  }
};

Bytes RandomBytes(Rng& rng, UINT64 size) {
  Bytes b(size);
  for (auto& x : b) x = static_cast<uint8_t>(rng.U(0, 255));
  return b;
}

// Writes indices (logical coordinates in row-major order) with value(coord) into the image.
void FillIndices(const ref::Tensor& t, Bytes* image,
                 const std::function<uint64_t(const ref::Coord&)>& value) {
  ref::ForEachCoord(t.sizes, [&](const ref::Coord& c) {
    ref::WriteIndexU(t.type, image->data() + t.ByteOffset(c), value(c));
  });
}

struct Case {
  OpSpec spec;
  std::vector<Bytes> inputs;
  ExecOptions opts;
};

std::string Describe(const ExecOptions& o) {
  std::ostringstream s;
  s << (o.path == Path::Run ? "Device::Run" : "record") << ", "
    << (o.memory == Buffer::Memory::HostVisible ? "host-visible" : "device-local");
  if (o.path == Path::Record) {
    s << ", offsets";
    for (UINT64 x : o.offsets) s << " " << x;
    s << (o.oneBuffer ? ", one buffer" : ", separate buffers") << ", guard " << o.guard;
    if (o.inPlace) s << ", in place";
  }
  if (o.flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) s << ", CHECK_INDICES";
  return s.str();
}

// Binds the output exactly over input 0 (the scatters' in-place form; the generator gave both
// the same layout).
void MakeInPlace(Case* c) {
  c->opts.inPlace = true;
  c->opts.offsets.back() = c->opts.offsets[0];
  c->spec.Output().buf.GuaranteedBaseOffsetAlignment =
      c->spec.tensors[0].buf.GuaranteedBaseOffsetAlignment;
}

// Random execution options; may also give tensors a GuaranteedBaseOffsetAlignment (which the
// offsets then honour).
ExecOptions RandomOptions(Rng& rng, OpSpec& spec, bool allowRun) {
  ExecOptions o;
  o.path = allowRun && rng.P(0.25) ? Path::Run : Path::Record;
  o.memory = rng.P(0.5) ? Buffer::Memory::HostVisible : Buffer::Memory::DeviceLocal;
  o.oneBuffer = rng.P(0.35);
  o.guard = rng.P(0.3) ? 0 : rng.U(1, 64);
  for (TensorDesc& t : spec.tensors) {
    const UINT64 es = BindingAlignment(t.Type());  // the element size, or 4: packed elements
    const UINT align = rng.P(0.2) ? rng.Pick(std::vector<UINT>{1, 4, 16, 64, 256}) : 0;
    t.buf.GuaranteedBaseOffsetAlignment = align;
    const UINT64 a = std::max<UINT64>(es, align);
    o.offsets.push_back(rng.P(0.4) ? 0 : a * rng.U(1, std::max<UINT64>(1, 80 * es / a)));
  }
  if (o.path == Path::Record && rng.P(0.3)) o.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
  return o;
}

// ----- Case generators -----

// GatherND (b = 0) or GatherND1.
Case GenGatherND(Rng& rng, bool nd1, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
                 const IndexEncoder& enc) {
  for (;;) {
    const UINT r = rng.Ui(1, D), q = rng.Ui(1, D);
    const UINT b = nd1 ? rng.Ui(0, std::min(r, q) - 1) : 0;
    const int kmin = std::max<int>(1, int(q - 1 + r - b) - int(D));
    const UINT k = rng.Ui(kmin, r - b);
    std::vector<UINT> data(r), idx(q);
    for (UINT& s : data) s = RandomSize(rng);
    for (UINT j = 0; j < q - 1; ++j) idx[j] = j < b ? data[j] : RandomSize(rng);
    idx[q - 1] = k;
    std::vector<UINT> inSizes(D - r, 1), idxSizes(D - q, 1);
    inSizes.insert(inSizes.end(), data.begin(), data.end());
    idxSizes.insert(idxSizes.end(), idx.begin(), idx.end());
    const std::vector<UINT> outSizes = ref::GatherNDOutputSizes(inSizes, idxSizes, r, q, b);
    REQUIRE(outSizes.size() == D);
    if (Product(inSizes) > 3000 || Product(outSizes) > 3000 || Product(idxSizes) > 1000) continue;

    Case c;
    TensorDesc in(dt, inSizes, RandomStrides(rng, inSizes, false));
    TensorDesc ix(it, idxSizes, RandomStrides(rng, idxSizes, false));
    TensorDesc out(dt, outSizes, RandomStrides(rng, outSizes, true));
    c.spec = nd1 ? OpSpec::GatherND1(in, ix, out, r, q, b) : OpSpec::GatherND(in, ix, out, r, q);
    Bytes indices = RandomBytes(rng, ix.Total());
    const ref::Tensor ixr = ix.Ref();
    FillIndices(ixr, &indices, [&](const ref::Coord& co) {
      const uint32_t n = inSizes[D - r + b + co[D - 1]];
      return enc.Encode(rng, enc.Target(rng, n), n);
    });
    c.inputs = {RandomBytes(rng, in.Total()), indices};
    return c;
  }
}

Case GenGatherElements(Rng& rng, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
                       const IndexEncoder& enc) {
  for (;;) {
    std::vector<UINT> inSizes(D);
    for (UINT& s : inSizes) s = RandomSize(rng);
    const UINT axis = rng.Ui(0, D - 1);
    std::vector<UINT> idxSizes = inSizes;
    idxSizes[axis] = rng.Ui(1, 5);
    if (Product(inSizes) > 3000 || Product(idxSizes) > 3000) continue;
    Case c;
    TensorDesc in(dt, inSizes, RandomStrides(rng, inSizes, false));
    TensorDesc ix(it, idxSizes, RandomStrides(rng, idxSizes, false));
    TensorDesc out(dt, idxSizes, RandomStrides(rng, idxSizes, true));
    c.spec = OpSpec::GatherElements(in, ix, out, axis);
    Bytes indices = RandomBytes(rng, ix.Total());
    const uint32_t n = inSizes[axis];
    FillIndices(ix.Ref(), &indices,
                [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
    c.inputs = {RandomBytes(rng, in.Total()), indices};
    return c;
  }
}

// Gather along a random Axis with IndexDimensions 0 to D. The input has a random original rank
// (leading 1s beyond it, where Axis may point too), and its sizes may hold more 1s; the indices
// have IndexDimensions sizes after leading 1s. Shapes whose output needs more than D dimensions
// are drawn again.
Case GenGather(Rng& rng, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
               const IndexEncoder& enc) {
  for (;;) {
    const UINT rank = rng.P(0.8) ? rng.Ui(1, D) : D;
    const UINT axis = rng.P(0.9) ? rng.Ui(D - rank, D - 1) : rng.Ui(0, D - 1);
    const UINT m = rng.Ui(0, D);
    std::vector<UINT> inSizes(D, 1), idxSizes(D, 1);
    for (UINT d = D - rank; d < D; ++d) inSizes[d] = RandomSize(rng);
    for (UINT d = D - m; d < D; ++d) idxSizes[d] = RandomSize(rng);
    const std::vector<UINT> outSizes = ref::GatherOutputSizes(inSizes, idxSizes, axis, m);
    if (outSizes.empty()) continue;
    REQUIRE(outSizes.size() == D);
    if (Product(inSizes) > 3000 || Product(outSizes) > 3000 || Product(idxSizes) > 1000) continue;

    Case c;
    TensorDesc in(dt, inSizes, RandomStrides(rng, inSizes, false));
    TensorDesc ix(it, idxSizes, RandomStrides(rng, idxSizes, false));
    TensorDesc out(dt, outSizes, RandomStrides(rng, outSizes, true));
    c.spec = OpSpec::Gather(in, ix, out, axis, m);
    Bytes indices = RandomBytes(rng, ix.Total());
    const uint32_t n = inSizes[axis];
    FillIndices(ix.Ref(), &indices,
                [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
    c.inputs = {RandomBytes(rng, in.Total()), indices};
    return c;
  }
}

// ScatterND. unique: every index tuple names a different target (after clamping), and the
// indices do not broadcast. inPlace: input and output share their layout.
Case GenScatterND(Rng& rng, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
                  const IndexEncoder& enc, bool unique, bool inPlace) {
  for (;;) {
    const UINT r = rng.Ui(1, D), q = rng.Ui(1, D);
    const int kmin = std::max<int>(1, int(q - 1 + r) - int(D));
    const UINT k = rng.Ui(kmin, r);
    std::vector<UINT> data(r), idx(q);
    for (UINT& s : data) s = RandomSize(rng);
    for (UINT j = 0; j + 1 < q; ++j) idx[j] = RandomSize(rng);
    idx[q - 1] = k;
    std::vector<UINT> inSizes(D - r, 1), idxSizes(D - q, 1);
    inSizes.insert(inSizes.end(), data.begin(), data.end());
    idxSizes.insert(idxSizes.end(), idx.begin(), idx.end());
    const std::vector<UINT> updSizes = ref::GatherNDOutputSizes(inSizes, idxSizes, r, q, 0);
    REQUIRE(updSizes.size() == D);
    const uint64_t tuples = Product(idxSizes) / k;
    const uint64_t prefixes = Product(std::vector<UINT>(data.begin(), data.begin() + k));
    if (Product(inSizes) > 3000 || Product(updSizes) > 3000 || Product(idxSizes) > 1000) continue;
    if (unique && tuples > prefixes) continue;

    Case c;
    std::vector<UINT> outStrides = RandomStrides(rng, inSizes, true);
    TensorDesc in(dt, inSizes, inPlace ? outStrides : RandomStrides(rng, inSizes, false));
    TensorDesc ix(
        it, idxSizes,
        unique ? RandomStrides(rng, idxSizes, true) : RandomStrides(rng, idxSizes, false));
    TensorDesc upd(dt, updSizes, RandomStrides(rng, updSizes, false));
    TensorDesc out(dt, inSizes, outStrides);
    c.spec = OpSpec::ScatterND(in, ix, upd, out, r, q);

    // Targets: the tuple's prefix (linear over data[:k]); distinct ones when unique.
    std::vector<uint64_t> targets(tuples);
    if (unique) {
      std::vector<uint64_t> all(prefixes);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng.g);
      std::copy(all.begin(), all.begin() + tuples, targets.begin());
    } else {
      const uint64_t pool = rng.U(1, std::min<uint64_t>(prefixes, 3));  // force collisions
      std::vector<uint64_t> few(pool);
      for (uint64_t& x : few) x = rng.U(0, prefixes - 1);
      for (uint64_t& t : targets) t = rng.P(0.7) ? rng.Pick(few) : rng.U(0, prefixes - 1);
    }
    Bytes indices = RandomBytes(rng, ix.Total());
    const ref::Tensor ixr = ix.Ref();
    uint64_t tuple = 0;
    ref::ForEachCoord(ixr.sizes, [&](const ref::Coord& co) {
      const UINT j = co[D - 1];
      // Digit j of the target, row-major over data[:k].
      uint64_t rest = targets[tuple];
      for (UINT m = k; m-- > j + 1;) rest /= data[m];
      const uint32_t t = static_cast<uint32_t>(rest % data[j]);
      const uint32_t n = data[j];
      uint64_t v;
      if (enc.pOutOfRange > 0 && (t == n - 1 || (t == 0 && ref::IsSignedIndexType(it))))
        v = enc.Encode(rng, t, n);
      else
        v = IndexEncoder{it, enc.pNegative, 0}.Encode(rng, t, n);
      ref::WriteIndexU(it, indices.data() + ixr.ByteOffset(co), v);
      if (j == k - 1) ++tuple;
    });
    c.inputs = {RandomBytes(rng, in.Total()), indices, RandomBytes(rng, upd.Total())};
    return c;
  }
}

// ScatterElements along a random axis, with 1-5 updates per line (the elements that share every
// coordinate but the axis). unique: the updates of a line name different
// targets (after clamping), and the indices do not broadcast. inPlace: input and output share
// their layout.
// longLines: the axis is the last dimension, 256-600 long, with at least a quarter as many
// updates, on 64-100 lines: the shape lib/operators/plan.cpp's Plan::Lines gives to
// glsl/scatter_lines.comp (unless strides make the axis not innermost).
// Duplicate targets (not unique) crowd onto one or two values of a line, unless spread: then
// any value of the line, so a target gets a few updates (as random indices give), not hundreds.
Case GenScatterElements(Rng& rng, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
                        const IndexEncoder& enc, bool unique, bool inPlace, bool longLines,
                        bool spread = false) {
  for (;;) {
    std::vector<UINT> inSizes(D);
    for (UINT& s : inSizes) s = RandomSize(rng);
    UINT axis = rng.Ui(0, D - 1);
    if (longLines) {
      axis = D - 1;
      inSizes[axis] = rng.Ui(256, 600);
      const uint64_t lines = Product(inSizes) / inSizes[axis];
      if (D < 2 || lines > 100) continue;
      inSizes[rng.Ui(0, D - 2)] *= static_cast<UINT>((64 + lines - 1) / lines);  // >= 64 lines
    }
    const UINT n = inSizes[axis];
    const UINT maxUpdates = longLines ? 2 * n : 5;
    std::vector<UINT> idxSizes = inSizes;
    idxSizes[axis] =
        rng.Ui(longLines ? (n + 3) / 4 : 1, unique ? std::min(n, maxUpdates) : maxUpdates);
    const uint64_t limit = longLines ? 120000 : 3000;
    if (Product(inSizes) > limit || Product(idxSizes) > limit) continue;

    Case c;
    std::vector<UINT> outStrides = RandomStrides(rng, inSizes, true);
    TensorDesc in(dt, inSizes, inPlace ? outStrides : RandomStrides(rng, inSizes, false));
    TensorDesc ix(it, idxSizes, RandomStrides(rng, idxSizes, unique));
    TensorDesc upd(dt, idxSizes, RandomStrides(rng, idxSizes, false));
    TensorDesc out(dt, inSizes, outStrides);
    c.spec = OpSpec::ScatterElements(in, ix, upd, out, axis);

    // Each line's targets: a prefix of a permutation when unique, else a few values, repeated.
    std::map<ref::Coord, std::vector<uint32_t>> lines;
    Bytes indices = RandomBytes(rng, ix.Total());
    const ref::Tensor ixr = ix.Ref();
    ref::ForEachCoord(ixr.sizes, [&](const ref::Coord& co) {
      ref::Coord line = co;
      line[axis] = 0;
      std::vector<uint32_t>& targets = lines[line];
      if (targets.empty()) {
        targets.resize(n);
        std::iota(targets.begin(), targets.end(), 0);
        std::shuffle(targets.begin(), targets.end(), rng.g);
        if (!unique && !spread) targets.resize(rng.U(1, std::min<uint64_t>(n, 2)));
      }
      const uint32_t t = unique ? targets[co[axis]] : rng.Pick(targets);
      ref::WriteIndexU(it, indices.data() + ixr.ByteOffset(co), enc.Encode(rng, t, n));
    });
    c.inputs = {RandomBytes(rng, in.Total()), indices, RandomBytes(rng, upd.Total())};
    return c;
  }
}

// The library's switches (lib/kernels/capabilities.h: Switches) VKDML_SCATTER_LINES ("1" sends
// every ScatterElements the shared-memory line kernel can do to it, on lavapipe too),
// VKDML_MAX_GROUPS (workgroups per dispatch) and VKDML_KERNELS ("gpu": the GPU kernels of the
// indexed copy, on lavapipe too), set on the tests' device for the operators compiled meanwhile.
struct ScopedLines : ScopedSwitch {
  explicit ScopedLines(bool on) : ScopedSwitch("VKDML_SCATTER_LINES", on ? "1" : "") {}
};

// The GPU kernels of the indexed copy (glsl/indexed.comp), which CPU devices otherwise leave for
// their own (glsl/indexed_runs.comp): the sweeps give them a share of their cases on lavapipe.
struct ScopedGpuKernels : ScopedSwitch {
  explicit ScopedGpuKernels(bool on) : ScopedSwitch("VKDML_KERNELS", on ? "gpu" : "") {}
};

// Where each update element of a scatter case lands (but those VKDML_OUT_OF_RANGE_MODE_DROP
// skips).
std::vector<ref::ScatterWrite> Writes(Case& c) {
  std::vector<ref::ScatterWrite> writes = c.spec.Writes(c.inputs[1]);
  if (c.spec.wrapped && c.spec.outOfRange == VKDML_OUT_OF_RANGE_MODE_DROP)
    writes.erase(std::remove_if(writes.begin(), writes.end(),
                                [](const ref::ScatterWrite& w) { return !w.inRange; }),
                 writes.end());
  return writes;
}

// Whether the case's executions are checked: by its flags, or by VKDML_OUT_OF_RANGE_MODE_ERROR.
bool Checked(const Case& c) {
  return (c.opts.flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) ||
         (c.spec.wrapped && c.spec.outOfRange == VKDML_OUT_OF_RANGE_MODE_ERROR);
}

// Wraps the case in VKDML_OPERATOR_OUT_OF_RANGE by the seed's bits (the case's own draws stay as
// they were): of `every` picks, two wrap it in FILL (a random value) or DROP, one in ERROR and
// one in an explicit CLAMP; the rest leave it unwrapped.
void MaybeOutOfRange(Case* c, uint64_t seed, uint64_t every) {
  const uint64_t pick = (seed >> 13) % every;
  if (pick >= 4) return;
  if (pick == 0 || pick == 1) {
    DML_SCALAR_UNION fill{};
    Rng rng(seed ^ 0x5DEECE66Dull);
    for (UINT b = 0; b < ref::ElementSize(c->spec.Output().Type()); ++b)
      fill.Bytes[b] = uint8_t(rng.U(0, 255));
    if (c->spec.IsScatter())
      c->spec.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_DROP);
    else
      c->spec.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_FILL, fill);
    return;
  }
  c->spec.WithOutOfRange(pick == 2 ? VKDML_OUT_OF_RANGE_MODE_ERROR : VKDML_OUT_OF_RANGE_MODE_CLAMP);
}

// Runs the case and compares every byte of the output image (poison included) with the
// reference, and the checked mode's status with the reference's first out-of-range index.
// Returns false on a mismatch (of data, status or untouched bytes); *validationClean tells whether
// the validation layer stayed quiet (a failed check otherwise).
bool RunCase(Case& c, bool scatterDuplicates = false, bool* validationClean = nullptr) {
  Bytes initial = c.opts.inPlace ? c.inputs[0] : Poisoned(c.spec.Output().Total());
  Bytes expected = initial;
  const ref::IndexError err = c.spec.Reference(c.inputs, &expected);
  INFO("reference: " << (err.found ? err.message : "all indices in range"));

  ExecResult res = Execute(c.spec, c.inputs, {initial}, c.opts);
  if (validationClean) *validationClean = res.validationClean;
  bool ok = res.outsideClean;
  if (c.opts.path == Path::Run) {
    INFO("Device::Run: " << Str(res.runResult));
    const bool statusOk = Checked(c) && err.found ? res.runResult.status == Status::IndexOutOfRange
                                                  : res.runResult.ok();
    CHECK(statusOk);
    ok = ok && statusOk;
  }
  const Bytes& got = res.outputs[0];
  const ref::Tensor outT = c.spec.Output().Ref();

  if (scatterDuplicates) {
    // Each colliding element must hold one of its candidate updates; the rest is exact.
    std::map<uint64_t, std::vector<uint64_t>> candidates;
    for (const ref::ScatterWrite& w : Writes(c)) candidates[w.outOffset].push_back(w.updOffset);
    const uint32_t es = outT.ElemSize();
    for (const auto& kv : candidates) {
      if (kv.second.size() < 2) continue;
      bool any = false;
      for (uint64_t u : kv.second)
        any = any || std::equal(got.begin() + kv.first, got.begin() + kv.first + es,
                                c.inputs[2].begin() + u);
      INFO("output byte " << kv.first << " is none of its " << kv.second.size()
                          << " colliding updates");
      CHECK(any);
      ok = ok && any;
      std::copy(got.begin() + kv.first, got.begin() + kv.first + es, expected.begin() + kv.first);
    }
  }
  const std::string diff = DiffBytes(got, expected, &outT);
  INFO("output differs from the reference: " << diff);
  CHECK(diff.empty());
  ok = ok && diff.empty();

  if (Checked(c) && c.opts.path == Path::Record) {
    INFO("IndexStatus: " << Str(res.indexStatus));
    if (err.found) {
      CHECK(res.indexStatus.status == Status::IndexOutOfRange);
      CHECK_THAT(res.indexStatus.message, Catch::Matchers::Contains(err.message));
      ok = ok && res.indexStatus.status == Status::IndexOutOfRange &&
           res.indexStatus.message.find(err.message) != std::string::npos;
    } else {
      CHECK(res.indexStatus.ok());
      ok = ok && res.indexStatus.ok();
    }
  } else if (c.opts.path == Path::Record) {
    INFO("IndexStatus of an unchecked run: " << Str(res.indexStatus));
    CHECK(res.indexStatus.ok());
    ok = ok && res.indexStatus.ok();
  }
  return ok;
}

enum class Op { GatherND, GatherND1, GatherElements, ScatterND, ScatterElements, Gather };

Case Generate(Op op, Rng& rng, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
              const IndexEncoder& enc) {
  switch (op) {
    case Op::GatherND:
      return GenGatherND(rng, false, D, dt, it, enc);
    case Op::GatherND1:
      return GenGatherND(rng, true, D, dt, it, enc);
    case Op::GatherElements:
      return GenGatherElements(rng, D, dt, it, enc);
    case Op::ScatterND:
      return GenScatterND(rng, D, dt, it, enc, true, false);
    case Op::ScatterElements:
      return GenScatterElements(rng, D, dt, it, enc, true, false, false);
    case Op::Gather:
      break;
  }
  return GenGather(rng, D, dt, it, enc);
}

// Under VKDML_TEST_LARGE: every compile of the sweep's `runs` cases (one or more each) is
// accounted for, and every case that can be windowed went through the large path's windows, in
// every mode (the deterministic one included, where the sweep has it), but for at most one in 20
// (of a whole sweep) whose index tuple is too wide. Cases whose tensors all fit 16 bytes cannot be
// windowed (harness.h: LargeTally).
void CheckLargeTally(const LargeTally& before, int runs, bool deterministic) {
  const char* testLarge = std::getenv("VKDML_TEST_LARGE");
  if (!testLarge || !*testLarge) return;
  const LargeTally& now = TheLargeTally();
  const int taken = now.taken - before.taken, tiny = now.tiny - before.tiny;
  const int wide = now.tupleWide - before.tupleWide;
  const int compiles = taken + tiny + wide;
  const int below = now.belowSmallest - before.belowSmallest;
  const int ordered = now.deterministic - before.deterministic;
  INFO("large path, " << runs << " cases, " << compiles << " compiles: " << taken
                      << " through windows (" << below << " below every tensor past 16 bytes, "
                      << ordered << " deterministic), " << wide << " with an index tuple too wide, "
                      << tiny << " with no tensor past 16 bytes");
  CHECK(taken > 0);
  CHECK(below > 0);
  CHECK(compiles >= runs);
  if (!SweepIsShared()) CHECK(wide * 20 <= compiles - tiny);  // (a share may hold more)
  CHECK((ordered > 0) == deterministic);
}

void RandomSweep(Op op, uint64_t salt, int perCombination) {
  const uint64_t base = BaseSeed();
  const bool only = SweepReplaysOne();
  int failures = 0, runs = 0, skipped = 0, noisy = 0;
  uint64_t counter = 0;
  const LargeTally large = TheLargeTally();
  for (DML_TENSOR_DATA_TYPE dt : DataTypes()) {
    for (DML_TENSOR_DATA_TYPE it : IndexTypes()) {
      for (int i = 0; i < perCombination; ++i, ++counter) {
        const uint64_t seed = base ^ (salt << 48) ^ (counter * 0x9E3779B97F4A7C15ull);
        Rng rng(seed);
        const UINT D = static_cast<UINT>(1 + (counter + salt) % 8);
        IndexEncoder enc{it};
        enc.pOutOfRange = rng.P(0.5) ? 0.0 : rng.P(0.5) ? 0.05 : 0.3;
        Case c = Generate(op, rng, D, dt, it, enc);
        c.opts = RandomOptions(rng, c.spec, true);
        MaybeOutOfRange(&c, seed, 8);
        if (!SweepRuns(counter)) continue;
        const bool gpuKernels = counter % 3 == 0;
        INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << counter << ")");
        INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts)
                      << (gpuKernels ? ", VKDML_KERNELS=gpu" : ""));
        ScopedGpuKernels kernels(gpuKernels);
        if (!DeviceSupports(dt)) {
          ++skipped;
          std::unique_ptr<Operator> unused;
          Result r = Dev().CreateOperator(c.spec.Desc(), &unused);
          INFO(Str(r));
          CHECK(r.status == Status::Unsupported);
          continue;
        }
        ++runs;
        bool quiet = true;
        if (!RunCase(c, false, &quiet)) ++failures;
        if (!quiet) ++noisy;
        REQUIRE(failures < 8);  // enough to go on; stop the flood
      }
    }
  }
  INFO(runs << " cases, " << skipped << " skipped (type not supported by the device), " << noisy
            << " with validation messages");
  if (!only) CheckLargeTally(large, runs, false);
  CHECK(failures == 0);
  CHECK(noisy == 0);
  CheckSkips(skipped, "cases");
  CHECK((only || runs > 0));
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Random GatherND vs reference", "[random][gather_nd]") {
  RandomSweep(Op::GatherND, 1, 20);
}

TEST_CASE_METHOD(Fixture, "Random GatherND1 vs reference", "[random][gather_nd1]") {
  RandomSweep(Op::GatherND1, 2, 20);
}

TEST_CASE_METHOD(Fixture, "Random GatherElements vs reference", "[random][gather_elements]") {
  RandomSweep(Op::GatherElements, 3, 20);
}

TEST_CASE_METHOD(Fixture, "Random Gather vs reference", "[random][gather]") {
  RandomSweep(Op::Gather, 10, 20);
}

TEST_CASE_METHOD(Fixture, "Random ScatterND (unique targets) vs reference",
                 "[random][scatter_nd]") {
  RandomSweep(Op::ScatterND, 4, 20);
}

TEST_CASE_METHOD(Fixture, "Random ScatterND with duplicate targets", "[random][scatter_nd]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 300; ++i) {
    const uint64_t seed = base ^ (5ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[i % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 3) % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.3;
    Case c = GenScatterND(rng, static_cast<UINT>(1 + i % 8), dt, it, enc, false, false);
    c.opts = RandomOptions(rng, c.spec, true);
    MaybeOutOfRange(&c, seed, 8);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts));
    bool quiet = true;
    if (!RunCase(c, true, &quiet)) ++failures;
    REQUIRE(failures < 8);
  }
}

TEST_CASE_METHOD(Fixture, "Random ScatterND in place (output aliases input)",
                 "[random][scatter_nd]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 330; ++i) {
    const uint64_t seed = base ^ (6ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[i % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[i % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.3;
    Case c = GenScatterND(rng, static_cast<UINT>(1 + i % 8), dt, it, enc, true, true);
    c.opts = RandomOptions(rng, c.spec, false);
    MaybeOutOfRange(&c, seed, 8);
    MakeInPlace(&c);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts));
    bool quiet = true;
    if (!RunCase(c, false, &quiet)) ++failures;
    REQUIRE(failures < 8);
  }
}

TEST_CASE_METHOD(Fixture, "Random ScatterElements (unique targets) vs reference",
                 "[random][scatter_elements]") {
  RandomSweep(Op::ScatterElements, 7, 12);
}

// Duplicates (with collisions forced) and in place, alternating; every other pair of cases
// through the line kernel.
TEST_CASE_METHOD(Fixture, "Random ScatterElements with duplicate targets and in place",
                 "[random][scatter_elements]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 300; ++i) {
    const uint64_t seed = base ^ (8ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[i % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 3) % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.3;
    const bool inPlace = i % 2 == 1;
    Case c =
        GenScatterElements(rng, static_cast<UINT>(1 + i % 8), dt, it, enc, inPlace, inPlace, false);
    c.opts = RandomOptions(rng, c.spec, !inPlace);
    MaybeOutOfRange(&c, seed, 8);
    if (inPlace) MakeInPlace(&c);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    const bool lines = i % 4 >= 2;
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts)
                  << (lines ? ", VKDML_SCATTER_LINES=1" : ""));
    ScopedLines scoped(lines);
    bool quiet = true;
    if (!RunCase(c, !inPlace, &quiet)) ++failures;
    REQUIRE(failures < 8);
  }
}

// Long lines, the shape the shared-memory line kernel is for (forced on, as lavapipe would not
// use it), with every type, duplicates, in place, strides.
TEST_CASE_METHOD(Fixture, "Random ScatterElements on long lines", "[random][scatter_elements]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 88; ++i) {
    const uint64_t seed = base ^ (9ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[i % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 2) % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.1;
    const bool inPlace = i % 4 == 1, unique = i % 4 != 2;
    Case c =
        GenScatterElements(rng, static_cast<UINT>(2 + i % 4), dt, it, enc, unique, inPlace, true);
    c.opts = RandomOptions(rng, c.spec, !inPlace);
    if (inPlace) MakeInPlace(&c);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts));
    ScopedLines scoped(true);
    bool quiet = true;
    if (!RunCase(c, !unique, &quiet)) ++failures;
    REQUIRE(failures < 8);
  }
}

// The elements a case's indexed pass moves: updates for a scatter, the output for a gather.
UINT64 Work(Case& c) {
  const bool scatter =
      c.spec.type == DML_OPERATOR_SCATTER_ND || c.spec.type == DML_OPERATOR_SCATTER_ELEMENTS;
  return (scatter ? c.spec.tensors[2].Ref() : c.spec.Output().Ref()).ElementCount();
}

// Every operator with dispatches capped at one workgroup (VKDML_MAX_GROUPS), so that the
// kernels' grid-stride loops run: each workgroup moves several tiles, or several lines of the
// line kernel (forced on for ScatterElements). Without the cap only tensors of over 65535
// workgroups (or lines) would. With CPU devices' kernels (a third of the cases) the cap splits
// a pass into dispatches that each go on from the run where the last stopped.
TEST_CASE_METHOD(Fixture, "Random cases with few workgroups per dispatch", "[random]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  const Op ops[] = {Op::GatherND,  Op::GatherND1,       Op::GatherElements,
                    Op::ScatterND, Op::ScatterElements, Op::Gather};
  int failures = 0, looped = 0, ran = 0;
  for (int i = 0; i < 180; ++i) {
    const uint64_t seed = base ^ (11ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const Op op = ops[i % 6];
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[(i / 6) % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 2) % 4];
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.2;
    // Drawn again until the work is more than one workgroup's 256 threads (up to 3000).
    // Every other ScatterElements has long lines (at least 64), for the line kernel.
    Case c;
    const bool longLines = op == Op::ScatterElements && (i / 6) % 2 == 0;
    for (int tries = 0; tries < 100; ++tries) {
      c = longLines ? GenScatterElements(rng, static_cast<UINT>(2 + i % 4), dt, it, enc, true,
                                         false, true)
                    : Generate(op, rng, static_cast<UINT>(3 + i % 6), dt, it, enc);
      if (Work(c) > 256) break;
    }
    // Counted over every case, each drawn from its own seed, so that a share of the sweep (a
    // dozen cases in CI's sanitizer run) cannot fall below the floor by its draw alone.
    looped += Work(c) > 256;
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    ++ran;
    c.opts = RandomOptions(rng, c.spec, true);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    const bool gpuKernels = (i / 6) % 3 != 1;  // grid-stride loops; CPU devices' split dispatches
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts) << ", VKDML_MAX_GROUPS=1"
                  << (gpuKernels ? ", VKDML_KERNELS=gpu" : ""));
    ScopedSwitch groups("VKDML_MAX_GROUPS", "1");
    ScopedLines lines(op == Op::ScatterElements);
    ScopedGpuKernels kernels(gpuKernels);
    bool quiet = true;
    if (!RunCase(c, false, &quiet)) ++failures;
    REQUIRE(failures < 8);
  }
  INFO(looped << " of 180 cases have more elements than their one workgroup's threads (" << ran
              << " ran)");
  CHECK(looped * 3 >= 180);
}

// Lines of 1- and 2-byte elements longer than a quarter of the shared memory a line may take
// (48 KiB, or less on the device): the line kernel holds one 4-byte slot per element, so these
// must go to the plain scatter, forced line kernel or not. 13000 elements are past the quarter
// on lavapipe (32 KiB) and on NVIDIA's 48 KiB alike.
TEST_CASE_METHOD(Fixture, "ScatterElements on lines too long for shared memory slots",
                 "[random][scatter_elements]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const UINT L = 13000, n = L / 2;
  for (DML_TENSOR_DATA_TYPE dt : {DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT16}) {
    if (!sweep.Runs(dt)) continue;
    Rng rng(BaseSeed() ^ 0x1010 ^ dt);
    const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
    TensorDesc in(dt, {2, L}), ix(it, {2, n}), upd(dt, {2, n}), out = in;
    Case c;
    c.spec = OpSpec::ScatterElements(in, ix, upd, out, 1);
    std::vector<int64_t> values(2 * n);  // unique targets in each line: j * 7919 mod L
    for (UINT j = 0; j < 2 * n; ++j) values[j] = int64_t((uint64_t(j % n) * 7919) % L);
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                RandomBytes(rng, upd.Total())};
    INFO(DataTypeName(dt));
    ScopedLines lines(true);
    RunCase(c);
  }
}

// ----- Larger tensors: many workgroups -----

TEST_CASE_METHOD(Fixture, "Large GatherND on UINT8 (5M elements)", "[large][gather_nd]") {
  VT_SKIP_UNLESS_SUPPORTED(DML_TENSOR_DATA_TYPE_UINT8);
  Rng rng(BaseSeed() ^ 0x1001);
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  TensorDesc in(DML_TENSOR_DATA_TYPE_UINT8, {4096, 1201}), ix(it, {4099, 1}),
      out(DML_TENSOR_DATA_TYPE_UINT8, {4099, 1201});
  Case c;
  c.spec = OpSpec::GatherND(in, ix, out, 2, 2);
  Bytes indices(ix.Total());
  IndexEncoder enc{it, 0.3, 0.01};
  FillIndices(ix.Ref(), &indices,
              [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, 4096), 4096); });
  c.inputs = {RandomBytes(rng, in.Total()), indices};
  c.opts.memory = Buffer::Memory::HostVisible;
  const UINT64 a = BindingAlignment(DML_TENSOR_DATA_TYPE_UINT8);  // 1, or 4: packed elements
  c.opts.offsets = {3 * a, 12, 5 * a};
  c.opts.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
  RunCase(c);
}

TEST_CASE_METHOD(Fixture, "Large ScatterND in place on UINT8 (5M elements)",
                 "[large][scatter_nd]") {
  VT_SKIP_UNLESS_SUPPORTED(DML_TENSOR_DATA_TYPE_UINT8);
  Rng rng(BaseSeed() ^ 0x1002);
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_UINT64;
  // 60 rows: 72060 updates, more than lib/device/compiled.cpp's Unroll takes one per thread.
  TensorDesc in(DML_TENSOR_DATA_TYPE_UINT8, {4096, 1201}), ix(it, {60, 1}),
      upd(DML_TENSOR_DATA_TYPE_UINT8, {60, 1201}), out = in;
  Case c;
  c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
  std::vector<int64_t> rows(4095);  // 0..4094, so that row 4095 is only reached by clamping
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), rng.g);
  std::vector<int64_t> values(rows.begin(), rows.begin() + 60);
  values[7] = -1;  // UINT64_MAX: clamps to 4095
  c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
              RandomBytes(rng, upd.Total())};
  c.opts.inPlace = true;
  c.opts.offsets = {0, 0, 0, 0};
  c.opts.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
  RunCase(c);
}

TEST_CASE_METHOD(Fixture, "Large GatherElements, strided, on UINT16 and INT64 indices",
                 "[large][gather_elements]") {
  VT_SKIP_UNLESS_SUPPORTED(DML_TENSOR_DATA_TYPE_UINT16);
  Rng rng(BaseSeed() ^ 0x1003);
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  TensorDesc in(DML_TENSOR_DATA_TYPE_UINT16, {600, 500}, {1, 601}), ix(it, {600, 511}),
      out(DML_TENSOR_DATA_TYPE_UINT16, {600, 511}, {513, 1});
  Case c;
  c.spec = OpSpec::GatherElements(in, ix, out, 1);
  Bytes indices(ix.Total());
  IndexEncoder enc{it, 0.3, 0.0};
  FillIndices(ix.Ref(), &indices,
              [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, 500), 500); });
  c.inputs = {RandomBytes(rng, in.Total()), indices};
  c.opts.path = GENERATE(Path::Record, Path::Run);
  RunCase(c);
}

// An embedding lookup: rows of a {2000,256} table for a 3x700 indices array, widened to 16-byte
// vectors (lib/operators/plan.cpp: Plan::Widen) where the strides allow; and the same along the
// last axis, a scattered read per element.
TEST_CASE_METHOD(Fixture, "Large Gather (embedding rows) on FLOAT16 with INT64 indices",
                 "[large][gather]") {
  VT_SKIP_UNLESS_SUPPORTED(DML_TENSOR_DATA_TYPE_FLOAT16);
  Rng rng(BaseSeed() ^ 0x1005);
  const DML_TENSOR_DATA_TYPE dt = DML_TENSOR_DATA_TYPE_FLOAT16, it = DML_TENSOR_DATA_TYPE_INT64;
  const bool lastAxis = GENERATE(false, true);
  const bool padded = GENERATE(false, true);
  INFO((lastAxis ? "axis 2 (columns)" : "axis 1 (rows)") << (padded ? ", padded output" : ""));
  const UINT n = lastAxis ? 256 : 2000;
  TensorDesc in(dt, {1, 2000, 256}), ix(it, {1, 3, 700});
  const std::vector<UINT> outSizes =
      lastAxis ? std::vector<UINT>{2000, 3, 700} : std::vector<UINT>{3, 700, 256};
  REQUIRE(ref::GatherOutputSizes(in.sizes, ix.sizes, lastAxis ? 2 : 1, 2) == outSizes);
  const std::vector<UINT> outStrides =
      padded ? std::vector<UINT>{outSizes[1] * (outSizes[2] + 8), outSizes[2] + 8, 1}
             : std::vector<UINT>{};
  TensorDesc out(dt, outSizes, outStrides);
  Case c;
  c.spec = OpSpec::Gather(in, ix, out, lastAxis ? 2 : 1, 2);
  Bytes indices(ix.Total());
  IndexEncoder enc{it, 0.3, 0.01};
  FillIndices(ix.Ref(), &indices,
              [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
  c.inputs = {RandomBytes(rng, in.Total()), indices};
  c.opts.path = padded ? Path::Record : Path::Run;  // the record path checked
  c.opts.flags = padded ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
  RunCase(c);
}

// GatherElements off the last axis with a wide last dimension takes the striped walk
// (lib/operators/plan.cpp: Plan::Stripe); these shapes reach it for every element size, with and
// without checked mode, and with odd widths that must not.
TEST_CASE_METHOD(Fixture, "GatherElements on an outer axis, wide rows (striped walk)",
                 "[random][gather_elements]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  Rng rng(BaseSeed() ^ 0x1004);
  const DML_TENSOR_DATA_TYPE types[] = {DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT16,
                                        DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT64};
  struct Shape {
    std::vector<UINT> input, indices;
    UINT axis;
    std::vector<UINT> inputStrides;  // empty: packed
  };
  const Shape shapes[] = {{{37, 256}, {41, 256}, 0, {}},
                          {{3, 29, 512}, {3, 5, 512}, 1, {}},
                          {{9, 4, 300}, {2, 4, 300}, 0, {}},  // 300: no whole stripes
                          {{70, 1024}, {70, 1024}, 0, {}},
                          // 8 dimensions that padding keeps from merging: no room for a stripe
                          {{3, 2, 2, 2, 2, 2, 2, 64},
                           {2, 2, 2, 2, 2, 2, 2, 64},
                           0,
                           {5112, 2552, 1272, 632, 312, 152, 72, 1}}};
  for (int k = 0; k < 2 * 4; ++k) {  // every type with each kind of kernels
    const DML_TENSOR_DATA_TYPE type = types[k % 4];
    const bool gpuKernels = k >= 4;
    ScopedGpuKernels kernels(gpuKernels);
    if (!sweep.Runs(type)) continue;
    for (const Shape& sh : shapes) {
      const DML_TENSOR_DATA_TYPE it =
          rng.U(0, 1) ? DML_TENSOR_DATA_TYPE_INT32 : DML_TENSOR_DATA_TYPE_INT64;
      TensorDesc in(type, sh.input, sh.inputStrides), ix(it, sh.indices), out(type, sh.indices);
      Case c;
      c.spec = OpSpec::GatherElements(in, ix, out, sh.axis);
      const UINT n = sh.input[sh.axis];
      Bytes indices(ix.Total());
      IndexEncoder enc{it, 0.2, 0.02};
      FillIndices(ix.Ref(), &indices,
                  [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
      c.inputs = {RandomBytes(rng, in.Total()), indices};
      c.opts.flags = rng.U(0, 1) ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
      INFO(DataTypeName(type) << " input " << sh.input[0] << "x... axis " << sh.axis
                              << (gpuKernels ? ", VKDML_KERNELS=gpu" : ""));
      RunCase(c);
    }
  }
}

// GatherElements and ScatterElements on lines that CPU devices' kernels move a u64vec4 step at
// a time (glsl/indexed_runs.comp, VECTOR; lib/kernels/kernel_runs.cpp: VectorShaped): lines of
// whole steps (32 elements), packed or padded by whole u64vec4s, bindings at 32-byte offsets, along
// the last axis or (gathers: striped) an outer one; with every type, duplicates, in place, checked
// mode, and dispatches capped at one workgroup. A share of the cases misses one condition (a pad or
// an offset off the u64vec4) and goes an element at a time instead.
TEST_CASE_METHOD(Fixture, "Random GatherElements and ScatterElements on aligned lines",
                 "[random][gather_elements][scatter_elements]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 176; ++i) {
    const uint64_t seed = base ^ (12ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = DataTypes()[i % DataTypes().size()];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 11) % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    const bool scatter = (i / 44) % 2 == 1, unique = !scatter || rng.P(0.5);
    const bool inPlace = scatter && rng.P(0.4);
    const UINT D = 2 + UINT(i % 3), last = D - 1;
    const UINT axis = rng.P(0.6) ? last : rng.Ui(0, D - 2);
    std::vector<UINT> inSizes(D), idxSizes;
    for (UINT& s : inSizes) s = rng.Ui(1, 4);
    inSizes[last] = 32 * rng.Ui(1, axis == last ? 8 : 20);
    if (axis != last) inSizes[axis] = rng.Ui(1, 9);
    idxSizes = inSizes;
    const UINT n = inSizes[axis];
    if (axis == last)  // a whole number of steps of updates (or output elements) per line
      idxSizes[last] = 32 * rng.Ui(1, unique && scatter ? n / 32 : 4);
    else
      idxSizes[axis] = rng.Ui(1, unique && scatter ? n : 5);
    // Strides: packed, or each line padded by whole u64vec4s of any element (or, now and then, by
    // one element).
    const auto strides = [&](const std::vector<UINT>& sizes) {
      return PaddedLineStrides(rng, sizes, 0.4, 32);
    };
    Case c;
    std::vector<UINT> outStrides = strides(scatter ? inSizes : idxSizes);
    TensorDesc in(dt, inSizes, inPlace ? outStrides : strides(inSizes));
    TensorDesc ix(it, idxSizes, strides(idxSizes));
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.1;
    Bytes indices = RandomBytes(rng, ix.Total());
    std::map<ref::Coord, std::vector<uint32_t>> lines;  // scatters: each line's targets
    FillIndices(ix.Ref(), &indices, [&](const ref::Coord& co) {
      if (!scatter || !unique) return enc.Encode(rng, enc.Target(rng, n), n);
      ref::Coord line = co;
      line[axis] = 0;
      std::vector<uint32_t>& targets = lines[line];
      if (targets.empty()) {
        targets.resize(n);
        std::iota(targets.begin(), targets.end(), 0);
        std::shuffle(targets.begin(), targets.end(), rng.g);
      }
      return enc.Encode(rng, targets[co[axis]], n);
    });
    if (scatter) {
      TensorDesc upd(dt, idxSizes, strides(idxSizes)), out(dt, inSizes, outStrides);
      c.spec = OpSpec::ScatterElements(in, ix, upd, out, axis);
      c.inputs = {RandomBytes(rng, in.Total()), indices, RandomBytes(rng, upd.Total())};
    } else {
      c.spec = OpSpec::GatherElements(in, ix, TensorDesc(dt, idxSizes, outStrides), axis);
      c.inputs = {RandomBytes(rng, in.Total()), indices};
    }
    c.opts = RandomOptions(rng, c.spec, !inPlace);
    for (UINT64& offset : c.opts.offsets)  // mostly on a u64vec4, for the vector runs
      if (rng.P(0.85)) offset = offset / 32 * 32;
    for (TensorDesc& t : c.spec.tensors) t.buf.GuaranteedBaseOffsetAlignment = 0;
    MaybeOutOfRange(&c, seed, 6);  // the vector runs skipping and filling too
    if (inPlace) MakeInPlace(&c);
    const bool fewGroups = rng.P(0.2);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts)
                  << (fewGroups ? ", VKDML_MAX_GROUPS=1" : ""));
    ScopedSwitch groups("VKDML_MAX_GROUPS", fewGroups ? "1" : "");
    bool quiet = true;
    if (!RunCase(c, !unique, &quiet)) ++failures;
    CHECK(quiet);
    REQUIRE(failures < 8);
  }
}

// GatherElements on the lines GPUs gather a step of indices at a time (glsl/gather_step.comp;
// lib/kernels/kernel_copy.cpp: StepPlan), with the GPU kernels on lavapipe too: 2- and 4-byte
// elements (and, beside them, 1- and 8-byte ones, which never take it), lines of whole steps and
// not (8 elements plus 1 to 7), packed or padded by whole steps or by one element, along the last
// axis or (striped, where the shape allows) an outer one, bindings mostly on 16 bytes,
// out-of-range indices clamped, filled or checked, and now and then one workgroup a dispatch (the
// grid-stride loop). A share misses a condition and goes an element at a time.
TEST_CASE_METHOD(Fixture, "Random GatherElements on GPUs' steps of indices",
                 "[random][gather_elements]") {
  const DML_TENSOR_DATA_TYPE types[] = {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16,
                                        DML_TENSOR_DATA_TYPE_INT32,   DML_TENSOR_DATA_TYPE_UINT16,
                                        DML_TENSOR_DATA_TYPE_INT16,   DML_TENSOR_DATA_TYPE_UINT8,
                                        DML_TENSOR_DATA_TYPE_INT64};
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  int failures = 0;
  for (int i = 0; i < 140; ++i) {
    const uint64_t seed = base ^ (13ull << 48) ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull);
    Rng rng(seed);
    const DML_TENSOR_DATA_TYPE dt = types[i % 7];
    const DML_TENSOR_DATA_TYPE it = IndexTypes()[(i / 7) % 4];
    if (!SweepRuns(uint64_t(i)) || !sweep.Runs(dt)) continue;
    const UINT D = 1 + UINT(i % 4), last = D - 1;
    const UINT axis = D == 1 || rng.P(0.6) ? last : rng.Ui(0, D - 2);
    std::vector<UINT> inSizes(D);
    for (UINT& s : inSizes) s = rng.Ui(1, 4);
    // Whole steps (8 elements: a 2-byte step, two 4-byte ones), or a few past them; long
    // enough, off the last axis, for a stripe.
    const UINT whole = 8 * rng.Ui(axis == last ? 1 : 5, axis == last ? 24 : 40);
    inSizes[last] = rng.P(0.8) ? whole : whole + rng.Ui(1, 7);
    if (axis != last) inSizes[axis] = rng.Ui(1, 9);
    std::vector<UINT> idxSizes = inSizes;
    const UINT n = inSizes[axis];
    if (axis == last)
      idxSizes[last] = rng.P(0.8) ? 8 * rng.Ui(1, 16) : rng.Ui(1, 64);
    else
      idxSizes[axis] = rng.Ui(1, 5);
    // Strides: packed, or each line padded by whole steps of any element, or by one element.
    const auto strides = [&](const std::vector<UINT>& sizes) {
      return PaddedLineStrides(rng, sizes, 0.5, 8);
    };
    TensorDesc in(dt, inSizes, strides(inSizes)), ix(it, idxSizes, strides(idxSizes));
    TensorDesc out(dt, idxSizes, strides(idxSizes));
    IndexEncoder enc{it};
    enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.1;
    Bytes indices = RandomBytes(rng, ix.Total());
    FillIndices(ix.Ref(), &indices,
                [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
    Case c;
    c.spec = OpSpec::GatherElements(in, ix, out, axis);
    c.inputs = {RandomBytes(rng, in.Total()), indices};
    c.opts = RandomOptions(rng, c.spec, true);
    for (UINT64& offset : c.opts.offsets)  // mostly on 16 bytes, for the steps
      if (rng.P(0.85)) offset = offset / 16 * 16;
    for (TensorDesc& t : c.spec.tensors) t.buf.GuaranteedBaseOffsetAlignment = 0;
    MaybeOutOfRange(&c, seed, 5);
    const bool fewGroups = rng.P(0.2);
    INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << i << ")");
    INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts)
                  << (fewGroups ? ", VKDML_MAX_GROUPS=1" : ""));
    ScopedGpuKernels kernels(true);
    ScopedSwitch groups("VKDML_MAX_GROUPS", fewGroups ? "1" : "");
    bool quiet = true;
    if (!RunCase(c, false, &quiet)) ++failures;
    CHECK(quiet);
    REQUIRE(failures < 8);
  }
}

// The same steps on work past 256 workgroups' width, where an invocation takes several (8
// elements), the last tile part full; in one dispatch, and across few workgroups (the grid-stride
// loop); clamped, filled and checked.
TEST_CASE_METHOD(Fixture, "GatherElements on GPUs' steps, several an invocation",
                 "[random][gather_elements]") {
  Rng rng(BaseSeed() ^ 0x1005);
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, f16 = DML_TENSOR_DATA_TYPE_FLOAT16,
                             i32 = DML_TENSOR_DATA_TYPE_INT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const struct {
    DML_TENSOR_DATA_TYPE type, index;
    std::vector<UINT> input, indices;
    UINT axis;
  } shapes[] = {{f32, i64, {301, 1024}, {301, 1024}, 1},
                {f16, i32, {150, 2048}, {150, 1800}, 1},
                {f32, i32, {37, 4096}, {80, 4096}, 0},  // striped
                {f16, i64, {5, 40, 1024}, {5, 33, 1024}, 1}};
  int k = 0;
  for (const auto& sh : shapes) {
    if (!DeviceSupports(sh.type)) continue;
    for (int variant = 0; variant < 3; ++variant, ++k) {
      if (!SweepRuns(uint64_t(k))) continue;
      TensorDesc in(sh.type, sh.input), ix(sh.index, sh.indices), out(sh.type, sh.indices);
      Case c;
      c.spec = OpSpec::GatherElements(in, ix, out, sh.axis);
      const UINT n = sh.input[sh.axis];
      IndexEncoder enc{sh.index, 0.2, variant == 0 ? 0.0 : 0.02};
      Bytes indices(ix.Total());
      FillIndices(ix.Ref(), &indices,
                  [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, n), n); });
      c.inputs = {RandomBytes(rng, in.Total()), indices};
      if (variant == 1) {
        DML_SCALAR_UNION fill{};
        fill.Bytes[0] = 0x5A;
        fill.Bytes[1] = 0xC3;
        c.spec.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_FILL, fill);
      }
      if (variant == 2) c.opts.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
      const char* groups = variant == 1 ? "3" : variant == 2 ? "1" : "";
      INFO(DataTypeName(sh.type) << " input " << sh.input[0] << "x... axis " << sh.axis
                                 << ", variant " << variant << ", VKDML_MAX_GROUPS=" << groups);
      ScopedGpuKernels kernels(true);
      ScopedSwitch cap("VKDML_MAX_GROUPS", groups);
      RunCase(c);
    }
  }
  CHECK(k > 0);
}

// GatherND and ScatterND with many short slices, the shape CPU devices move eight slices to an
// invocation (lib/kernels/kernel_runs.cpp: kRunLines), for each element size, in one dispatch and
// (one workgroup per dispatch) across several that go on from the slice where the last stopped.
TEST_CASE_METHOD(Fixture, "GatherND and ScatterND on many short slices",
                 "[random][gather_nd][scatter_nd]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  Rng rng(BaseSeed() ^ 0x1006);
  const DML_TENSOR_DATA_TYPE types[] = {DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT16,
                                        DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT64};
  for (int k = 0; k < 16; ++k) {
    const DML_TENSOR_DATA_TYPE dt = types[k % 4];
    const bool scatter = k % 8 >= 4, fewGroups = k >= 8;
    if (!sweep.Runs(dt)) continue;
    const DML_TENSOR_DATA_TYPE it =
        rng.P(0.5) ? DML_TENSOR_DATA_TYPE_INT32 : DML_TENSOR_DATA_TYPE_INT64;
    const UINT slice = rng.Pick(std::vector<UINT>{3, 16, 32}), tuples = 1500;
    TensorDesc in(dt, {64, 64, slice}), ix(it, {1, tuples, 2});
    IndexEncoder enc{it, 0.2, 0.01};
    Case c;
    if (scatter) {  // unique targets: a prefix of a permutation of the 4096 (row, column) pairs
      std::vector<uint32_t> cells(64 * 64);
      std::iota(cells.begin(), cells.end(), 0);
      std::shuffle(cells.begin(), cells.end(), rng.g);
      Bytes indices(ix.Total());
      FillIndices(ix.Ref(), &indices, [&](const ref::Coord& co) {
        const uint32_t cell = cells[co[1]];
        return enc.Encode(rng, co[2] == 0 ? cell / 64 : cell % 64, 64);
      });
      TensorDesc upd(dt, {1, tuples, slice});
      c.spec = OpSpec::ScatterND(in, ix, upd, in, 3, 2);
      c.inputs = {RandomBytes(rng, in.Total()), indices, RandomBytes(rng, upd.Total())};
    } else {
      Bytes indices(ix.Total());
      FillIndices(ix.Ref(), &indices,
                  [&](const ref::Coord&) { return enc.Encode(rng, enc.Target(rng, 64), 64); });
      c.spec = OpSpec::GatherND(in, ix, TensorDesc(dt, {1, tuples, slice}), 3, 2);
      c.inputs = {RandomBytes(rng, in.Total()), indices};
    }
    c.opts.flags = rng.P(0.5) ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
    MaybeOutOfRange(&c, rng.g(), 6);  // eight slices an invocation, filled and dropped too
    INFO(DataTypeName(dt) << (scatter ? " ScatterND" : " GatherND") << ", slices of " << slice
                          << (fewGroups ? ", VKDML_MAX_GROUPS=1" : "") << ", "
                          << c.spec.ToString());
    ScopedSwitch groups("VKDML_MAX_GROUPS", fewGroups ? "1" : "");
    RunCase(c);
  }
}

// ----- The checked mode -----

TEST_CASE_METHOD(Fixture, "Checked mode names the first offending index across workgroups",
                 "[checked]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  // 300000 indices, all in range but three; the earliest in row-major order is reported.
  TensorDesc in(DML_TENSOR_DATA_TYPE_FLOAT32, {600, 500}), ix(it, {600, 500}),
      out(DML_TENSOR_DATA_TYPE_FLOAT32, {600, 500});
  Case c;
  c.spec = OpSpec::GatherElements(in, ix, out, 0);
  Rng rng(BaseSeed() ^ 0x2001);
  std::vector<int64_t> values(300000);
  for (auto& v : values) v = int64_t(rng.U(0, 599));
  const bool isSigned = ref::IsSignedIndexType(it);
  values[250123] = 600;
  values[299999] = 1000000;
  values[70001] = isSigned ? -601 : 600;  // [140, 1]
  c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total())};
  c.opts.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
  // The reference agrees with the hand-computed answer.
  Bytes scratch = Poisoned(out.Total());
  const ref::IndexError err = c.spec.Reference(c.inputs, &scratch);
  REQUIRE(err.found);
  REQUIRE(err.message == (isSigned ? "IndicesTensor[140,1] is -601, outside the valid range "
                                     "[-600, 599]"
                                   : "IndicesTensor[140,1] is 600, outside the valid range "
                                     "[0, 599]"));
  RunCase(c);
}

TEST_CASE_METHOD(Fixture, "Checked mode: status per execution, value formatting, unchecked is Ok",
                 "[checked]") {
  const DML_TENSOR_DATA_TYPE it = GENERATE(from_range(IndexTypes()));
  INFO("index type " << DataTypeName(it));
  const bool isSigned = ref::IsSignedIndexType(it);
  const bool wide = ref::ElementSize(it) == 8;
  // GatherND: data {4,5} r 2, indices {3,2} q 2 (3 tuples of 2) -> output {3}, D 2: {1,3}.
  OpSpec spec =
      OpSpec::GatherND(TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {4, 5}), TensorDesc(it, {3, 2}),
                       TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {1, 3}), 2, 2);
  std::vector<int32_t> data(20);
  std::iota(data.begin(), data.end(), 100);
  struct Step {
    std::vector<int64_t> indices;
    std::string message;  // empty: in range
  };
  std::vector<Step> steps = {
      {{0, 1, 3, 4, 2, 2}, ""},
      {{0, 1, 3, 5, 2, 2},
       "IndicesTensor[1,1] is 5, outside the valid range [" + std::string(isSigned ? "-5" : "0") +
           ", 4]"},
      {{1, 1, 1, 1, 1, 1}, ""},  // the status of the previous run does not stick
      {{0, 0, 0, 0, 4, 0},
       "IndicesTensor[2,0] is 4, outside the valid range [" + std::string(isSigned ? "-4" : "0") +
           ", 3]"},
  };
  if (isSigned)
    steps.push_back({{0, -6, -4, -5, -5, 0},
                     "IndicesTensor[0,1] is -6, outside the valid range "
                     "[-5, 4]"});
  else
    steps.push_back({{0, -1, 0, 0, 0, 0},
                     "IndicesTensor[0,1] is " +
                         std::string(wide ? "18446744073709551615" : "4294967295") +
                         ", outside the valid range [0, 4]"});
  if (wide)
    steps.push_back({{0, 0, 1, 0, INT64_MIN, 0},
                     "IndicesTensor[2,0] is " +
                         std::string(isSigned ? "-9223372036854775808" : "9223372036854775808") +
                         ", outside the valid range [" + (isSigned ? "-4" : "0") + ", 3]"});

  for (UINT flags : {UINT(VKDML_EXECUTION_FLAG_CHECK_INDICES), UINT(DML_EXECUTION_FLAG_NONE)}) {
    INFO("flags " << flags);
    Device& dev = Dev();
    std::unique_ptr<Operator> op;
    REQUIRE(dev.CreateOperator(spec.Desc(), &op).ok());
    std::unique_ptr<CompiledOperator> cop;
    REQUIRE(dev.CompileOperator(*op, flags, &cop).ok());
    std::unique_ptr<BindingTable> table;
    REQUIRE(dev.CreateBindingTable(*cop, &table).ok());
    std::unique_ptr<Buffer> in, ix, out;
    REQUIRE(dev.CreateBuffer(80, Buffer::Memory::HostVisible, &in).ok());
    REQUIRE(dev.CreateBuffer(48, Buffer::Memory::DeviceLocal, &ix).ok());
    REQUIRE(dev.CreateBuffer(12, Buffer::Memory::DeviceLocal, &out).ok());
    REQUIRE(in->Write(0, data.data(), 80).ok());
    DML_BUFFER_BINDING inputs[] = {in->Binding(), ix->Binding(0, spec.tensors[1].Total())};
    DML_BUFFER_BINDING outputs[] = {out->Binding()};
    REQUIRE(table->BindInputs(2, inputs).ok());
    REQUIRE(table->BindOutputs(1, outputs).ok());
    {
      Result s = table->IndexStatus();  // before any execution
      INFO("IndexStatus before running: " << Str(s));
      CHECK(s.ok());
    }
    for (const Step& step : steps) {
      INFO("indices " << ::Catch::Detail::stringify(step.indices));
      const Bytes idx = IndexBytes(it, step.indices, spec.tensors[1].Total());
      REQUIRE(ix->Write(0, idx.data(), idx.size()).ok());
      Result recorded;
      Result r =
          dev.Submit([&](VkCommandBuffer cmd) { recorded = dev.RecordDispatch(cmd, *table); });
      INFO("Submit: " << Str(r) << " RecordDispatch: " << Str(recorded));
      REQUIRE(r.ok());
      REQUIRE(recorded.ok());
      Result s = table->IndexStatus();
      INFO("IndexStatus: " << Str(s));
      if (step.message.empty() || flags == DML_EXECUTION_FLAG_NONE) {
        CHECK(s.ok());
      } else {
        CHECK(s.status == Status::IndexOutOfRange);
        CHECK_THAT(s.message, Catch::Matchers::Contains(step.message));
      }
      // And the output is the clamped gather either way.
      Bytes expected = Poisoned(12);
      Bytes dataBytes = ToBytes(data);
      spec.Reference({dataBytes, idx}, &expected);
      Bytes got(12);
      REQUIRE(out->Read(0, got.data(), 12).ok());
      const ref::Tensor t = spec.Output().Ref();
      const std::string diff = DiffBytes(got, expected, &t);
      INFO("output: " << diff);
      CHECK(diff.empty());
    }
  }
}

TEST_CASE_METHOD(Fixture, "Bindings at offsets inside larger buffers leave the rest untouched",
                 "[binding][offsets]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  // Offsets that are multiples of the element size but not of 16 or 256 (and odd ones for
  // 1-byte elements), all bindings in one buffer with no gap between them, or separate ones.
  // Where the device moves 1- and 2-byte elements in 32-bit words, multiples of 4 (the
  // embedding tests check the refusal of others).
  const DML_TENSOR_DATA_TYPE dt =
      GENERATE(DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT16,
               DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT64);
  const bool oneBuffer = GENERATE(false, true);
  INFO(DataTypeName(dt) << (oneBuffer ? ", one buffer" : ", separate buffers"));
  if (!sweep.Runs(dt)) return;
  Rng rng(BaseSeed() ^ 0x3001);
  const UINT64 es = BindingAlignment(dt);  // the element size, or 4 (packed elements)
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  for (const std::vector<UINT64>& offsets : std::vector<std::vector<UINT64>>{
           {20, 40, 36}, {260, 264, 4 * 67}, {es * 3, 8 * 5, es * 7}, {es, 8, es * 257}}) {
    // ScatterND: input {5,7}, indices {3,1}, updates {3,7}; output padded.
    TensorDesc in(dt, {5, 7}), ix(it, {3, 1}), upd(dt, {3, 7}, {9, 1}), out(dt, {5, 7}, {8, 1});
    Case c;
    c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, {4, -5, 2}, ix.Total()),
                RandomBytes(rng, upd.Total())};
    auto up = [&](UINT64 x) { return (x + es - 1) / es * es; };  // data offsets: multiples of es
    c.opts.offsets = {up(offsets[0]), offsets[1], up(offsets[0]), up(offsets[2])};
    c.opts.oneBuffer = oneBuffer;
    c.opts.guard = oneBuffer ? 0 : 3;
    c.opts.memory = Buffer::Memory::HostVisible;
    INFO(Describe(c.opts));
    RunCase(c);
    // GatherElements with the same offsets, the output directly after the indices.
    TensorDesc gin(dt, {4, 6}), gix(it, {4, 3}), gout(dt, {4, 3});
    Case g;
    g.spec = OpSpec::GatherElements(gin, gix, gout, 1);
    g.inputs = {RandomBytes(rng, gin.Total()),
                IndexBytes(it, {0, 5, -1, 1, 2, 3, -6, 4, 0, 5, 5, 5}, gix.Total())};
    g.opts.offsets = {up(offsets[0]), offsets[1], up(offsets[2])};
    g.opts.oneBuffer = oneBuffer;
    g.opts.guard = 0;
    INFO(Describe(g.opts));
    RunCase(g);
  }
}

// ----- Scatters with a reduction, and deterministic scatters -----

namespace {

const VKDML_REDUCE_FUNCTION kReduceFunctions[] = {
    VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
    VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN};

bool IsFloat(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_FLOAT16 || t == DML_TENSOR_DATA_TYPE_FLOAT32 ||
         t == DML_TENSOR_DATA_TYPE_FLOAT64;
}

// A float element's bits from sign, exponent (unbiased) and the top bits of the significand.
uint64_t FloatBits(DML_TENSOR_DATA_TYPE t, bool negative, int exponent, uint64_t mantissa) {
  const int m = t == DML_TENSOR_DATA_TYPE_FLOAT16   ? 10
                : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 23
                                                    : 52;
  const int bias = t == DML_TENSOR_DATA_TYPE_FLOAT16   ? 15
                   : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 127
                                                       : 1023;
  const int bits = t == DML_TENSOR_DATA_TYPE_FLOAT16   ? 16
                   : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 32
                                                       : 64;
  return (uint64_t(negative) << (bits - 1)) | (uint64_t(exponent + bias) << m) |
         (mantissa & ((uint64_t(1) << m) - 1));
}

// A value for a reduction test of f on type t. orderFree: one whose result cannot depend on
// the order the updates are applied in (small integers for ADD, +-1 and a few +-2, +-0.5 for
// MULTIPLY, one NaN pattern and no -0 for MAX and MIN); otherwise any normal value (and, for
// MAX and MIN, NaNs with random payloads, infinities and both zeros). Integers: any bits. No
// value or result is a float denormal, which some devices flush (README: Scatter reductions).
uint64_t ReduceValue(Rng& rng, DML_TENSOR_DATA_TYPE t, VKDML_REDUCE_FUNCTION f, bool orderFree) {
  if (!IsFloat(t) || f == VKDML_REDUCE_FUNCTION_NONE) return rng.U(0, ~uint64_t(0));
  const bool f16 = t == DML_TENSOR_DATA_TYPE_FLOAT16;
  const int m = f16 ? 10 : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 23 : 52;
  const uint64_t mantissa = rng.U(0, ~uint64_t(0)) >> (64 - m);
  const bool negative = rng.P(0.5);
  if (f == VKDML_REDUCE_FUNCTION_ADD) {
    if (!orderFree) return FloatBits(t, negative, rng.Ui(0, 6) - 3, mantissa);
    // An integer in [-4, 4] (float16: [-1, 1], as a long line may send 1200 updates to one
    // target): every partial sum is exact.
    const int v = f16 ? int(rng.U(0, 2)) - 1 : int(rng.U(0, 8)) - 4;
    if (v == 0) return 0;
    int e = 0;
    while ((std::abs(v) >> e) > 1) ++e;
    return FloatBits(t, v < 0, e, uint64_t(std::abs(v) - (1 << e)) << (m - e));
  }
  if (f == VKDML_REDUCE_FUNCTION_MULTIPLY) {
    if (!orderFree) return FloatBits(t, negative, rng.P(0.5) ? 0 : -1, mantissa);
    const int e = f16 || rng.P(0.9) ? 0 : rng.P(0.5) ? 1 : -1;
    return FloatBits(t, negative, e, 0);
  }
  // MAX, MIN
  const uint64_t x = rng.U(0, 99);
  const uint64_t nanMantissa = orderFree ? uint64_t(1) << (m - 1) : (mantissa | 1);
  if (x < 5)
    return FloatBits(t, !orderFree && negative, f16 ? 16 : m == 23 ? 128 : 1024, nanMantissa);
  if (x < 8) return FloatBits(t, negative, f16 ? 16 : m == 23 ? 128 : 1024, 0);  // infinity
  if (x < 12) return orderFree ? 0 : FloatBits(t, negative, f16 ? -15 : m == 23 ? -127 : -1023, 0);
  return FloatBits(t, negative, rng.Ui(0, 8) - 4, mantissa);
}

// Writes ReduceValue elements into a tensor's image (bytes between elements keep theirs).
void FillReduceValues(Rng& rng, const TensorDesc& desc, VKDML_REDUCE_FUNCTION f, bool orderFree,
                      Bytes* image) {
  const ref::Tensor t = desc.Ref();
  ref::ForEachCoord(t.sizes, [&](const ref::Coord& c) {
    const uint64_t v = ReduceValue(rng, t.type, f, orderFree);
    std::memcpy(image->data() + t.ByteOffset(c), &v, t.ElemSize());
  });
}

// A mean's inputs whose quotients are denormals: the least normal exponents with any
// significand, and every update +0 (the sums stay the inputs, with no denormal to flush).
void FillTinyMeanValues(Rng& rng, const TensorDesc& input, const TensorDesc& updates,
                        std::vector<Bytes>* images) {
  const ref::Tensor in = input.Ref(), upd = updates.Ref();
  const int least = in.type == DML_TENSOR_DATA_TYPE_FLOAT16   ? -14
                    : in.type == DML_TENSOR_DATA_TYPE_FLOAT32 ? -126
                                                              : -1022;
  ref::ForEachCoord(in.sizes, [&](const ref::Coord& c) {
    const uint64_t v = FloatBits(in.type, rng.P(0.5), least + int(rng.U(0, 2)), rng.U(0, ~0ull));
    std::memcpy((*images)[0].data() + in.ByteOffset(c), &v, in.ElemSize());
  });
  ref::ForEachCoord(upd.sizes, [&](const ref::Coord& c) {
    std::memset((*images)[2].data() + upd.ByteOffset(c), 0, upd.ElemSize());
  });
}

// A scatter case with duplicate targets (or, in place, unique ones), given a reduction.
// Deterministic cases run twice and must give the same bytes both times. drop: wrapped in
// VKDML_OUT_OF_RANGE_MODE_DROP, with more indices out of range. excludeSelf: the reduce
// operator's ExcludeSelf (with a reduction).
// tiny (MEAN on floats): inputs near the least normal value and updates +0, so that the
// division gives denormals.
bool RunReduceCase(Rng& rng, Op op, UINT D, DML_TENSOR_DATA_TYPE dt, DML_TENSOR_DATA_TYPE it,
                   VKDML_REDUCE_FUNCTION f, bool deterministic, bool inPlace, bool longLines,
                   bool spread, bool drop = false, bool excludeSelf = false, bool tiny = false) {
  IndexEncoder enc{it};
  enc.pOutOfRange = rng.P(0.5) ? 0.0 : 0.2;
  if (drop) enc.pOutOfRange = 0.3;
  Case c = op == Op::ScatterND ? GenScatterND(rng, D, dt, it, enc, inPlace, inPlace)
                               : GenScatterElements(rng, longLines ? std::max(D, 2u) : D, dt, it,
                                                    enc, inPlace, inPlace, longLines, spread);
  // The reduce operators take every reduction; DirectML's deterministic scatters take NONE.
  if (f != VKDML_REDUCE_FUNCTION_NONE || rng.P(0.5)) c.spec.WithReduce(f);
  if (drop) c.spec.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_DROP);
  c.spec.excludeSelf = excludeSelf && f != VKDML_REDUCE_FUNCTION_NONE;
  const VKDML_REDUCE_FUNCTION sum = f == VKDML_REDUCE_FUNCTION_MEAN ? VKDML_REDUCE_FUNCTION_ADD : f;
  FillReduceValues(rng, c.spec.tensors[0], sum, !deterministic, &c.inputs[0]);
  FillReduceValues(rng, c.spec.tensors[2], sum, !deterministic, &c.inputs[2]);
  if (tiny) FillTinyMeanValues(rng, c.spec.tensors[0], c.spec.tensors[2], &c.inputs);
  c.opts = RandomOptions(rng, c.spec, !inPlace);
  if (deterministic) c.opts.flags |= VKDML_EXECUTION_FLAG_DETERMINISTIC;
  // Atomics on 1- and 2-byte elements update whole 4-byte words: 4-aligned output bindings.
  if (ref::ElementSize(dt) < 4) {
    for (UINT64& offset : c.opts.offsets) offset = (offset + 3) / 4 * 4;
    for (TensorDesc* t : {&c.spec.tensors[0], &c.spec.Output()})
      t->buf.GuaranteedBaseOffsetAlignment = std::max(4u, t->buf.GuaranteedBaseOffsetAlignment);
  }
  if (inPlace) MakeInPlace(&c);
  INFO("case: " << c.spec.ToString() << "\n  " << Describe(c.opts)
                << (deterministic ? ", DETERMINISTIC" : "") << (longLines ? ", long lines" : "")
                << (spread ? ", targets spread over each line" : ""));
  const bool ok = RunCase(c);
  if (!deterministic || !ok) return ok;
  INFO("the second run of a deterministic case");
  return RunCase(c);
}

// One case of a reduction sweep, its shape and device switch drawn from rng and seed (both
// sweeps below draw them so): in place 1 case in 4; a third of the ScatterElements cases have
// long lines (the line kernels' shape), most of them with the line kernels forced on, half of
// those spreading their duplicates over the whole line (a few updates per target, as random
// indices give: the line kernels' short buckets), half crowding them onto one or two targets
// (hundreds per target: their sort of the whole line); the others one switch or none.
bool RunSweepCase(Rng& rng, uint64_t seed, uint64_t counter, Op op, DML_TENSOR_DATA_TYPE dt,
                  DML_TENSOR_DATA_TYPE it, VKDML_REDUCE_FUNCTION f, bool deterministic, bool drop,
                  bool excludeSelf, bool tiny = false) {
  const bool inPlace = rng.P(0.25);
  const bool longLines = op == Op::ScatterElements && rng.P(0.33);
  const uint64_t knob = longLines && rng.P(0.7) ? 2 : rng.U(0, 5);
  const bool spread = longLines && (seed >> 7) % 2 == 1;
  ScopedSwitch atomics("VKDML_ATOMICS", knob == 0 ? "32" : "");
  ScopedSwitch groups("VKDML_MAX_GROUPS", knob == 1 ? "1" : "");
  ScopedLines lines(knob == 2);
  ScopedSwitch nativeFloat32("VKDML_NATIVE_FLOAT32", knob == 3 ? "1" : "");
  INFO((knob == 0   ? "VKDML_ATOMICS=32"
        : knob == 1 ? "VKDML_MAX_GROUPS=1"
        : knob == 2 ? "VKDML_SCATTER_LINES=1"
        : knob == 3 ? "VKDML_NATIVE_FLOAT32=1"
                    : ""));
  return RunReduceCase(rng, op, UINT(1 + counter % 8), dt, it, f, deterministic, inPlace, longLines,
                       spread, drop, excludeSelf, tiny);
}

// Every data type x index type x reduction, in both modes, on ScatterND (modes 0 and 1) or
// ScatterElements (2 and 3) with heavy duplication (and in place with unique targets), against
// the sequential reference, bit for bit: in the default mode with values whose result does not
// depend on the order, deterministic with any values. Some cases run with the device's 64-bit
// and float atomics turned off (VKDML_ATOMICS=32: the fallbacks of devices without them), with
// one workgroup per dispatch (VKDML_MAX_GROUPS=1: the grid-stride loops), with the line kernels
// wherever they can run (VKDML_SCATTER_LINES=1, as GPUs choose them for long lines) or with
// float32 computed in float32 (VKDML_NATIVE_FLOAT32=1: lavapipe otherwise computes it in
// float64). The two operators count their cases as one sweep, so that a case's number and seed
// are the same whichever test runs it.
void ReduceSweep(Op which) {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  const bool only = SweepReplaysOne();
  int failures = 0, runs = 0;
  const LargeTally large = TheLargeTally();
  uint64_t counter = 0;
  for (DML_TENSOR_DATA_TYPE dt : DataTypes()) {
    for (DML_TENSOR_DATA_TYPE it : IndexTypes()) {
      for (VKDML_REDUCE_FUNCTION f : kReduceFunctions) {
        for (int mode = 0; mode < 4; ++mode, ++counter) {
          const bool deterministic = mode % 2 == 1;
          const Op op = mode < 2 ? Op::ScatterND : Op::ScatterElements;
          if (op != which) continue;
          if (f == VKDML_REDUCE_FUNCTION_NONE && !deterministic) continue;  // test above
          if (!SweepRuns(counter)) continue;
          const uint64_t seed = base ^ (12ull << 48) ^ (counter * 0x9E3779B97F4A7C15ull);
          Rng rng(seed);
          INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << counter << ")");
          if (!sweep.Runs(dt, f)) continue;
          ++runs;
          const bool drop = (seed >> 13) % 4 == 0;  // VKDML_OUT_OF_RANGE_MODE_DROP
          const bool excludeSelf = (seed >> 17) % 3 == 0;
          if (!RunSweepCase(rng, seed, counter, op, dt, it, f, deterministic, drop, excludeSelf))
            ++failures;
          REQUIRE(failures < 8);
        }
      }
    }
  }
  INFO(runs << " cases");
  if (!only) CheckLargeTally(large, runs, true);
  CHECK(failures == 0);
  CHECK((only || runs > 0));
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Random ScatterND reductions vs the sequential reference",
                 "[random][reduce]") {
  ReduceSweep(Op::ScatterND);
}

TEST_CASE_METHOD(Fixture, "Random ScatterElements reductions vs the sequential reference",
                 "[random][reduce]") {
  ReduceSweep(Op::ScatterElements);
}

// VKDML_REDUCE_FUNCTION_MEAN: every data type x index type, on ScatterND and ScatterElements,
// in both modes, against the sequential reference (the sum in row-major order, then one
// division: floats correctly rounded, integers toward negative infinity), bit for bit. As the
// sweep above: order-free values in the default mode, any in the deterministic one, the same
// device switches, DROP in 1 case of 4 and ExcludeSelf in 1 of 2; and for floats, 1 case in 3
// with denormal quotients (and the inputs in the mean).
TEST_CASE_METHOD(Fixture, "Random scatter means vs the sequential reference",
                 "[random][reduce][mean]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const uint64_t base = BaseSeed();
  const bool only = SweepReplaysOne();
  const LargeTally large = TheLargeTally();
  int failures = 0, runs = 0;
  uint64_t counter = 0;
  for (DML_TENSOR_DATA_TYPE dt : DataTypes()) {
    for (DML_TENSOR_DATA_TYPE it : IndexTypes()) {
      for (int mode = 0; mode < 4; ++mode, ++counter) {
        const bool deterministic = mode % 2 == 1;
        const Op op = mode < 2 ? Op::ScatterND : Op::ScatterElements;
        if (!SweepRuns(counter)) continue;
        const uint64_t seed = base ^ (0x3Eull << 48) ^ (counter * 0x9E3779B97F4A7C15ull);
        Rng rng(seed);
        INFO("seed " << seed << " (VKDML_TEST_SEED=" << base << ", case " << counter << ")");
        if (!sweep.Runs(dt, VKDML_REDUCE_FUNCTION_MEAN)) continue;
        ++runs;
        const bool drop = (seed >> 13) % 4 == 0;
        const bool tiny = IsFloat(dt) && (seed >> 19) % 3 == 0;  // with their inputs
        const bool excludeSelf = !tiny && (seed >> 17) % 2 == 0;
        INFO((tiny ? "denormal quotients" : ""));
        if (!RunSweepCase(rng, seed, counter, op, dt, it, VKDML_REDUCE_FUNCTION_MEAN, deterministic,
                          drop, excludeSelf, tiny))
          ++failures;
        REQUIRE(failures < 8);
      }
    }
  }
  INFO(runs << " cases");
  if (!only) CheckLargeTally(large, runs, true);
  CHECK(failures == 0);
  CHECK((only || runs > 0));
}

// MEAN where a target's count reaches 2^16 and more (glsl/divide.glsl's bit-serial division;
// below 2^16 it divides 16 bits at a time): 80000 updates into 3 rows, about 76000 into row 0,
// the input in the mean and not, against the sequential reference; floats deterministic,
// integers any bits.
TEST_CASE_METHOD(Fixture, "Scatter means over 2^16 and more updates of one element",
                 "[reduce][mean]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  Rng rng(BaseSeed() ^ 0x3E16);
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  for (DML_TENSOR_DATA_TYPE type :
       {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT64, DML_TENSOR_DATA_TYPE_INT8,
        DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_DATA_TYPE_UINT32}) {
    if (!sweep.Runs(type, VKDML_REDUCE_FUNCTION_MEAN)) continue;
    for (BOOL excludeSelf : {0, 1}) {
      TensorDesc in(type, {3, 4}), ix(it, {80000, 4}), upd(type, {80000, 4}), out = in;
      Case c;
      c.spec = OpSpec::ScatterElements(in, ix, upd, out, 0);
      c.spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
      c.spec.excludeSelf = excludeSelf;
      std::vector<int64_t> values(80000 * 4);
      for (int64_t& v : values) v = rng.P(0.95) ? 0 : int64_t(rng.U(1, 2));
      c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                  RandomBytes(rng, upd.Total())};
      FillReduceValues(rng, in, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[0]);
      FillReduceValues(rng, upd, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[2]);
      if (IsFloat(type)) c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
      INFO(c.spec.ToString());
      RunCase(c);
    }
  }
}

// Deterministic scatters large enough for every part of the sort: three and four digit passes
// (more than 2^16 and 2^24 target slots), a scan over more than one level (more than 8 blocks of
// keys), and, with one workgroup per dispatch, every sort step's grid-stride loop.
TEST_CASE_METHOD(Fixture, "Deterministic scatters with large sorts", "[large][reduce]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, u8 = DML_TENSOR_DATA_TYPE_UINT8;
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  Rng rng(BaseSeed() ^ 0x5027);
  struct Shape {
    DML_TENSOR_DATA_TYPE type;
    UINT lines, length, updates, targets;  // per line: `updates` indices into `targets` values
    VKDML_REDUCE_FUNCTION f;
    const char* groups;
  } shapes[] = {{f32, 64, 4096, 4096, 64, VKDML_REDUCE_FUNCTION_ADD, ""},          // 3 passes
                {f32, 16, 4096, 4096, 4096, VKDML_REDUCE_FUNCTION_MULTIPLY, "1"},  // 2 levels
                {u8, 8192, 4097, 2, 2, VKDML_REDUCE_FUNCTION_NONE, ""}};           // 4 passes
  for (const Shape& s : shapes) {
    if (!sweep.Runs(s.type, s.f)) continue;
    TensorDesc in(s.type, {s.lines, s.length}), ix(it, {s.lines, s.updates}),
        upd(s.type, {s.lines, s.updates}), out = in;
    Case c;
    c.spec = OpSpec::ScatterElements(in, ix, upd, out, 1);
    c.spec.WithReduce(s.f);
    std::vector<int64_t> values(UINT64(s.lines) * s.updates);
    for (int64_t& v : values) v = int64_t(rng.U(0, s.targets - 1)) * (s.length / s.targets);
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                RandomBytes(rng, upd.Total())};
    FillReduceValues(rng, in, s.f, false, &c.inputs[0]);
    FillReduceValues(rng, upd, s.f, false, &c.inputs[2]);
    c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
    INFO(c.spec.ToString() << (*s.groups ? ", VKDML_MAX_GROUPS=1" : ""));
    ScopedSwitch groups("VKDML_MAX_GROUPS", s.groups);
    RunCase(c);
  }
}

// One target receiving far more updates than lavapipe lets a shader loop (it ends a shader's
// loops after 65535 iterations): a deterministic execution folds the run in dispatches of
// bounded length there, each carrying on from the last; the result is the sequential one.
TEST_CASE_METHOD(Fixture, "Deterministic scatter with one target's run past 65535 updates",
                 "[large][reduce]") {
  const DML_TENSOR_DATA_TYPE i32 = DML_TENSOR_DATA_TYPE_INT32, f32 = DML_TENSOR_DATA_TYPE_FLOAT32;
  Rng rng(BaseSeed() ^ 0x10000);
  const UINT n = 100000;
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_NONE}) {
    TensorDesc in(f32, {4, 2}), ix(i32, {n, 1}), upd(f32, {n, 2}), out = in;
    Case c;
    c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
    c.spec.WithReduce(f);
    std::vector<int64_t> rows(n);
    for (int64_t& r : rows) r = rng.P(0.9) ? 2 : int64_t(rng.U(0, 3));  // mostly row 2
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(i32, rows, ix.Total()),
                RandomBytes(rng, upd.Total())};
    FillReduceValues(rng, in, f, false, &c.inputs[0]);
    FillReduceValues(rng, upd, f, false, &c.inputs[2]);
    c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
    INFO(c.spec.ToString());
    RunCase(c);
  }
}

// Float reductions whose inputs and results are denormal, in both modes, on float32 and float64
// (float16 is computed in float32, where its denormals are normal numbers): ADD of small
// multiples of the smallest denormal (exact in any order), MULTIPLY of a denormal by 0.5 or 1
// (ties rounded to even, the same in any order), MAX and MIN among denormals of both signs and
// zeros. The result is the sequential one, bit for bit, where vkdml can keep denormals: float32
// where the device promises to when asked (shaderDenormPreserveFloat32) or has float64 (vkdml
// then computes float32 in float64: NVIDIA flushes float32 denormals, not float64's); float64
// where the device promises to, and on lavapipe and NVIDIA, which keep them without the promise
// (README: Scatter reductions). Elsewhere nothing is promised.
TEST_CASE_METHOD(Fixture, "Scatter reductions on float denormals", "[random][reduce]") {
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  const DeviceInfo& info = Dev().Info();
  const bool knownToKeep64 = info.driverName.find("llvmpipe") != std::string::npos ||
                             info.driverName.find("NVIDIA") != std::string::npos;
  // Floor: on lavapipe and NVIDIA (float64, and float64 denormals kept) both types are checked.
  int checkedTypes = 0;
  struct Floor {
    const int& checked;
    bool both;
    ~Floor() {
      if (std::uncaught_exceptions() == 0 && both) CHECK(checked == 2);
    }
  } floor{checkedTypes, knownToKeep64 && info.enabled.shaderFloat64};
  for (DML_TENSOR_DATA_TYPE dt : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT64}) {
    const bool f64 = dt == DML_TENSOR_DATA_TYPE_FLOAT64;
    if (f64 && !info.enabled.shaderFloat64) {
      WARN(info.name << " has no shaderFloat64: FLOAT64 denormals not checked");
      continue;
    }
    const bool kept = f64 ? info.enabled.shaderDenormPreserveFloat64 || knownToKeep64
                          : info.enabled.shaderDenormPreserveFloat32 || info.enabled.shaderFloat64;
    if (!kept) {
      WARN(info.name << " does not promise to keep " << DataTypeName(dt) << " denormals: "
                     << "not checked there");
      continue;
    }
    ++checkedTypes;
    for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
                                    VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
      for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
        for (Op op : {Op::ScatterND, Op::ScatterElements}) {
          Rng rng(BaseSeed() ^ 0xDE40 ^ (UINT(f) << 4) ^ flags ^ (f64 << 12) ^ (UINT(op) << 16));
          const UINT n = 64, updates = 256;
          Case c;
          if (op == Op::ScatterND) {  // rows of one element
            TensorDesc in(dt, {n, 1}), ix(it, {updates, 1}), upd(dt, {updates, 1});
            c.spec = OpSpec::ScatterND(in, ix, upd, in, 2, 2);
          } else {
            TensorDesc in(dt, {n}), ix(it, {updates}), upd(dt, {updates});
            c.spec = OpSpec::ScatterElements(in, ix, upd, in, 0);
          }
          c.spec.WithReduce(f);
          std::vector<int64_t> targets(updates);
          for (int64_t& t : targets) t = int64_t(rng.U(0, n - 1));
          auto value = [&](bool isUpdate) -> uint64_t {
            const uint64_t sign = (f64 ? uint64_t(1) << 63 : uint64_t(1) << 31);
            const uint64_t neg = rng.P(0.5) ? sign : 0;
            if (f == VKDML_REDUCE_FUNCTION_ADD) return neg | rng.U(0, 7);  // k * smallest
            if (f == VKDML_REDUCE_FUNCTION_MULTIPLY) {
              // Any denormal: halving an odd one rounds a tie to even.
              if (!isUpdate) return neg | rng.U(1, f64 ? (uint64_t(1) << 52) - 1 : (1u << 23) - 1);
              const uint64_t half = f64 ? 0x3FE0000000000000ull : 0x3F000000u;  // 0.5
              const uint64_t one = f64 ? 0x3FF0000000000000ull : 0x3F800000u;
              return neg | (rng.P(0.5) ? half : one);
            }
            if (rng.P(0.1)) return neg;  // +-0
            return neg | rng.U(1, f64 ? (uint64_t(1) << 52) - 1 : (1u << 23) - 1);
          };
          const UINT es = f64 ? 8 : 4;
          Bytes input(n * es), updatesBytes(updates * es);
          for (UINT i = 0; i < n; ++i) {
            const uint64_t v = value(false);
            std::memcpy(input.data() + i * es, &v, es);
          }
          for (UINT i = 0; i < updates; ++i) {
            const uint64_t v = value(true);
            std::memcpy(updatesBytes.data() + i * es, &v, es);
          }
          c.inputs = {input, IndexBytes(it, targets, updates * 4), updatesBytes};
          c.opts.flags = flags;
          INFO(c.spec.ToString() << (flags ? ", DETERMINISTIC" : ""));
          RunCase(c);
        }
      }
    }
  }
}

// Deterministic MAX and MIN where ties decide: zeros of both signs and NaNs with random
// payloads, among losing values (+-1 and infinities) and, in some cases, no NaN at all (zeros
// then win), 16 updates to a target. Applied in order, a target ends as the first value equal to
// the result, its input element first (glsl/ties.glsl), bit for bit, each case run twice. In place
// and not; with 64-bit atomics and without (VKDML_ATOMICS=32: float64 then sorts); ScatterElements
// and ScatterND with narrow slices and wide ones (sorted on GPUs); float16 through its words.
TEST_CASE_METHOD(Fixture, "Deterministic MAX and MIN resolve ties of zeros and NaNs in order",
                 "[random][reduce]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  uint64_t number = 0;  // the case's, for VKDML_TEST_CASE and the shares (SweepRuns)
  for (DML_TENSOR_DATA_TYPE dt :
       {DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT64}) {
    if (!sweep.Runs(dt, VKDML_REDUCE_FUNCTION_ADD)) {
      number += 2 * 3 * 4;  // (the same numbers whichever types run)
      continue;
    }
    const UINT es = ref::ElementSize(dt), bits = 8 * es, m = es == 2 ? 10 : es == 4 ? 23 : 52;
    const uint64_t sign = uint64_t(1) << (bits - 1), mantissa = (uint64_t(1) << m) - 1;
    const uint64_t infinity = (sign - 1) & ~mantissa, one = (infinity >> 1) & ~mantissa;
    for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
      for (UINT shape = 0; shape < 3; ++shape) {
        for (UINT variant = 0; variant < 4; ++variant) {
          if (!SweepRuns(number++)) continue;
          const bool inPlace = variant % 2 == 1, atomics32 = variant >= 2;
          Rng rng(BaseSeed() ^ 0x71E5 ^ (uint64_t(dt) << 8) ^ (UINT(f) << 4) ^ (shape << 12) ^
                  (variant << 16));
          ScopedSwitch atomics("VKDML_ATOMICS", atomics32 ? "32" : "");
          const UINT width = shape == 0 ? 1 : shape == 1 ? 3 : 130, units = 128;
          const UINT targets = 8;  // 16 updates (units) a target
          Case c;
          TensorDesc in(dt, {targets, width}), ix(it, {units, 1}), upd(dt, {units, width});
          if (shape == 0) {
            in = TensorDesc(dt, {targets});
            ix = TensorDesc(it, {units});
            upd = TensorDesc(dt, {units});
            c.spec = OpSpec::ScatterElements(in, ix, upd, in, 0);
          } else {
            c.spec = OpSpec::ScatterND(in, ix, upd, in, 2, 2);
          }
          c.spec.WithReduce(f);
          const double pNan = rng.Pick(std::vector<double>{0.0, 0.02, 0.3});
          const uint64_t losing = f == VKDML_REDUCE_FUNCTION_MAX ? sign : 0;
          auto value = [&]() -> uint64_t {
            if (rng.P(pNan)) return (rng.P(0.5) ? sign : 0) | infinity | rng.U(1, mantissa);
            if (rng.P(0.4)) return rng.P(0.5) ? sign : 0;
            if (rng.P(0.1)) return losing | infinity;
            return (rng.P(0.05) ? losing ^ sign : losing) | one;
          };
          auto values = [&](const TensorDesc& t) {
            Bytes b(t.Total());
            for (UINT64 i = 0; i < t.Total() / es; ++i) {
              const uint64_t v = value();
              std::memcpy(b.data() + i * es, &v, es);
            }
            return b;
          };
          std::vector<int64_t> slots(units);
          for (int64_t& t : slots) t = int64_t(rng.U(0, targets - 1));
          c.inputs = {values(in), IndexBytes(it, slots, c.spec.tensors[1].Total()), values(upd)};
          c.opts = RandomOptions(rng, c.spec, !inPlace);
          c.opts.flags |= VKDML_EXECUTION_FLAG_DETERMINISTIC;
          // float16's atomics update whole 4-byte words: 4-aligned output bindings.
          if (es < 4) {
            for (UINT64& offset : c.opts.offsets) offset = (offset + 3) / 4 * 4;
            for (TensorDesc* t : {&c.spec.tensors[0], &c.spec.Output()})
              t->buf.GuaranteedBaseOffsetAlignment =
                  std::max(4u, t->buf.GuaranteedBaseOffsetAlignment);
          }
          if (inPlace) MakeInPlace(&c);
          INFO("case " << number - 1 << " (VKDML_TEST_SEED=" << BaseSeed()
                       << "): " << c.spec.ToString() << ", " << Describe(c.opts) << ", NaNs "
                       << pNan << (atomics32 ? ", VKDML_ATOMICS=32" : ""));
          if (RunCase(c)) RunCase(c);
        }
      }
    }
  }
}

// Deterministic ScatterND with slices wide enough that each thread folds several of a slice's
// elements (lib/kernels/kernel_reduce.cpp: kOrderedPerThread), one slice length not a multiple of
// it, and rows crowded with duplicates: without a reduction the last update wins, with ADD every
// update is added in order.
TEST_CASE_METHOD(Fixture, "Deterministic ScatterND with wide slices", "[random][reduce]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  for (DML_TENSOR_DATA_TYPE dt : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_UINT8}) {
    if (!sweep.Runs(dt)) continue;
    for (UINT width : {130u, 512u}) {
      for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD}) {
        Rng rng(BaseSeed() ^ 0x31DE ^ (width << 8) ^ (UINT(f) << 4) ^ dt);
        const UINT rows = 48, updates = 300;
        TensorDesc in(dt, {rows, width}), ix(it, {updates, 1}), upd(dt, {updates, width}), out = in;
        Case c;
        c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
        c.spec.WithReduce(f);
        std::vector<int64_t> targets(updates);
        for (int64_t& t : targets) t = int64_t(rng.U(0, rows / 4));  // about 25 updates a row
        c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, targets, ix.Total()),
                    RandomBytes(rng, upd.Total())};
        FillReduceValues(rng, in, f, false, &c.inputs[0]);
        FillReduceValues(rng, upd, f, false, &c.inputs[2]);
        c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
        INFO(c.spec.ToString());
        RunCase(c);
      }
    }
  }
}

// A deterministic scatter mean of wide slices (glsl/scatter_ordered.comp, four elements a
// thread, each divided by its run's length) on each float type, against the sequential
// reference, bit for bit: 64 rows of 256 taking 0, 1, 2, 3, 5, 7, 127, 128 (the one-division
// path's largest count), 129 and 300 updates (past it: the general division, glsl/divide.glsl)
// and a few each otherwise; any normal values (every rounding of the quotient), or inputs near
// the least normal value with updates +0 (denormal quotients, halfway cases among them: an odd
// significand halved), the input in the mean and not.
TEST_CASE_METHOD(Fixture, "Deterministic scatter means of wide slices", "[random][reduce][mean]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  const UINT rows = 64, width = 256;
  const UINT fixed[] = {0, 1, 2, 3, 5, 7, 127, 128, 129, 300};
  for (DML_TENSOR_DATA_TYPE dt :
       {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_FLOAT64}) {
    if (!sweep.Runs(dt, VKDML_REDUCE_FUNCTION_MEAN)) continue;
    for (int variant = 0; variant < 3; ++variant) {
      const bool tiny = variant == 2, excludeSelf = variant == 1;
      Rng rng(BaseSeed() ^ 0x3EA0 ^ (UINT64(variant) << 8) ^ dt);
      std::vector<int64_t> targets;
      for (UINT r = 0; r < rows; ++r) {
        const UINT n = r < std::size(fixed) ? fixed[r] : UINT(rng.U(0, 6));
        targets.insert(targets.end(), n, int64_t(r));
      }
      std::shuffle(targets.begin(), targets.end(), rng.g);
      const UINT updates = UINT(targets.size());
      TensorDesc in(dt, {rows, width}), ix(it, {updates, 1}), upd(dt, {updates, width}), out = in;
      Case c;
      c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
      c.spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
      c.spec.excludeSelf = excludeSelf;
      c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, targets, ix.Total()),
                  RandomBytes(rng, upd.Total())};
      const int spread = dt == DML_TENSOR_DATA_TYPE_FLOAT16 ? 4 : 12;
      for (int t : {0, 2}) {
        const ref::Tensor desc = (t == 0 ? in : upd).Ref();
        ref::ForEachCoord(desc.sizes, [&](const ref::Coord& at) {
          const uint64_t v =
              FloatBits(dt, rng.P(0.5), int(rng.U(0, 2 * spread)) - spread, rng.U(0, ~0ull));
          std::memcpy(c.inputs[t].data() + desc.ByteOffset(at), &v, desc.ElemSize());
        });
      }
      if (tiny) FillTinyMeanValues(rng, in, upd, &c.inputs);
      c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
      INFO(c.spec.ToString() << (tiny ? ", denormal quotients" : "")
                             << (excludeSelf ? ", ExcludeSelf" : ""));
      RunCase(c);
    }
  }
}

// A deterministic ScatterElements whose line fills exactly the shared memory of a device whose
// limit is 32 KiB (lavapipe) or 48 KiB (vkdml's cap, reached on NVIDIA): glsl/
// scatter_lines_ordered.comp then takes all of it (interface.h: VKDML_ORDERED_SHARED_WORDS), and
// the validation layer fails pipeline creation for a single byte more. Updates spread over the
// line (short buckets) and crowded onto a few targets (the sort of the whole line).
TEST_CASE_METHOD(Fixture, "Deterministic ScatterElements on lines that fill shared memory",
                 "[random][reduce]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, it = DML_TENSOR_DATA_TYPE_INT32;
  const UINT perLine = 4096;  // entries: 2048 words; sorted whole: 4096 words
  for (UINT words : {8192u, 12288u}) {
    const UINT length = words - VKDML_ORDERED_ENTRY_WORDS(perLine);
    for (UINT targets : {length, 3u}) {
      Rng rng(BaseSeed() ^ 0x5A5A ^ words ^ targets);
      TensorDesc in(f32, {2, length}), ix(it, {2, perLine}), upd(f32, {2, perLine}), out = in;
      Case c;
      c.spec = OpSpec::ScatterElements(in, ix, upd, out, 1);
      c.spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      std::vector<int64_t> values(2 * perLine);
      for (int64_t& v : values) v = int64_t(rng.U(0, targets - 1));
      c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                  RandomBytes(rng, upd.Total())};
      FillReduceValues(rng, in, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[0]);
      FillReduceValues(rng, upd, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[2]);
      c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
      INFO(words << " words of shared memory, " << targets << " targets per line");
      ScopedLines lines(true);
      RunCase(c);
    }
  }
}

// A deterministic ScatterElements on lines whose update values fit where the line's counts were
// (glsl/scatter_lines_ordered.comp, kStaged: every load first, then each target folded from
// shared memory in update order), and on lines with more updates than targets (not staged),
// every reduction on float and integer types, against the sequential reference, bit for bit:
// updates spread over each line (short buckets: 1 to a dozen updates a target, 0 for some) or
// a few targets crowded within a bucket's limit, the input in a mean and not, one workgroup for
// all three lines or one each. Sizes keep each line within lavapipe's loop bound
// (lib/kernels/kernel_lines.cpp: WithinLoopBound).
TEST_CASE_METHOD(Fixture, "Deterministic ScatterElements on lines staged in shared memory",
                 "[random][reduce][mean]") {
  TypeSweep sweep;  // fails if no type ran, or any was skipped on lavapipe
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  const struct {
    UINT length, perLine, targets;  // `perLine` updates into the first `targets` of `length`
  } shapes[] = {{2048, 2000, 2048}, {1500, 1400, 120}, {700, 1400, 700},
                {512, 500, 512},    {400, 380, 40},    {33, 31, 33}};
  int number = 0;
  for (DML_TENSOR_DATA_TYPE dt : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16,
                                  DML_TENSOR_DATA_TYPE_FLOAT64, DML_TENSOR_DATA_TYPE_INT8}) {
    for (VKDML_REDUCE_FUNCTION f :
         {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
          VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MEAN}) {
      // Every reduction on float32 and int8 (MAX: float32's goes to the ties' passes), the sum
      // and the mean on the others.
      const bool every = dt == DML_TENSOR_DATA_TYPE_FLOAT32 || dt == DML_TENSOR_DATA_TYPE_INT8;
      if (!every && f != VKDML_REDUCE_FUNCTION_ADD && f != VKDML_REDUCE_FUNCTION_MEAN) continue;
      if (!sweep.Runs(dt, f)) continue;
      for (const auto& shape : shapes) {
        Rng rng(BaseSeed() ^ 0x57A6 ^ (UINT64(++number) << 16));
        const UINT lines = 3;
        TensorDesc in(dt, {lines, shape.length}), ix(it, {lines, shape.perLine}),
            upd(dt, {lines, shape.perLine}), out = in;
        Case c;
        c.spec = OpSpec::ScatterElements(in, ix, upd, out, 1);
        if (f != VKDML_REDUCE_FUNCTION_NONE) c.spec.WithReduce(f);
        c.spec.excludeSelf = f != VKDML_REDUCE_FUNCTION_NONE && number % 4 < 2;
        // One workgroup for every line (each line's loads issued during the fold of the one
        // before it), or a workgroup a line.
        const bool oneGroup = number % 2 == 1;
        std::vector<int64_t> values(UINT64(lines) * shape.perLine);
        for (int64_t& v : values) v = int64_t(rng.U(0, shape.targets - 1));
        c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                    RandomBytes(rng, upd.Total())};
        const VKDML_REDUCE_FUNCTION sum =
            f == VKDML_REDUCE_FUNCTION_MEAN ? VKDML_REDUCE_FUNCTION_ADD : f;
        FillReduceValues(rng, in, sum, false, &c.inputs[0]);
        FillReduceValues(rng, upd, sum, false, &c.inputs[2]);
        c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
        INFO(c.spec.ToString() << ", " << shape.targets << " targets a line"
                               << (oneGroup ? ", VKDML_MAX_GROUPS=1" : ""));
        ScopedLines scoped(true);
        ScopedSwitch groups("VKDML_MAX_GROUPS", oneGroup ? "1" : "");
        RunCase(c);
      }
    }
  }
}

// ----- The large path on real tensors past the binding range -----

namespace {

// Rows of `width` elements of dt, enough of them to pass `bytes`.
UINT RowsPast(UINT64 bytes, UINT width, DML_TENSOR_DATA_TYPE dt) {
  return UINT(bytes / (UINT64(width) * ref::ElementSize(dt)) + 1);
}

// Gather (axis 0) of 512 random rows, the first and last among them and one out of range, from a
// [rows, width] input; recorded (checked) and through Device::Run.
void GatherRowsCase(UINT rows, UINT width, DML_TENSOR_DATA_TYPE dt, uint64_t salt) {
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  Rng rng(BaseSeed() ^ salt);
  const UINT n = 512;
  TensorDesc in(dt, {rows, width}), ix(it, {1, n}), out(dt, {n, width});
  Case c;
  c.spec = OpSpec::Gather(in, ix, out, 0, 1);
  std::vector<int64_t> picks(n);
  for (int64_t& p : picks) p = int64_t(rng.U(0, rows - 1));
  picks[0] = 0;
  picks[1] = rows - 1;
  picks[2] = -1;
  picks[n - 1] = int64_t(rows) + 7;  // out of range: clamped, and reported
  c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, picks, ix.Total())};
  for (Path path : {Path::Record, Path::Run}) {
    c.opts = {};
    c.opts.path = path;  // checked on the record path (the harness reads its IndexStatus)
    if (path == Path::Record) c.opts.flags = VKDML_EXECUTION_FLAG_CHECK_INDICES;
    INFO(c.spec.ToString() << (path == Path::Run ? ", Device::Run" : ", record"));
    RunCase(c);
  }
}

// ScatterND of 512 unique random rows (the last among them) into a [rows, width] tensor, in
// place and into a separate output, plain and with ADD.
// Each of ScatterND and its ADD reduction, in place and not (every = false: the first in place,
// the reduction not).
void ScatterRowsCase(UINT rows, UINT width, DML_TENSOR_DATA_TYPE dt, uint64_t salt,
                     bool every = true) {
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT32;
  Rng rng(BaseSeed() ^ salt);
  const UINT n = 512;
  TensorDesc in(dt, {rows, width}), ix(it, {n, 1}), upd(dt, {n, width}), out = in;
  std::vector<int64_t> targets(n);
  for (UINT i = 0; i < n; ++i) targets[i] = int64_t(rows - 1 - UINT64(i) * (rows / n));
  std::shuffle(targets.begin(), targets.end(), rng.g);
  const Bytes input = RandomBytes(rng, in.Total()), updates = RandomBytes(rng, upd.Total());
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD}) {
    for (bool inPlace : {true, false}) {
      if (!every && inPlace != (f == VKDML_REDUCE_FUNCTION_NONE)) continue;
      Case c;
      c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
      if (f) c.spec.WithReduce(f);
      c.inputs = {input, IndexBytes(it, targets, ix.Total()), updates};
      if (f) {  // order-free sums: small integers
        FillReduceValues(rng, c.spec.tensors[0], f, true, &c.inputs[0]);
        FillReduceValues(rng, c.spec.tensors[2], f, true, &c.inputs[2]);
      }
      c.opts.offsets = {0, 0, 0, 0};
      if (inPlace) MakeInPlace(&c);
      INFO(c.spec.ToString() << (inPlace ? ", in place" : ""));
      RunCase(c);
    }
  }
}

// A deterministic ScatterND with ADD (order-dependent float sums: each target row takes about 8
// updates) and one without a reduction (the last update wins) of 512 rows drawn from the first
// 64 and the last 64 rows of a [rows, width] tensor: the large path's chunked sort.
void DeterministicRowsCase(UINT rows, UINT width, DML_TENSOR_DATA_TYPE dt, uint64_t salt) {
  const DML_TENSOR_DATA_TYPE it = DML_TENSOR_DATA_TYPE_INT64;
  Rng rng(BaseSeed() ^ salt);
  const UINT n = 512;
  TensorDesc in(dt, {rows, width}), ix(it, {n, 1}), upd(dt, {n, width}), out = in;
  std::vector<int64_t> targets(n);
  for (int64_t& t : targets)
    t = rng.P(0.5) ? int64_t(rng.U(0, 63)) : int64_t(rows - 1 - rng.U(0, 63));
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_NONE}) {
    Case c;
    c.spec = OpSpec::ScatterND(in, ix, upd, out, 2, 2);
    if (f) c.spec.WithReduce(f);
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, targets, ix.Total()),
                RandomBytes(rng, upd.Total())};
    if (f) {
      FillReduceValues(rng, c.spec.tensors[0], f, false, &c.inputs[0]);
      FillReduceValues(rng, c.spec.tensors[2], f, false, &c.inputs[2]);
    }
    c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
    INFO(c.spec.ToString() << ", deterministic");
    RunCase(c);
  }
}

}  // namespace

// A real tensor past the device's binding range (lavapipe: 128 MiB, so 160 MiB here), gathered
// from and scattered into through windows; on devices with a range over 1 GiB the hidden
// "[.gpu-large]" tests do this.
TEST_CASE_METHOD(Fixture, "Large path: tensors past maxStorageBufferRange", "[large][big]") {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  if (range > (UINT64(1) << 30)) {
    // Never on lavapipe (128 MiB), where CI runs it: a wider range there would skip it silently.
    CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
    WARN("maxStorageBufferRange is " << range << ": see the [.gpu-large] tests");
    return;
  }
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32;
  const UINT width = 1024, rows = RowsPast(range + (32 << 20), width, f32);
  const UINT64 bytes = UINT64(rows) * width * 4, allocation = MaxAllocationSize();
  if (bytes > allocation) {
    // SwiftShader's: a 1 GiB range, and no larger allocation. Never on lavapipe.
    CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
    WARN("skipped: a tensor past maxStorageBufferRange ("
         << range << " bytes) takes " << bytes << ", past maxMemoryAllocationSize " << allocation);
    return;
  }
  GatherRowsCase(rows, width, f32, 0x1A);
  // (Not out of place without a reduction, nor ADD in place: lib.large.* sweeps take those.)
  ScatterRowsCase(rows, width, f32, 0x1B, false);
  DeterministicRowsCase(rows, width, f32, 0x1C);
}

// A deterministic ScatterElements whose sort of every update at once would need more scratch
// than one descriptor covers (16 bytes an update: maxStorageBufferRange / 16 + 1 updates, 32 MiB
// of them on lavapipe), with tensors that fit: it sorts in chunks on the large path, each
// continuing the sums the one before left, bit for bit the sequential order's. Where the range
// is wider than 128 MiB (SwiftShader's 1 GiB, NVIDIA's 4 GiB), the tensors would take minutes
// on the CPU reference: skipped there, never on lavapipe.
TEST_CASE_METHOD(Fixture, "Large path: a deterministic sort past maxStorageBufferRange",
                 "[large][reduce][big]") {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  if (range > (UINT64(1) << 27)) {
    CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
    WARN("maxStorageBufferRange is " << range << ": a sort past it is not run here");
    return;
  }
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, it = DML_TENSOR_DATA_TYPE_UINT32;
  const UINT n = UINT(range / 16 + 1), targets = 4096;
  Rng rng(BaseSeed() ^ 0x35);
  TensorDesc in(f32, {targets}), ix(it, {n}), upd(f32, {n}), out = in;
  Case c;
  c.spec = OpSpec::ScatterElements(in, ix, upd, out, 0);
  c.spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
  std::vector<int64_t> values(n);
  for (int64_t& v : values) v = int64_t(rng.U(0, targets - 1));
  c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
              RandomBytes(rng, upd.Total())};
  FillReduceValues(rng, in, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[0]);
  FillReduceValues(rng, upd, VKDML_REDUCE_FUNCTION_ADD, false, &c.inputs[2]);
  c.opts.flags = VKDML_EXECUTION_FLAG_DETERMINISTIC;
  {  // kernel choice: the large path, two chunks or more, within the scratch range
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(c.spec.Desc(), &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, c.opts.flags, CapabilitiesOf(Dev()), &set).ok());
    CHECK(set.large);
    CHECK(set.scratchWords * 4 <= range);
    int keys = 0;
    for (const auto& step : set.steps) keys += step.kind == vkdml::detail::Pass::Kind::Keys;
    CHECK(keys >= 2);
  }
  RunCase(c);
}

// A scatter mean whose OutputTensor passes maxStorageBufferRange with more elements than the
// scratch holds counts for (INT8: four an output word, a quarter of the range's words): each
// window's counts and divisions go in several pieces (lib/kernels/kernel_mean.cpp), in both
// modes, against the sequential reference. Skipped where the range is wider than 128 MiB, as
// above.
TEST_CASE_METHOD(Fixture, "Large path: a scatter mean counts past maxStorageBufferRange in pieces",
                 "[large][reduce][mean][big]") {
  const UINT64 range = Dev().Info().maxStorageBufferRange;
  if (range > (UINT64(1) << 27)) {
    CHECK(Dev().Info().driverName.find("llvmpipe") == std::string::npos);
    WARN("maxStorageBufferRange is " << range << ": a mean past it is not run here");
    return;
  }
  const DML_TENSOR_DATA_TYPE i8 = DML_TENSOR_DATA_TYPE_INT8, it = DML_TENSOR_DATA_TYPE_INT32;
  const UINT targets = UINT(range + (range >> 3)), n = 200000;
  Rng rng(BaseSeed() ^ 0x3E5);
  TensorDesc in(i8, {targets}), ix(it, {n}), upd(i8, {n}), out = in;
  for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
    INFO("flags " << flags);
    Case c;
    c.spec = OpSpec::ScatterElements(in, ix, upd, out, 0);
    c.spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
    std::vector<int64_t> values(n);  // half of them on 64 targets: counts past one
    for (UINT i = 0; i < n; ++i)
      values[i] = i % 2 ? int64_t(rng.U(0, 63)) * (targets / 64) : int64_t(rng.U(0, targets - 1));
    c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, values, ix.Total()),
                RandomBytes(rng, upd.Total())};
    c.opts.flags = flags;
    {  // kernel choice: the large path, more pieces of counts than windows
      vkdml::detail::OperatorImpl op;
      REQUIRE(vkdml::detail::BuildOperator(c.spec.Desc(), &op).ok());
      vkdml::detail::KernelSet set;
      REQUIRE(vkdml::detail::ChooseKernels(op, flags, CapabilitiesOf(Dev()), &set).ok());
      CHECK(set.large);
      CHECK(set.scratchWords * 4 <= range);
      int pieces = 0;
      for (const auto& step : set.steps) pieces += step.plain.module.rfind("tally_", 0) == 0;
      CHECK(pieces > 2);  // two windows
    }
    RunCase(c);
  }
}

// Past 4 GiB and past 2^32 elements (5 GiB of UINT8 in 40960 rows of 131072): 64-bit element
// offsets, windows of a 4 GiB range, and a copy loop of more than 2^32 elements. For GPUs with
// the memory: run by hand (`vkdml_tests "[.gpu-large]"`; the CPU reference and the comparison
// take minutes each).
TEST_CASE_METHOD(Fixture, "Large path: a gather past 4 GiB and 2^32 elements", "[.gpu-large]") {
  GatherRowsCase(40960, 131072, DML_TENSOR_DATA_TYPE_UINT8, 0x2A);
}

TEST_CASE_METHOD(Fixture, "Large path: a scatter past 4 GiB and 2^32 elements", "[.gpu-large]") {
  ScatterRowsCase(40960, 131072, DML_TENSOR_DATA_TYPE_UINT8, 0x2B, false);
  DeterministicRowsCase(40960, 131072, DML_TENSOR_DATA_TYPE_UINT8, 0x2C);
}

// Device::Run's work past its 64 MiB of staging streams through it: an 80 MiB input in and a
// padded 156 MiB output (its padding keeps the caller's bytes, so it goes in too) out, each in
// several pieces, on the normal path and the large one.
TEST_CASE_METHOD(Fixture, "Device::Run streams work past its staging area", "[large]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, it = DML_TENSOR_DATA_TYPE_INT32;
  Rng rng(BaseSeed() ^ 0x5743);
  const UINT rows = 20481, width = 1024, n = 20000;
  TensorDesc in(f32, {rows, width}), ix(it, {1, n}), out(f32, {n, width}, {2 * width, 1});
  Case c;
  c.spec = OpSpec::Gather(in, ix, out, 0, 1);
  std::vector<int64_t> picks(n);
  for (int64_t& p : picks) p = int64_t(rng.U(0, rows - 1));
  c.inputs = {RandomBytes(rng, in.Total()), IndexBytes(it, picks, ix.Total())};
  c.opts.path = Path::Run;
  INFO(c.spec.ToString());
  RunCase(c);
}
