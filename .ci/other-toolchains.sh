#!/bin/sh
# CI: vkdml built by the toolchains of the platforms it is embedded on, beside Linux and GCC
# (built, not run: CI has no Windows or macOS machine). Each build is the library and the
# `vkdml` tool, no tests, no Python, and must be warning-free.
#   - Windows: Debian's MinGW-w64 (cmake/mingw-w64-x86_64.cmake) builds vkdml.dll, its import
#     library and vkdml.exe. The DLL must export the public API and nothing else: the same
#     functions as libvkdml.so (lib/vkdml.map), none of vkdml::detail, volk or the C++ runtime,
#     and import only Windows' own DLLs (the MinGW runtime is linked in; Vulkan's loader is
#     opened at run time by volk).
#   - Apple's toolchain, as near as Debian comes: clang with libc++ (Debian's clang and
#     libc++-dev), whose library and tool must link libc++, not libstdc++.
# Usage: .ci/other-toolchains.sh [BUILD]   BUILD: the Linux build (default: build), whose
# SPIR-V modules the builds reuse and whose libvkdml.so the DLL's exports are compared with.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
start=$(date +%s)
fail() {
  echo "other-toolchains: $*" >&2
  exit 1
}
took() { echo "other-toolchains: $1 ($(($(date +%s) - start)) s)"; }
# build DIR CMAKE-ARGS...: configure, reuse the SPIR-V, build the library and the tool (log:
# DIR/ci-build.log); any compiler or linker warning fails it.
build() {
  dir=$1
  shift
  mkdir -p "$dir"
  log=$dir/ci-build.log
  cmake -S . -B "$dir" -DVKDML_BUILD_TESTS=OFF -DVKDML_BUILD_PYTHON=OFF "$@" >"$log" 2>&1 ||
    { cat "$log"; fail "$dir: configure failed"; }
  .ci/copy-spirv.sh "$build" "$dir" >/dev/null
  cmake --build "$dir" -j2 --target vkdml vkdml_cli >>"$log" 2>&1 ||
    { cat "$log"; fail "$dir: build failed"; }
  if grep 'warning:' "$log"; then fail "$dir: warnings (above)"; fi
}

# --- Windows: MinGW-w64 -------------------------------------------------------------------
build build-mingw -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/mingw-w64-x86_64.cmake"
dll=build-mingw/lib/vkdml.dll
for f in "$dll" build-mingw/lib/libvkdml.dll.a build-mingw/examples/vkdml.exe; do
  test -f "$f" || fail "no $f"
done
objdump=x86_64-w64-mingw32-objdump
# Imports: Windows' own DLLs only.
for exe in "$dll" build-mingw/examples/vkdml.exe; do
  $objdump -p "$exe" | sed -n 's/^\tDLL Name: //p' | while read -r name; do
    case "$name" in
      KERNEL32.dll | msvcrt.dll | ADVAPI32.dll | USER32.dll | vkdml.dll) ;;
      *) fail "$exe imports $name" ;;
    esac
  done
done
# Exports: demangled, with Windows' 64-bit integer (long long; long is 32 bits there) written
# as Linux's (long), they must be libvkdml.so's (a name once: the .so has the complete and
# base-object destructor, the same name).
$objdump -p "$dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/s/^\t\[ *[0-9]*\] //p' |
  c++filt | sed 's/long long/long/g' | sort -u >build-mingw/exports.dll
nm -D --defined-only "$build/lib/libvkdml.so" | awk '$2 != "A" {print $3}' | c++filt |
  sort -u >build-mingw/exports.so
test -s build-mingw/exports.so || fail "no exports read from $build/lib/libvkdml.so"
if grep -Ev '^vkdml::' build-mingw/exports.dll || grep -E '^vkdml::de' build-mingw/exports.dll; then
  fail "$dll exports the names above, outside vkdml's public API"
fi
if ! diff build-mingw/exports.so build-mingw/exports.dll; then
  fail "$dll exports other functions than libvkdml.so (< the .so's, > the DLL's)"
fi
took "MinGW-w64: vkdml.dll, libvkdml.dll.a and vkdml.exe, no warning; the DLL exports \
libvkdml.so's $(wc -l <build-mingw/exports.dll) functions"

# --- clang + libc++ ------------------------------------------------------------------------
build build-libcxx -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS=-stdlib=libc++ -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ \
  -DCMAKE_SHARED_LINKER_FLAGS=-stdlib=libc++
for f in build-libcxx/lib/libvkdml.so build-libcxx/examples/vkdml; do
  readelf -d "$f" | grep -q 'NEEDED.*libc++' || fail "$f does not link libc++"
  if readelf -d "$f" | grep -q 'NEEDED.*libstdc++'; then fail "$f links libstdc++"; fi
done
took "clang + libc++: libvkdml.so and vkdml, no warning"
