// `vkdml run`: one ONNX operator (Gather, GatherND, GatherElements, ScatterElements, ScatterND)
// on .npy arrays, mapped onto a DirectML descriptor and run on a Vulkan device.
#include "cli.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "npy.h"
#include "onnx_map.h"

namespace cli {

using namespace vkdml;

namespace {

const char kRunUsage[] =
    "usage: vkdml run OP --input IN.npy --indices IDX.npy [--updates UPD.npy] [--axis N]\n"
    "                 [--batch-dims N] [--reduction none|add|mul|max|min|mean] [--deterministic]\n"
    "                 [--include-self true|false] [--out-of-range clamp|fill|drop|error]\n"
    "                 [--fill-value V]\n"
    "                 [--format q8_0|q4_0] [--dtype float32|float16]\n"
    "                 [--offsets OFF.npy] [--per-sample-weights W.npy] [--mode sum|mean|max]\n"
    "                 [--include-last-offset] [--padding-idx N]\n"
    "                 [--scales S.npy] [--zero-points Z.npy] [--type int4|uint4|uint8]\n"
    "                 [--bits 4|8] [--quantize-axis N] [--block-size N] [--values-shape S]\n"
    "                 [--dim-size N] [--initial V]\n"
    "                 --output OUT.npy [--device N] [--check-indices] [--quiet]\n"
    "\n"
    "Runs one ONNX operator on .npy arrays on a Vulkan device and writes the result.\n"
    "OP (ONNX semantics, NumPy shapes):\n"
    "  gather             Gather: --axis N (default 0); output shape\n"
    "                     input.shape[:N] + indices.shape + input.shape[N+1:]\n"
    "  gather-nd          GatherND: --batch-dims N (default 0); output shape\n"
    "                     indices.shape[:-1] + input.shape[N + indices.shape[-1]:]\n"
    "  gather-elements    GatherElements: --axis N (default 0); output shape indices.shape\n"
    "  scatter-elements   ScatterElements: --axis N (default 0), --updates (shape\n"
    "                     indices.shape); output shape input.shape\n"
    "  scatter-nd         ScatterND: --updates; output shape input.shape\n"
    "  dequantize-rows    vkdml's: rows of a quantized table, dequantized (ggml's get_rows):\n"
    "                     --input a uint8 (rows, bytes per row) array of ggml's blocks,\n"
    "                     --format q8_0 (34-byte blocks: a float16 scale d, 32 int8 q) or\n"
    "                     q4_0 (18-byte blocks: d, 32 4-bit q, each minus 8), values d * q\n"
    "                     in float32, then --dtype float32 (default) or float16; output\n"
    "                     shape indices.shape + (32 * blocks per row,)\n"
    "  quantize-rows      vkdml's: float32 rows quantized into such a table (ggml's set_rows,\n"
    "                     its reference quantizer bit for bit): --input the table, --updates\n"
    "                     indices.shape + (32 * blocks per row,) float32, --format; the\n"
    "                     later of two updates of a row stays; output shape input.shape\n"
    "  embedding-bag      vkdml's: PyTorch's embedding_bag: --input a (rows, width) float32 or\n"
    "                     float16 table (or uint8 blocks with --format, --dtype as for\n"
    "                     dequantize-rows), 1-D --indices and --offsets of one dtype (bag b is\n"
    "                     indices[offsets[b]:offsets[b+1]], the last to the end), --mode sum\n"
    "                     (default), mean or max, in index order with float32 steps (the same\n"
    "                     bits every run), --per-sample-weights (sum: each row times its\n"
    "                     weight), --include-last-offset (offsets[-1] ends the last bag),\n"
    "                     --padding-idx N (that row's entries are skipped); empty bags are 0;\n"
    "                     output shape (bags, width)\n"
    "  segment-csr        vkdml's: pytorch_scatter's segment_csr: --input src of any dtype,\n"
    "                     --indices the offsets (indptr; rank k, its sizes before the last\n"
    "                     src's), --reduction sum, mean, min, max, prod, argmin or argmax\n"
    "                     (default sum) along axis k - 1, each segment in row order; empty\n"
    "                     segments 0 (prod 1; argmin/argmax: src's size, int64 output)\n"
    "  segment-coo        the same from --indices a sorted segment id per row, --dim-size N\n"
    "                     segments (default: the largest id plus 1)\n"
    "  segment-reduce     torch.segment_reduce with --indices offsets: empty segments sum 0,\n"
    "                     mean NaN, max -inf, min +inf, prod 1; or --initial V starts every\n"
    "                     segment's fold from V\n"
    "  gather-block-quantized  vkdml's: ONNX Runtime's GatherBlockQuantized: --input the\n"
    "                     data as uint8 bytes (--type int4 or uint4: two values a byte, the\n"
    "                     first in the low nibble, so its last dimension counts bytes; uint8,\n"
    "                     the default: --bits 4 (default) as uint4, --bits 8 a value a byte),\n"
    "                     --scales float32 or float16 (the output's dtype; the values' shape\n"
    "                     with ceil(size / N) on --quantize-axis, default 1), --block-size N\n"
    "                     (default 128), --zero-points (optional: uint8, the scales' shape;\n"
    "                     int4 and uint4 two a byte packed whole as ONNX's tensors: 1-D, or\n"
    "                     the last dimension halved where even; uint8 --bits 4 two a byte,\n"
    "                     each row starting on a byte; default 0, or for uint8 8 and 128),\n"
    "                     --axis (gather_axis, default 0), --values-shape D0,D1,...\n"
    "                     (int4 and uint4: ONNX's data shape, any last size; --input then\n"
    "                     its bytes packed whole, 1-D, or with an even last size halved);\n"
    "                     each value\n"
    "                     (v - zero point) * scale in float32; output shape as gather's\n"
    "Scatter options:\n"
    "  --reduction R      none (default: the update replaces the element), add, mul, max or\n"
    "                     min (ONNX's reduction: each update combined with its target, in the\n"
    "                     element type; bool add and mul are or and and, as NumPy's), or mean\n"
    "                     (torch.scatter_reduce's: the sum divided once by the number of\n"
    "                     values; integers round toward -infinity; not bool)\n"
    "  --include-self B   with a reduction: false starts each element an update reaches\n"
    "                     from the reduction's identity instead of the input's value\n"
    "                     (torch.scatter_reduce's include_self; default true)\n"
    "  --deterministic    apply the updates one at a time in the indices' C order, so the\n"
    "                     output is the same bits every run (float add and mul otherwise\n"
    "                     may differ in the order of the steps)\n"
    "Options:\n"
    "  --device N         Vulkan device index from `vkdml devices` (default: the first\n"
    "                     discrete GPU, else the first device)\n"
    "  --check-indices    fail (exit 2) on the first out-of-range index instead of clamping\n"
    "  --out-of-range M   what an out-of-range index does: clamp (default), fill (gathers:\n"
    "                     the output element is --fill-value, default 0; embedding-bag: the\n"
    "                     row is), drop (scatters: the update is skipped; embedding-bag: the\n"
    "                     entry) or error (as --check-indices). An index tuple with any\n"
    "                     component out of range counts as out of range whole\n"
    "  --fill-value V     with --out-of-range fill: a value of the output's dtype (true/false\n"
    "                     for bool; float16 rounds as NumPy's float16(float(V)) does)\n"
    "  --quiet            print nothing on success (else one line: the operator, shapes, dtypes,\n"
    "                     device and time)\n"
    "Data types: bool, int8..int64, uint8..uint64, float16, float32, float64; indices are\n"
    "int32, int64, uint32 or uint64. Negative indices count from the end; out-of-range\n"
    "indices are clamped unless --check-indices. Inputs are mapped, not read into memory,\n"
    "after each file's header and size agree; the operator is checked before the output takes\n"
    "any memory. Exit status: 0 ok, 2 bad input, 1 device failure, 3 out of memory (host\n"
    "memory or a Vulkan allocation); OUT is only written on success.\n";

struct RunArgs : OnnxOptions {
  std::string input, indices, updates, output, offsets, weights, scales, zeroPoints;
  int64_t device = -1;
  bool haveAxis = false, haveBatchDims = false, checkIndices = false, deterministic = false;
  bool quiet = false;
  std::string outOfRangeName = "clamp", fillText, initialText;
  bool haveFill = false, haveFormat = false, haveDType = false, haveMode = false;
  bool haveBlockOption = false;  // --type, --bits, --quantize-axis, --block-size, --values-shape
};

// --fill-value's text as an element of dtype t; "" or the error.
std::string ParseFillValue(const std::string& text, npy::DType t, DML_SCALAR_UNION* out) {
  const std::string what = "--fill-value is '" + text + "'";
  *out = {};
  if (t == npy::DType::Bool) {
    if (text != "true" && text != "false" && text != "1" && text != "0")
      return what + ", expected true, false, 1 or 0 for a bool input";
    out->UInt8 = text == "true" || text == "1";
    return "";
  }
  if (t == npy::DType::Float16 || t == npy::DType::Float32 || t == npy::DType::Float64) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end) return what + ", expected a number";
    if (t == npy::DType::Float64) out->Float64 = v;
    if (t == npy::DType::Float32) out->Float32 = float(v);
    if (t == npy::DType::Float16) out->UInt16 = HalfBits(v);
    return "";
  }
  const bool isSigned = t == npy::DType::Int8 || t == npy::DType::Int16 || t == npy::DType::Int32 ||
                        t == npy::DType::Int64;
  const int bits = int(npy::ItemSize(t)) * 8;
  errno = 0;
  char* end = nullptr;
  if (isSigned) {
    const long long v = std::strtoll(text.c_str(), &end, 10);
    const int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    const int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
    if (text.empty() || *end || errno == ERANGE || v < lo || v > hi)
      return what + ", expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
             "] for a " + npy::DTypeName(t) + " input";
    const int64_t wide = v;  // its low bytes are the narrower type's value (two's complement)
    std::memcpy(out->Bytes, &wide, npy::ItemSize(t));
    return "";
  }
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  const uint64_t hi = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
  if (text.empty() || text[0] == '-' || *end || errno == ERANGE || v > hi)
    return what + ", expected an integer in [0, " + std::to_string(hi) + "] for a " +
           npy::DTypeName(t) + " input";
  const uint64_t wide = v;
  std::memcpy(out->Bytes, &wide, npy::ItemSize(t));
  return "";
}

