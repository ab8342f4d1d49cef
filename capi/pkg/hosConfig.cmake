# CMake package of hos's C ABI, installed by capi/install.sh into PREFIX/lib/cmake/hos.
#
#   find_package(hos 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE hos::hos)          # libhos.so
#   target_link_libraries(app PRIVATE hos::hos_static)   # libhos.a and the system libraries
#
# Both carry the include directory (hos.h, hos.hpp). Relocatable: paths are found from this
# file's place.
get_filename_component(_hos_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET hos::hos)
  add_library(hos::hos SHARED IMPORTED)
  set_target_properties(hos::hos PROPERTIES
    IMPORTED_LOCATION "${_hos_prefix}/lib/libhos.so"
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${_hos_prefix}/include")
endif()

if(NOT TARGET hos::hos_static)
  add_library(hos::hos_static STATIC IMPORTED)
  set_target_properties(hos::hos_static PROPERTIES
    IMPORTED_LOCATION "${_hos_prefix}/lib/libhos.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_hos_prefix}/include"
    INTERFACE_LINK_LIBRARIES "gcc_s;util;rt;pthread;m;dl;c")
endif()

unset(_hos_prefix)
