// `vkdml bench`: times vkdml's gather/scatter operators on large random tensors with Vulkan
// timestamp queries, checks a sample of each output on the CPU, and compares the effective
// bandwidth with a plain uvec4 copy kernel (bench_copy.comp) of the same byte count timed in the
// same run. See examples/bench/BENCH.md for the cases and the byte formulas.
//
// vkdml creates the device (`--device N` as `vkdml run` takes it) and the benchmark uses it
// through the public API; the timestamps, the copy kernel and the replayed command buffer use
// raw Vulkan on vkdml's device and queue, loaded through Device::GetDeviceProcAddr.
//   bench.cpp          arguments, case selection, the run over the cases
//   bench_cases.*      the cases: shapes, descriptors, host data, CPU reference, bytes moved
//   bench_context.*    the device, the copy kernel and the timing of a case
//   bench_latency.cpp  the latency rows (Device::Run, empty submit, replayed command buffer)
//   bench_compile.*    --compile: CompileOperator cold and with a warm pipeline cache
//   bench_output.*     the table, the JSON lines, the case list, progress
//   bench_util.*       errors, formatting, statistics, fast random host data
#include "bench.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench_cases.h"
#include "bench_compile.h"
#include "bench_context.h"
#include "bench_output.h"
#include "cli.h"

namespace bench {
namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: vkdml bench [--case NAME[,NAME...]] [--size full|small] [--device N] "
               "[--json]\n"
               "                   [--runs N] [--warmup N] [--rotate auto|N] [--latency-calls N]\n"
               "                   [--no-progress] [--list] [--compile]\n"
               "Times vkdml's operators with Vulkan timestamps (median of --runs, default 30,\n"
               "after --warmup, default 5) against a uvec4 copy kernel of the same byte count,\n"
               "and checks a sample of each output on the CPU. --compile times CompileOperator\n"
               "instead, for one operator of each kind (or the --case ones), on fresh Devices\n"
               "with an empty pipeline cache and with a warm one (median of --runs, default\n"
               "5). See examples/bench/BENCH.md.\n");
}

int Fail(const std::string& message, int status) {
  std::fprintf(stderr, "vkdml bench: %s\n", message.c_str());
  return status;
}

