# One INTERFACE target carries the project's warning flags; every layer links it privately.
add_library(shardopt_warnings INTERFACE)
add_library(shardopt::warnings ALIAS shardopt_warnings)
target_compile_options(shardopt_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  $<$<BOOL:${SHARDOPT_WERROR}>:-Werror>)
