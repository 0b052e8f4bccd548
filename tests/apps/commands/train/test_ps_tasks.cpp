// Parameter-server mode end to end through the `shardopt` binary: accuracy on Fashion-MNIST for
// asynchronous and staleness-bounded runs, and multi-process jobs on loopback with TensorFlow's
// flags: every task exits by itself, a killed worker with a backup does not stop training, a
// restart resumes from the newest checkpoint, a dead PS or chief is reported clearly.
// Every process a test starts is stopped by it (background_process kills on destruction).

#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <regex>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string hosts(int count) {
  std::string out;
  for (int i = 0; i < count; ++i)
    out += (i ? "," : "") + std::string{"127.0.0.1:"} + std::to_string(shardopt::test::free_port());
  return out;
}

/// One job of `ps` PS tasks and `workers` worker tasks sharing `flags`.
struct ps_job {
  ps_job(int ps, int workers, std::vector<std::string> job_flags)
    : ps_hosts(hosts(ps)), worker_hosts(hosts(workers)), flags(std::move(job_flags)) {}

  std::vector<std::string> args(const std::string& job, int index, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> out{shardopt_binary(), "ps-task", "--ps_hosts=" + ps_hosts,
                                 "--worker_hosts=" + worker_hosts, "--job_name=" + job,
                                 "--task_index=" + std::to_string(index)};
    out.insert(out.end(), flags.begin(), flags.end());
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  std::unique_ptr<background_process> start(const std::string& job, int index,
                                            const std::vector<std::string>& extra = {}) const {
    return std::make_unique<background_process>(args(job, index, extra));
  }

  std::string ps_hosts;
  std::string worker_hosts;
  std::vector<std::string> flags;
};

const std::vector<std::string> small_data{"--limit", "5000", "--test-limit", "1000", "--quiet"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST_CASE("asynchronous and staleness-bounded PS training reach 0.76 test accuracy in 3 epochs") {
  // 10,000 Fashion-MNIST images, 4 workers, batches of 64: 469 steps = 3 epochs. A decaying rate
  // keeps the last iterate's noise small (20 runs under load: 0.789 .. 0.82; a constant rate
  // dipped to 0.68 once).
  for (const char* staleness : {"-1", "1"}) {
    CAPTURE(staleness);
    const auto result = run({shardopt_binary(), "train", "--mode", "ps", "--limit", "10000", "--test-limit", "2000",
                             "--workers", "4", "--ps", "2", "--optimizer", "adam", "--lr", "0.002",
                             "--lr-schedule", "inverse-time", "--lr-decay-rate", "1", "--lr-decay-steps", "150",
                             "--batch-size", "64", "--last-step", "469", "--staleness", staleness,
                             "--quiet", "--json"});
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    const auto summary = json::parse(result.out);
    CHECK(summary["steps"] == 469);
    CHECK(summary["sync"] == false);
    CHECK(summary["test_accuracy"].get<double>() >= 0.76);
    CHECK(summary["examples_per_second"].get<double>() > 0);
    if (std::string{staleness} == "1")
      CHECK(summary["staleness_max"].get<int>() <= 3 * 3);
  }
}

TEST_CASE("PS mode option errors name the option") {
  auto expect = [](std::vector<std::string> args, const std::string& text) {
    args.insert(args.begin(), shardopt_binary());
    const auto result = run(args, 60s);
    CHECK(result.exit_code != 0);
    CHECK_MESSAGE(result.err.find(text) != std::string::npos, result.err);
  };
  expect({"train", "--mode", "ps", "--limit", "100", "--optimizer", "rmsprop"}, "--optimizer: unknown rule 'rmsprop'");
  expect({"train", "--mode", "ps", "--limit", "100", "--workers", "2", "--sync", "--backup-workers", "2"},
         "--backup-workers must be 0..1");
  expect({"train", "--mode", "ps", "--limit", "100", "--lr-schedule", "cosine"}, "--lr-schedule: unknown schedule");
  expect({"train", "--mode", "ps", "--limit", "100", "--slow-worker", "x"}, "--slow-worker");
  expect({"ps-task", "--ps_hosts=127.0.0.1:1", "--worker_hosts=127.0.0.1:2", "--job_name=chief", "--task_index=0"},
         "--job_name must be 'ps' or 'worker'");
  expect({"ps-task", "--ps_hosts=127.0.0.1:1", "--worker_hosts=127.0.0.1:2", "--job_name=worker", "--task_index=3"},
         "--task_index 3 is not in 0..0");
  expect({"ps-task", "--ps_hosts=nohost", "--worker_hosts=127.0.0.1:2", "--job_name=ps", "--task_index=0"},
         "--ps_hosts: 'nohost' is not host:port");
}

TEST_CASE("ps-task on loopback: 2 PS and 3 workers train synchronously and every task exits by itself") {
  const ps_job job{2, 3, with(small_data, {"--sync", "--lr", "0.1", "--last-step", "300"})};
  auto ps0 = job.start("ps", 0);
  auto ps1 = job.start("ps", 1);
  auto w1 = job.start("worker", 1);
  auto w2 = job.start("worker", 2);
  const auto chief = run(job.args("worker", 0, {"--json"}), 120s);
  REQUIRE_MESSAGE(chief.exit_code == 0, chief.err);
  const auto summary = json::parse(chief.out);
  CHECK(summary["steps"] == 300);
  CHECK(summary["workers"] == 3);
  CHECK(summary["ps"] == 2);
  CHECK(summary["dropped_gradients"] == 0);
  CHECK(summary["test_accuracy"].get<double>() > 0.7);
  for (auto* task : {ps0.get(), ps1.get(), w1.get(), w2.get()}) {
    const auto result = task->wait(30s);
    CHECK_MESSAGE(!result.timed_out, result.err);
    CHECK_MESSAGE(result.exit_code == 0, result.err);
  }
}

TEST_CASE("ps-task: a worker killed mid-run with one backup worker present does not stop training") {
  const ps_job job{1, 3, with(small_data, {"--sync", "--backup-workers", "1", "--lr", "0.1", "--last-step", "4000",
                                           "--log-steps", "100"})};
  auto ps = job.start("ps", 0);
  auto w1 = job.start("worker", 1);
  auto w2 = job.start("worker", 2);
  temp_dir dir;
  const auto metrics = dir.path() / "metrics.jsonl";
  auto chief = job.start("worker", 0, {"--json", "--metrics", metrics.string()});
  // Once training is under way (two log lines: steps 100 and 200), kill worker 2.
  REQUIRE(shardopt::test::wait_for_lines(*chief, metrics, 2));
  w2->signal(SIGKILL);
  const auto result = chief->wait(120s);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const auto summary = json::parse(result.out);
  CHECK(summary["steps"] == 4000);
  CHECK(ps->wait(30s).exit_code == 0);
  CHECK(w1->wait(30s).exit_code == 0);
}

TEST_CASE("ps-task: after killing every task, a restart resumes from the newest checkpoint") {
  temp_dir dir;
  const auto checkpoints = (dir.path() / "ck").string();
  const ps_job job{1, 2, with(small_data, {"--lr", "0.05", "--checkpoint-dir", checkpoints, "--checkpoint-steps",
                                           "200", "--checkpoint-secs", "0"})};
  {
    auto ps = job.start("ps", 0);
    auto w1 = job.start("worker", 1, {"--last-step", "100000000"});
    auto chief = job.start("worker", 0, {"--last-step", "100000000"});
    // Wait for a few checkpoints, then kill everything at once.
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      std::size_t count = 0;
      std::error_code ec;
      for (std::filesystem::directory_iterator it{checkpoints, ec}, end; !ec && it != end; it.increment(ec))
        count += it->path().extension() == ".txt" ? 1 : 0;
      if (count >= 3)
        break;
      std::this_thread::sleep_for(50ms);
    }
    chief->signal(SIGKILL);
    w1->signal(SIGKILL);
    ps->signal(SIGKILL);
  }
  std::int64_t saved = -1;
  for (const auto& entry : std::filesystem::directory_iterator{checkpoints}) {
    std::smatch m;
    const auto name = entry.path().filename().string();
    if (std::regex_match(name, m, std::regex{"ckpt-(\\d+)\\.txt"}))
      saved = std::max<std::int64_t>(saved, std::stoll(m[1]));
  }
  REQUIRE(saved >= 400);
  const auto last = std::to_string(saved + 300);
  auto ps = job.start("ps", 0);
  auto w1 = job.start("worker", 1, {"--last-step", last});
  const auto chief = run(job.args("worker", 0, {"--last-step", last, "--json"}), 120s);
  REQUIRE_MESSAGE(chief.exit_code == 0, chief.err);
  const auto summary = json::parse(chief.out);
  CHECK(summary["restored_step"] == saved);
  CHECK(summary["steps"].get<std::int64_t>() == saved + 300);
  CHECK(ps->wait(30s).exit_code == 0);
  CHECK(w1->wait(30s).exit_code == 0);
}

TEST_CASE("ps-task: a dead PS is reported by the workers, a dead chief by the PS, and all tasks exit") {
  // Synchronous: no step completes without worker 1's gradient, so once the chief has logged a
  // step both workers are training (asynchronously the chief could log steps alone while worker 1
  // is still loading its data, and then wait for a PS that is gone for the whole startup timeout).
  const ps_job job{1, 2, with(small_data, {"--sync", "--last-step", "100000000", "--log-steps", "50"})};
  temp_dir dir;
  const auto metrics = dir.path() / "metrics.jsonl";
  auto ps = job.start("ps", 0);
  auto w1 = job.start("worker", 1);
  auto chief = job.start("worker", 0, {"--metrics", metrics.string()});
  // Training is under way once the chief has logged a step.
  REQUIRE(shardopt::test::wait_for_lines(*chief, metrics, 1));
  SUBCASE("the PS dies") {
    ps->signal(SIGKILL);
    const auto result = chief->wait(60s);
    CHECK(result.exit_code == 1);
    CHECK_MESSAGE(result.err.find("ps 0 (" + job.ps_hosts + ") went down") != std::string::npos, result.err);
    const auto other = w1->wait(60s);
    CHECK_MESSAGE(other.exit_code == 1, "signaled " << other.signaled << ", timed out " << other.timed_out);
    CHECK_MESSAGE(other.err.find("went down") != std::string::npos, other.err);
  }
  SUBCASE("the chief dies") {
    chief->signal(SIGKILL);
    const auto server = ps->wait(60s);
    CHECK(server.exit_code == 1);
    CHECK_MESSAGE(server.err.find("the chief (worker 0) went down") != std::string::npos, server.err);
    const auto other = w1->wait(60s);
    CHECK(other.exit_code == 1);
    CHECK_MESSAGE(other.err.find("the chief (worker 0) went down") != std::string::npos, other.err);
  }
}
