# qualkit contract double, not TRTMC's: the functions of the double's stand-in
# CMakeLists.txt. Real CMake (PyPI's cmake, Ninja from PyPI) configures and builds them,
# so option parsing, the cache and the build tree are CMake's own; each target only
# copies qualkit's Go binary under the program name it plays, or writes a text file
# saying which library it stands for. No compiler runs; nothing here is TensorRT.

set(QUALKIT_DOUBLE_BINARY "/usr/local/bin/trtmcdouble" CACHE FILEPATH
    "qualkit's contract double binary, copied under each program name it plays")
set(QUALKIT_CONTRACT_DOUBLE ON CACHE INTERNAL "this build is qualkit's TRTMC contract double: nothing is compiled")
# The build log then names the CMake that ran (PyPI's, in the double's image).
message(STATUS "qualkit contract double: configured by CMake ${CMAKE_VERSION} (${CMAKE_COMMAND}), generator ${CMAKE_GENERATOR}")

# The native runtime is CUDA code built for one SM; the double has no nvcc to find one.
function(qualkit_require_cuda_architectures)
  if(NOT CMAKE_CUDA_ARCHITECTURES MATCHES "^[0-9]+[a-z]?-real$")
    message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES is '${CMAKE_CUDA_ARCHITECTURES}': pass "
      "-DCMAKE_CUDA_ARCHITECTURES=<SM>-real for the GPU (source-build.md @ e9132e79); "
      "qualkit's contract double has no CUDA compiler to detect one")
  endif()
endfunction()

function(_qualkit_output out)
  get_filename_component(dir "${CMAKE_BINARY_DIR}/${out}" DIRECTORY)
  set(_qualkit_dir "${dir}" PARENT_SCOPE)
endfunction()

# qualkit_program(TARGET OUTPUT...): each OUTPUT, relative to the build folder, is the
# double's binary, which plays the program its file name names. The copy is the
# target's command, not a declared output: TRTMC's programs lie in the build root under
# their target's own name (build/trtmc for the target trtmc), which an executable target
# may do and a declared custom output may not (Ninja: "multiple rules generate trtmc").
function(qualkit_program target)
  set(commands "")
  foreach(out IN LISTS ARGN)
    _qualkit_output("${out}")
    list(APPEND commands COMMAND "${CMAKE_COMMAND}" -E make_directory "${_qualkit_dir}"
                         COMMAND "${CMAKE_COMMAND}" -E copy "${QUALKIT_DOUBLE_BINARY}" "${CMAKE_BINARY_DIR}/${out}")
  endforeach()
  add_custom_target(${target} ${commands} VERBATIM)
endfunction()

# qualkit_library(TARGET OUTPUT...): each OUTPUT a text file that names the library it
# stands for; the double's programs look for the file, never load it.
function(qualkit_library target)
  set(outputs "")
  foreach(out IN LISTS ARGN)
    get_filename_component(name "${out}" NAME)
    set(stub "${CMAKE_BINARY_DIR}/qualkit-double/${name}.txt")
    file(WRITE "${stub}" "qualkit contract double: stands for ${name}; no code inside\n")
    _qualkit_output("${out}")
    add_custom_command(OUTPUT "${CMAKE_BINARY_DIR}/${out}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${_qualkit_dir}"
      COMMAND "${CMAKE_COMMAND}" -E copy "${stub}" "${CMAKE_BINARY_DIR}/${out}"
      DEPENDS "${stub}" VERBATIM)
    list(APPEND outputs "${CMAKE_BINARY_DIR}/${out}")
  endforeach()
  add_custom_target(${target} DEPENDS ${outputs})
endfunction()

# qualkit_copy_tree(TARGET SOURCE DESTINATION): the files of a source folder, copied into
# the build folder (trtmc_server_python copies the control plane).
function(qualkit_copy_tree target source destination)
  file(GLOB files RELATIVE "${CMAKE_SOURCE_DIR}/${source}" CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/${source}/*")
  set(outputs "")
  foreach(f IN LISTS files)
    add_custom_command(OUTPUT "${CMAKE_BINARY_DIR}/${destination}/${f}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_BINARY_DIR}/${destination}"
      COMMAND "${CMAKE_COMMAND}" -E copy "${CMAKE_SOURCE_DIR}/${source}/${f}" "${CMAKE_BINARY_DIR}/${destination}/${f}"
      DEPENDS "${CMAKE_SOURCE_DIR}/${source}/${f}" VERBATIM)
    list(APPEND outputs "${CMAKE_BINARY_DIR}/${destination}/${f}")
  endforeach()
  add_custom_target(${target} DEPENDS ${outputs})
endfunction()

# The native trtmc-server and its control plane's copy (CMakeLists.txt @ 0f958bfb:
# add_executable(trtmc-server apps/server/main.cpp) under TRTMC_BUILD_SERVER, default ON,
# and trtmc_server_python), where the checkout has the server's source.
function(qualkit_server_targets)
  if(TRTMC_BUILD_SERVER AND EXISTS "${CMAKE_SOURCE_DIR}/apps/server/main.cpp")
    qualkit_program(trtmc-server trtmc-server)
    qualkit_copy_tree(trtmc_server_python apps/server/python/trtmc_server server/python/trtmc_server)
  endif()
endfunction()
