// `vkdml paged-cache-write` and `vkdml paged-gather`: vkdml's paged KV cache operators
// (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER) on .npy arrays.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "npy.h"

namespace cli {

using namespace vkdml;

namespace {

const char kWriteUsage[] =
    "usage: vkdml paged-cache-write --cache C.npy --slot-mapping S.npy --values V.npy\n"
    "                               --output OUT.npy [--layout NHD|HND] [--format q8_0|q4_0]\n"
    "                               [--out-of-range error|drop] [--device N] [--quiet]\n"
    "\n"
    "vLLM's reshape_and_cache_flash on one cache: OUT is the cache with token t's rows\n"
    "(V[t], (tokens, heads, head_size)) at slot S[t] (block S[t] // block_size, row\n"
    "S[t] % block_size). The cache: (blocks, block_size, heads, head_size) (--layout NHD, the\n"
    "default) or (blocks, heads, block_size, head_size) (HND), of V's dtype (float32 or\n"
    "float16); with --format, uint8 whose last dimension holds head_size / 32 ggml blocks of\n"
    "that format, quantized as ggml's CPU quantizer does, bit for bit. A negative slot skips\n"
    "its token; of tokens sharing a slot the last wins. A slot past the cache is an error\n"
    "(exit 2; --out-of-range drop skips it).\n";

const char kGatherUsage[] =
    "usage: vkdml paged-gather --cache C.npy --block-table T.npy (--seq-lens L.npy |\n"
    "                          --cu-seq-lens CU.npy) --output OUT.npy [--token-offsets O.npy]\n"
    "                          [--layout NHD|HND] [--format q8_0|q4_0] [--dtype float32|float16]\n"
    "                          [--total-tokens N] [--out-of-range error|clamp|fill]\n"
    "                          [--fill-value X] [--device N] [--quiet]\n"
    "\n"
    "vLLM's gather_cache: each sequence's tokens from a paged cache (as paged-cache-write takes\n"
    "it), one after another: OUT is (total_tokens, heads, head_size). Sequence b's token i is the\n"
    "cache's row of block T[b, p // block_size], row p % block_size, p = i + O[b]. L: the\n"
    "lengths (summed on the device, a negative one as 0); CU: the cumulative lengths\n"
    "(sequences + 1, from 0). T, L, CU and O: one integer\n"
    "dtype (int32, int64, uint32 or uint64). Quantized caches give --dtype (default float32).\n"
    "Rows past the last sequence (--total-tokens larger than its end) are 0. A block out of\n"
    "range is an error (exit 2), or clamped, or --fill-value (default 0).\n";

int Fail(const char* command, const std::string& message, int status = kExitBadInput) {
  std::fprintf(stderr, "vkdml %s: %s\n", command, message.c_str());
  return status;
}

// An array's descriptor: row-major sizes of its dtype.
struct Desc {
  std::vector<UINT> sizes;
  DML_BUFFER_TENSOR_DESC buf{};
  DML_TENSOR_DESC desc{};
};

bool Describe(const npy::Array& a, const std::string& name, Desc* d, std::string* error) {
  for (uint64_t s : a.shape) {
    if (s == 0 || s > 0xFFFFFFFFu) {
      *error = name + ": shape " + npy::ShapeString(a.shape) + ", expected sizes from 1 to " +
               "4294967295";
      return false;
    }
    d->sizes.push_back(UINT(s));
  }
  d->buf.DataType = DataType(a.dtype);
  d->buf.DimensionCount = UINT(d->sizes.size());
  d->buf.Sizes = d->sizes.data();
  d->buf.TotalTensorSizeInBytes =
      CalcBufferTensorSize(d->buf.DataType, d->buf.DimensionCount, d->buf.Sizes, nullptr);
  d->desc = {DML_TENSOR_TYPE_BUFFER, &d->buf};
  return true;
}

struct Options {
  std::string cache, slots, values, table, lens, cuLens, offsets, output;
  std::string layout = "NHD", format, dtype, outOfRange = "error", fill = "0";
  int64_t device = -1, total = -1;
  bool quiet = false;
};

// Parses argv; returns -1 to go on, else the exit status.
int Parse(const char* command, int argc, char** argv, const char* usage, bool write, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "--quiet") {
      o->quiet = true;
      continue;
    }
    std::string* field = arg == "--cache"                     ? &o->cache
                         : arg == "--slot-mapping" && write   ? &o->slots
                         : arg == "--values" && write         ? &o->values
                         : arg == "--block-table" && !write   ? &o->table
                         : arg == "--seq-lens" && !write      ? &o->lens
                         : arg == "--cu-seq-lens" && !write   ? &o->cuLens
                         : arg == "--token-offsets" && !write ? &o->offsets
                         : arg == "--output" || arg == "-o"   ? &o->output
                         : arg == "--layout"                  ? &o->layout
                         : arg == "--format"                  ? &o->format
                         : arg == "--dtype" && !write         ? &o->dtype
                         : arg == "--out-of-range"            ? &o->outOfRange
                         : arg == "--fill-value" && !write    ? &o->fill
                                                              : nullptr;
    const bool number = arg == "--device" || (arg == "--total-tokens" && !write);
    if (!field && !number) return Fail(command, "unknown option '" + arg + "'\n" + usage);
    if (i + 1 >= argc) return Fail(command, arg + " needs a value");
    const std::string value = argv[++i];
    if (field) {
      *field = value;
    } else if (!ParseInt(value, arg == "--device" ? &o->device : &o->total)) {
      return Fail(command, arg + " is '" + value + "', expected an integer");
    }
  }
  if (o->cache.empty() || o->output.empty() || (write && (o->slots.empty() || o->values.empty())) ||
      (!write && o->table.empty()))
    return Fail(command, std::string("missing a required option\n") + usage);
  if (!write && o->lens.empty() == o->cuLens.empty())
    return Fail(command, "give one of --seq-lens and --cu-seq-lens");
  if (o->layout != "NHD" && o->layout != "HND")
    return Fail(command, "--layout is '" + o->layout + "', expected NHD or HND");
  if (!o->format.empty() && o->format != "q8_0" && o->format != "q4_0")
    return Fail(command, "--format is '" + o->format + "', expected q8_0 or q4_0");
  const bool modeOk =
      write ? o->outOfRange == "error" || o->outOfRange == "drop"
            : o->outOfRange == "error" || o->outOfRange == "clamp" || o->outOfRange == "fill";
  if (!modeOk)
    return Fail(command, "--out-of-range is '" + o->outOfRange + "', expected " +
                             (write ? "error or drop (a cache write never clamps)"
                                    : "error, clamp or fill"));
  if (!o->dtype.empty() && o->dtype != "float32" && o->dtype != "float16")
    return Fail(command, "--dtype is '" + o->dtype + "', expected float32 or float16");
  return -1;
}

