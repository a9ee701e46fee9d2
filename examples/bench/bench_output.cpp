#include "bench_output.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace bench {

namespace {

std::string ShapeJson(const std::vector<uint32_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string ShapeText(const std::vector<uint32_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += Format("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return Format("%.6g", v);
}

// "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)": the driver's name and its version text.
std::string DriverText(const vkdml::DeviceInfo& info) {
  return info.driverName + (info.driverInfo.empty() ? "" : " " + info.driverInfo);
}

// One JSON object, built field by field; Device() adds the fields every line ends with.
struct JsonObject {
  std::string text = "{";
  void Field(const char* k, const std::string& v) {
    if (text.size() > 1) text += ", ";
    text += JsonString(k) + ": " + v;
  }
  std::string Device(const vkdml::DeviceInfo& info) {
    Field("device", JsonString(info.name));
    Field("driver", JsonString(DriverText(info)));
    Field("vulkan", JsonString(Format("%u.%u.%u", VK_API_VERSION_MAJOR(info.apiVersion),
                                      VK_API_VERSION_MINOR(info.apiVersion),
                                      VK_API_VERSION_PATCH(info.apiVersion))));
    return text + "}";
  }
};

// "name (driver info)".
std::string DeviceLine(const vkdml::DeviceInfo& info) {
  std::string d = info.name;
  if (!info.driverName.empty() || !info.driverInfo.empty()) d += " (" + DriverText(info) + ")";
  return d;
}

}  // namespace

Progress::Progress() : tty(isatty(2) != 0) {}

void Progress::Step(size_t index, size_t total, const std::string& name, const std::string& what) {
  if (!enabled) return;
  double t = Seconds(start, Clock::now());
  if (tty) {
    std::fprintf(stderr, "\r\033[K[%zu/%zu %.0fs] %s: %s", index + 1, total, t, name.c_str(),
                 what.c_str());
    shown = true;
  } else if (t > 2.0) {
    std::fprintf(stderr, "[%zu/%zu %.0fs] %s: %s\n", index + 1, total, t, name.c_str(),
                 what.c_str());
  }
  std::fflush(stderr);
}

void Progress::Clear() {
  if (tty && shown) std::fprintf(stderr, "\r\033[K");
  shown = false;
  std::fflush(stderr);
}

std::string JsonLine(const CaseResult& r, const vkdml::DeviceInfo& info, bool small) {
  const Spec& s = *r.spec;
  double gbps = r.bytes / (r.ms * 1e6), copyGbps = r.bytes / (r.copyMs * 1e6);
  JsonObject j;
  auto field = [&j](const char* k, const std::string& v) { j.Field(k, v); };
  field("case", JsonString(r.caseName));
  field("op", JsonString(s.OpName()));
  field("dtype", JsonString(TypeName(s.dtype)));
  field("index_dtype", JsonString(TypeName(s.itype)));
  field("input_shape", ShapeJson(s.input));
  field("indices_shape", ShapeJson(s.indices));
  field("updates_shape", s.updates.empty() ? "null" : ShapeJson(s.updates));
  field("output_shape", ShapeJson(s.Output()));
  field("axis", s.axis < 0 ? "null" : std::to_string(s.axis));
  field("batch_dims", "0");
  field("in_place", s.inPlace ? "true" : "false");
  field("reduction", JsonString(s.ReduceName()));
  field("deterministic", s.deterministic ? "true" : "false");
  if (s.format)  // a quantized table: input_shape is its bytes, {rows, bytes per row}
    field("format", JsonString(s.format == vkdml::VKDML_QUANTIZED_FORMAT_Q8_0 ? "q8_0" : "q4_0"));
  if (s.kind == OpKind::GatherBlockQuantized) {  // input_shape: the data's bytes
    field("block_size", std::to_string(s.blockSize));
    field("width", std::to_string(s.width));
  }
  if (s.kind == OpKind::Segment) {
    const char* functions[] = {"sum", "mean", "min", "max", "prod", "argmin", "argmax"};
    field("reduce", JsonString(functions[s.segmentReduce % 7]));
    field("segments", std::to_string(s.segments));
    field("sorted_ids", s.sortedIds ? "true" : "false");
    field("lengths", JsonString(s.powerLaw ? "powerlaw" : "uniform"));
  }
  if (s.kind == OpKind::EmbeddingBag) {
    const char* modes[] = {"sum", "mean", "max"};
    field("mode", JsonString(modes[s.bagMode % 3]));
    field("bag_size", std::to_string(s.bagSize));
  }
  field("size", JsonString(small ? "small" : "full"));
  if (!r.error.empty()) field(r.skipped ? "skipped" : "error", JsonString(r.error));
  field("median_ms", JsonNumber(r.ms));
  field("min_ms", JsonNumber(r.minMs));
  field("max_ms", JsonNumber(r.maxMs));
  field("runs", std::to_string(r.runs));
  field("timing", JsonString(r.timing));
  field("bytes", JsonNumber(r.bytes));
  field("gbps", JsonNumber(gbps));
  field("copy_ms", JsonNumber(r.copyMs));
  field("copy_min_ms", JsonNumber(r.copyMinMs));
  field("copy_max_ms", JsonNumber(r.copyMaxMs));
  field("copy_gbps", JsonNumber(copyGbps));
  field("pct_of_copy", JsonNumber(100.0 * gbps / copyGbps));
  field("rotation", std::to_string(r.rotation));
  field("verified", std::to_string(r.checked));
  field("mismatches", std::to_string(r.mismatches));
  if (!r.firstMismatch.empty()) field("first_mismatch", JsonString(r.firstMismatch));
  field("peer", JsonString(s.peer));
  return j.Device(info);
}

void PrintHeader(const vkdml::DeviceInfo& info, bool small, int runs, bool timestamps) {
  std::printf("vkdml bench: %s, size %s, %d runs (median), timing %s\n", DeviceLine(info).c_str(),
              small ? "small" : "full", runs,
              timestamps ? "gpu-timestamps" : "host (no timestamps on this queue)");
  std::printf("%-26s %10s %10s %10s %9s %9s  %s\n", "case", "median ms", "GB/s", "copy GB/s",
              "% of copy", "ms range", "check");
}

void PrintRow(const CaseResult& r) {
  if (!r.error.empty() && std::isnan(r.ms)) {
    std::printf("%-26s %s: %s\n", r.caseName.c_str(), r.skipped ? "skipped" : "ERROR",
                r.error.c_str());
    return;
  }
  double gbps = r.bytes / (r.ms * 1e6), copyGbps = r.bytes / (r.copyMs * 1e6);
  std::string check = r.mismatches ? Format("FAIL %" PRIu64 "/%" PRIu64 ": %s", r.mismatches,
                                            r.checked, r.firstMismatch.c_str())
                                   : Format("ok (%" PRIu64 ")", r.checked);
  std::string range = Format("%.2g-%.2g", r.minMs, r.maxMs);
  if (std::isnan(r.copyMs))
    std::printf("%-26s %10.4f %10.2f %10s %9s %9s  %s\n", r.caseName.c_str(), r.ms, gbps, "-", "-",
                range.c_str(), check.c_str());
  else
    std::printf("%-26s %10.4f %10.2f %10.2f %8.1f%% %9s  %s\n", r.caseName.c_str(), r.ms, gbps,
                copyGbps, 100.0 * gbps / copyGbps, range.c_str(), check.c_str());
}

std::string CompileJsonLine(const CompileResult& r, const vkdml::DeviceInfo& info) {
  const Spec& s = *r.spec;
  JsonObject j;
  auto field = [&j](const char* k, const std::string& v) { j.Field(k, v); };
  field("case", JsonString("compile-" + s.name));
  field("op", JsonString(s.OpName()));
  field("reduction", JsonString(s.ReduceName()));
  field("deterministic", s.deterministic ? "true" : "false");
  if (!r.error.empty()) field("error", JsonString(r.error));
  field("cold_ms", JsonNumber(r.coldMs));
  field("cold_min_ms", JsonNumber(r.coldMinMs));
  field("cold_max_ms", JsonNumber(r.coldMaxMs));
  field("warm_ms", JsonNumber(r.warmMs));
  field("warm_min_ms", JsonNumber(r.warmMinMs));
  field("warm_max_ms", JsonNumber(r.warmMaxMs));
  field("cache_bytes", std::to_string(r.cacheBytes));
  field("runs", std::to_string(r.runs));
  return j.Device(info);
}

void PrintCompileHeader(const vkdml::DeviceInfo& info, int runs) {
  std::printf(
      "vkdml bench --compile: %s, CompileOperator on a fresh Device, median of %d runs; cold: "
      "empty pipeline cache, warm: seeded with the cold Device's GetPipelineCacheData\n",
      DeviceLine(info).c_str(), runs);
  std::printf("%-44s %-16s %10s %10s %12s\n", "case", "op", "cold ms", "warm ms", "cache bytes");
}

void PrintCompileRow(const CompileResult& r) {
  const std::string name = "compile-" + r.spec->name;
  if (!r.error.empty()) {
    std::printf("%-44s ERROR: %s\n", name.c_str(), r.error.c_str());
    return;
  }
  std::printf("%-44s %-16s %10.2f %10.2f %12" PRIu64 "\n", name.c_str(), r.spec->OpName(), r.coldMs,
              r.warmMs, r.cacheBytes);
}

void PrintCases(const std::vector<Spec>& specs) {
  for (const Spec& s : specs)
    std::printf("%-26s %-15s %-8s idx %-6s input %s indices %s  peer: %s%s\n", s.name.c_str(),
                s.OpName(), TypeName(s.dtype).c_str(), TypeName(s.itype).c_str(),
                ShapeText(s.input).c_str(), ShapeText(s.indices).c_str(), s.peer.c_str(),
                s.diagnostic ? "  (diagnostic: only when named)" : "");
}

}  // namespace bench
