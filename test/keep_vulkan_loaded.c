/* Preloaded into every process of the sanitizer runs (.ci/sanitizers.sh, .ci/fuzz.sh; built
 * without sanitizers, so that uninstrumented programs such as python3 load it too).
 *
 * LeakSanitizer checks at exit which blocks nothing points to any more, and names the library
 * that allocated each one only while that library is loaded. The Vulkan loader unloads the
 * driver and the layers when an instance is destroyed: the memory their globals still held then
 * looks leaked, allocated by "<unknown module>". Loading them here once more, never to be
 * unloaded (RTLD_NODELETE) and without exporting their symbols to the program (RTLD_LOCAL, unlike
 * an LD_PRELOAD of the libraries themselves, which would put the layer's vkGetInstanceProcAddr
 * in front of the loader's), keeps what they hold reachable and their names known, so that
 * .ci/lsan.supp can tell their leaks from vkdml's. */
#include <dlfcn.h>

__attribute__((constructor)) static void KeepVulkanLoaded(void) {
  static const char* const kLibraries[] = {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so"};
  for (unsigned i = 0; i < sizeof kLibraries / sizeof kLibraries[0]; ++i)
    dlopen(kLibraries[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}