bool Load(const std::string& path, npy::Array* a, std::string* error) {
  if (!npy::Read(path, a, error)) return false;
  if (a->fortranOrder) *a = npy::ToCOrder(*a);
  return true;
}

// The gather's rows without --total-tokens: the lengths' sum, each negative one counting 0 (as
// the operator sums them), or the last cumulative length; 0 for an empty list.
int64_t DefaultTotal(const npy::Array& list, bool lengths) {
  const size_t item = npy::ItemSize(list.dtype);
  const bool isSigned = list.dtype == npy::DType::Int32 || list.dtype == npy::DType::Int64;
  const auto at = [&](uint64_t i) {
    int64_t v = 0;
    if (item == 4) {
      int32_t w;
      std::memcpy(&w, list.data.get() + i * 4, 4);
      v = isSigned ? w : int64_t(uint32_t(w));
    } else {
      std::memcpy(&v, list.data.get() + i * 8, 8);
    }
    return !isSigned && v < 0 ? INT64_MAX : v;  // a uint64 past 2^63
  };
  const uint64_t n = list.ElementCount();
  if (!lengths) return n ? at(n - 1) : 0;
  int64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += std::min(std::max<int64_t>(at(i), 0), INT64_MAX - sum);
  return sum;
}

int Main(int argc, char** argv, bool write) {
  const char* command = write ? "paged-cache-write" : "paged-gather";
  Options o;
  int status = Parse(command, argc, argv, write ? kWriteUsage : kGatherUsage, write, &o);
  if (status >= 0) return status;
  const auto start = std::chrono::steady_clock::now();
  const VKDML_QUANTIZED_FORMAT format = o.format.empty()     ? VKDML_QUANTIZED_FORMAT(0)
                                        : o.format == "q8_0" ? VKDML_QUANTIZED_FORMAT_Q8_0
                                                             : VKDML_QUANTIZED_FORMAT_Q4_0;
  const auto layout =
      o.layout == "NHD" ? VKDML_PAGED_CACHE_LAYOUT_NHD : VKDML_PAGED_CACHE_LAYOUT_HND;
  std::string error;
  npy::Array cache, second, third, offsets;
  if (!Load(o.cache, &cache, &error) || !Load(write ? o.slots : o.table, &second, &error))
    return Fail(command, error);
  if (write && !Load(o.values, &third, &error)) return Fail(command, error);
  if (!o.offsets.empty() && !Load(o.offsets, &offsets, &error)) return Fail(command, error);
  const bool lengths = !write && o.cuLens.empty();  // --seq-lens: summed on the device
  if (!write) {
    if (!Load(lengths ? o.lens : o.cuLens, &third, &error)) return Fail(command, error);
    if (third.dtype != second.dtype)
      return Fail(command, std::string(lengths ? "--seq-lens" : "--cu-seq-lens") + ": dtype is " +
                               npy::DTypeName(third.dtype) + ", expected " +
                               npy::DTypeName(second.dtype) + " (the block table's)");
  }
  std::vector<Desc> descs(4);
  const npy::Array* arrays[4] = {&cache, &second, &third, o.offsets.empty() ? nullptr : &offsets};
  const char* names[4] = {"--cache", write ? "--slot-mapping" : "--block-table",
                          write     ? "--values"
                          : lengths ? "--seq-lens"
                                    : "--cu-seq-lens",
                          "--token-offsets"};
  for (int i = 0; i < 4; ++i)
    if (arrays[i] && !Describe(*arrays[i], names[i], &descs[i], &error))
      return Fail(command, error);
  // The output: the cache's shape and dtype (the write), or (total, heads, head_size).
  npy::Array out;
  if (write) {
    out.dtype = cache.dtype;
    out.shape = cache.shape;
  } else {
    if (cache.shape.size() != 4)
      return Fail(command, "--cache: shape " + npy::ShapeString(cache.shape) +
                               ", expected 4 dimensions (layout " + o.layout + ")");
    const int64_t total = o.total >= 0 ? o.total : DefaultTotal(third, lengths);
    if (total < 1) return Fail(command, "no tokens to gather (--total-tokens, or the lengths)");
    const uint64_t bytes = cache.shape[3];
    const uint64_t headSize =
        format ? bytes / (format == VKDML_QUANTIZED_FORMAT_Q8_0 ? 34 : 18) * 32 : bytes;
    out.dtype =
        format ? (o.dtype == "float16" ? npy::DType::Float16 : npy::DType::Float32) : cache.dtype;
    if (!format && !o.dtype.empty() && o.dtype != npy::DTypeName(cache.dtype))
      return Fail(command, "--dtype is " + o.dtype + ", but a float cache keeps its dtype (" +
                               npy::DTypeName(cache.dtype) + ")");
    out.shape = {uint64_t(total), cache.shape[layout == VKDML_PAGED_CACHE_LAYOUT_NHD ? 2 : 1],
                 headSize};
  }
  Desc outDesc;
  if (!Describe(out, "--output", &outDesc, &error)) return Fail(command, error);
  DML_OPERATOR_DESC desc{};
  VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC w{&descs[0].desc, &descs[1].desc, &descs[2].desc,
                                          &outDesc.desc,  layout,         format};
  VKDML_PAGED_GATHER_OPERATOR_DESC g{&descs[0].desc,
                                     &descs[1].desc,
                                     lengths ? nullptr : &descs[2].desc,
                                     o.offsets.empty() ? nullptr : &descs[3].desc,
                                     &outDesc.desc,
                                     layout,
                                     format,
                                     lengths ? &descs[2].desc : nullptr};
  desc = write ? DML_OPERATOR_DESC{VKDML_OPERATOR_PAGED_CACHE_WRITE, &w}
               : DML_OPERATOR_DESC{VKDML_OPERATOR_PAGED_GATHER, &g};
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{&desc, VKDML_OUT_OF_RANGE_MODE_ERROR, {}};
  if (o.outOfRange == "drop") wrap.Mode = VKDML_OUT_OF_RANGE_MODE_DROP;
  if (o.outOfRange == "clamp") wrap.Mode = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  if (o.outOfRange == "fill") {
    wrap.Mode = VKDML_OUT_OF_RANGE_MODE_FILL;
    double v = 0;
    char* end = nullptr;
    v = std::strtod(o.fill.c_str(), &end);
    if (o.fill.empty() || *end)
      return Fail(command, "--fill-value is '" + o.fill + "', expected a number");
    if (out.dtype == npy::DType::Float32) {
      const float f = float(v);
      std::memcpy(wrap.FillValue.Bytes, &f, 4);
    } else {
      const uint16_t h = HalfBits(v);
      std::memcpy(wrap.FillValue.Bytes, &h, 2);
    }
  }
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrap};

  std::unique_ptr<Device> device;
  Result r = OpenDevice(int(o.device), &device);
  if (!r) return Fail(command, r.message, ExitStatus(r));
  std::unique_ptr<CompiledOperator> compiled;
  r = Prepare(*device, o.outOfRange == "error" ? desc : outer, 0, &compiled);
  if (!r) return Fail(command, r.message, ExitStatus(r));
  std::vector<uint8_t> result(std::max<uint64_t>(compiled->Op().OutputSize(0), out.ByteCount()), 0);
  std::vector<const void*> inputs = {cache.data.get(), second.data.get(), third.data.get()};
  if (!o.offsets.empty()) inputs.push_back(offsets.data.get());
  r = device->Run(*compiled, inputs, {result.data()});
  if (!r) return Fail(command, r.message, ExitStatus(r));
  std::memcpy(out.Allocate(), result.data(), out.ByteCount());
  if (!npy::Write(o.output, out, &error)) return Fail(command, error);
  if (!o.quiet) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("vkdml %s: cache %s %s -> %s %s %s on %s in %.1f ms\n", command,
                npy::ShapeString(cache.shape).c_str(), npy::DTypeName(cache.dtype),
                o.output.c_str(), npy::ShapeString(out.shape).c_str(), npy::DTypeName(out.dtype),
                device->Info().name.c_str(), ms);
  }
  return 0;
}

}  // namespace

int PagedWriteMain(int argc, char** argv) {
  return Main(argc, argv, true);
}

int PagedGatherMain(int argc, char** argv) {
  return Main(argc, argv, false);
}

}  // namespace cli
