// Prints vkdml's version from its public header's macros (.ci/consumers.sh compares it with
// the package's).
#include <cstdio>

#include <vkdml/vkdml.h>

static_assert(VKDML_VERSION ==
                  VKDML_VERSION_MAJOR * 10000 + VKDML_VERSION_MINOR * 100 + VKDML_VERSION_PATCH,
              "VKDML_VERSION");

int main() {
  std::printf("%d.%d.%d\n", VKDML_VERSION_MAJOR, VKDML_VERSION_MINOR, VKDML_VERSION_PATCH);
  return 0;
}
