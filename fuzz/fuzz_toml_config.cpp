// Fuzz target: TOML configuration files as `shardopt run` and `shardopt sweep` read them
// (apps::config_command, then apps::config_arguments for that command, leaving out the [sweep]
// table): toml11's parser, and the check of every key against the CLI11 definition of the
// command's options. Input: the file's bytes.
//
// apps/options/cli.cpp is compiled into this target as it is. Through the apps headers it includes CAF's
// headers (for option structs), but it calls nothing of CAF, so no CAF library is linked.

#include "scratch_dir.hpp"

#include "apps/options/cli.hpp"
#include "apps/options/config_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::scratch_dir dir;
  const auto path = dir.write("config.toml", {reinterpret_cast<const char*>(data), size});
  const auto command = apps::config_command(path);
  static_cast<void>(apps::config_arguments(path, command ? *command : "train", "sweep"));
  return 0;
}
