// Scripted experiments: a sweep makes its folders and rows, records failures, resumes after being
// killed without recomputing anything, and keeps its results whole on a full disk. (Config files:
// tests/apps/options/test_config_file.cpp; a --metrics file on a full disk:
// tests/apps/run/test_metrics_file.cpp.)

#include "apps/options/cli.hpp"
#include "apps/options/config_file.hpp"
#include "apps/experiments/experiments.hpp"
#include "support/process.hpp"
#include "support/small_disk.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

using namespace shardopt::test;
using json = nlohmann::json;
namespace apps = shardopt::apps;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

/// Processes whose command line names `text` (the runs of a sweep name their folder's config).
std::vector<pid_t> processes_naming(const std::string& text) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::ifstream in{entry.path() / "cmdline", std::ios::binary};
    const std::string line{std::istreambuf_iterator<char>(in), {}};
    if (line.find(text) != std::string::npos)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

std::vector<json> rows_of(const fs::path& file) {
  std::vector<json> rows;
  std::istringstream lines{slurp(file)};
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty())
      rows.push_back(json::parse(line));
  return rows;
}

} // namespace

TEST_CASE("a sweep makes one folder and row per run, records failures, and resumes after a kill") {
  temp_dir dir;
  const auto file = (dir.path() / "grid.toml").string();
  // 2 x 3 runs on 2,000 Fashion-MNIST images, one of them failing (a missing file).
  write_file(file, "model = \"softmax\"\nlimit = 2000\ntest-limit = 500\nmax-iter = 150\nepsilon = 1e-12\n"
                   "[sweep]\ngrid = { lambda = [1e-3, 1e-2] }\n"
                   "list = [ { shards = 1 }, { mode = \"ps\", workers = 2, last-step = 400, log-steps = 50 },\n"
                   "         { data = \"/nonexistent/train.csv\" } ]\n");
  const auto out = dir.path() / "results";
  auto plan = apps::plan_sweep(file, 0);
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 6);
  // Start, let two runs finish, kill the sweep (its running child dies with it).
  {
    background_process sweep{{shardopt_binary(), "sweep", file, "--out", out.string()}};
    const auto until = std::chrono::steady_clock::now() + 120s;
    auto finished = [&] {
      std::size_t n = 0;
      for (const auto& run : *plan)
        n += fs::exists(out / run.name / "status.json") ? 1 : 0;
      return n;
    };
    while (finished() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(5ms);
    sweep.signal(SIGKILL);
    sweep.wait(30s);
  }
  // The running run died with the sweep: none is left to write into a folder the next sweep reuses.
  {
    const auto until = std::chrono::steady_clock::now() + 10s;
    auto left = processes_naming(out.string());
    while (!left.empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);
      left = processes_naming(out.string());
    }
    for (const auto pid : left)
      ::kill(pid, SIGKILL);
    REQUIRE_MESSAGE(left.empty(), "a run outlived the killed sweep");
  }
  std::map<std::string, fs::file_time_type> before;
  for (const auto& run : *plan)
    if (fs::exists(out / run.name / "status.json"))
      before[run.name] = fs::last_write_time(out / run.name / "status.json");
  REQUIRE(before.size() >= 2);
  REQUIRE(before.size() < 6);
  const auto resumed = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 300s);
  CHECK(resumed.exit_code == 1);  // the failing run
  CHECK_MESSAGE(resumed.err.find(std::to_string(before.size()) + " finished before") != std::string::npos, resumed.err);
  for (const auto& [name, time] : before)
    if (name.find("data=") == std::string::npos)
      CHECK(fs::last_write_time(out / name / "status.json") == time);  // nothing that succeeded recomputed
  const auto rows = rows_of(out / "results.jsonl");
  REQUIRE(rows.size() == 6);
  std::set<std::string> names;
  for (const auto& row : rows) {
    names.insert(row["run"].get<std::string>());
    CHECK(row.contains("git_revision"));
    CHECK(row.contains("host"));
    CHECK(row.contains("timestamp"));
    const auto folder = out / row["dir"].get<std::string>();
    CHECK(fs::exists(folder / "config.toml"));
    CHECK(fs::exists(folder / "stderr.log"));
    if (row["params"].contains("data")) {
      CHECK(row["status"] == "failed");
      CHECK(row["error"].get<std::string>().find("/nonexistent/train.csv") != std::string::npos);
    } else {
      CHECK(row["status"] == "ok");
      CHECK(fs::exists(folder / "metrics.jsonl"));
      CHECK(row["summary"]["lambda"] == row["params"]["lambda"]);
      CHECK(row["summary"]["test_accuracy"].get<double>() > 0.6);
    }
  }
  CHECK(names.size() == 6);
  // results.csv: a header and one line per run.
  std::istringstream csv{slurp(out / "results.csv")};
  std::string line;
  std::size_t lines = 0;
  while (std::getline(csv, line))
    ++lines;
  CHECK(lines == 7);
  // Every column is named once (the summary's lambda and seconds beside the parameter and the wall time).
  {
    std::istringstream first{slurp(out / "results.csv")};
    std::string header;
    std::getline(first, header);
    std::vector<std::string> columns;
    std::istringstream cells{header};
    for (std::string c; std::getline(cells, c, ',');)
      columns.push_back(c);
    CHECK(std::set<std::string>(columns.begin(), columns.end()).size() == columns.size());
    for (const auto* name : {"lambda", "summary.lambda", "wall_seconds", "seconds"})
      CHECK_MESSAGE(std::find(columns.begin(), columns.end(), name) != columns.end(), name);
  }
  // Run again: the runs that succeeded are kept, the failed one is run again and fails the sweep again.
  std::string failed_run;
  std::size_t failures = 0;
  for (const auto& row : rows)
    if (row["status"] == "failed") {
      failed_run = row["run"].get<std::string>();
      ++failures;
    }
  REQUIRE_FALSE(failed_run.empty());
  const auto failed_time = fs::last_write_time(out / failed_run / "status.json");
  const auto again = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 300s);
  CHECK(again.exit_code == 1);
  CHECK_MESSAGE(again.err.find(failed_run + " failed before; running it again") != std::string::npos, again.err);
  CHECK_MESSAGE(again.err.find(std::to_string(6 - failures) + " finished before, " + std::to_string(failures) + " failed")
                  != std::string::npos, again.err);
  CHECK(fs::last_write_time(out / failed_run / "status.json") != failed_time);

  SUBCASE("the report renders in headless Chromium with one line per run in every line plot") {
    const auto report = (dir.path() / "report.html").string();
    const auto made = run({shardopt_binary(), "report", out.string(), "-o", report}, 60s);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    const auto html = slurp(report);
    // Self-contained: nothing is loaded from elsewhere.
    CHECK(html.find("src=") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    const std::string chromium = "/usr/bin/chromium";
    REQUIRE_MESSAGE(fs::exists(chromium), "install chromium (scripts/install-deps)");
    const std::vector<std::string> common{chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                          "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
                                          "--window-size=1400,2400"};
    auto shot_args = common;
    const auto shot = (dir.path() / "report.png").string();
    shot_args.push_back("--screenshot=" + shot);
    shot_args.push_back("file://" + report);
    const auto screenshot = run(shot_args, 120s);
    CHECK(screenshot.exit_code == 0);
    REQUIRE(fs::exists(shot));
    CHECK(fs::file_size(shot) > 50'000);  // a blank page is a few kilobytes
    // No console errors (script errors are logged as CONSOLE messages or "Uncaught").
    CHECK_MESSAGE(screenshot.err.find("Uncaught") == std::string::npos, screenshot.err);
    CHECK_MESSAGE(!std::regex_search(screenshot.err, std::regex{"CONSOLE.*(rror|ERROR)"}), screenshot.err);
    auto dom_args = common;
    dom_args.push_back("--dump-dom");
    dom_args.push_back("file://" + report);
    const auto dom = run(dom_args, 120s);
    REQUIRE(dom.exit_code == 0);
    // Three line plots, each with one path per run.
    std::size_t paths = 0;
    std::map<std::string, int> per_run;
    const std::regex path_re{"<path class=\"run-line\" data-run=\"([^\"]+)\""};
    for (std::sregex_iterator it{dom.out.begin(), dom.out.end(), path_re}, end; it != end; ++it) {
      ++paths;
      ++per_run[(*it)[1]];
    }
    CHECK(paths == 3 * 6);
    CHECK(per_run.size() == 6);
    for (const auto& [name, count] : per_run)
      CHECK(count == 3);
    // The table has a row per run.
    CHECK(std::regex_search(dom.out, std::regex{"<table id=\"runs\""}));
  }
}

TEST_CASE("a sweep names a failed write on one line and goes on, a truncated status.json means not finished") {
  temp_dir dir;
  const auto file = (dir.path() / "failing.toml").string();
  // Three runs that fail at once (no such data file): no dataset needed.
  write_file(file, "model = \"softmax\"\ndata = \"/nonexistent/train.csv\"\n"
                   "[sweep]\ngrid = { lambda = [1e-3, 1e-2, 1e-1] }\n");
  auto plan = apps::plan_sweep(file, 0);
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 3);
  const auto out = dir.path() / "results";
  const auto& redone = (*plan)[0].name;
  const auto& blocked = (*plan)[1].name;
  const auto& plain = (*plan)[2].name;
  // Run 0 was cut off while writing its status; run 1's folder cannot be made (a file is in the
  // way); results.csv cannot be replaced (a non-empty directory is in the way).
  fs::create_directories(out / redone);
  write_file(out / redone / "status.json", "{\"status\": \"ok\", \"exit_co");
  write_file(out / blocked, "not a folder");
  fs::create_directories(out / "results.csv" / "in-the-way");

  const auto swept = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 120s);
  CHECK(swept.exit_code == 1);
  INFO(swept.err);
  // Every failed write is one line naming the file; the sweep went on to the end.
  const auto results_csv = (out / "results.csv").string();
  std::istringstream lines{swept.err};
  std::string line;
  std::size_t csv_failures = 0;
  while (std::getline(lines, line))
    if (line.find(results_csv) != std::string::npos) {
      ++csv_failures;
      CHECK(line.rfind("sweep: " + results_csv + ": cannot write: ", 0) == 0);
    }
  CHECK(csv_failures >= 2);  // after each finished run and at the end
  CHECK(swept.err.find("sweep: " + (out / blocked).string() + ": cannot create the run folder: ") != std::string::npos);
  CHECK(swept.err.find("1 not started") != std::string::npos);
  // The truncated status was not taken for a finished run: the run was done again.
  for (const auto& name : {redone, plain}) {
    CAPTURE(name);
    const auto status = json::parse(slurp(out / name / "status.json"), nullptr, false);
    REQUIRE(status.is_object());
    CHECK(status["status"] == "failed");
  }
  const auto rows = rows_of(out / "results.jsonl");
  CHECK(rows.size() == 2);
  // No temporary file is left behind.
  for (const auto& entry : fs::recursive_directory_iterator{out})
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path());
}

