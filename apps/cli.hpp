#pragma once

// The one definition of every command and option of `shardopt`, shared by the command line and by
// configuration files (`shardopt run`, `shardopt sweep`): a config key is an option's long name
// without the dashes, so the two cannot drift apart.

#include "apps/eval.hpp"
#include "apps/node_command.hpp"
#include "apps/ps_train.hpp"
#include "apps/train.hpp"
#include "model/result.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace shardopt::apps {

/// `shardopt sweep`'s own options.
struct sweep_options {
  std::string file;
  std::string out;         ///< results folder (default: results/<file stem>)
  int repeat = 0;          ///< 0: the file's [sweep] repeat (default 1)
  int parallel = 1;
  bool dry_run = false;
};

/// `shardopt report`'s options.
struct report_options {
  std::string results;     ///< a folder searched for results.jsonl files
  std::string output = "report.html";
};

/// Where every command's options land.
struct command_line {
  train_options train;
  eval_options eval;
  node_options node;
  ps_task_options task;
  std::string run_file;
  std::vector<std::string> run_overrides;
  sweep_options sweep;
  report_options report;
};

/// Adds every subcommand and option to `app`. Later occurrences of an option win (so command-line
/// flags override a configuration file's values).
void define_commands(CLI::App& app, command_line& options);

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
