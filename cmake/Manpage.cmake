# cmake -DVKDML=<vkdml> -DHELP2MAN=<help2man> -DVERSION=<x.y.z> -DOUT=<vkdml.1.gz> -P Manpage.cmake
# vkdml(1) from `vkdml --help`, with a section for each command's own --help.
get_filename_component(dir "${OUT}" DIRECTORY)
set(include "${dir}/vkdml.h2m")
set(text "[DESCRIPTION]\nvkdml runs DirectML's gather and scatter operators, and vkdml's own, on \
Vulkan devices.\n")
foreach(command devices demo run bench)
  execute_process(COMMAND "${VKDML}" ${command} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vkdml ${command} --help failed (${rc})")
  endif()
  # Roff: a leading dot or quote would be a request; backslashes are escapes.
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(APPEND text "[COMMAND ${command}]\n.nf\n${help}.fi\n")
endforeach()
file(WRITE "${include}" "${text}")
execute_process(
  COMMAND "${HELP2MAN}" --no-info --version-string=${VERSION} --section=1
          "--name=DirectML's gather/scatter operators on Vulkan" --include=${include}
          --output=${dir}/vkdml.1 "${VKDML}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed (${rc})")
endif()
execute_process(COMMAND gzip -9nf "${dir}/vkdml.1" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed (${rc})")
endif()
