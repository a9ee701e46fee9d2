// LD_PRELOAD shim for the test cli.no_loader: dlopen of the Vulkan loader fails, as on a machine
// without libvulkan1.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

void* dlopen(const char* file, int flags) {
  static void* (*real)(const char*, int) = NULL;
  if (file && strstr(file, "libvulkan")) return NULL;
  if (!real) real = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
  return real(file, flags);
}
