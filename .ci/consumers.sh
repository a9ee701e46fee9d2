#!/bin/sh
# CI: vkdml used the way a user's project uses it, through each route README.md describes:
#   - the installed CMake package (find_package), shared and static (BUILD_SHARED_LIBS=OFF),
#   - pkg-config (vkdml.pc), shared and static (--static),
#   - add_subdirectory of the source tree (vkdml's tests and tools stay off by themselves).
# Each builds test/consumer (examples/quickstart.cpp: a GatherND, its result checked) and runs
# it on lavapipe with the validation layer. The packages are installed to a temporary prefix and
# then moved (they are relocatable); nothing sets LD_LIBRARY_PATH or runs ldconfig: programs
# find libvkdml through the RPATH the package gives them. The static package also builds
# examples/embed.cpp, which brings its own volk: the archive keeps volk's symbols to itself.
# Usage: .ci/consumers.sh [BUILD]   BUILD: the shared build to install (default: build)
set -eu
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build}
work=$(mktemp -d /tmp/vkdml-consumers.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

icd=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json | head -n 1)
export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
unset VK_LOADER_LAYERS_ENABLE LD_LIBRARY_PATH

fail() {
  echo "consumers: $*" >&2
  exit 1
}
# run NAME PROGRAM [ARGS]: it must exit 0 with no validation message.
run() {
  name=$1
  shift
  status=0
  out=$("$@" 2>&1) || status=$?
  if [ "$status" != 0 ]; then
    echo "$out"
    fail "$name: exit status $status"
  fi
  case "$out" in *"Validation "*) echo "$out"; fail "$name: a validation message" ;; esac
  echo "consumers: $name: $out"
}
# Programs load Vulkan through vkdml (volk): none links libvulkan.
no_libvulkan() {
  if readelf -d "$1" | grep -q 'NEEDED.*libvulkan'; then fail "$1 links libvulkan"; fi
}

# The packages: the shared build's, and a static build's (with the embed example).
cmake --install "$build" --prefix "$work/stage-shared" >/dev/null
cmake -S . -B "$work/build-static" -DBUILD_SHARED_LIBS=OFF -DVKDML_BUILD_TESTS=OFF \
  -DVKDML_BUILD_EXAMPLES=ON >/dev/null
.ci/copy-spirv.sh "$build" "$work/build-static" >/dev/null
cmake --build "$work/build-static" -j2 --target vkdml vkdml_embed >/dev/null
# (lib/'s install rules alone: the tool, which the folder would install too, is not built)
cmake --install "$work/build-static/lib" --prefix "$work/stage-static" >/dev/null
for kind in shared static; do mv "$work/stage-$kind" "$work/$kind"; done
# Installs are stripped (VKDML_INSTALL_STRIP): no symbol table in the library, the tool or the
# Python module.
for f in $(find "$work/shared" -name 'libvkdml.so*' -type f) "$work/shared/bin/vkdml" \
  $(find "$work/shared" -name '_vkdml*.so'); do
  if readelf -S "$f" | grep -q '\.symtab'; then fail "$f is not stripped"; fi
done
# The installed Python module, where the build has one: Debian's python3 imports it from the
# package's dist-packages (moved with the prefix: it finds libvkdml through its RPATH).
pydir=$(find "$work/shared" -name _vkdml*.so -exec dirname {} \; | head -n 1)
if [ -n "$pydir" ]; then
  run "the Python module, installed" env PYTHONPATH="$(dirname "$pydir")" /usr/bin/python3 -c \
    "import numpy as np, vkdml; r = vkdml.gather(np.arange(4.0), [3, -4]); assert r.tolist() == [3.0, 0.0], r; print('gather', r)"
fi
archive=$(find "$work/static" -name libvkdml.a)
test -n "$archive" || fail "no libvkdml.a in the static package"
if [ -n "$(find "$work/static" -name 'libvkdml.so*')" ]; then fail "a static package with a .so"; fi
if nm -g --defined-only "$archive" | grep -Eq ' [A-TV-Z] (vk|volk)'; then
  fail "libvkdml.a exports volk's symbols"
fi
# (the example enables the validation layer itself)
run "static libvkdml.a beside the example's own volk" env -u VK_INSTANCE_LAYERS \
  "$work/build-static/examples/vkdml_embed" --validation

for kind in shared static; do
  prefix=$work/$kind
  # find_package + vkdml::vkdml.
  cmake -S test/consumer -B "$work/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$work/cmake-$kind" -j2 >/dev/null
  no_libvulkan "$work/cmake-$kind/consumer"
  run "find_package, $kind" "$work/cmake-$kind/consumer"
  # pkg-config.
  pcdir=$(dirname "$(find "$prefix" -name vkdml.pc)")
  static=""
  if [ "$kind" = static ]; then static=--static; fi
  flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config $static --cflags --libs vkdml)
  g++ -std=c++17 examples/quickstart.cpp $flags -o "$work/pc-$kind"
  g++ -std=c++17 test/consumer/version.cpp $flags -o "$work/pc-version-$kind"
  no_libvulkan "$work/pc-$kind"
  run "pkg-config, $kind" "$work/pc-$kind"
  version=$("$work/pc-version-$kind")
  test "$version" = "$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion vkdml)" ||
    fail "VKDML_VERSION_* say $version, vkdml.pc another"
  test "$version" = "$("$work/cmake-$kind/consumer_version")" || fail "version differs"
done
# The version file: 0.1 accepts this 0.1.x only.
if cmake -S test/consumer -B "$work/cmake-wrong" -DCMAKE_PREFIX_PATH="$work/shared" \
  -DVKDML_WANT=0.2 >/dev/null 2>&1; then
  fail "find_package(vkdml 0.2) accepted version $version"
fi

# add_subdirectory: vkdml's tests and tools are off unless asked for.
cmake -S test/consumer -B "$work/subdir" -DVKDML_SOURCE_DIR="$src" >/dev/null
# The SPIR-V modules from the build but one, which this tree compiles through vkdml's rules
# (glslangValidator, spirv-val, the embedded table) from a parent's tree: compiling all of them
# again took 60 s of CI's time here, and showed no more.
.ci/copy-spirv.sh "$build" "$work/subdir/vkdml" >/dev/null
rm -f "$work/subdir/vkdml/glsl/spv/gather_e4_i32.spv"
if cmake --build "$work/subdir" --target help | grep -Eq 'vkdml_tests|vkdml_cli'; then
  fail "add_subdirectory builds vkdml's tests or tools"
fi
# A parent that sets no build type gets vkdml's directories optimised (Release), its own as it was.
grep -q -- '-O3 -DNDEBUG' "$work/subdir/vkdml/lib/CMakeFiles/vkdml.dir/flags.make" ||
  fail "add_subdirectory without a build type: vkdml is not built as Release"
cmake --build "$work/subdir" -j2 >/dev/null
test -f "$work/subdir/vkdml/glsl/spv/gather_e4_i32.spv" || fail "add_subdirectory compiled no module"
run "add_subdirectory" "$work/subdir/consumer"
echo "consumers: every route works ($(($(date +%s) - start)) s)"
