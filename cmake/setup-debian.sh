#!/bin/sh
# Installs what vkdml needs to build and test on Debian 12 (run as root). Debian packages only.
set -eu
export DEBIAN_FRONTEND=noninteractive
packages="cmake g++ make
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  catch2 mesa-vulkan-drivers vulkan-validationlayers
  python3-numpy python3-onnx libonnx-testdata"
# Sanitizer and fuzz runs (.ci/sanitizers.sh, .ci/fuzz.sh): clang, and its runtimes for
# -fsanitize=fuzzer,address,undefined (libFuzzer is in libclang-rt-dev, not pulled in by clang).
packages="$packages clang libclang-rt-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "vkdml setup: all packages present"
