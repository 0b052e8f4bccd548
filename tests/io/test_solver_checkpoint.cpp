// Solver checkpoint files: exact round trip (NaN and signed zero too), newest readable per solver,
// run identity, hostile files.

#include "io/solver_checkpoint.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"
#include "support/bits.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include <sys/wait.h>
#include <unistd.h>

namespace io = shardopt::io;
namespace test = shardopt::test;
using shardopt::test::temp_dir;

using shardopt::test::same_bits;

namespace {

/// A checkpoint with awkward numbers (subnormal, huge, negative zero, many digits, NaN) in its
/// numbers and lists, as an L-BFGS run's would hold them.
io::solver_checkpoint sample(int iteration, const std::string& solver = "lbfgs") {
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
  io::solver_checkpoint saved;
  saved.settings = {{"--model", "softmax"}, {"--lambda", "0.0001"}, {"features", "784"}};
  saved.solver = solver;
  saved.iteration = iteration;
  saved.numbers = {{"iterations", iteration}, {"evaluations", iteration + 3}, {"seconds", 12.5},
                   {"f", 0.1 + iteration}, {"unset", std::numeric_limits<double>::quiet_NaN()}};
  saved.vectors = {{"theta", {vector(7)}}, {"s", {vector(7), vector(7), vector(7)}}, {"empty", {}},
                   {"f_history", {Eigen::Vector3d{1.0 / 3, std::numeric_limits<double>::quiet_NaN(), -2.5}}}};
  return saved;
}

} // namespace

