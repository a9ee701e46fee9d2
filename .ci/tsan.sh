#!/bin/sh
# CI: the thread test (test/test_threads.cpp) under ThreadSanitizer. The library and the test are
# built with gcc's -fsanitize=thread in their own build folder and run on lavapipe with the
# validation layer. test/tsan.supp silences lavapipe's own free() across its threads only; any
# other report fails the run. A canary then shows that a real race is still reported: a host
# thread writing a buffer through vkdml while the driver copies out of it must be a data race.
set -eu
cd "$(dirname "$0")/.."
build=${VKDML_TSAN_BUILD:-build-tsan}
tsan="-fsanitize=thread -fno-omit-frame-pointer"
# (-g1: line tables, which reports need, at less build time than -g.)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKDML_BUILD_EXAMPLES=OFF \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$tsan" -DCMAKE_CXX_FLAGS="$tsan" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
.ci/copy-spirv.sh build "$build"
cmake --build "$build" -j2 --target vkdml_thread_tests
TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/test/tsan.supp" \
  "$build/test/vkdml_thread_tests" "[threads]"
canary=$(mktemp)
status=0
TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/test/tsan.supp" \
  "$build/test/vkdml_thread_tests" "[.tsan-canary]" >"$canary" 2>&1 || status=$?
if [ "$status" != 66 ] || ! grep -q "WARNING: ThreadSanitizer: data race" "$canary" ||
  ! grep -q "BufferImpl::Write" "$canary"; then
  cat "$canary"
  echo "tsan: the canary's race was not reported (exit $status): test/tsan.supp hides too much" >&2
  rm -f "$canary"
  exit 1
fi
rm -f "$canary"
echo "tsan: the thread test passed; the canary's race was reported"