// A whole decimal number in [min, 1000000].
bool ParseCount(const std::string& text, int min, int* out) {
  int64_t v = 0;
  if (!cli::ParseInt(text, &v) || v < min || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

// The options that take a whole number, with their smallest value.
struct IntegerOption {
  const char* name;
  int Options::*field;
  int min;
};
constexpr IntegerOption kIntegerOptions[] = {{"--device", &Options::device, 0},
                                             {"--runs", &Options::runs, 1},
                                             {"--warmup", &Options::warmup, 0},
                                             {"--latency-calls", &Options::latencyCalls, 1}};

const IntegerOption* FindIntegerOption(const std::string& name) {
  for (const IntegerOption& o : kIntegerOptions)
    if (name == o.name) return &o;
  return nullptr;
}

bool TakesValue(const std::string& name) {
  return name == "--case" || name == "--size" || name == "--rotate" || FindIntegerOption(name);
}

// Sets option `name` (one that takes a value) to v; returns -1 to go on, else the exit status.
int SetOption(const std::string& name, const std::string& v, Options* opt) {
  if (name == "--case") {
    for (size_t p = 0; p <= v.size();) {
      size_t q = std::min(v.find(',', p), v.size());
      if (q > p) opt->cases.push_back(v.substr(p, q - p));
      p = q + 1;
    }
  } else if (name == "--size") {
    if (v != "full" && v != "small")
      return Fail("--size " + v + ": expected full or small", cli::kExitBadInput);
    opt->small = v == "small";
  } else if (name == "--rotate") {
    if (v == "auto")
      opt->rotate = -1;
    else if (!ParseCount(v, 1, &opt->rotate))
      return Fail("--rotate " + v + ": expected auto or a count >= 1", cli::kExitBadInput);
  } else {
    const IntegerOption& o = *FindIntegerOption(name);
    if (!ParseCount(v, o.min, &(opt->*o.field)))
      return Fail(name + " " + v + ": expected an integer >= " + std::to_string(o.min),
                  cli::kExitBadInput);
  }
  return -1;
}

// Parses argv into *opt and *list; returns -1 to go on, else the exit status.
int ParseArgs(int argc, char** argv, Options* opt, bool* list) {
  // argv[0] is "bench", or the program name with "bench" in argv[1].
  for (int i = argc > 1 && std::string(argv[1]) == "bench" ? 2 : 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      opt->json = true;
    } else if (a == "--no-progress") {
      opt->progress = false;
    } else if (a == "--list") {
      *list = true;
    } else if (a == "--compile") {
      opt->compile = true;
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (TakesValue(a)) {
      if (i + 1 >= argc) return Fail(a + " needs a value", cli::kExitBadInput);
      opt->runsGiven |= a == "--runs";
      int status = SetOption(a, argv[++i], opt);
      if (status >= 0) return status;
    } else {
      std::fprintf(stderr, "vkdml bench: unknown argument '%s'\n", a.c_str());
      Usage(stderr);
      return cli::kExitBadInput;
    }
  }
  return -1;
}

// The names that pick one of the latency rows (the case `latency` runs all three).
bool IsLatencyRow(const std::string& name) {
  return name == "latency-run" || name == "latency-replay" || name == "latency-empty-submit";
}

// The cases --case names (all but the diagnostics when none); -1 to go on, else the exit
// status after an unknown name.
int ChooseCases(const std::vector<Spec>& all, const Options& opt,
                std::vector<const Spec*>* chosen) {
  for (const std::string& c : opt.cases) {
    bool known = IsLatencyRow(c);
    for (const Spec& s : all) known |= c == s.name;
    if (!known) return Fail("unknown case '" + c + "' (see --list)", cli::kExitBadInput);
  }
  for (const Spec& s : all) {
    bool take = opt.cases.empty() && !s.diagnostic;
    for (const std::string& c : opt.cases) take |= c == s.name || (s.latency && IsLatencyRow(c));
    if (take) chosen->push_back(&s);
  }
  return -1;
}

// --case latency-run etc. keep only the latency rows named; `latency` keeps all of them.
void KeepNamedRows(const std::vector<std::string>& names, std::vector<CaseResult>* rows) {
  auto named = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (names.empty() || named("latency")) return;
  rows->erase(std::remove_if(rows->begin(), rows->end(),
                             [&](const CaseResult& r) { return !named(r.caseName); }),
              rows->end());
}

CaseResult ErrorRow(const Spec& s, const char* error, bool skipped) {
  CaseResult r;
  r.spec = &s;
  r.caseName = s.name;
  r.skipped = skipped;
  r.error = error;
  return r;
}

// Runs case s; an error becomes its row (and exit status 1), Unsupported a skipped row.
std::vector<CaseResult> RunOne(Context& ctx, const Spec& s, int* status) {
  try {
    if (!s.latency) return {ctx.RunCase(s)};
    std::vector<CaseResult> rows = ctx.RunLatency(s);
    KeepNamedRows(ctx.opt.cases, &rows);
    return rows;
  } catch (const Unsupported& e) {
    return {ErrorRow(s, e.what(), true)};
  } catch (const std::exception& e) {
    *status = cli::kExitDevice;
    return {ErrorRow(s, e.what(), false)};
  }
}

}  // namespace

int Main(int argc, char** argv) {
  Options opt;
  bool list = false;
  int status = ParseArgs(argc, argv, &opt, &list);
  if (status >= 0) return status;
  std::vector<Spec> all = MakeSpecs(opt.small);
  if (list) {
    PrintCases(all);
    return 0;
  }
  std::vector<const Spec*> chosen;
  status = ChooseCases(all, opt, &chosen);
  if (status >= 0) return status;
  if (opt.compile) return RunCompile(opt, MakeSpecs(/*small=*/true));

  Context ctx;
  ctx.opt = opt;
  ctx.progress.enabled = opt.progress;
  ctx.caseCount = chosen.size();
  std::unique_ptr<vkdml::Device> device;
  vkdml::Result opened = cli::OpenDevice(opt.device, &device);  // checks --device as `vkdml run`
  if (!opened) return Fail(opened.message, cli::ExitStatus(opened));
  try {
    ctx.Open(std::move(device));
  } catch (const std::exception& e) {
    return Fail(e.what(), cli::kExitDevice);
  }
  const vkdml::DeviceInfo& info = ctx.Info();
  if (!opt.json) {
    PrintHeader(info, opt.small, opt.runs, ctx.Timestamps());
    std::fflush(stdout);
  }

  status = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    ctx.caseIndex = i;
    std::vector<CaseResult> results = RunOne(ctx, *chosen[i], &status);
    ctx.progress.Clear();
    for (const CaseResult& r : results) {
      if (r.mismatches) status = cli::kExitDevice;
      if (opt.json)
        std::printf("%s\n", JsonLine(r, info, opt.small).c_str());
      else
        PrintRow(r);
    }
    std::fflush(stdout);
  }
  return status;
}

}  // namespace bench

int BenchMain(int argc, char** argv) {
  return bench::Main(argc, argv);
}
