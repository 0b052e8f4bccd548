#pragma once
// Configuration files for `shardopt run` and `shardopt sweep`: one key per option, checked against
// the options `define_commands` declares, so the CLI and the files cannot drift.

#include "apps/options/cli.hpp"
#include "base/result.hpp"

#include <toml.hpp>

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

/// The command-line arguments that one option of `command`, given as `key = value`, stands for
/// (`key` is the option's long name without dashes; a `true` flag is a bare flag, `false` none),
/// checked by that option's own definition. This is how TOML files and the Python module's keyword
/// arguments become options, so neither can drift from the CLI. Errors: "unknown <noun> '<key>'
/// (`shardopt train` has no option --<key>)", "<noun> '<key>': <what is wrong with the value>".
result<std::vector<std::string>> option_arguments(const std::string& command, const std::string& key,
                                                  const toml::value& value, const std::string& noun);

/// The command a configuration file asks for: its `command` key, "train" by default.
result<std::string> config_command(const std::string& path);

/// The text of the configuration file `path`, checked for what the TOML parser must not be given:
/// text that is not valid UTF-8, and arrays, inline tables and dotted keys nested more than 32
/// levels deep. Every configuration file is read through this (the functions above check in-memory
/// text the same way). Errors: "<path>: cannot open the configuration file", "<path>:<line>: not
/// valid UTF-8 (a TOML file must be)", "<path>:<line>: nested more than 32 levels deep ...".
result<std::string> read_config_text(const std::string& path);

} // namespace shardopt::apps
