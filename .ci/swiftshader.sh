#!/bin/sh
# CI: the suite (lib and CLI tests, validation layer on) on a second driver, SwiftShader (Google's
# CPU Vulkan driver: Vulkan 1.3 without 8/16-bit storage, shaderInt64 or shaderFloat64, 1 GiB
# buffers). Its prebuilt ICD comes from the npm package @sparticuz/chromium 147.0.0
# (bin/swiftshader.tar.br, brotli-compressed), fetched from the npm registry once into
# .ci-cache/ (git-ignored) and checked against a pinned SHA-256. The build folder (default:
# build, as .ci/run leaves it) is pointed at SwiftShader's ICD for the run and back after.
# What SwiftShader refuses (the 1- and 2-byte types, FLOAT64 arithmetic, a tensor past its
# allocation limit) the tests skip and report, and the skips are listed at the end; a device that
# has it must run it.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
cache=.ci-cache/swiftshader
url=https://registry.npmjs.org/@sparticuz/chromium/-/chromium-147.0.0.tgz
sha256=18fe5404ce845594cd7d592fc07f37a19514079ba4d9c27192ad8b908743f16b
mkdir -p "$cache"
if [ ! -f "$cache/vk_swiftshader_icd.json" ]; then
  command -v brotli >/dev/null || { echo "swiftshader: brotli is missing: cmake/setup-debian.sh test" >&2; exit 1; }
  python3 -c "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" \
    "$url" "$cache/chromium.tgz"
  echo "$sha256  $cache/chromium.tgz" | sha256sum -c --quiet
  tar -xzf "$cache/chromium.tgz" -C "$cache" package/bin/swiftshader.tar.br
  brotli -d -c "$cache/package/bin/swiftshader.tar.br" | tar -x -C "$cache"
  rm -rf "$cache/chromium.tgz" "$cache/package"
fi
icd="$PWD/$cache/vk_swiftshader_icd.json"
lavapipe=$(cmake -L -N "$build" 2>/dev/null | sed -n 's/^VKDML_TEST_DRIVER_FILES:FILEPATH=//p')
restore() { cmake -DVKDML_TEST_DRIVER_FILES="$lavapipe" "$build" >/dev/null; }
trap restore EXIT
cmake -DVKDML_TEST_DRIVER_FILES="$icd" "$build" >/dev/null
cmake --build "$build" -j2
VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd" "$build/examples/vkdml" devices
# Not the minimum-limits device's reruns: that device forwards to the tests' driver, and its
# point (every layout and pipeline within Vulkan's minimums) is made on lavapipe. Each random
# sweep on a quarter of the cases the suite's own share runs (.ci/test-share.sh): SwiftShader
# compiles every pipeline anew in each process (82% of a sweep's time in
# vkCreateComputePipelines), and the whole suite would take most of CI's time.
# Not the Python module's tests either (427 s here): python.min_limits runs them on a device
# without 8/16-bit storage, int64 or float64 already.
share_of=4
. .ci/test-share.sh
# Of the CLI's groups, those whose work is the tool's own (files, options, errors, the benchmark)
# or each operator's options (which the lib suite runs here) stay on lavapipe: cli.roundtrip
# takes every data type through the tool on this device without 8/16-bit storage, and
# cli.onnx_conformance ONNX's cases.
ctest --test-dir "$build" --output-on-failure --no-tests=error -j2 -LE min_limits \
  -E '^python\.|^cli\.(bench|shapes|reduce|indices|out_of_range|quantized|bag|output|limits|errors)$'
# What each test skipped, and why (its own words, from ctest's log).
awk '/^[0-9]+\/[0-9]+ Testing: / { sub(/^[^:]*: /, ""); test = $0; next }
     / skipped/ && test { gsub(/  +/, " "); print test ":" $0 }' "$build/Testing/Temporary/LastTest.log"

echo "swiftshader: the suite passed on SwiftShader"