TEST_CASE("a solver checkpoint round-trips settings, numbers and lists bit for bit") {
  temp_dir dir;
  const auto saved = sample(12);
  auto path = io::save_solver_checkpoint(dir.path().string(), saved, 0);
  REQUIRE(path.ok());
  CHECK(std::filesystem::path{*path}.filename() == "lbfgs-000000000012.txt");
  auto loaded = io::load_solver_checkpoint(*path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  CHECK(loaded->settings == saved.settings);
  CHECK(loaded->solver == "lbfgs");
  CHECK(loaded->iteration == 12);
  REQUIRE(loaded->numbers.size() == saved.numbers.size());
  for (std::size_t i = 0; i < saved.numbers.size(); ++i) {
    CHECK(loaded->numbers[i].first == saved.numbers[i].first);
    CHECK(std::memcmp(&loaded->numbers[i].second, &saved.numbers[i].second, sizeof(double)) == 0);
  }
  REQUIRE(loaded->vectors.size() == saved.vectors.size());
  for (std::size_t i = 0; i < saved.vectors.size(); ++i) {
    CHECK(loaded->vectors[i].first == saved.vectors[i].first);
    REQUIRE(loaded->vectors[i].second.size() == saved.vectors[i].second.size());
    for (std::size_t v = 0; v < saved.vectors[i].second.size(); ++v)
      CHECK(same_bits(loaded->vectors[i].second[v], saved.vectors[i].second[v]));
  }
  CHECK(std::isnan(*loaded->number("unset")));
  CHECK(loaded->list("s")->size() == 3);
  CHECK(loaded->list("missing") == nullptr);
  CHECK(std::signbit((*loaded->list("theta"))[0][1]));
  // A solver's name becomes a file name: only plain names are saved.
  auto odd = sample(3, "../evil");
  CHECK_FALSE(io::save_solver_checkpoint(dir.path().string(), odd, 0).ok());
}

TEST_CASE("mostly-zero vectors are written as their non-zeros and read back bit for bit, and version 1 files still read") {
  temp_dir dir;
  // An L1 run's theta and pairs at a hashed dimension: a few non-zeros among 2^20 entries, among
  // them -0.0, NaN and a subnormal (kept: their bits are not all zero); an all-zero vector; and a
  // dense one beside them.
  const std::int64_t d = std::int64_t{1} << 20;
  Eigen::VectorXd sparse = Eigen::VectorXd::Zero(d);
  sparse[0] = -0.0;
  sparse[17] = std::numeric_limits<double>::quiet_NaN();
  sparse[4096] = std::numeric_limits<double>::denorm_min();
  sparse[d - 1] = 1.0 / 3;
  io::solver_checkpoint saved;
  saved.settings = {{"--l1", "1e-6"}};
  saved.solver = "lbfgs";
  saved.iteration = 5;
  saved.vectors = {{"theta", {sparse}}, {"s", {Eigen::VectorXd::Zero(d), sparse}},
                   {"f_history", {Eigen::Vector3d{0.5, 0.25, -0.0}}}};
  auto path = io::save_solver_checkpoint(dir.path().string(), saved, 0);
  REQUIRE(path.ok());
  CHECK(std::filesystem::file_size(*path) < 4096);  // dense, 2^20 entries would take 2 MB each
  auto loaded = io::load_solver_checkpoint(*path, io::checkpoint_limits{saved.settings, 3 * d});
  REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
  REQUIRE(loaded->vectors.size() == 3);
  CHECK(same_bits((*loaded->list("theta"))[0], sparse));
  CHECK(same_bits((*loaded->list("s"))[0], Eigen::VectorXd::Zero(d)));
  CHECK(same_bits((*loaded->list("s"))[1], sparse));
  CHECK(same_bits((*loaded->list("f_history"))[0], saved.vectors[2].second[0]));
  // Sparse vectors declaring more entries in all than a run allows are refused, naming the list.
  auto smaller = io::load_solver_checkpoint(*path, io::checkpoint_limits{{}, 3 * d - 1});
  REQUIRE_FALSE(smaller.ok());
  CHECK(smaller.error().message().find("list s: a sparse vector of size 1048576, more than the 1048575 entries left")
        != std::string::npos);
  // A run with other settings reads it without its lists (nothing of its size made), and
  // check_same_run names the difference.
  const std::vector<std::pair<std::string, std::string>> other{{"--l1", "1e-5"}};
  auto another = io::load_solver_checkpoint(*path, io::checkpoint_limits{other, 1});
  REQUIRE_MESSAGE(another.ok(), another.error().message());
  CHECK(another->vectors.empty());
  CHECK(another->iteration == 5);
  CHECK_FALSE(io::check_same_run(*another, other, *path).ok());
  // Version 1: every vector dense, no tag.
  const auto old = dir.write("lbfgs-000000000001.txt",
                             "22 serialization::archive 18 26 shardopt-solver-checkpoint 1 0 5 lbfgs 1 0 1 5 theta 1 "
                             "3 4607182418800017408 0 9223372036854775808 3 end");
  auto read = io::load_solver_checkpoint(old);
  REQUIRE_MESSAGE(read.ok(), read.error().message());
  CHECK(same_bits((*read->list("theta"))[0], Eigen::Vector3d{1.0, 0.0, -0.0}));
}

TEST_CASE("the newest readable checkpoint of a solver is used, corrupt newer ones and other kinds are not") {
  temp_dir dir;
  for (const int k : {3, 7, 9})
    REQUIRE(io::save_solver_checkpoint(dir.path().string(), sample(k), 2).ok());
  REQUIRE(io::save_solver_checkpoint(dir.path().string(), sample(20, "newton-cg"), 2).ok());
  // keep = 2: iteration 3 was pruned.
  CHECK_FALSE(std::filesystem::exists(dir.path().string() + "/lbfgs-000000000003.txt"));
  // Truncate the newest, and put a parameter-server checkpoint name beside them.
  const auto newest = dir.path().string() + "/lbfgs-000000000009.txt";
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) / 2);
  dir.write("ckpt-000000000099.txt", "not ours");
  auto found = io::newest_readable_solver_checkpoint(dir.path().string(), "lbfgs");
  REQUIRE(found.ok());
  REQUIRE(found->state);
  CHECK(found->state->iteration == 7);
  CHECK(found->path == dir.path().string() + "/lbfgs-000000000007.txt");
  REQUIRE(found->warnings.size() == 1);
  CHECK(found->warnings[0].rfind("skipped: " + newest + ": ", 0) == 0);

  auto newton = io::newest_readable_solver_checkpoint(dir.path().string(), "newton-cg");
  REQUIRE(newton.ok());
  REQUIRE(newton->state);
  CHECK(newton->state->iteration == 20);
  auto empty = io::newest_readable_solver_checkpoint(dir.path().string() + "/missing", "lbfgs");
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
  other = saved.settings;
  other.pop_back();
  refused = io::check_same_run(saved, other, "c.txt");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message() == "c.txt: saved by another run: it records " + saved.settings.back().first + " " +
                                         saved.settings.back().second + ", which this run does not have");
}

