# Debian packages, through CPack's DEB generator: configure with -DCMAKE_INSTALL_PREFIX=/usr, build,
# then `cmake --build <build> --target package` (or `cpack -G DEB` in the build). One package a
# component of the install rules:
#   lib     libvkdml0      libvkdml.so.0 in /usr/lib/<multiarch>
#   dev     libvkdml-dev   headers, the CMake package, vkdml.pc, libvkdml.so and libvkdml.a
#   tools   vkdml-tools    the `vkdml` command and its man page
#   python  python3-vkdml  the Python module, in /usr/lib/python3/dist-packages
# Versions come from project() (Debian revision VKDML_DEBIAN_REVISION). Depends are computed by
# dpkg-shlibdeps where it can; the library loads Vulkan at run time (volk), which it cannot see, so
# libvulkan1 is named, and a driver recommended. .ci/packages.sh builds, lints, installs, tests
# and purges them.
option(VKDML_INSTALL_STATIC
       "Install libvkdml.a too, made of the shared library's objects (libvkdml-dev has both)" ON)
set(VKDML_DEBIAN_REVISION 1 CACHE STRING "The Debian revision of the packages' versions")
set(VKDML_MAINTAINER "vkdml maintainers <maintainers@users.noreply.a-seed-f1aa891d.example>")