// Reports message as `vkdml run: message` on stderr and returns the exit status.
int Error(const std::string& message, int status = kExitBadInput) {
  std::fprintf(stderr, "vkdml run: %s\n", message.c_str());
  return status;
}

// Parses argv into args; returns -1 to go on, else the exit status.
int ParseRunArgs(int argc, char** argv, RunArgs* a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    if (arg == "--check-indices" || arg == "--deterministic" || arg == "--quiet" ||
        arg == "--include-last-offset") {
      (arg == "--check-indices"   ? a->checkIndices
       : arg == "--deterministic" ? a->deterministic
       : arg == "--quiet"         ? a->quiet
                                  : a->includeLastOffset) = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!a->op.empty()) return Error("unexpected argument '" + arg + "' (see --help)");
      a->op = arg;
      continue;
    }
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error(arg + " needs a value (see --help)");
    }
    int64_t* number = arg == "--dim-size"        ? &a->dimSize
                      : arg == "--axis"          ? &a->axis
                      : arg == "--batch-dims"    ? &a->batchDims
                      : arg == "--device"        ? &a->device
                      : arg == "--padding-idx"   ? &a->paddingIdx
                      : arg == "--bits"          ? &a->bits
                      : arg == "--quantize-axis" ? &a->quantizeAxis
                      : arg == "--block-size"    ? &a->blockSize
                                                 : nullptr;
    if (number) {
      if (!ParseInt(value, number)) return Error(arg + " is '" + value + "', expected an integer");
      if (arg == "--axis") a->haveAxis = true;
      if (arg == "--batch-dims") a->haveBatchDims = true;
      if (arg == "--padding-idx") a->hasPadding = true;
      if (arg == "--bits" || arg == "--quantize-axis" || arg == "--block-size")
        a->haveBlockOption = true;
    } else if (arg == "--input") {
      a->input = value;
    } else if (arg == "--indices") {
      a->indices = value;
    } else if (arg == "--updates") {
      a->updates = value;
    } else if (arg == "--scales") {
      a->scales = value;
    } else if (arg == "--zero-points") {
      a->zeroPoints = value;
    } else if (arg == "--type") {
      a->blockType = value;
      a->haveBlockOption = true;
    } else if (arg == "--values-shape") {
      a->valuesShape.clear();
      for (size_t at = 0; at <= value.size();) {
        const size_t comma = std::min(value.find(',', at), value.size());
        int64_t size = 0;
        if (!ParseInt(value.substr(at, comma - at), &size) || size < 0)
          return Error("--values-shape is '" + value +
                       "', expected sizes separated by commas (ONNX's data shape: 3,5)");
        a->valuesShape.push_back(uint64_t(size));
        at = comma + 1;
      }
      a->haveBlockOption = true;
    } else if (arg == "--offsets") {
      a->offsets = value;
    } else if (arg == "--per-sample-weights") {
      a->weights = value;
    } else if (arg == "--mode") {
      a->mode = value;
      a->haveMode = true;
    } else if (arg == "--output") {
      a->output = value;
    } else if (arg == "--reduction") {
      a->reduction = value;
    } else if (arg == "--include-self") {
      if (value != "true" && value != "false")
        return Error("--include-self is '" + value + "', expected true or false");
      a->excludeSelf = value == "false";
    } else if (arg == "--out-of-range") {
      a->outOfRangeName = value;
    } else if (arg == "--initial") {
      a->initialText = value;
      a->hasInitial = true;
    } else if (arg == "--fill-value") {
      a->fillText = value;
      a->haveFill = true;
    } else if (arg == "--format") {
      a->format = value;
      a->haveFormat = true;
    } else if (arg == "--dtype") {
      if (value != "float32" && value != "float16")
        return Error("--dtype is '" + value + "', expected float32 or float16");
      a->dtype = value == "float16" ? npy::DType::Float16 : npy::DType::Float32;
      a->haveDType = true;
    } else {
      return Error("unknown option " + arg + " (see --help)");
    }
  }
  return -1;
}

