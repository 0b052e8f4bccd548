#include "apps/experiments/experiments.hpp"
#include "apps/experiments/sweep_plan.hpp"

#include "apps/run/summary.hpp"
#include "io/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#ifndef SHARDOPT_GIT_REVISION
#define SHARDOPT_GIT_REVISION "unknown"
#endif

namespace shardopt::apps {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// Writes `text` to `path` atomically (io::write_file_atomically); a failure is one line on stderr
/// naming the file ("sweep: out/results.csv: cannot write: ...") and false.
bool write_or_warn(const fs::path& path, const std::string& text) {
  auto written = io::write_file_atomically(path, text);
  if (!written)
    std::fprintf(stderr, "sweep: %s\n", written.error().message().c_str());
  return written.ok();
}

/// JSON text; invalid UTF-8 (a child's stderr cut mid-character) is replaced, never thrown on.
std::string dump(const json& value, int indent = -1) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

/// The status row of a finished run: its status.json, a JSON object with a "status". A missing,
/// unreadable or truncated status.json means the run has not finished and is to be (re)done.
std::optional<json> finished_status(const fs::path& dir) {
  json row = json::parse(read_text(dir / "status.json"), nullptr, false);
  if (row.is_discarded() || !row.is_object() || !row.contains("status"))
    return std::nullopt;
  return row;
}

std::string timestamp() {
  const auto now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buffer;
}

std::string host_name() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

/// Starts `shardopt run` for one run folder; the child dies with the sweep, exits with 125 when
/// the sweep is gone before it set its death signal (writing nothing), and with 126 when it cannot
/// open its output files (with a line in stderr.log when it can write one).
///
/// A sweep killed between fork and prctl would leave its child running on, writing into the run's
/// summary.json.part while the next sweep runs the same run again; the child checks that its parent
/// is still the sweep once the death signal is set. The part file is unlinked and made anew, so
/// that no earlier writer shares the file the next summary is renamed from. Everything the child
/// needs is made before the fork: it allocates nothing.
pid_t start_run(const fs::path& exe, const fs::path& dir) {
  const std::string part = (dir / "summary.json.part").string();
  const std::string log = (dir / "stderr.log").string();
  const std::string config = (dir / "config.toml").string();
  const std::string metrics = (dir / "metrics.jsonl").string();
  const std::vector<const char*> argv{"shardopt", "run", config.c_str(), "--metrics", metrics.c_str(), "--json", nullptr};
  const pid_t sweep = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0)
    return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != sweep)
    std::_Exit(125);  // touching nothing: the folder may be the next sweep's already
  const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const auto fail = [&](int code, const char* why) {
    if (err >= 0)
      (void)!::write(err, why, std::strlen(why));
    std::_Exit(code);
  };
  ::unlink(part.c_str());
  const int out = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  // Output that cannot go to the run's files must not go to the sweep's: the run fails instead.
  if (out < 0 || err < 0)
    fail(126, "sweep: cannot make this run's summary.json.part or stderr.log\n");
  if (::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
    fail(126, "sweep: cannot send this run's output to its files\n");
  ::execv(exe.c_str(), const_cast<char* const*>(argv.data()));
  fail(127, "sweep: cannot start shardopt\n");
  return -1;
}

