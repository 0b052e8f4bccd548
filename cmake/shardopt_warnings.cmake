# One INTERFACE target carries the project's warning flags; every layer links it privately.
add_library(shardopt_warnings INTERFACE)
add_library(shardopt::warnings ALIAS shardopt_warnings)
target_compile_options(shardopt_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  # GCC 12 reports false positives inside its own AVX-512 intrinsics when Eigen inlines them
  # (GCC bug 105593); they are not ours to fix.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>
  $<$<BOOL:${SHARDOPT_WERROR}>:-Werror>)
