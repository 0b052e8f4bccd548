// Atomic file replacement: the new contents in place and no temporary left behind; on a failed write
// (no such directory, a file-size limit, a full disk, a writer that throws) the old file survives
// byte for byte, no temporary is left, and the message names the file and the cause; concurrent
// writers never share a temporary file.

#include "io/atomic_file.hpp"
#include "io/ps_checkpoint.hpp"
#include "io/solver_checkpoint.hpp"
#include "io/model_file.hpp"
#include "support/files.hpp"
#include "support/small_disk.hpp"

#include <doctest/doctest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace shardopt;
using shardopt::test::slurp;
using shardopt::test::mount_small_tmpfs;
using shardopt::test::temp_dir;
namespace fs = std::filesystem;

namespace {

/// The names of the files in `dir`.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator{dir})
    names.push_back(entry.path().filename().string());
  return names;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Lowers RLIMIT_FSIZE for its lifetime (writes past `bytes` then fail with EFBIG instead of raising
/// SIGXFSZ, which is ignored meanwhile); restores both on destruction.
class file_size_limit {
public:
  explicit file_size_limit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  file_size_limit(const file_size_limit&) = delete;
  file_size_limit& operator=(const file_size_limit&) = delete;

private:
  rlimit saved_{};
  void (*previous_handler_)(int) = nullptr;
};

} // namespace

TEST_CASE("write_file_atomically writes, replaces, and leaves no temporary file") {
  temp_dir dir;
  const auto target = dir / "status.json";
  REQUIRE(io::write_file_atomically(target, "first").ok());
  CHECK(slurp(target) == "first");
  REQUIRE(io::write_file_atomically(target, "second, longer").ok());
  CHECK(slurp(target) == "second, longer");
  REQUIRE(io::write_file_atomically(target, "").ok());
  CHECK(slurp(target).empty());
  CHECK(names_in(dir.path()) == std::vector<std::string>{"status.json"});
  // A new file gets the mode the umask gives, not mkstemp's 0600.
  const mode_t mask = ::umask(022);
  ::umask(mask);
  CHECK((fs::status(target).permissions() & fs::perms::all) == static_cast<fs::perms>(0666 & ~mask));
}

TEST_CASE("stream_file_atomically writes numbers in the C locale and reports a throwing writer") {
  temp_dir dir;
  const auto target = dir / "model.txt";
  REQUIRE(io::stream_file_atomically(target, [](std::ostream& out) { out << 1.5 << ' ' << 1234567; }).ok());
  CHECK(slurp(target) == "1.5 1234567");
  auto thrown = io::stream_file_atomically(target, [](std::ostream& out) {
    out << "half of it";
    throw std::runtime_error{"archive failed"};
  });
  REQUIRE_FALSE(thrown.ok());
  CHECK(thrown.error().message() == target.string() + ": cannot write: archive failed");
  CHECK(slurp(target) == "1.5 1234567");
  CHECK(names_in(dir.path()) == std::vector<std::string>{"model.txt"});
}

TEST_CASE("a missing directory fails naming the file and the cause") {
  temp_dir dir;
  const auto target = dir / "no-such-dir" / "results.csv";
  auto written = io::write_file_atomically(target, "x");
  REQUIRE_FALSE(written.ok());
  const auto& message = written.error().message();
  CHECK(message.rfind(target.string() + ": cannot write: creating ", 0) == 0);
  CHECK(contains(message, "No such file or directory"));
}

TEST_CASE("a write over the file-size limit keeps the old file and removes the temporary") {
  temp_dir dir;
  const auto target = dir / "ckpt-000000000001.txt";
  REQUIRE(io::write_file_atomically(target, "the old checkpoint").ok());
  const std::string big(1 << 20, 'x');
  result<void> bytes_written;
  result<void> streamed;
  {
    file_size_limit limit{64 * 1024};
    bytes_written = io::write_file_atomically(target, big);
    streamed = io::stream_file_atomically(target, [&](std::ostream& out) { out << big; });
  }
  for (const auto* written : {&bytes_written, &streamed}) {
    REQUIRE_FALSE(written->ok());
    const auto& message = written->error().message();
    CHECK(message.rfind(target.string() + ": cannot write: writing ", 0) == 0);
    CHECK(contains(message, std::strerror(EFBIG)));
  }
  CHECK(slurp(target) == "the old checkpoint");
  CHECK(names_in(dir.path()) == std::vector<std::string>{"ckpt-000000000001.txt"});
}

TEST_CASE("a full disk keeps the old file intact and names the file (64 KiB tmpfs)") {
  temp_dir dir;
  const auto mount_point = dir / "small";
  fs::create_directory(mount_point);
  if (const auto why_not = mount_small_tmpfs(mount_point)) {
    MESSAGE("skipped: cannot mount a tmpfs to fill (" << *why_not << ")");
    WARN_MESSAGE(false, "full-disk test skipped");
    return;
  }
  const auto target = mount_point / "results.jsonl";
  const std::string old(10000, 'o');
  REQUIRE(io::write_file_atomically(target, old).ok());
  auto written = io::write_file_atomically(target, std::string(1 << 20, 'n'));
  auto streamed = io::stream_file_atomically(target, [](std::ostream& out) {
    for (int i = 0; i < 100000; ++i)
      out << i << '\n';
  });
  for (const auto* failed : {&written, &streamed}) {
    REQUIRE_FALSE(failed->ok());
    CHECK(failed->error().message().rfind(target.string() + ": cannot write: ", 0) == 0);
    CHECK(contains(failed->error().message(), std::strerror(ENOSPC)));
  }
  CHECK(slurp(target) == old);
  CHECK(names_in(mount_point) == std::vector<std::string>{"results.jsonl"});
  // Once there is room again, the same write succeeds.
  REQUIRE(io::write_file_atomically(target, "small").ok());
  CHECK(slurp(target) == "small");
  CHECK(::umount2(mount_point.c_str(), MNT_DETACH) == 0);
}

TEST_CASE("a full disk keeps the previous model file and checkpoints intact and names the file") {
  temp_dir dir;
  const auto mount_point = dir / "small";
  fs::create_directory(mount_point);
  if (const auto why_not = mount_small_tmpfs(mount_point)) {
    MESSAGE("skipped: cannot mount a tmpfs to fill (" << *why_not << ")");
    WARN_MESSAGE(false, "full-disk test skipped");
    return;
  }
  // Small versions fit in the 64 KiB; versions with 20,000 parameters (~500 KiB as text) do not.
  const auto model_of = [](Eigen::Index n) {
    io::saved_model saved;
    saved.shape = model::model_shape{model::model_kind::linear, n - 1, 1};
    saved.theta = Eigen::VectorXd::LinSpaced(n, -1, 1);
    saved.lambda = 0.5;
    return saved;
  };
  const auto model_path = (mount_point / "model.bin").string();
  REQUIRE(io::save_model(model_path, model_of(10)).ok());
  const auto model_before = slurp(model_path);

  io::ps_checkpoint ps;
  ps.step = 7;
  ps.rule = "sgd";
  ps.model = model_of(10);
  const auto ps_dir = (mount_point / "ps").string();
  auto ps_path = io::save_ps_checkpoint(ps_dir, ps, 0);
  REQUIRE(ps_path.ok());
  const auto ps_before = slurp(*ps_path);

  io::solver_checkpoint lbfgs;
  lbfgs.settings = {{"--model", "linear"}};
  lbfgs.solver = "lbfgs";
  lbfgs.iteration = 3;
  lbfgs.numbers = {{"iterations", 3}, {"evaluations", 4}};
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(10, -1, 1);
  lbfgs.vectors = {{"theta", {theta}}, {"grad", {theta}}};
  const auto lbfgs_dir = (mount_point / "lbfgs").string();
  auto lbfgs_path = io::save_solver_checkpoint(lbfgs_dir, lbfgs, 0);
  REQUIRE(lbfgs_path.ok());
  const auto lbfgs_before = slurp(*lbfgs_path);

  // The big versions: each write fails naming its file and the cause; the old files are whole.
  auto model_write = io::save_model(model_path, model_of(20000));
  REQUIRE_FALSE(model_write.ok());
  CHECK(model_write.error().message().rfind(model_path + ": cannot write: ", 0) == 0);
  CHECK(contains(model_write.error().message(), std::strerror(ENOSPC)));
  CHECK(slurp(model_path) == model_before);

  ps.model = model_of(20000);
  auto ps_write = io::save_ps_checkpoint(ps_dir, ps, 0);  // the same step: it would replace the file
  REQUIRE_FALSE(ps_write.ok());
  CHECK(ps_write.error().message().rfind(*ps_path + ": cannot write: ", 0) == 0);
  CHECK(slurp(*ps_path) == ps_before);

  lbfgs.vectors = {{"theta", {Eigen::VectorXd::Constant(20000, 0.125)}},
                   {"grad", {Eigen::VectorXd::Constant(20000, -0.25)}}};
  auto lbfgs_write = io::save_solver_checkpoint(lbfgs_dir, lbfgs, 0);
  REQUIRE_FALSE(lbfgs_write.ok());
  CHECK(lbfgs_write.error().message().rfind(*lbfgs_path + ": cannot write: ", 0) == 0);
  CHECK(slurp(*lbfgs_path) == lbfgs_before);
  // Nothing half-written is left to be mistaken for a checkpoint.
  CHECK(names_in(ps_dir) == std::vector<std::string>{"ckpt-000000000007.txt"});
  CHECK(names_in(lbfgs_dir) == std::vector<std::string>{"lbfgs-000000000003.txt"});
  auto newest = io::newest_readable_solver_checkpoint(lbfgs_dir, "lbfgs");
  REQUIRE(newest.ok());
  REQUIRE(newest->state);
  REQUIRE(newest->state->list("theta"));
  CHECK(newest->state->list("theta")->front().size() == 10);
  CHECK(::umount2(mount_point.c_str(), MNT_DETACH) == 0);
}

TEST_CASE("concurrent writers to one file never share a temporary, the file is one whole version") {
  temp_dir dir;
  const auto target = dir / "summary.json";
  constexpr int writers = 4;
  constexpr int rounds = 50;
  std::vector<std::string> versions;
  for (int w = 0; w < writers; ++w)
    versions.push_back(std::string(4096 + static_cast<std::size_t>(w), static_cast<char>('a' + w)));
  std::vector<int> failures(writers, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      for (int r = 0; r < rounds; ++r)
        failures[static_cast<std::size_t>(w)] += io::write_file_atomically(target, versions[static_cast<std::size_t>(w)]).ok() ? 0 : 1;
    });
  for (auto& thread : threads)
    thread.join();
  CHECK(failures == std::vector<int>(writers, 0));
  const auto final_text = slurp(target);
  CHECK(std::find(versions.begin(), versions.end(), final_text) != versions.end());
  CHECK(names_in(dir.path()) == std::vector<std::string>{"summary.json"});
}
