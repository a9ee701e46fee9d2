#!/bin/sh
# Installs what vkdml needs on Debian 12 (run as root). Debian packages only.
#   cmake/setup-debian.sh demo   building the library and the `vkdml` tool, and running it on
#                                lavapipe (the README's demo command)
#   cmake/setup-debian.sh test   that, plus what the tests and CI need (the default)
set -eu
export DEBIAN_FRONTEND=noninteractive
demo="cmake g++ make libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  mesa-vulkan-drivers"
test="catch2 vulkan-validationlayers python3-numpy python3-onnx libonnx-testdata pkg-config"
# spirv-cross: every embedded module is translated to Metal Shading Language (lib.msl_translation).
test="$test spirv-cross"
# The sanitizer and fuzz runs (.ci/sanitizers.sh, .ci/fuzz.sh): clang, and its runtimes for
# -fsanitize=fuzzer,address,undefined (libFuzzer is in libclang-rt-dev, not pulled in by clang).
test="$test clang libclang-rt-dev"
# brotli: SwiftShader's prebuilt driver comes brotli-compressed (.ci/swiftshader.sh).
test="$test brotli"
# The Python module (-DVKDML_BUILD_PYTHON=ON) and its tests: pybind11 and Python's headers, pytest,
# and PyTorch, whose CPU ops the tests compare with.
test="$test pybind11-dev python3-dev python3-pytest python3-torch"
# The Debian packages (cmake/Packaging.cmake, .ci/packages.sh): CPack's DEB generator runs
# dpkg-shlibdeps (dpkg-dev) on what `file` says is a library; lintian checks the packages;
# help2man makes vkdml(1). ccache: the package builds reuse the test build's objects.
test="$test dpkg-dev file lintian help2man ccache"
# The wheel (pyproject.toml, setup.py): pip, setuptools and wheel, and a venv to install it in.
test="$test python3-pip python3-setuptools python3-wheel python3-venv"
# Other platforms' toolchains (.ci/other-toolchains.sh): MinGW-w64 for Windows, and clang with
# libc++ as the nearest to Apple's.
test="$test g++-mingw-w64-x86-64-posix libc++-dev libc++abi-dev"
case "${1:-test}" in
  demo) packages="$demo" ;;
  test) packages="$demo $test" ;;
  *)
    echo "usage: cmake/setup-debian.sh [demo|test]" >&2
    exit 2
    ;;
esac
missing=""
count=0
for p in $packages; do
  count=$((count + 1))
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "vkdml setup (${1:-test}): all $count packages already installed"
  exit 0
fi
echo "vkdml setup (${1:-test}): installing$missing (with what they need), from Debian's archive"
echo "vkdml setup: apt-get update"
apt-get update -qq
# apt-get's "Setting up" lines, one a package, as they come; its full output if it fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "vkdml setup: apt-get install (downloading, then setting up each package)"
status=0
apt-get install -y --no-install-recommends $missing >"$log" 2>&1 &
pid=$!
tail -n +1 -f --pid=$pid "$log" | grep --line-buffered '^Setting up ' |
  sed -u 's/^Setting up \([^ ]*\).*/vkdml setup:   set up \1/'
wait $pid || status=$?
if [ "$status" != 0 ]; then
  cat "$log" >&2
  echo "vkdml setup: apt-get install failed (exit $status)" >&2
  exit "$status"
fi
echo "vkdml setup (${1:-test}): installed$missing"
