// Run by the build (lib/CMakeLists.txt): fails it when kernel choice can ask for a module that
// glsl/CMakeLists.txt does not make, naming each such module.
#include <cstdio>

#include "kernels/kernels.h"
#include "spirv_table.h"

int main() {
  const auto missing = vkdml::detail::MissingModules(
      [](const std::string& name) { return vkdml::detail::FindSpirv(name.c_str()) != nullptr; });
  for (const std::string& name : missing)
    std::fprintf(stderr,
                 "kernel choice (lib/kernel_*.cpp) can ask for the module %s, which "
                 "glsl/CMakeLists.txt does not build\n",
                 name.c_str());
  return missing.empty() ? 0 : 1;
}
