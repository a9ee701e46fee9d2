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
case "${1:-test}" in
  demo) packages="$demo" ;;
  test) packages="$demo $test" ;;
  *)
    echo "usage: cmake/setup-debian.sh [demo|test]" >&2
    exit 2
    ;;
esac
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "vkdml setup (${1:-test}): all packages present"
