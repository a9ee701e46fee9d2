// `vkdml bench --compile`: CompileOperator's time for one operator of each kind, cold (a fresh
// Device, empty pipeline cache) and warm (a fresh Device seeded with the cold one's pipeline
// cache data). See examples/bench/BENCH.md.
#pragma once

#include <vector>

#include "bench_cases.h"
#include "bench_context.h"

namespace bench {

// Runs --compile over `specs` (small shapes: compile time does not depend on sizes): one
// operator per kind, or the cases opt.cases names. Returns the exit status.
int RunCompile(const Options& opt, const std::vector<Spec>& specs);

}  // namespace bench
