#!/bin/sh
# CI: vkdml as users install it, tested where it is installed, never in a build tree.
#   - The Debian packages (cmake/Packaging.cmake): built with CPack from a build configured for
#     /usr, checked by lintian (no error), installed with `apt-get install ./*.deb`; then a
#     consumer through find_package(vkdml) and one through pkg-config (shared, and the static
#     libvkdml.a), `vkdml demo`, the man page, `import vkdml` and the Python tests, all against
#     /usr; then purged, leaving none of the files `dpkg -L` listed and nothing named vkdml.
#   - The wheel (pyproject.toml, setup.py): built with pip, its contents, tags and RPATH
#     checked, installed into a fresh `python3 -m venv --system-site-packages`, the Python tests
#     run there.
# The Python tests run from a directory outside the checkout, with PYTHONPATH unset, and fail
# unless vkdml comes from the installed place (test/python/conftest.py: VKDML_EXPECT_MODULE_DIR).
# Devices: lavapipe, with the validation layer (synchronization validation on).
# Run as root (apt-get). Usage: .ci/packages.sh [BUILD]   BUILD: a configured build of this tree
# whose SPIR-V modules the package builds reuse (default: build); its objects are reused through
# ccache where the build used it (.ci/run sets it up).
set -eu
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build}
packages="libvkdml0 libvkdml-dev vkdml-tools python3-vkdml"
python=/usr/bin/python3  # Debian's, with python3-numpy and the rest (another may come first)
work=$(mktemp -d /tmp/vkdml-packages.XXXXXX)
start=$(date +%s)

fail() {
  echo "packages: $*" >&2
  exit 1
}
took() { echo "packages: $1 ($(($(date +%s) - start)) s)"; }
installed() { dpkg-query -W -f='${Status}\n' "$@" 2>/dev/null | grep -q 'ok installed'; }
purge() {
  for p in $packages; do
    if installed "$p"; then apt-get purge -y -qq $packages >/dev/null 2>&1; return; fi
  done
}
cleanup() {
  purge || true
  rm -rf "$work"
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
# The test build's objects, where it compiled through ccache (.ci/run).
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$src}"
fi

icd=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json | head -n 1)
export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
export PYTHONDONTWRITEBYTECODE=1
unset VK_LOADER_LAYERS_ENABLE LD_LIBRARY_PATH PYTHONPATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

