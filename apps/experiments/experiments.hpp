#pragma once

#include "apps/options/cli.hpp"

#include <string>
#include <vector>

namespace shardopt::apps {

/// `shardopt run FILE [flags]`: the arguments (command first) that FILE stands for, followed by
/// the flags, which override the file.
result<std::vector<std::string>> run_arguments(const std::string& file, const std::vector<std::string>& flags);

/// One run of a sweep: its folder name, its overrides of the base config, its repeat index.
struct planned_run {
  std::string name;
  std::vector<std::pair<std::string, std::string>> overrides;  ///< key and TOML literal
  int repeat = 0;
};

/// The runs a sweep file asks for: each `list` entry (or the base alone) times the cartesian
/// product of `grid`, times `repeat`; repeat r sets `seed` to the base seed + r. Unknown [sweep]
/// keys and bad overrides fail with the file and line.
result<std::vector<planned_run>> plan_sweep(const std::string& file, int repeat_override);

/// `shardopt sweep`: runs the planned runs one after another (or `parallel` at a time) as
/// `shardopt run` child processes, each in its own folder (config.toml, metrics.jsonl,
/// summary.json, stderr.log, status.json), skipping runs whose status.json holds a status (a
/// missing, unreadable or truncated one means "not finished": the run is done again), and rewrites
/// results.jsonl and results.csv after every run. Every file is replaced atomically; a write or a
/// folder that fails is one line on stderr naming it, and the sweep goes on (a run it could not
/// prepare is not started and is done by the next sweep). When a run cannot be started (fork fails)
/// the sweep starts no more and waits for the running ones. Exit code 0 when every run succeeded.
int run_sweep(const sweep_options& options);

} // namespace shardopt::apps
