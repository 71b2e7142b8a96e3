# find_package(GpsimdOpen): imported targets of an installed gpsimd-open tree.
#   GpsimdOpen::nrtucode_extisa  libnrtucode_extisa.so and nrtucode_extisa.h
#   GpsimdOpen::nrt_pool         libnrt_pool_shim.so and nrt_pool.h
#   GpsimdOpen::neuroncustomop   the host libneuroncustomop.a and the op author's headers
# GpsimdOpen_DEVICE_ARCHIVE is the Xtensa libneuroncustomop.a.
get_filename_component(_gpsimd_open_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

foreach(_lib nrtucode_extisa nrt_pool)
  if(NOT TARGET GpsimdOpen::${_lib})
    add_library(GpsimdOpen::${_lib} SHARED IMPORTED)
    set(_so "${_lib}")
    if(_lib STREQUAL "nrt_pool")
      set(_so "nrt_pool_shim")
    endif()
    set_target_properties(GpsimdOpen::${_lib} PROPERTIES
      IMPORTED_LOCATION "${_gpsimd_open_prefix}/lib/lib${_so}.so"
      IMPORTED_SONAME "lib${_so}.so"
      INTERFACE_INCLUDE_DIRECTORIES "${_gpsimd_open_prefix}/include")
  endif()
endforeach()

if(NOT TARGET GpsimdOpen::neuroncustomop)
  add_library(GpsimdOpen::neuroncustomop STATIC IMPORTED)
  set_target_properties(GpsimdOpen::neuroncustomop PROPERTIES
    IMPORTED_LOCATION "${_gpsimd_open_prefix}/lib/gpsimd-open/x86_64-unknown-linux-gnu/libneuroncustomop.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_gpsimd_open_prefix}/include/gpsimd-open")
endif()

set(GpsimdOpen_DEVICE_ARCHIVE "${_gpsimd_open_prefix}/lib/gpsimd-open/xtensa-q7-none-elf/libneuroncustomop.a")
set(GpsimdOpen_FOUND TRUE)
