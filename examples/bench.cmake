# The `vkdml bench` subcommand: included from examples/CMakeLists.txt after vkdml_cli exists.
# Compiles bench_copy.comp with vkdml_shader() and embeds it as bench::FindSpirv().
find_package(Threads REQUIRED)
set(_bench_spv "")
vkdml_shader(_bench_spv bench_copy bench_copy.comp)
set(_bench_cpp "${CMAKE_CURRENT_BINARY_DIR}/bench_spirv.cpp")
vkdml_embed_spirv("${_bench_cpp}" bench bench_spirv.h ${_bench_spv})
get_target_property(_bench_srcs vkdml_cli SOURCES)
if(NOT "${_bench_srcs}" MATCHES "bench\\.cpp")
  target_sources(vkdml_cli PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/bench.cpp")
endif()
target_sources(vkdml_cli PRIVATE "${_bench_cpp}")
target_include_directories(vkdml_cli PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
# bench.cpp opens the Vulkan loader itself (dlopen) to create the device it hands to vkdml.
target_link_libraries(vkdml_cli PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
