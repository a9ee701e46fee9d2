# Sourced by .ci/sanitizers.sh and .ci/fuzz.sh with the build directory in $dir: how the
# sanitizer runs report. Any report ends the program with an error (the build adds
# -fno-sanitize-recover=all); leaks are checked at exit (and after each fuzz input), with
# .ci/lsan.supp naming the few that are not vkdml's; the preloaded keep_vulkan_loaded keeps the
# Vulkan driver and layer loaded so that those can be named (test/keep_vulkan_loaded.c).
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/.ci/lsan.supp:print_suppressions=0"
export LD_PRELOAD="$PWD/$dir/test/libvkdml_keep_vulkan_loaded.so"
# A rerun on lavapipe for vkdml's host code: its pipelines compile without LLVM's optimization
# passes (test/CMakeLists.txt: --fast-compile).
export GALLIVM_PERF=nopt