TEST_CASE("hostile small solver checkpoints are refused without allocating what they declare") {
  temp_dir dir;
  const auto before = test::peak_rss_bytes();
  // Each file refused: its path and the message.
  const auto refused_with = [&](const std::string& head) {
    return [&dir, head](const std::string& name, const std::string& body) {
      const auto path = dir.write(name, head + body);
      auto r = io::load_solver_checkpoint(path);
      REQUIRE_FALSE(r.ok());
      return std::pair{path, r.error().message()};
    };
  };
  const auto load = refused_with("22 serialization::archive 18 26 shardopt-solver-checkpoint 1 ");
  auto [settings, why] = load("settings.txt", "4000000000000 ");
  CHECK(why == settings + ": corrupt solver checkpoint: a count of 4000000000000 settings");
  std::tie(settings, why) = load("key.txt", "1 3000000000 m");
  CHECK(why.find("a string of 3000000000 characters") != std::string::npos);
  std::tie(settings, why) = load("solver.txt", "0 7 ../evil 1 0 0 3 end");
  CHECK(why == settings + ": corrupt solver checkpoint: a solver named '../evil'");
  std::tie(settings, why) = load("theta.txt", "0 5 lbfgs 1 0 1 5 theta 1 900000000 1 2");
  CHECK(why.rfind(settings + ": truncated or corrupt solver checkpoint: list theta: a size of 900000000", 0) == 0);
  std::tie(settings, why) = load("pairs.txt", "0 5 lbfgs 1 0 1 1 s 99999999999");
  CHECK(why == settings + ": corrupt solver checkpoint: a list of 99999999999 vectors");
  // Version 2's sparse vectors: a few bytes declaring gigabytes of zeros, entries out of order or
  // out of range, counts that disagree, an unknown encoding.
  const auto load2 = refused_with("22 serialization::archive 18 26 shardopt-solver-checkpoint 2 0 5 lbfgs 1 0 1 5 theta 1 ");
  const std::string list = ": truncated or corrupt solver checkpoint: list theta: ";
  std::tie(settings, why) = load2("huge.txt", "1 99999999999 0 0 3 end");
  CHECK(why == settings + list + "a sparse vector of size 99999999999, more than the 134217728 entries left of "
                                 "what this run's sparse vectors may hold");
  // Sparse vectors within the limit one by one, beyond it together: refused before any is made,
  // and none is made before the end marker.
  std::string many = "";
  for (int k = 0; k < 40; ++k)
    many += "1 4194304 0 0 ";
  const auto path2 = dir.write("many_sparse.txt", "22 serialization::archive 18 26 shardopt-solver-checkpoint 2 0 5 "
                                                  "lbfgs 1 0 1 5 theta 40 " + many + "3 end");
  auto refused = io::load_solver_checkpoint(path2);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("list theta: a sparse vector of size 4194304, more than the 0 entries left")
        != std::string::npos);
  std::tie(settings, why) = load2("no_end.txt", "1 134217728 0 0 ");  // 1 GB of zeros, never made
  CHECK(why == settings + ": truncated or corrupt solver checkpoint (input stream error)");
  std::tie(settings, why) = load2("order.txt", "1 10 2 3 3 2 1 1 3 end");
  CHECK(why == settings + list + "entry 1 has index 3, not increasing within 0..9");
  std::tie(settings, why) = load2("range.txt", "1 10 1 10 1 1 3 end");
  CHECK(why == settings + list + "entry 0 has index 10, not increasing within 0..9");
  std::tie(settings, why) = load2("counts.txt", "1 10 2 1 2 1 1 3 end");
  CHECK(why == settings + list + "2 indices for 1 values");
  std::tie(settings, why) = load2("many.txt", "1 10 11 0 1 2 3 4 5 6 7 8 9 10 0 3 end");
  CHECK(why.rfind(settings + list + "a size of 11, not in the allowed 0..10", 0) == 0);
  std::tie(settings, why) = load2("tag.txt", "7 3 1 2 3 3 end");
  CHECK(why == settings + list + "a vector of unknown encoding 7");
  const auto growth = test::peak_rss_bytes() - before;
  MESSAGE("peak RSS growth reading hostile solver checkpoints: " << growth / 1024 << " KiB");
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
  REQUIRE(io::save_solver_checkpoint(dir.path().string(), sample(5), 0).ok());
  CHECK_FALSE(std::filesystem::exists(dir / abandoned));
  CHECK(std::filesystem::exists(dir / live));
  CHECK(std::filesystem::exists(dir / other));  // another kind of checkpoint: not ours to clean
}