# run NAME PROGRAM [ARGS]: it must exit 0 with no validation message (the layer on).
run() {
  name=$1
  shift
  status=0
  out=$(VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation "$@" 2>&1) || status=$?
  if [ "$status" != 0 ]; then
    echo "$out"
    fail "$name: exit status $status"
  fi
  case "$out" in *"Validation "*) echo "$out"; fail "$name: a validation message" ;; esac
  echo "packages: $name: $(echo "$out" | tail -n 1)"
}
# pytests NAME PYTHON DIR R: the Python tests with PYTHON, run from outside the checkout; vkdml
# must come from DIR. The build's own run (python.pytest) ran all of them: these take the share
# R/4 (test/python/conftest.py), R turning with the commit (.ci/test-share.sh).
share_of=4
. .ci/test-share.sh
pytests() {
  r=$(((${VKDML_TEST_SHARE%/*} + $4) % share_of))
  (cd "$work" && VKDML_EXPECT_MODULE_DIR="$3" VKDML_TEST_SHARE=$r/$share_of "$2" -m pytest -q \
    -p no:cacheprovider -W error "$src/test/python" >"$work/pytest.log" 2>&1) ||
    { cat "$work/pytest.log"; fail "$1"; }
  echo "packages: $1 (share $r/$share_of): $(tail -n 1 "$work/pytest.log")"
}
# uses_lib PROGRAM: it loads the installed libvkdml.so.0.
uses_lib() {
  got=$(ldd "$1" | sed -n 's/.*libvkdml.so.0 => \([^ ]*\).*/\1/p')
  test -n "$got" && test "$(realpath "$got")" = "$(realpath "$lib")" ||
    fail "$1 loads libvkdml.so.0 from '$got', not $lib"
}
no_rpath() {
  if readelf -d "$1" | grep -Eq 'R(UN)?PATH'; then fail "$1 has an RPATH"; fi
}

# --- The Debian packages --------------------------------------------------------------------
purge  # a run that stopped half way
cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DVKDML_BUILD_TESTS=OFF \
  -DVKDML_BUILD_PYTHON=ON >/dev/null
.ci/copy-spirv.sh "$build" build-deb >/dev/null
cmake --build build-deb -j2 >/dev/null
rm -f build-deb/*.deb
# (CPack warns that the Python module has no SONAME, so no shlibs line: none is wanted.)
(cd build-deb && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
debs=""
for p in $packages; do
  deb=$(ls build-deb/${p}_*.deb) || fail "no $p package"
  debs="$debs ./$deb"
done
took "built$debs"
# lintian: no error (--fail-on error); its warnings, listed in README.md (Install), are printed.
# (As root it says that root is not recommended: that line goes.)
lintian --fail-on error $debs 2>&1 | grep -v 'running with root' || fail "lintian found errors"
took "lintian: no error"

# What the packages will install, and which of their directories exist already (they stay).
for deb in $debs; do dpkg-deb -c "$deb"; done | awk '{print $6}' | sed 's,^\./,/,; s,/$,,' |
  grep -v '^$' | sort -u >"$work/contents"
while read -r path; do
  if [ -d "$path" ]; then echo "$path"; fi
  if [ -e "$path" ] && [ ! -d "$path" ]; then fail "$path exists before installing"; fi
done <"$work/contents" >"$work/dirs-before"
apt-get install -y -qq --no-install-recommends $debs >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log"; fail "apt-get install"; }
for p in $packages; do dpkg -L "$p"; done | sort -u >"$work/listed"
took "installed"

lib=$(ls /usr/lib/*/libvkdml.so.0) || fail "no libvkdml.so.0 in /usr/lib/<multiarch>"
readelf -d "$lib" | grep -q 'SONAME.*\[libvkdml.so.0\]' || fail "$lib: SONAME is not libvkdml.so.0"
module=$(ls /usr/lib/python3/dist-packages/vkdml/_vkdml*.so)
no_rpath /usr/bin/vkdml
no_rpath "$module"
# find_package(vkdml) from /usr, and pkg-config, with no path given.
cmake -S test/consumer -B "$work/cmake" >/dev/null
cmake --build "$work/cmake" -j2 >/dev/null
uses_lib "$work/cmake/consumer"
run "find_package(vkdml) from /usr" "$work/cmake/consumer"
g++ -std=c++17 examples/quickstart.cpp $(pkg-config --cflags --libs vkdml) -o "$work/pc"
uses_lib "$work/pc"
run "pkg-config vkdml" "$work/pc"
test "$(pkg-config --modversion vkdml)" = "$("$work/cmake/consumer_version")" ||
  fail "vkdml.pc's version is not the library's"
# libvkdml-dev's static library, through pkg-config --static.
archive=$(dirname "$lib")/libvkdml.a
g++ -std=c++17 examples/quickstart.cpp $(pkg-config --cflags vkdml) \
  $(pkg-config --static --libs vkdml | sed "s|-lvkdml|$archive|; s/-Wl,-rpath,[^ ]*//") \
  -o "$work/static"
if readelf -d "$work/static" | grep -q 'NEEDED.*libvkdml'; then fail "static: links libvkdml.so"; fi
run "libvkdml.a (pkg-config --static)" "$work/static"
# The tool and its man page.
tool=$(command -v vkdml) || true
test "$tool" = /usr/bin/vkdml || fail "vkdml is '$tool', not /usr/bin/vkdml"
run "vkdml demo" vkdml demo
zcat /usr/share/man/man1/vkdml.1.gz | grep -q 'gather-block-quantized' ||
  fail "the man page lacks vkdml run's operators"
# The Python module.
(cd "$work" && "$python" -c "import vkdml; print(vkdml.__file__)") >"$work/file"
test "$(cat "$work/file")" = /usr/lib/python3/dist-packages/vkdml/__init__.py ||
  fail "import vkdml: not /usr/lib/python3/dist-packages/vkdml"
pytests "python3-vkdml: the Python tests" "$python" /usr/lib/python3/dist-packages/vkdml 0
took "tested installed"

apt-get purge -y -qq $packages >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "purge"; }
while read -r path; do
  if [ -e "$path" ] || [ -L "$path" ]; then
    grep -qx "$path" "$work/dirs-before" || fail "$path is left after purge"
  fi
done <"$work/listed"
left=$(find /usr /etc /var/lib/dpkg/info -path /usr/local -prune -o -name '*vkdml*' -print)
test -z "$left" || fail "left after purge: $left"
took "purged: no file left"

# --- The wheel --------------------------------------------------------------------------------
rm -rf build-wheel/wheel
VKDML_WHEEL_SPIRV_FROM="$build" "$python" -m pip wheel . --no-build-isolation --no-deps \
  -w "$work/dist" -q >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; fail "pip wheel"; }
wheel=$(ls "$work"/dist/vkdml-*.whl)
took "built $(basename "$wheel")"
# The module, its package and libvkdml.so.0; nothing else (Vulkan's loader stays the system's).
"$python" - "$wheel" <<'EOF' || fail "the wheel's contents or tags"
import re, sys, sysconfig, zipfile
wheel = sys.argv[1]
names = sorted(n for n in zipfile.ZipFile(wheel).namelist() if not n.startswith("vkdml-"))
suffix = sysconfig.get_config_var("EXT_SUFFIX")
expected = ["vkdml/__init__.py", f"vkdml/_vkdml{suffix}", "vkdml/libvkdml.so.0"]
assert names == expected, f"the wheel holds {names}, expected {expected}"
py = f"cp{sys.version_info.major}{sys.version_info.minor}"
m = re.search(rf"-{py}-{py}-manylinux_2_(\d+)_x86_64\.whl$", wheel)
assert m, f"{wheel}: expected {py}-{py}-manylinux_2_N_x86_64"
print(f"packages: the wheel holds {', '.join(names)}; glibc 2.{m.group(1)}")
EOF
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-deps --no-index "$wheel"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The glibc of the tag covers every symbol version the binaries need.
need=$(for f in "$site"/vkdml/*.so*; do readelf --version-info --wide "$f"; done |
  grep -o 'Name: GLIBC_2\.[0-9]*' | sed 's/.*\.//' | sort -n | tail -n 1)
tag=$(basename "$wheel" | sed 's/.*manylinux_2_\([0-9]*\)_.*/\1/')
test "$tag" -ge "$need" || fail "the wheel says glibc 2.$tag, its binaries need 2.$need"
for f in "$site"/vkdml/*.so*; do
  if readelf -d "$f" | grep -q 'NEEDED.*libvulkan'; then fail "$f links libvulkan"; fi
done
readelf -d "$site"/vkdml/_vkdml*.so | grep -q 'R.*PATH.*\[\$ORIGIN/*\]' ||
  fail "the wheel's module does not find libvkdml through \$ORIGIN"
pytests "the wheel, in a venv: the Python tests" "$work/venv/bin/python" "$site/vkdml" 1
took "the wheel passed"
