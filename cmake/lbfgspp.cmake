# LBFGS++ (Debian liblbfgspp-dev) is header-only and ships no CMake package.
find_path(LBFGSPP_INCLUDE_DIR LBFGS.h REQUIRED)
add_library(LBFGSpp::lbfgspp INTERFACE IMPORTED)
set_target_properties(LBFGSpp::lbfgspp PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${LBFGSPP_INCLUDE_DIR}")