/// Rewrites results.jsonl and results.csv from every finished run folder, in plan order.
void write_results(const fs::path& out, const std::vector<planned_run>& plan) {
  std::vector<json> rows;
  for (const auto& run : plan) {
    const auto dir = out / run.name;
    auto status = finished_status(dir);
    if (!status)
      continue;
    json row = std::move(*status);
    row["run"] = run.name;
    row["dir"] = run.name;
    row["repeat"] = run.repeat;
    json params = json::object();
    for (const auto& [key, literal] : run.overrides)
      params[key] = json_of_literal(literal);
    row["params"] = params;
    row["config"] = read_text(dir / "config.toml");
    json summary = json::parse(read_text(dir / "summary.json"), nullptr, false);  // "" if missing
    if (summary.is_discarded())
      summary = nullptr;
    row["summary"] = summary;
    rows.push_back(row);
  }
  std::string lines;
  for (const auto& row : rows)
    lines += dump(row) + "\n";
  write_or_warn(out / "results.jsonl", lines);
  // CSV: fixed columns, then every parameter and every scalar summary field seen.
  std::vector<std::string> params, fields;
  for (const auto& row : rows) {
    for (const auto& [key, value] : row["params"].items())
      if (std::find(params.begin(), params.end(), key) == params.end())
        params.push_back(key);
    if (row["summary"].is_object())
      for (const auto& [key, value] : row["summary"].items())
        if (value.is_primitive() && std::find(fields.begin(), fields.end(), key) == fields.end())
          fields.push_back(key);
  }
  const auto cell = [](const json& value) {
    std::string text = value.is_string() ? value.get<std::string>() : value.is_null() ? "" : dump(value);
    if (text.find_first_of(",\"\n") != std::string::npos) {
      std::string quoted = "\"";
      for (char c : text)
        quoted += c == '"' ? std::string{"\"\""} : std::string(1, c);
      return quoted + "\"";
    }
    return text;
  };
  // One name per column: the run's wall time is wall_seconds; a summary field that a parameter or
  // a run column also names (lambda, seconds) is summary.<name>.
  std::vector<std::string> columns{"run", "status", "exit_code", "wall_seconds", "repeat", "git_revision", "host",
                                   "timestamp"};
  columns.insert(columns.end(), params.begin(), params.end());
  std::string csv;
  for (const auto& c : columns)
    csv += (csv.empty() ? "" : ",") + cell(c);
  for (const auto& f : fields)
    csv += "," + cell(std::find(columns.begin(), columns.end(), f) != columns.end() ? "summary." + f : f);
  csv += "\n";
  for (const auto& row : rows) {
    csv += cell(row["run"]) + "," + cell(row["status"]) + "," + cell(row["exit_code"]) + "," + cell(row["seconds"]) +
           "," + cell(row["repeat"]) + "," + cell(row["git_revision"]) + "," + cell(row["host"]) + "," +
           cell(row["timestamp"]);
    for (const auto& p : params)
      csv += "," + (row["params"].contains(p) ? cell(row["params"][p]) : "");
    for (const auto& f : fields)
      csv += "," + (row["summary"].is_object() && row["summary"].contains(f) ? cell(row["summary"][f]) : "");
    csv += "\n";
  }
  write_or_warn(out / "results.csv", csv);
}

/// write_results, with anything a dependency throws (toml11 re-parsing a literal, nlohmann::json)
/// reported as one line instead of ending the sweep and its running children.
void write_results_or_warn(const fs::path& out, const std::vector<planned_run>& plan) {
  try {
    write_results(out, plan);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sweep: %s: cannot write the results: %s\n", (out / "results.jsonl").c_str(), e.what());
  }
}

} // namespace


