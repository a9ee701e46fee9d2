# Compiles GLSL compute shaders to SPIR-V with glslangValidator, checks each module with
# spirv-val, and embeds them all into one generated C++ source (no shader files at run time).
find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)
find_program(SPIRV_VAL spirv-val REQUIRED)

# vkdml_shader(VAR NAME SOURCE [DEFINES ...]): appends the .spv path for NAME to VAR.
function(vkdml_shader var name source)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/spv/${name}.spv")
  set(defs "")
  foreach(d IN LISTS ARGN)
    list(APPEND defs "-D${d}")
  endforeach()
  add_custom_command(
    OUTPUT "${out}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/spv"
    COMMAND "${GLSLANG_VALIDATOR}" --quiet --target-env vulkan1.1 -S comp ${defs}
            -o "${out}" "${CMAKE_CURRENT_SOURCE_DIR}/${source}"
    COMMAND "${SPIRV_VAL}" --target-env vulkan1.1 "${out}"
    DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${source}" ${VKDML_SHADER_INCLUDES}
    COMMENT "GLSL ${name}"
    VERBATIM)
  set(${var} ${${var}} "${out}" PARENT_SCOPE)
endfunction()

# vkdml_embed_spirv(OUT_CPP NAMESPACE HEADER SPV_FILES...): writes OUT_CPP defining
# NAMESPACE::FindSpirv(name), and the file HEADER beside it, which declares that and
# NAMESPACE::SpirvModule (include OUT_CPP's folder to use it).
function(vkdml_embed_spirv out_cpp namespace header)
  string(REPLACE ";" "|" files "${ARGN}")  # one argument through add_custom_command
  get_filename_component(dir "${out_cpp}" DIRECTORY)
  add_custom_command(
    OUTPUT "${out_cpp}" "${dir}/${header}"
    COMMAND "${CMAKE_COMMAND}" -DOUT=${out_cpp} "-DSPV=${files}" -DNAMESPACE=${namespace}
            -DHEADER=${header}
            -P "${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake"
    DEPENDS ${ARGN} "${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake"
    COMMENT "Embedding SPIR-V"
    VERBATIM)
endfunction()
