// What `vkdml bench` prints: a row per case (the table or a JSON line), the case list, and
// progress on stderr.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "vkdml/vkdml.h"

#include "bench_cases.h"
#include "bench_util.h"

namespace bench {

// One output row: a timed case, a latency measurement, or an error or skip.
struct CaseResult {
  const Spec* spec = nullptr;
  std::string caseName, timing = "gpu-timestamps", error;
  bool skipped = false;
  double ms = NAN, copyMs = NAN, bytes = 0, minMs = NAN, maxMs = NAN;
  double copyMinMs = NAN, copyMaxMs = NAN;
  int runs = 0, rotation = 1;
  uint64_t checked = 0, mismatches = 0;
  std::string firstMismatch;
};

// One row of `vkdml bench --compile`: CompileOperator's time on fresh Devices, with an empty
// pipeline cache (cold) and with one seeded from the cold Device's data (warm).
struct CompileResult {
  const Spec* spec = nullptr;
  std::string error;
  double coldMs = NAN, coldMinMs = NAN, coldMaxMs = NAN;
  double warmMs = NAN, warmMinMs = NAN, warmMaxMs = NAN;
  uint64_t cacheBytes = 0;  // GetPipelineCacheData's size after the cold compile
  int runs = 0;
};

// Progress on stderr: an updating line on a terminal; elsewhere plain lines once the run has
// taken more than two seconds.
struct Progress {
  bool enabled = true;
  bool tty;
  Clock::time_point start = Clock::now();
  bool shown = false;

  Progress();
  void Step(size_t index, size_t total, const std::string& name, const std::string& what);
  void Clear();
};

// One JSON object (BENCH.md lists the fields); `small` is --size small.
std::string JsonLine(const CaseResult& r, const vkdml::DeviceInfo& info, bool small);

// The table's first lines: the device and settings, then the column names.
void PrintHeader(const vkdml::DeviceInfo& info, bool small, int runs, bool timestamps);
void PrintRow(const CaseResult& r);
// --compile's JSON line (BENCH.md lists the fields), header and table row.
std::string CompileJsonLine(const CompileResult& r, const vkdml::DeviceInfo& info);
void PrintCompileHeader(const vkdml::DeviceInfo& info, int runs);
void PrintCompileRow(const CompileResult& r);
// --list: one line per case.
void PrintCases(const std::vector<Spec>& specs);

}  // namespace bench
