#include "bench_compile.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>

#include "bench_output.h"
#include "cli.h"

namespace bench {

namespace {

// The first case of each kind: operator, with or without a reduction, deterministic or not.
std::vector<const Spec*> OnePerKind(const std::vector<Spec>& specs) {
  std::set<std::tuple<OpKind, bool, bool>> seen;
  std::vector<const Spec*> out;
  for (const Spec& s : specs) {
    if (s.latency || s.diagnostic) continue;
    auto kind =
        std::make_tuple(s.kind, s.reduce != vkdml::VKDML_REDUCE_FUNCTION_NONE, s.deterministic);
    if (seen.insert(kind).second) out.push_back(&s);
  }
  return out;
}

// Creates a Device from desc, then times CompileOperator of s on it (ms); *cache receives the
// Device's pipeline cache data afterwards.
double TimeCompile(const vkdml::DeviceDesc& desc, const Spec& s, std::vector<uint8_t>* cache) {
  std::unique_ptr<vkdml::Device> device;
  Check(vkdml::CreateDevice(desc, &device), "CreateDevice");
  OpDesc d(s);
  std::unique_ptr<vkdml::Operator> op;
  Check(device->CreateOperator(d.op, &op), "CreateOperator");
  const vkdml::UINT flags =
      s.deterministic ? vkdml::VKDML_EXECUTION_FLAG_DETERMINISTIC : vkdml::DML_EXECUTION_FLAG_NONE;
  std::unique_ptr<vkdml::CompiledOperator> compiled;
  const Clock::time_point start = Clock::now();
  Check(device->CompileOperator(*op, flags, &compiled), "CompileOperator");
  const double ms = Seconds(start, Clock::now()) * 1e3;
  Check(device->GetPipelineCacheData(cache), "GetPipelineCacheData");
  return ms;
}

CompileResult Measure(const vkdml::DeviceDesc& base, const Spec& s, int runs) {
  CompileResult r;
  r.spec = &s;
  try {
    std::vector<double> cold, warm;
    std::vector<uint8_t> data, unused;
    // Round 0 is discarded (the process's first compiles). The order alternates, so that
    // neither side always runs first: a warm Device takes the latest cold Device's data.
    for (int i = 0; i <= runs; ++i) {
      vkdml::DeviceDesc seeded = base;
      double c, w;
      if (i % 2 == 0) {
        c = TimeCompile(base, s, &data);
        seeded.pipelineCacheData = data;
        w = TimeCompile(seeded, s, &unused);
      } else {
        seeded.pipelineCacheData = data;
        w = TimeCompile(seeded, s, &unused);
        c = TimeCompile(base, s, &data);
      }
      if (i == 0) continue;
      cold.push_back(c);
      warm.push_back(w);
      r.cacheBytes = data.size();
    }
    Summarise(cold, &r.coldMs, &r.coldMinMs, &r.coldMaxMs);
    Summarise(warm, &r.warmMs, &r.warmMinMs, &r.warmMaxMs);
    r.runs = runs;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

void SetIfUnset(const char* name, const char* value) {
#ifdef _WIN32
  if (!std::getenv(name)) _putenv_s(name, value);
#else
  setenv(name, value, 0);
#endif
}

}  // namespace

int RunCompile(const Options& opt, const std::vector<Spec>& specs) {
  // Cold means cold: the drivers' own shader caches on disk stay out (unless the caller set
  // these), so that a cold compile builds every pipeline.
  SetIfUnset("MESA_SHADER_CACHE_DISABLE", "true");
  SetIfUnset("__GL_SHADER_DISK_CACHE", "0");
  vkdml::Result r = cli::CheckDeviceIndex(opt.device);
  if (!r) {
    std::fprintf(stderr, "vkdml bench: %s\n", r.message.c_str());
    return cli::ExitStatus(r);
  }
  vkdml::DeviceDesc desc;
  desc.physicalDeviceIndex = opt.device;
  std::vector<const Spec*> chosen;
  if (opt.cases.empty()) {
    chosen = OnePerKind(specs);
  } else {
    for (const Spec& s : specs)
      for (const std::string& c : opt.cases)
        if (c == s.name && !s.latency) chosen.push_back(&s);
  }
  std::unique_ptr<vkdml::Device> device;
  r = vkdml::CreateDevice(desc, &device);
  if (!r) {
    std::fprintf(stderr, "vkdml bench: %s\n", r.message.c_str());
    return cli::ExitStatus(r);
  }
  const vkdml::DeviceInfo info = device->Info();
  device.reset();
  const int runs = opt.runsGiven ? opt.runs : 5;
  if (!opt.json) PrintCompileHeader(info, runs);
  int status = 0;
  for (const Spec* s : chosen) {
    CompileResult row = Measure(desc, *s, runs);
    if (!row.error.empty()) status = cli::kExitDevice;
    if (opt.json)
      std::printf("%s\n", CompileJsonLine(row, info).c_str());
    else
      PrintCompileRow(row);
    std::fflush(stdout);
  }
  return status;
}

}  // namespace bench
