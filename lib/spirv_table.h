// The SPIR-V modules built from glsl/ at build time (see cmake/EmbedSpirv.cmake).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vkdml::detail {

struct SpirvModule {
  const char* name;  // the module's file name without .spv, e.g. "gather_e4"
  const uint32_t* words;
  size_t count;
};

// nullptr if no module has that name.
const SpirvModule* FindSpirv(const char* name);

}  // namespace vkdml::detail
