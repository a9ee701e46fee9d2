#!/bin/sh
# The whole test suite once more, built by clang with AddressSanitizer (LeakSanitizer included)
# and UndefinedBehaviorSanitizer, every report fatal (not its reruns on the minimum-limits
# device, which run the same host code, nor lib.msl_translation, which runs none of vkdml's),
# each random sweep on a quarter of the cases the suite's own share runs and the CLI tests' long
# loops on a quarter of their items (.ci/test-share.sh); the same tree also builds the libFuzzer targets that
# .ci/fuzz.sh runs. Usage: .ci/sanitizers.sh [BUILD_DIR] (default build-sanitize).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-sanitize}
start=$(date +%s)
# (Line tables only: reports keep their files and lines, the build is cheaper than with -g.)
CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKDML_SANITIZE=ON \
  -DVKDML_FUZZ=ON -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" >/dev/null
.ci/copy-spirv.sh build "$dir"
cmake --build "$dir" -j2
built=$(date +%s)
. .ci/sanitizer-env.sh
share_of=4
. .ci/test-share.sh
# Not the two "[big]" tests either (test/test_random.cpp): their host code is the large path's,
# which lib.large.* take here at small sizes; instrumented, their CPU work on 160 MiB tensors
# took minutes. Nor cli.bench: the benchmark's own code, not the library's or the tool's.
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j2 -LE min_limits \
  -E '^lib\.msl_translation$|^lib\.Large path: .* past maxStorageBufferRange$|^cli\.bench$'
echo "sanitizers: built in $((built - start)) s, suite passed in $(($(date +%s) - built)) s"
