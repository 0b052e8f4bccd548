#pragma once

// The one definition of every command and option of `shardopt`, shared by the command line and by
// configuration files (`shardopt run`, `shardopt sweep`): a config key is an option's long name
// without the dashes, so the two cannot drift apart.

#include "apps/commands/convert.hpp"
#include "apps/commands/eval.hpp"
#include "apps/commands/generate.hpp"
#include "apps/commands/node_command.hpp"
#include "apps/commands/status.hpp"
#include "apps/commands/train/ps_train.hpp"
#include "apps/commands/train/train.hpp"
#include "base/result.hpp"

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
  status_options status;
  ps_task_options task;
  std::string run_file;
  std::vector<std::string> run_overrides;
  sweep_options sweep;
  report_options report;
  generate_options generate;
  convert_options convert;
};

/// Adds every subcommand and option to `app`. Later occurrences of an option win (so command-line
/// flags override a configuration file's values).
void define_commands(CLI::App& app, command_line& options);

/// Every command's options, defined once and parsed as often as asked, each parse starting from the
/// state a fresh definition has. Defining them all costs about 0.6 ms, which the Python module's
/// keywords and the configuration files' keys paid once per key. One per thread: thread_parser().
class reusable_parser {
public:
  reusable_parser();
  reusable_parser(const reusable_parser&) = delete;
  reusable_parser& operator=(const reusable_parser&) = delete;

  /// Parses a command and its options, in order ({"train", "--lambda", "0.1"}), into values(),
  /// from the defaults. Throws what CLI::App::parse throws; the next parse starts afresh anyway.
  void parse(const std::vector<std::string>& args);
  /// The definitions, to look options up.
  const CLI::App& app() const { return app_; }
  /// What the last parse gave.
  const command_line& values() const { return values_; }

private:
  command_line values_;    // bound to app_'s options
  command_line defaults_;  // values_ as define_commands left it
  CLI::App app_;
};

/// This thread's reusable_parser, defined on first use.
reusable_parser& thread_parser();

} // namespace shardopt::apps
