// `shardopt report`: reads the results rows a sweep wrote (results.jsonl) and each run's metrics,
// and renders them with io::render_report.

#include "apps/experiments/report.hpp"

#include "apps/run/summary.hpp"
#include "io/atomic_file.hpp"
#include "io/report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace shardopt::apps {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// Text of a table cell: strings as they are, anything else as JSON.
std::string cell(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

/// The summary's table columns and throughput. Throws json::exception on a row of the wrong shape.
void read_summary(const json& summary, io::report_run& run) {
  if (!summary.is_object())
    return;
  for (const char* key : {"mode", "solver", "objective", "train_accuracy", "test_accuracy", "iterations", "steps",
                          "seconds", "examples_per_second", "stop_reason"})
    if (summary.contains(key) && !summary[key].is_null())
      run.columns.emplace_back(key, cell(summary[key]));
  if (summary.contains("examples_per_second"))
    run.throughput = summary["examples_per_second"].get<double>();
  else if (summary.contains("evaluations") && summary.contains("examples") && summary.value("seconds", 0.0) > 0)
    // Passes over the data: evaluations plus Hessian-vector products (newton-cg).
    run.throughput = (summary["evaluations"].get<double>() + summary.value("hessian_products", 0.0))
                     * summary["examples"].get<double>() / summary["seconds"].get<double>();
}

/// The per-iteration (L-BFGS, Newton-CG) or per-log-step (PS) points of a run's metrics.jsonl;
/// lines that are not JSON objects are skipped.
void read_metrics(const fs::path& file, io::report_run& run) {
  std::istringstream metrics{read_text(file)};
  std::string line;
  while (std::getline(metrics, line)) {
    const auto point = json::parse(line, nullptr, false);
    if (point.is_discarded() || !point.is_object())
      continue;
    const double t = point.value("seconds", 0.0);
    if (point.contains("objective")) {
      run.steps.push_back(point.value("iteration", 0.0));
      run.objective.push_back(point["objective"].get<double>());
      run.seconds.push_back(t);
    } else if (point.contains("loss")) {
      run.steps.push_back(point.value("step", 0.0));
      run.objective.push_back(point["loss"].get<double>());
      run.seconds.push_back(t);
    }
    if (point.contains("test_accuracy"))
      run.accuracy.emplace_back(t, point["test_accuracy"].get<double>());
  }
}

/// One results row of `file` as the report shows it; `prefix` tells the sweeps apart when there
/// are several. Throws json::exception on a row of the wrong shape (a number where text belongs).
io::report_run read_run(const json& row, const fs::path& file, const std::string& prefix) {
  io::report_run run;
  run.name = prefix + row["run"].get<std::string>();
  run.status = row.value("status", "unknown");
  run.config = row.value("config", "");
  const auto params = row.value("params", json::object());
  for (const auto& [key, value] : params.items())
    run.columns.emplace_back(key, cell(value));
  const auto summary = row.value("summary", json{});
  read_summary(summary, run);
  read_metrics(file.parent_path() / row.value("dir", "") / "metrics.jsonl", run);
  // The summary's final test accuracy is the accuracy plot's last point.
  if (summary.is_object() && summary.contains("test_accuracy") && summary["test_accuracy"].is_number())
    run.accuracy.emplace_back(summary.value("seconds", 0.0), summary["test_accuracy"].get<double>());
  return run;
}

} // namespace

int run_report(const report_options& options) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it{options.results, ec}, end; !ec && it != end; it.increment(ec))
    if (it->path().filename() == "results.jsonl")
      files.push_back(it->path());
  if (ec || files.empty())
    return exit_with_error(options.results + ": no results.jsonl found (run `shardopt sweep` first)");
  std::sort(files.begin(), files.end());
  std::vector<io::report_run> runs;
  for (const auto& file : files) {
    const std::string prefix = files.size() > 1 ? file.parent_path().filename().string() + "/" : "";
    std::istringstream lines{read_text(file)};
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty())
        continue;
      const auto row = json::parse(line, nullptr, false);
      const auto where = file.string() + ":" + std::to_string(number);
      if (row.is_discarded() || !row.is_object() || !row.contains("run") || !row["run"].is_string())
        return exit_with_error(where + ": not a results row");
      try {
        runs.push_back(read_run(row, file, prefix));
      } catch (const json::exception& e) {
        return exit_with_error(where + ": not a results row (" + e.what() + ")");
      }
    }
  }
  const auto html = io::render_report(runs, "shardopt report: " + options.results);
  if (auto written = io::write_file_atomically(options.output, html); !written)
    return exit_with_error(written.error().message());
  std::fprintf(stderr, "report: %zu runs -> %s\n", runs.size(), options.output.c_str());
  return 0;
}

} // namespace shardopt::apps
