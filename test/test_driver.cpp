// The driver the tests use unless the caller chose one. The one file that includes the generated
// test_driver.h: pointing the tests at another driver (.ci/swiftshader.sh) recompiles this file
// alone, not test_main.cpp with Catch's implementation.
#include <cstdlib>

#include "harness.h"
#include "test_driver.h"  // VKDML_TEST_DRIVER_FILES, where the build found lavapipe

namespace vt {

void PinTestDriver() {
  // The same as CTest's ENVIRONMENT_MODIFICATION, for direct runs of the executable.
  unsetenv("VK_LOADER_LAYERS_ENABLE");
#ifdef VKDML_TEST_DRIVER_FILES
  if (!std::getenv("VK_DRIVER_FILES") && !std::getenv("VK_ICD_FILENAMES")) {
    setenv("VK_DRIVER_FILES", VKDML_TEST_DRIVER_FILES, 1);
    setenv("VK_ICD_FILENAMES", VKDML_TEST_DRIVER_FILES, 1);  // loaders before 1.3.207
  }
#endif
}

}  // namespace vt
