# CAF 0.17 (Debian libcaf-dev) ships no CMake package: wrap its libraries once as IMPORTED targets.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
foreach(component core io openssl)
  find_library(CAF_${component}_LIBRARY NAMES caf_${component} REQUIRED)
  add_library(CAF::${component} UNKNOWN IMPORTED)
  set_target_properties(CAF::${component} PROPERTIES
    IMPORTED_LOCATION "${CAF_${component}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
endforeach()
find_package(Threads REQUIRED)
set_property(TARGET CAF::core APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
set_property(TARGET CAF::io APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
set_property(TARGET CAF::openssl APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::io)
