// examples/embed.cpp's own SPIR-V (embed_indices.comp), embedded by cmake/EmbedSpirv.cmake.
#pragma once

#include <cstddef>
#include <cstdint>

namespace embed {

struct SpirvModule {
  const char* name;
  const uint32_t* words;
  size_t count;
};

// nullptr if no module has that name.
const SpirvModule* FindSpirv(const char* name);

}  // namespace embed
