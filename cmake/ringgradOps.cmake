# ringgrad_add_op(TARGET FOLDER): adds an op kept in FOLDER (one op, one folder, as in
# ringgrad's ops/) to TARGET — its *.cpp, and its *.cu when ringgrad has the CUDA backend (the
# calling project must then enable the CUDA language), its subfolders' too — the out-of-tree twin
# of ops/CMakeLists.txt's folder glob. Where ringgrad has CUDA, a CUDA kernel is required:
# dispatch_device names the OnCuda overload, and a missing one is a link error, never a silent CPU
# fallback.
function(ringgrad_add_op target folder)
  get_filename_component(dir "${folder}" ABSOLUTE)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${dir}/*.cpp")
  list(FILTER sources EXCLUDE REGEX "_spec\\.cpp$")  # an op's spec is test-side code
  if(RINGGRAD_WITH_CUDA)
    file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS "${dir}/*.cu")
    list(APPEND sources ${cuda_sources})
  endif()
  if(NOT sources)
    message(FATAL_ERROR "ringgrad_add_op: ${folder} has no sources")
  endif()
  target_sources(${target} PRIVATE ${sources})
  # ringgrad's headers are C++20; CMake 3.25 does not know nvcc's C++20 flag, so
  # CMAKE_CUDA_STANDARD alone would compile the .cu files as C++17.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
  target_link_libraries(${target} PUBLIC ringgrad::ringgrad)
endfunction()