int run_sweep(const sweep_options& options) {
  auto plan = plan_sweep(options.file, options.repeat);
  if (!plan)
    return exit_with_error(plan.error().message());
  // plan_sweep read the file a moment ago; it may have changed since.
  auto sweep_base = read_sweep_base(options.file);
  if (!sweep_base)
    return exit_with_error(sweep_base.error().message());
  const auto& base = sweep_base->literals;
  const std::int64_t base_seed = sweep_base->seed;
  const fs::path out = options.out.empty() ? fs::path{"results"} / fs::path{options.file}.stem() : fs::path{options.out};
  if (options.dry_run) {
    for (const auto& run : *plan)
      std::printf("%s\n", (out / run.name).c_str());
    return 0;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec)
    return exit_with_error(out.string() + ": cannot create the results folder: " + ec.message());
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return exit_with_error("/proc/self/exe: cannot find this program to start runs: " + ec.message());
  const bool repeated = std::any_of(plan->begin(), plan->end(), [](const planned_run& r) { return r.repeat > 0; });
  struct running_run {
    std::size_t index;
    std::chrono::steady_clock::time_point started;
    std::string timestamp;
  };
  std::map<pid_t, running_run> running;
  std::size_t next = 0, done = 0, failed = 0, skipped = 0, unstarted = 0;
  bool stopping = false;  // after a failure to start a run: wait for the running ones, start none
  const auto total = plan->size();
  // A run that could not be prepared has no status.json, so the next sweep does it again.
  const auto not_started = [&](const planned_run& run) {
    ++unstarted;
    std::fprintf(stderr, "[%zu/%zu] %s: not started\n", done + skipped + unstarted, total, run.name.c_str());
  };
  auto finish = [&](pid_t pid, int status) {
    const auto run = running.at(pid);
    running.erase(pid);
    const auto& planned = (*plan)[run.index];
    const auto dir = out / planned.name;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    bool ok = code == 0;
    const auto summary = read_text(dir / "summary.json.part");
    if (ok && json::parse(summary, nullptr, false).is_discarded())
      ok = false;
    if (ok) {
      std::error_code renamed;
      fs::rename(dir / "summary.json.part", dir / "summary.json", renamed);
      if (renamed)
        std::fprintf(stderr, "sweep: %s: cannot rename the run's summary into place: %s\n",
                     (dir / "summary.json").c_str(), renamed.message().c_str());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.started).count();
    json status_row{{"status", ok ? "ok" : "failed"}, {"exit_code", code}, {"seconds", seconds},
                    {"timestamp", run.timestamp}, {"host", host_name()}, {"git_revision", SHARDOPT_GIT_REVISION}};
    if (!ok) {
      const auto log = read_text(dir / "stderr.log");
      status_row["error"] = log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
    }
    // Without its status.json the run counts as not finished, and the next sweep does it again.
    write_or_warn(dir / "status.json", dump(status_row, 2) + "\n");
    ++done;
    failed += ok ? 0 : 1;
    std::fprintf(stderr, "[%zu/%zu] %s: %s (%.1f s)\n", done + skipped + unstarted, total, planned.name.c_str(),
                 ok ? "ok" : ("failed, exit code " + std::to_string(code)).c_str(), seconds);
    write_results_or_warn(out, *plan);
  };
  const int parallel = std::max(1, options.parallel);
  while ((next < total && !stopping) || !running.empty()) {
    while (next < total && !stopping && static_cast<int>(running.size()) < parallel) {
      const auto& run = (*plan)[next++];
      const auto dir = out / run.name;
      // A run that finished well is kept; one that failed is run again (its cause may be fixed),
      // and keeps failing the sweep until it succeeds.
      if (const auto status = finished_status(dir)) {
        if ((*status)["status"] == "ok") {
          ++skipped;
          continue;
        }
        std::fprintf(stderr, "sweep: %s failed before; running it again\n", run.name.c_str());
      }
      std::error_code made;
      fs::create_directories(dir, made);
      if (made) {
        std::fprintf(stderr, "sweep: %s: cannot create the run folder: %s\n", dir.c_str(), made.message().c_str());
        not_started(run);
        continue;
      }
      auto literals = base;
      for (const auto& [key, literal] : run.overrides)
        literals[key] = literal;
      if (repeated)
        literals["seed"] = std::to_string(base_seed + run.repeat);
      if (!write_or_warn(dir / "config.toml", config_text(literals))) {
        not_started(run);
        continue;
      }
      const auto pid = start_run(exe, dir);
      if (pid < 0) {
        std::fprintf(stderr, "sweep: cannot start run %s: fork: %s; waiting for the %zu running\n", run.name.c_str(),
                     std::strerror(errno), running.size());
        not_started(run);
        stopping = true;
        break;
      }
      running[pid] = {next - 1, std::chrono::steady_clock::now(), timestamp()};
    }
    if (running.empty())
      break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid > 0 && running.count(pid))
      finish(pid, status);
    else if (pid < 0 && errno != EINTR) {  // no children left to wait for: none of ours is running
      std::fprintf(stderr, "sweep: waitpid: %s\n", std::strerror(errno));
      break;
    }
  }
  write_results_or_warn(out, *plan);
  std::string not_run;
  if (unstarted > 0)
    not_run += ", " + std::to_string(unstarted) + " not started";
  if (stopping)
    not_run += ", " + std::to_string(total - next) + " left after a failed start";
  std::fprintf(stderr, "sweep: %zu runs, %zu run now, %zu finished before, %zu failed%s; results in %s\n", total,
               done, skipped, failed, not_run.c_str(), (out / "results.jsonl").c_str());
  return failed == 0 && unstarted == 0 && !stopping ? 0 : 1;
}

} // namespace shardopt::apps