TEST_CASE("a sweep on a full disk keeps its previous results whole, names each file, and finishes later") {
  temp_dir dir;
  const auto disk = dir.path() / "disk";
  fs::create_directories(disk);
  if (const auto why_not = shardopt::test::mount_small_tmpfs(disk, "256k")) {
    MESSAGE("skipped: cannot mount a tmpfs to fill (" << *why_not << ")");
    WARN_MESSAGE(false, "full-disk sweep test skipped");
    return;
  }
  const auto file = (dir.path() / "sweep.toml").string();
  const auto out = disk / "results";
  // Runs that fail at once (no such data file): no dataset needed, and a failed run is a result.
  write_file(file, "model = \"softmax\"\ndata = \"/nonexistent/train.csv\"\n"
                   "[sweep]\ngrid = { lambda = [1e-3, 1e-2] }\n");
  const auto first = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 120s);
  REQUIRE(first.exit_code == 1);  // its runs failed, as planned
  REQUIRE(rows_of(out / "results.jsonl").size() == 2);
  const auto jsonl_before = slurp(out / "results.jsonl");
  const auto csv_before = slurp(out / "results.csv");

  // Fill the disk to the last byte, then ask for a third run.
  shardopt::test::fill_disk(disk);
  write_file(file, "model = \"softmax\"\ndata = \"/nonexistent/train.csv\"\n"
                   "[sweep]\ngrid = { lambda = [1e-3, 1e-2, 1e-1] }\n");
  const auto full = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 120s);
  INFO("stderr on a full disk: " << full.err);
  CHECK_FALSE(full.signaled);
  CHECK(full.exit_code == 1);
  CHECK(full.err.find("sweep: " + (out / "results.jsonl").string() + ": cannot write: ") != std::string::npos);
  CHECK(full.err.find(std::strerror(ENOSPC)) != std::string::npos);
  // The two failed runs are tried again (a failed run is not finished), and cannot start either.
  CHECK(full.err.find("000-lambda=0.001 failed before; running it again") != std::string::npos);
  CHECK(full.err.find("0 finished before") != std::string::npos);
  // What was finished before is whole, and no temporary file is left.
  CHECK(slurp(out / "results.jsonl") == jsonl_before);
  CHECK(slurp(out / "results.csv") == csv_before);
  for (const auto& entry : fs::recursive_directory_iterator{out})
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path());

  // With room again, the same command does the third run and writes every row.
  fs::remove(disk / "filler");
  fs::remove(disk / "last-bytes");
  const auto later = run({shardopt_binary(), "sweep", file, "--out", out.string()}, 120s);
  INFO("stderr with room: " << later.err);
  CHECK(later.exit_code == 1);  // the runs fail, as planned
  CHECK(later.err.find("cannot write") == std::string::npos);
  CHECK(rows_of(out / "results.jsonl").size() == 3);
  CHECK(::umount2(disk.c_str(), MNT_DETACH) == 0);
}
