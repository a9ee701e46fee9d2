#!/bin/sh
# Usage: .ci/copy-spirv.sh FROM TO: gives build tree TO (configured, not yet built) the SPIR-V
# modules build tree FROM compiled from the same sources, mtimes kept, so that make takes them as
# up to date instead of running glslangValidator and spirv-val on all of them again (52 s on
# CI's 2 cores). The modules do not depend on the C++ compiler or its sanitizers. A tree that
# has its own, or a FROM without them, is left as it is.
set -eu
from=$1/glsl
to=$2/glsl
[ -f "$from/spirv_modules.cpp" ] && [ -d "$from/spv" ] && [ ! -e "$to/spv" ] || exit 0
mkdir -p "$to/spv"
cp -p "$from"/spv/*.spv "$to/spv/"
cp -p "$from/spirv_modules.cpp" "$from/spirv_table.h" "$to/"
echo "$0: $(ls "$to/spv" | wc -l) SPIR-V modules from $1"
