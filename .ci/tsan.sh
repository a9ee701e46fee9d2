#!/bin/sh
# CI: the thread test (test/test_threads.cpp) under ThreadSanitizer. The library and the test are
# built with gcc's -fsanitize=thread in their own build folder and run on lavapipe with the
# validation layer. test/tsan.supp silences reports inside the Vulkan driver and layers only,
# which are not instrumented; any report in vkdml's code fails the run.
set -eu
cd "$(dirname "$0")/.."
build=${VKDML_TSAN_BUILD:-build-tsan}
tsan="-fsanitize=thread -fno-omit-frame-pointer"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKDML_BUILD_EXAMPLES=OFF \
  -DCMAKE_C_FLAGS="$tsan" -DCMAKE_CXX_FLAGS="$tsan" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build" -j2 --target vkdml_thread_tests
TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/test/tsan.supp" \
  "$build/test/vkdml_thread_tests" "[threads]"
