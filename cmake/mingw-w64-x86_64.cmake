# Cross-compiling vkdml for 64-bit Windows with Debian's MinGW-w64 (g++-mingw-w64-x86-64-posix):
#   cmake -S . -B build-mingw --toolchain cmake/mingw-w64-x86_64.cmake -DVKDML_BUILD_TESTS=OFF
# builds vkdml.dll (exporting the public API only: lib/vkdml.map, which MinGW's linker honours
# too), its import library libvkdml.dll.a, and vkdml.exe; the MinGW runtime (libstdc++, libgcc,
# winpthreads) is linked in, so they need no DLL but Windows' own. .ci/other-toolchains.sh builds
# it in CI (built, not run: there is no Windows machine there).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # glslangValidator and friends run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# printf as C99 has it (%zu, %lld), not msvcrt's.
set(CMAKE_C_FLAGS_INIT -D__USE_MINGW_ANSI_STDIO=1)
set(CMAKE_CXX_FLAGS_INIT -D__USE_MINGW_ANSI_STDIO=1)
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)
set(CMAKE_SHARED_LINKER_FLAGS_INIT -static)

# Vulkan's headers and volk (Debian's libvulkan-dev and libvulkan-volk-dev: headers and source,
# the same for any target) from a directory of links to them: /usr/include as a whole is the
# host's C library's, which must not come before MinGW's.
set(vkdml_links "${CMAKE_BINARY_DIR}/mingw-include")
foreach(entry vulkan vk_video volk.h volk.c)
  if(EXISTS "/usr/include/${entry}" AND NOT EXISTS "${vkdml_links}/${entry}")
    file(MAKE_DIRECTORY "${vkdml_links}")
    file(CREATE_LINK "/usr/include/${entry}" "${vkdml_links}/${entry}" SYMBOLIC)
  endif()
endforeach()
set(VULKAN_HEADERS_DIR "${vkdml_links}" CACHE PATH "Vulkan-Headers (links to Debian's)")
set(VOLK_SOURCE_DIR "${vkdml_links}" CACHE PATH "volk.c (a link to Debian's)")