# libvkdml.a beside the shared library, made as lib/CMakeLists.txt makes a static build's (one
# relocatable object, volk's symbols local) from the objects the shared library was linked from:
# the same sources and flags (both position-independent), compiled once.
if(VKDML_SHARED AND VKDML_INSTALL_STATIC AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND NOT VKDML_SANITIZE AND NOT VKDML_FUZZ)
  find_program(VKDML_OBJCOPY NAMES objcopy REQUIRED DOC "binutils' objcopy")
  set(static_dir "${PROJECT_BINARY_DIR}/lib/static")
  set(prelinked "${static_dir}/vkdml_prelinked.o")
  add_custom_command(
    OUTPUT "${prelinked}"
    COMMAND "${CMAKE_LINKER}" -r -o "${prelinked}.tmp" "$<TARGET_OBJECTS:vkdml>" --whole-archive
            "$<TARGET_FILE:vkdml_core>" --no-whole-archive
    COMMAND "${VKDML_OBJCOPY}" -w "--localize-symbol=vk*" "--localize-symbol=volk*"
            "${prelinked}.tmp" "${prelinked}"
    COMMAND "${CMAKE_COMMAND}" -E rm "${prelinked}.tmp"
    DEPENDS vkdml vkdml_core
    COMMENT "Linking the shared library's objects into one for libvkdml.a, volk's symbols local"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_library(vkdml_static STATIC "${prelinked}")
  set_source_files_properties("${prelinked}" PROPERTIES EXTERNAL_OBJECT ON GENERATED ON)
  set_target_properties(vkdml_static PROPERTIES OUTPUT_NAME vkdml LINKER_LANGUAGE CXX
                        ARCHIVE_OUTPUT_DIRECTORY "${static_dir}")
  install(TARGETS vkdml_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
endif()

# Installed into the system (/usr): the library is in the loader's own directory, so the tool
# and the Python module need no RPATH (Debian's policy, and lintian, refuse one).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  foreach(target vkdml_cli vkdml_python)
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES INSTALL_RPATH "")
    endif()
  endforeach()
endif()

# The man page, vkdml(1), made by help2man from `vkdml --help` and each command's --help (by
# the tool as built: not where it cannot run, nor under the sanitizers, whose reports at exit
# would fail the build).
if(TARGET vkdml_cli AND NOT CMAKE_CROSSCOMPILING AND NOT VKDML_SANITIZE AND NOT VKDML_FUZZ)
  find_program(VKDML_HELP2MAN help2man DOC "help2man, for vkdml's man page (Debian: help2man)")
  if(VKDML_HELP2MAN)
    set(man "${PROJECT_BINARY_DIR}/man/vkdml.1.gz")
    add_custom_command(
      OUTPUT "${man}"
      COMMAND "${CMAKE_COMMAND}" -DVKDML=$<TARGET_FILE:vkdml_cli> -DHELP2MAN=${VKDML_HELP2MAN}
              -DVERSION=${PROJECT_VERSION} -DOUT=${man}
              -P "${PROJECT_SOURCE_DIR}/cmake/Manpage.cmake"
      DEPENDS vkdml_cli "${PROJECT_SOURCE_DIR}/cmake/Manpage.cmake"
      COMMENT "Making vkdml(1) from vkdml --help" VERBATIM)
    add_custom_target(vkdml_man ALL DEPENDS "${man}")
    install(FILES "${man}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT tools)
  endif()
endif()

# Each package's /usr/share/doc/<package>: copyright and changelog.Debian.gz, as Debian requires.
set(VKDML_PACKAGE_VERSION "${PROJECT_VERSION}-${VKDML_DEBIAN_REVISION}")
string(TIMESTAMP changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH if set
set(doc_dir "${PROJECT_BINARY_DIR}/debian")
file(WRITE "${doc_dir}/changelog.Debian"
     "vkdml (${VKDML_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
     "  * vkdml ${PROJECT_VERSION}, packaged by CPack (cmake/Packaging.cmake).\n\n"
     " -- ${VKDML_MAINTAINER}  ${changelog_date}\n")
find_program(VKDML_GZIP gzip)
if(VKDML_GZIP)
  execute_process(COMMAND "${VKDML_GZIP}" -9nc "${doc_dir}/changelog.Debian"
                  OUTPUT_FILE "${doc_dir}/changelog.Debian.gz")
endif()
set(VKDML_PACKAGES lib libvkdml0 dev libvkdml-dev tools vkdml-tools python python3-vkdml)
set(components "")
set(packages_left ${VKDML_PACKAGES})
while(packages_left)
  list(POP_FRONT packages_left component package)
  list(APPEND components ${component})
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME ${package})
  install(FILES "${PROJECT_SOURCE_DIR}/cmake/debian/copyright" "${doc_dir}/changelog.Debian.gz"
          DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}" COMPONENT ${component})
endwhile()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vkdml)
set(CPACK_PACKAGE_VENDOR "vkdml")
set(CPACK_PACKAGE_CONTACT "${VKDML_MAINTAINER}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_DEBIAN_PACKAGE_RELEASE "${VKDML_DEBIAN_REVISION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${components})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The tool and the module need libvkdml.so.0, which is in no installed package yet: from the build.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}/lib")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # a component's DEPENDS: Depends (= version)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "DirectML's gather/scatter operators on Vulkan")

# (Description lines within 79 columns: lintian's limit, with the space Debian adds.)
set(about "vkdml runs DirectML's Gather, GatherND, GatherND1, GatherElements,
ScatterND and ScatterElements operators, with DirectML's semantics and
descriptor structs, as Vulkan compute kernels on any Vulkan 1.1 device (GPUs,
and lavapipe or SwiftShader on the CPU). It adds scatter reductions, quantized
rows (ggml's blocks), embedding bags and ONNX Runtime's GatherBlockQuantized.")
set(CPACK_COMPONENT_LIB_DESCRIPTION "DirectML's gather/scatter operators on Vulkan (library)
${about}

This package holds the shared library. It loads the Vulkan loader at run time.")
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libvulkan1")
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "mesa-vulkan-drivers | vulkan-icd")
# ldconfig through dpkg's trigger (lintian: lacks-ldconfig-trigger). CPack 3.25 also writes a
# postinst and postrm calling ldconfig for a library in /usr/lib (lintian's warning
# maintscript-calls-ldconfig; harmless, README: Install).
configure_file("${PROJECT_SOURCE_DIR}/cmake/debian/libvkdml0.triggers" "${doc_dir}/lib/triggers"
               COPYONLY)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA "${doc_dir}/lib/triggers")

set(CPACK_COMPONENT_DEV_DESCRIPTION "DirectML's gather/scatter operators on Vulkan (development)
${about}

This package holds the headers, the CMake package (find_package(vkdml)),
vkdml.pc for pkg-config and the static library.")
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libvulkan-dev")  # the public headers include Vulkan's

set(CPACK_COMPONENT_TOOLS_DESCRIPTION "DirectML's gather/scatter operators on Vulkan (command)
${about}

This package holds the vkdml command: devices, demo, run (operators on .npy
files) and bench.")
set(CPACK_COMPONENT_TOOLS_DEPENDS lib)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)

set(CPACK_COMPONENT_PYTHON_DESCRIPTION "DirectML's gather/scatter operators on Vulkan (Python 3)
${about}

This package holds the Python 3 module vkdml, which runs the operators on
NumPy arrays.")
set(CPACK_COMPONENT_PYTHON_DEPENDS lib)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
if(TARGET vkdml_python)
  # A CPython extension module: the interpreter version it was built for.
  get_directory_property(minor DIRECTORY examples/python DEFINITION Python_VERSION_MINOR)
  math(EXPR next "${minor} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= 3.${minor}~), python3 (<< 3.${next}), python3-numpy")
endif()
# Byte-compiled on install and removed on removal, as dh_python3's packages do.
foreach(script postinst prerm)
  configure_file("${PROJECT_SOURCE_DIR}/cmake/debian/python3-vkdml.${script}"
                 "${doc_dir}/python/${script}" COPYONLY)
  file(CHMOD "${doc_dir}/python/${script}" FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA "${doc_dir}/python/postinst;${doc_dir}/python/prerm")

# Packages of a build configured for another prefix would put the library outside the
# multiarch directory and the module where Debian's python3 does not look: refused.
set(CPACK_PROJECT_CONFIG_FILE "${doc_dir}/CPackProject.cmake")
file(WRITE "${CPACK_PROJECT_CONFIG_FILE}"
     "if(CPACK_GENERATOR STREQUAL \"DEB\" AND NOT \"${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")
  message(FATAL_ERROR \"vkdml's Debian packages need a build configured with \"
                      \"-DCMAKE_INSTALL_PREFIX=/usr (this one has ${CMAKE_INSTALL_PREFIX})\")
endif()
")
include(CPack)