// Checks the operator and which options apply to it; returns -1 to go on.
int CheckOperator(const RunArgs& a) {
  const std::string& op = a.op;
  if (op.empty())
    return Error(
        "no operator given, expected one of gather, gather-elements, "
        "gather-nd, scatter-elements, scatter-nd, dequantize-rows, quantize-rows, embedding-bag, "
        "gather-block-quantized (see --help)");
  if (op != "gather" && op != "gather-nd" && op != "gather-elements" && op != "scatter-nd" &&
      op != "scatter-elements" && op != "dequantize-rows" && op != "quantize-rows" &&
      op != "embedding-bag" && op != "gather-block-quantized" && !IsSegmentOp(op))
    return Error("unknown operator '" + op +
                 "', expected one of gather, gather-elements, "
                 "gather-nd, scatter-elements, scatter-nd, dequantize-rows, quantize-rows, "
                 "embedding-bag, gather-block-quantized, segment-csr, segment-coo, "
                 "segment-reduce");
  if (IsSegmentOp(op)) {  // their own options only
    if (a.dimSize >= 0 && op != "segment-coo")
      return Error("--dim-size does not apply to " + op + " (only to segment-coo)");
    if (a.dimSize < -1)
      return Error("--dim-size is " + std::to_string(a.dimSize) + ", expected 0 or more");
    if (a.hasInitial && op != "segment-reduce")
      return Error("--initial does not apply to " + op + " (only to segment-reduce)");
    if (a.hasInitial && (a.reduction == "argmin" || a.reduction == "argmax"))
      return Error("--initial does not apply to --reduction " + a.reduction);
    const char* other = a.haveAxis           ? "--axis (the last dimension of --indices is it)"
                        : a.haveBatchDims    ? "--batch-dims"
                        : !a.updates.empty() ? "--updates"
                        : a.outOfRangeName != "clamp" ? "--out-of-range"
                        : a.deterministic ? "--deterministic (every run folds in row order)"
                                          : nullptr;
    if (other) return Error(std::string(other) + " does not apply to " + op);
    if (a.input.empty()) return Error("--input is required");
    if (a.indices.empty()) return Error("--indices is required");
    if (a.output.empty()) return Error("--output is required");
  }
  const bool rows = op == "dequantize-rows" || op == "quantize-rows";
  const bool bag = op == "embedding-bag", blocks = op == "gather-block-quantized";
  if (!blocks) {
    const char* blockOption = !a.scales.empty()       ? "--scales"
                              : !a.zeroPoints.empty() ? "--zero-points"
                              : a.haveBlockOption
                                  ? "--type, --bits, --quantize-axis, --block-size or "
                                    "--values-shape"
                                  : nullptr;
    if (blockOption)
      return Error(std::string(blockOption) + " does not apply to " + op +
                   " (only to gather-block-quantized)");
  }
  if (blocks && a.scales.empty()) return Error("--scales is required for " + op);
  if (a.haveFormat && !rows && !bag)
    return Error("--format does not apply to " + op +
                 " (only to dequantize-rows, quantize-rows and embedding-bag)");
  if (a.haveDType && op != "dequantize-rows" && !bag)
    return Error("--dtype does not apply to " + op +
                 " (only to dequantize-rows and embedding-bag)");
  if (rows && !a.haveFormat) return Error("--format is required for " + op);
  if (!bag) {
    const char* bagOption = !a.offsets.empty()    ? "--offsets"
                            : !a.weights.empty()  ? "--per-sample-weights"
                            : a.haveMode          ? "--mode"
                            : a.includeLastOffset ? "--include-last-offset"
                            : a.hasPadding        ? "--padding-idx"
                                                  : nullptr;
    if (bagOption)
      return Error(std::string(bagOption) + " does not apply to " + op +
                   " (only to embedding-bag)");
  }
  bool scatter = op == "scatter-nd" || op == "scatter-elements" || op == "quantize-rows";
  bool elements = op == "gather-elements" || op == "scatter-elements";
  if (a.reduction != "none" && !IsSegmentOp(op)) {
    if (a.reduction != "add" && a.reduction != "mul" && a.reduction != "min" &&
        a.reduction != "max" && a.reduction != "mean")
      return Error("--reduction is '" + a.reduction +
                   "', expected none, add, mul, max, min or mean");
    if (!scatter) return Error("--reduction does not apply to " + op);
  }
  if (IsSegmentOp(op)) return -1;  // checked above
  if (a.excludeSelf && a.reduction == "none")
    return Error(
        "--include-self false applies to a reduction (--reduction add, mul, max, min or mean)");
  const std::string& mode = a.outOfRangeName;
  if (mode != "clamp" && mode != "fill" && mode != "drop" && mode != "error")
    return Error("--out-of-range is '" + mode + "', expected clamp, fill, drop or error");
  if (bag && a.offsets.empty()) return Error("--offsets is required for embedding-bag");
  if (mode == "fill" && scatter)
    return Error("--out-of-range fill does not apply to " + op +
                 " (a scatter skips out-of-range updates with --out-of-range drop)");
  if (mode == "drop" && !scatter && !bag)
    return Error("--out-of-range drop does not apply to " + op +
                 " (a gather writes --fill-value for out-of-range indices with --out-of-range "
                 "fill)");
  if (a.haveFill && mode != "fill")
    return Error("--fill-value applies with --out-of-range fill only");
  if (a.deterministic && !scatter && !bag)
    return Error("--deterministic does not apply to " + op + " (a gather is deterministic)");
  if (a.haveAxis && !elements && op != "gather" && !blocks)
    return Error("--axis does not apply to " + op);
  if (a.haveBatchDims && op != "gather-nd") return Error("--batch-dims does not apply to " + op);
  if (!a.updates.empty() && !scatter) return Error("--updates does not apply to " + op);
  if (a.input.empty()) return Error("--input is required");
  if (a.indices.empty()) return Error("--indices is required");
  if (scatter && a.updates.empty()) return Error("--updates is required for " + op);
  if (a.output.empty()) return Error("--output is required");
  if (a.device < -1 || a.device > 1000000)
    return Error("--device is " + std::to_string(a.device) +
                 ", expected a device index from `vkdml devices` (or -1, the default)");
  return -1;
}

}  // namespace

