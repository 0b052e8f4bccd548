// L-BFGS checkpoint files: exact round trip, newest readable, run identity, hostile files.

#include "io/lbfgs_checkpoint.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace io = shardopt::io;
namespace opt = shardopt::optimizer;
namespace test = shardopt::test;
using shardopt::test::temp_dir;

namespace {

/// A state with awkward numbers (subnormal, huge, negative zero, many digits) and a `past` ring with
/// NaN in its unfilled slots.
io::lbfgs_checkpoint sample(int iteration) {
  std::mt19937_64 rng{static_cast<std::uint64_t>(iteration)};
  std::normal_distribution<double> normal;
  const auto vector = [&](Eigen::Index n) {
    Eigen::VectorXd v(n);
    for (auto& x : v)
      x = normal(rng) * std::pow(10.0, normal(rng) * 30);
    v[0] = std::numeric_limits<double>::denorm_min();
    v[1] = -0.0;
    v[2] = std::nextafter(1.0, 2.0);
    return v;
  };
  io::lbfgs_checkpoint saved;
  saved.settings = {{"--model", "softmax"}, {"--lambda", "0.0001"}, {"features", "784"}};
  auto& state = saved.state;
  state.iterations = iteration;
  state.evaluations = iteration + 3;
  state.seconds = 12.5;
  state.f = 0.1 + iteration;
  state.theta = vector(7);
  state.grad = vector(7);
  for (int i = 0; i < 3; ++i) {
    state.s.push_back(vector(7));
    state.y.push_back(vector(7));
  }
  state.f_history = {1.0 / 3, std::numeric_limits<double>::quiet_NaN(), -2.5};
  return saved;
}

bool same_bits(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

} // namespace

TEST_CASE("an L-BFGS checkpoint round-trips settings, counts, theta, gradient and pairs bit for bit") {
  temp_dir dir;
  const auto saved = sample(12);
  auto path = io::save_lbfgs_checkpoint(dir.path().string(), saved, 0);
  REQUIRE(path.ok());
  CHECK(std::filesystem::path{*path}.filename() == "lbfgs-000000000012.txt");
  auto loaded = io::load_lbfgs_checkpoint(*path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->settings == saved.settings);
  const auto& a = saved.state;
  const auto& b = loaded->state;
  CHECK(b.iterations == 12);
  CHECK(b.evaluations == 15);
  CHECK(b.seconds == a.seconds);
  CHECK(b.f == a.f);
  CHECK(same_bits(a.theta, b.theta));
  CHECK(same_bits(a.grad, b.grad));
  REQUIRE(b.s.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(same_bits(a.s[i], b.s[i]));
    CHECK(same_bits(a.y[i], b.y[i]));
  }
  REQUIRE(b.f_history.size() == 3);
  CHECK(b.f_history[0] == a.f_history[0]);
  CHECK(std::isnan(b.f_history[1]));
  CHECK(b.f_history[2] == -2.5);
  CHECK(std::signbit(b.theta[1]));
}

TEST_CASE("the newest readable L-BFGS checkpoint is used, corrupt newer ones and PS checkpoints are not") {
  temp_dir dir;
  for (const int k : {3, 7, 9})
    REQUIRE(io::save_lbfgs_checkpoint(dir.path().string(), sample(k), 2).ok());
  // keep = 2: iteration 3 was pruned.
  CHECK_FALSE(std::filesystem::exists(dir.path().string() + "/lbfgs-000000000003.txt"));
  // Truncate the newest, and put a parameter-server checkpoint name beside them.
  const auto newest = dir.path().string() + "/lbfgs-000000000009.txt";
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) / 2);
  dir.write("ckpt-000000000099.txt", "not ours");
  auto found = io::newest_readable_lbfgs_checkpoint(dir.path().string());
  REQUIRE(found.ok());
  REQUIRE(found->state);
  CHECK(found->state->state.iterations == 7);
  CHECK(found->path == dir.path().string() + "/lbfgs-000000000007.txt");
  REQUIRE(found->warnings.size() == 1);
  CHECK(found->warnings[0].rfind("skipped: " + newest + ": ", 0) == 0);

  auto empty = io::newest_readable_lbfgs_checkpoint(dir.path().string() + "/missing");
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->state);
}

TEST_CASE("a checkpoint of another run is refused naming the option that differs") {
  const auto saved = sample(4);
  CHECK(io::check_same_run(saved, saved.settings, "c.txt").ok());
  auto other = saved.settings;
  other[1].second = "0.001";
  auto refused = io::check_same_run(saved, other, "c.txt");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message() == "c.txt: saved by another run: --lambda was 0.0001 there, is 0.001 here");
  other = saved.settings;
  other.emplace_back("--history", "10");
  refused = io::check_same_run(saved, other, "c.txt");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message() == "c.txt: saved by another run: it does not record --history");
}

TEST_CASE("hostile small L-BFGS checkpoints are refused without allocating what they declare") {
  temp_dir dir;
  const auto before = test::peak_rss_bytes();
  const std::string head = "22 serialization::archive 18 25 shardopt-lbfgs-checkpoint 1 ";
  const auto settings = dir.write("settings.txt", head + "4000000000000 ");
  auto r = io::load_lbfgs_checkpoint(settings);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == settings + ": corrupt L-BFGS checkpoint: a count of 4000000000000 settings");
  const auto key = dir.write("key.txt", head + "1 3000000000 m");
  r = io::load_lbfgs_checkpoint(key);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("a string of 3000000000 characters") != std::string::npos);
  const auto theta = dir.write("theta.txt", head + "0 1 1 0.5 1.5 900000000 1 2");
  r = io::load_lbfgs_checkpoint(theta);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().rfind(theta + ": truncated or corrupt L-BFGS checkpoint: theta: a size of 900000000", 0) == 0);
  const auto pairs = dir.write("pairs.txt", head + "0 1 1 0.5 1.5 1 2 1 3 99999999999");
  r = io::load_lbfgs_checkpoint(pairs);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == pairs + ": corrupt L-BFGS checkpoint: a count of 99999999999 correction pairs");
  const auto growth = test::peak_rss_bytes() - before;
  MESSAGE("peak RSS growth reading hostile L-BFGS checkpoints: " << growth / 1024 << " KiB");
  CHECK(growth < test::hostile_file_memory_bound);
}

TEST_CASE("a save removes temporary files that killed writers left, and no live writer's") {
  temp_dir dir;
  // A process that has ended: its pid names no process now (a reused pid would keep the file, the
  // safe side).
  const pid_t gone = ::fork();
  if (gone == 0)
    ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const auto abandoned = ".lbfgs-000000000003.txt.tmp-" + std::to_string(gone) + "-00000000deadbeef";
  const auto live = ".lbfgs-000000000004.txt.tmp-" + std::to_string(::getppid()) + "-00000000cafef00d";
  const auto other = ".ckpt-000000000003.txt.tmp-" + std::to_string(gone) + "-00000000deadbeef";
  for (const auto& name : {abandoned, live, other})
    dir.write(name, "partial");
  REQUIRE(io::save_lbfgs_checkpoint(dir.path().string(), sample(5), 0).ok());
  CHECK_FALSE(std::filesystem::exists(dir / abandoned));
  CHECK(std::filesystem::exists(dir / live));
  CHECK(std::filesystem::exists(dir / other));  // another kind of checkpoint: not ours to clean
}
