// A run's --metrics file on a full disk: both modes train to the end, and the run fails naming the
// file and the first row that could not be written.

#include "support/process.hpp"
#include "support/small_disk.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>

using namespace shardopt::test;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST_CASE("a --metrics file on a full disk: both modes train to the end and fail naming the file and the row") {
  temp_dir dir;
  const auto disk = dir.path() / "disk";
  fs::create_directories(disk);
  if (const auto why_not = shardopt::test::mount_small_tmpfs(disk, "64k")) {
    MESSAGE("skipped: cannot mount a tmpfs to fill (" << *why_not << ")");
    WARN_MESSAGE(false, "full-disk metrics test skipped");
    return;
  }
  std::ostringstream csv;
  for (int i = 0; i < 200; ++i)
    csv << i % 2 << "," << (i % 7) * 0.5 << "," << (i % 5) - 2.0 << "\n";
  const auto data = (dir.path() / "train.csv").string();
  write_file(data, csv.str());
  shardopt::test::fill_disk(disk);
  const auto metrics = (disk / "run.jsonl").string();
  // The first row that does not fit: usually the first, but the disk may hold a few bytes more
  // (and parameter-server steps are logged as workers push), so any row of the right kind.
  for (const auto& [mode, row] : {std::pair<std::string, std::string>{"lbfgs", "iteration"}, {"ps", "step"}}) {
    INFO("--mode " << mode);
    const auto result = run({shardopt_binary(), "train", "--model", "logistic", "--data", data, "--mode", mode,
                             "--max-iter", "5", "--last-step", "20", "--log-steps", "1", "--workers", "2",
                             "--metrics", metrics, "--json", "--quiet"}, 120s);
    INFO("stderr: " << result.err);
    CHECK_FALSE(result.signaled);
    CHECK(result.exit_code == 1);
    CHECK(json::parse(result.out).contains("objective"));  // the run finished and said so
    const std::regex named{std::regex_replace(metrics, std::regex{R"([.^$|()\[\]{}*+?\\])"}, R"(\$&)")
                           + ": cannot write the metrics row of " + row + " [0-9]+: "
                           + std::strerror(ENOSPC)};
    CHECK(std::regex_search(result.err, named));
  }
}