uint16_t HalfBits(double value) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double a = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7E00;
  if (a >= 65520.0) return sign | 0x7C00;  // at or past the midpoint above 65504: infinity
  if (a < 0x1p-14) return sign | uint16_t(std::nearbyint(a * 0x1p24));  // subnormal (or 2^-14)
  int e = 0;
  const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  double mantissa = std::nearbyint((f * 2 - 1) * 1024);
  int exponent = e - 1;
  if (mantissa == 1024) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent > 15) return sign | 0x7C00;
  return sign | uint16_t((exponent + 15) << 10) | uint16_t(mantissa);
}

int RunMain(int argc, char** argv) {
  if (argc > 1 &&
      (std::strcmp(argv[1], "moe-permute") == 0 || std::strcmp(argv[1], "moe-unpermute") == 0))
    return MoeMain(argc, argv);
  RunArgs a;
  int status = ParseRunArgs(argc, argv, &a);
  if (status < 0) status = CheckOperator(a);
  if (status >= 0) return status;
  const auto start = std::chrono::steady_clock::now();

  // The inputs, mapped once their headers and sizes agree; then the operator, checked against
  // them. No output exists yet.
  npy::Array arrays[7];
  ArrayRef in, idx, upd, off, weights, scales, zeroPoints;
  std::string error;
  const std::string* paths[7] = {&a.input,   &a.indices, &a.updates,   &a.offsets,
                                 &a.weights, &a.scales,  &a.zeroPoints};
  ArrayRef* refs[7] = {&in, &idx, &upd, &off, &weights, &scales, &zeroPoints};
  for (int i = 0; i < 7; ++i) {
    if (paths[i]->empty()) continue;
    const npy::Array& array = arrays[i];
    if (!npy::Read(*paths[i], &arrays[i], &error)) return Error(error);
    *refs[i] = {*paths[i],
                array.dtype,
                array.shape,
                array.Strides(),
                array.fortranOrder,
                array.data.get(),
                array.ByteCount() + npy::kPadding};
  }
  const ArrayRef* updates = a.updates.empty() ? nullptr : &upd;
  if (a.outOfRangeName == "error") a.checkIndices = true;
  if (a.outOfRangeName == "drop") a.outOfRange = VKDML_OUT_OF_RANGE_MODE_DROP;
  if (a.outOfRangeName == "fill") {
    a.outOfRange = VKDML_OUT_OF_RANGE_MODE_FILL;
    const bool blocks =
        a.op == "dequantize-rows" || (a.op == "embedding-bag" && in.dtype == npy::DType::UInt8);
    const npy::DType fillType = a.op == "gather-block-quantized" ? scales.dtype
                                : blocks                         ? a.dtype
                                                                 : in.dtype;
    if (a.haveFill) error = ParseFillValue(a.fillText, fillType, &a.fillValue);
    if (!error.empty()) return Error(error);
  }
  if (IsSegmentOp(a.op)) {
    if (a.reduction == "none") a.reduction = "sum";
    if (a.hasInitial) error = ParseFillValue(a.initialText, in.dtype, &a.initial);
    if (!error.empty())
      return Error("--initial" + error.substr(std::string("--fill-value").size()));
  }
  OnnxMapping mapping;
  if (IsSegmentOp(a.op))
    error = MapSegmentReduce(a, in, idx, &mapping);
  else if (a.op == "embedding-bag")
    error = MapEmbeddingBag(a, in, idx, off, a.weights.empty() ? nullptr : &weights, &mapping);
  else if (a.op == "gather-block-quantized")
    error = MapGatherBlockQuantized(a, in, idx, scales,
                                    a.zeroPoints.empty() ? nullptr : &zeroPoints, &mapping);
  else
    error = MapOnnxOperator(a, in, idx, updates, &mapping);
  if (!error.empty()) return Error(error);

  npy::PendingFile file(a.output);
  if (!file.Open(&error)) return Error(error);
  const std::string header = npy::HeaderBytes(mapping.outputDType, mapping.outputShape, false);
  const uint64_t bytes = mapping.outputBytes;
  uint8_t* out = nullptr;
  std::string where = "the host (no device work)";
  if (mapping.skipDevice) {
    Result r = CheckDeviceIndex(static_cast<int>(a.device));  // checked even when not used
    if (!r) return Error(r.message, ExitStatus(r));
    // (embedding-bag: no bags, or no entries, so no index that a bag reads)
    if (a.checkIndices && a.op != "embedding-bag" && !IsSegmentOp(a.op)) {
      error = CheckIndicesOnHost(a, in, idx);
      if (!error.empty()) return Error(error, kExitBadInput);
    }
    if (!(out = file.Map(header.size() + bytes, &error))) return Error(error);
    if (mapping.zeroOutput)
      std::memset(out + header.size(), 0, bytes);  // embedding-bag without entries
    else if (bytes)
      CopyToCOrder(in, out + header.size());  // a scatter without updates
  } else {
    // The whole operator is validated and compiled before the output takes any memory: a
    // refused operator costs nothing, however large its output would be.
    std::unique_ptr<Device> device;
    Result r = OpenDevice(static_cast<int>(a.device), &device);
    if (!r) return Error(r.message, ExitStatus(r));
    where = device->Info().name;
    const UINT flags = (a.checkIndices ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
                       (a.deterministic ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
    std::unique_ptr<CompiledOperator> compiled;
    r = Prepare(*device, mapping.desc, flags, &compiled);
    if (!r) return Error(r.message, ExitStatus(r));
    // The output file, mapped: the device's results land in it directly. TotalTensorSizeInBytes
    // may round the data up to 4 bytes; Commit cuts the file to the array's size.
    const uint64_t total = std::max<uint64_t>(compiled->Op().OutputSize(0), bytes);
    if (!(out = file.Map(header.size() + total, &error))) return Error(error);
    if (mapping.outputStartsAsInput) CopyToCOrder(in, out + header.size());
    std::vector<HostTensor*> inputs;
    for (HostTensor& t : mapping.inputs) inputs.push_back(&t);
    r = RunPrepared(*device, *compiled, inputs, out + header.size());
    if (r.status == Status::IndexOutOfRange)
      return Error(
          IndexMessage(r.message, mapping.D, idx.shape.size(), idx.name, IsSegmentOp(a.op)),
          kExitBadInput);
    if (!r) return Error(r.message, ExitStatus(r));
  }
  std::memcpy(out, header.data(), header.size());
  if (!file.Commit(header.size() + bytes, &error)) return Error(error);
  if (!a.quiet) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::string shapes = in.ShapeString() + " " + npy::DTypeName(in.dtype) + ", indices " +
                         idx.ShapeString() + " " + npy::DTypeName(idx.dtype);
    if (updates) shapes += ", updates " + upd.ShapeString();
    if (!a.offsets.empty()) shapes += ", offsets " + off.ShapeString();
    if (!a.weights.empty()) shapes += ", per-sample weights " + weights.ShapeString();
    std::printf("vkdml run: %s%s%s%s%s: input %s -> %s %s on %s in %.1f ms\n", a.op.c_str(),
                a.op == "embedding-bag" ? (" --mode " + a.mode).c_str() : "",
                a.reduction != "none" ? (" --reduction " + a.reduction).c_str() : "",
                a.deterministic ? " --deterministic" : "",
                a.outOfRangeName != "clamp" ? (" --out-of-range " + a.outOfRangeName).c_str() : "",
                shapes.c_str(), a.output.c_str(), npy::ShapeString(mapping.outputShape).c_str(),
                where.c_str(), ms);
  }
  return 0;
}

}  // namespace cli
