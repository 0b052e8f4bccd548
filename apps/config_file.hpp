#pragma once
// Configuration files for `shardopt run` and `shardopt sweep`: one key per option, checked against
// the options `define_commands` declares, so the CLI and the files cannot drift.

#include "apps/cli.hpp"
#include "model/result.hpp"

#include <string>
#include <vector>

namespace shardopt::apps {

/// The command-line arguments a TOML configuration file stands for, for `command` ("train" or
/// "ps-task"): `key = value` becomes `--key value` (`key = true` a bare flag). Keys of the table
/// `skip` (e.g. "sweep") are left out. Unknown keys, values of the wrong type and TOML syntax
/// errors fail with the file and line.
result<std::vector<std::string>> config_arguments(const std::string& path, const std::string& command,
                                                  const std::string& skip = "");

/// The same for an in-memory TOML document (`name` stands for the file in messages).
result<std::vector<std::string>> config_text_arguments(const std::string& text, const std::string& name,
                                                       const std::string& command,
                                                       const std::string& skip = "");

/// The command a configuration file asks for: its `command` key, "train" by default.
result<std::string> config_command(const std::string& path);

/// The text of the configuration file `path`, checked for what the TOML parser must not be given:
/// text that is not valid UTF-8, and arrays, inline tables and dotted keys nested more than 32
/// levels deep. Every configuration file is read through this (the functions above check in-memory
/// text the same way). Errors: "<path>: cannot open the configuration file", "<path>:<line>: not
/// valid UTF-8 (a TOML file must be)", "<path>:<line>: nested more than 32 levels deep ...".
result<std::string> read_config_text(const std::string& path);

} // namespace shardopt::apps
