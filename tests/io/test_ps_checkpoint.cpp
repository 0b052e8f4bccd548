// Checkpoints: exact round trip of theta, optimizer state and step; newest-K retention; the newest
// checkpoint found; corrupt and truncated files refused naming the file.

#include "io/ps_checkpoint.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"
#include "support/bits.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

using namespace shardopt;
using shardopt::test::temp_dir;

using shardopt::test::same_bits;

namespace {

io::ps_checkpoint adam_checkpoint(std::int64_t step) {
  io::ps_checkpoint c;
  c.step = step;
  c.rule = "adam";
  c.updates = step + 7;
  c.model.shape = {model::model_kind::softmax, 2, 2};
  c.model.theta.resize(6);
  c.model.theta << 1.0 / 3.0, -0.0, 1e-300, -2.5e300, 0.1, std::numeric_limits<double>::denorm_min();
  c.model.labels.kind = model::model_kind::softmax;
  c.model.labels.classes = {3, 7};
  c.model.scaling.factor = 1.0 / 255.0;
  c.model.lambda = 1e-4;
  c.slots = {Eigen::VectorXd::LinSpaced(6, -1.0 / 7.0, 5.0 / 9.0), Eigen::VectorXd::Constant(6, 1e-17)};
  return c;
}

} // namespace

TEST_CASE("a checkpoint round-trips theta, optimizer state, step and model bit for bit") {
  temp_dir dir;
  const auto saved = adam_checkpoint(1234);
  auto path = io::save_ps_checkpoint(dir.path().string(), saved, 0);
  REQUIRE(path.ok());
  CHECK(std::filesystem::path{*path}.filename() == "ckpt-000000001234.txt");
  auto loaded = io::load_ps_checkpoint(*path);
  REQUIRE(loaded.ok());
  CHECK(loaded->step == 1234);
  CHECK(loaded->updates == 1241);
  CHECK(loaded->rule == "adam");
  CHECK(same_bits(loaded->model.theta, saved.model.theta));
  REQUIRE(loaded->slots.size() == 2);
  CHECK(same_bits(loaded->slots[0], saved.slots[0]));
  CHECK(same_bits(loaded->slots[1], saved.slots[1]));
  CHECK(loaded->model.shape == saved.model.shape);
  CHECK(loaded->model.labels.classes == saved.model.labels.classes);
  CHECK(loaded->model.lambda == saved.model.lambda);
}

TEST_CASE("only the newest K checkpoints are kept and the newest is found") {
  temp_dir dir;
  const auto where = dir.path().string();
  CHECK(!io::newest_readable_ps_checkpoint(where + "/missing")->state);
  CHECK(!io::newest_readable_ps_checkpoint(where)->state);
  for (std::int64_t step : {100, 900, 1000, 200, 10000})
    REQUIRE(io::save_ps_checkpoint(where, adam_checkpoint(step), 3).ok());
  // An interrupted write leaves a .tmp file, which is not a checkpoint.
  shardopt::test::write_file(dir.path() / "ckpt-000000099999.txt.tmp", "partial");
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator{dir.path()})
    count += entry.path().extension() == ".txt" ? 1 : 0;
  CHECK(count == 3);
  auto latest = io::newest_readable_ps_checkpoint(where);
  REQUIRE(latest);
  REQUIRE(latest->state);
  CHECK(std::filesystem::path{latest->path}.filename() == "ckpt-000000010000.txt");
  CHECK(!std::filesystem::exists(dir.path() / "ckpt-000000000100.txt"));
  CHECK(!std::filesystem::exists(dir.path() / "ckpt-000000000200.txt"));
}

TEST_CASE("corrupt, truncated and foreign files are refused with the file name") {
  temp_dir dir;
  auto path = io::save_ps_checkpoint(dir.path().string(), adam_checkpoint(5), 0);
  REQUIRE(path.ok());
  const auto text = shardopt::test::slurp(*path);
  const auto truncated = (dir.path() / "truncated.txt").string();
  shardopt::test::write_file(truncated, text.substr(0, text.size() / 2));
  auto cut = io::load_ps_checkpoint(truncated);
  REQUIRE(!cut.ok());
  CHECK(cut.error().message().find(truncated) != std::string::npos);
  CHECK(cut.error().message().find("truncated or corrupt") != std::string::npos);

  const auto foreign = (dir.path() / "foreign.txt").string();
  shardopt::test::write_file(foreign, "hello world\n");
  auto other = io::load_ps_checkpoint(foreign);
  REQUIRE(!other.ok());
  CHECK(other.error().message().find("not a shardopt checkpoint") != std::string::npos);

  auto missing = io::load_ps_checkpoint((dir.path() / "nope.txt").string());
  REQUIRE(!missing.ok());
  CHECK(missing.error().message().find("no such file") != std::string::npos);

  // A slot that does not match theta cannot be saved.
  auto bad = adam_checkpoint(6);
  bad.slots[1].resize(2);
  CHECK(!io::save_ps_checkpoint(dir.path().string(), bad, 0).ok());
}

TEST_CASE("the newest readable checkpoint is found past corrupt newer ones, each named in a warning") {
  temp_dir dir;
  const auto where = dir.path().string();
  auto none = io::newest_readable_ps_checkpoint(where + "/missing");
  REQUIRE(none.ok());
  CHECK_FALSE(none->state);
  CHECK(none->warnings.empty());

  REQUIRE(io::save_ps_checkpoint(where, adam_checkpoint(100), 0).ok());
  auto newest = io::save_ps_checkpoint(where, adam_checkpoint(200), 0);
  REQUIRE(newest.ok());
  // The newest is cut in half, a newer one is garbage, and a name's step overflows 64 bits.
  const auto text = shardopt::test::slurp(*newest);
  shardopt::test::write_file(*newest, text.substr(0, text.size() / 2));
  const auto garbage = dir.path() / io::ps_checkpoint_name(300);
  shardopt::test::write_file(garbage, "22 serialization::archive 18 99999999999 x");
  const auto overflow = dir.path() / "ckpt-123456789012345678901234.txt";
  shardopt::test::write_file(overflow, "not read");

  auto found = io::newest_readable_ps_checkpoint(where);
  REQUIRE_MESSAGE(found.ok(), found.error().message());
  REQUIRE(found->state);
  CHECK(found->state->step == 100);
  CHECK(std::filesystem::path{found->path}.filename() == io::ps_checkpoint_name(100));
  REQUIRE(found->warnings.size() == 3);
  CHECK(found->warnings[0] == overflow.string() + ": ignored: the step in its name does not fit in 64 bits");
  CHECK(found->warnings[1].rfind("skipped: " + garbage.string() + ": ", 0) == 0);
  CHECK(found->warnings[2].rfind("skipped: " + *newest + ": truncated or corrupt checkpoint", 0) == 0);

  // Nothing readable: no state, every file named.
  std::filesystem::remove(dir.path() / io::ps_checkpoint_name(100));
  auto unreadable = io::newest_readable_ps_checkpoint(where);
  REQUIRE(unreadable.ok());
  CHECK_FALSE(unreadable->state);
  CHECK(unreadable->path.empty());
  CHECK(unreadable->warnings.size() == 3);
}

TEST_CASE("a checkpoint directory that cannot be listed is a failure naming it") {
  temp_dir dir;
  const auto file = dir.write("not-a-directory", "x");
  auto found = io::newest_readable_ps_checkpoint(file);
  REQUIRE_FALSE(found.ok());
  CHECK(found.error().message().rfind(file + ": cannot list the checkpoint directory: ", 0) == 0);
}

TEST_CASE("a hostile small checkpoint declaring a huge rule name or slot is refused without allocating it") {
  temp_dir dir;
  const auto before = test::peak_rss_bytes();
  const auto rule = dir.write("rule.txt", "22 serialization::archive 18 19 shardopt-checkpoint 1 5 3000000000 adam");
  auto r = io::load_ps_checkpoint(rule);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == rule + ": truncated or corrupt checkpoint: rule name: a string of 3000000000 "
                               "characters, more than the 5 bytes left in the file");
  const auto slot = dir.write("slot.txt", "22 serialization::archive 18 19 shardopt-checkpoint 1 5 4 adam 1 1 500000000 1");
  auto s = io::load_ps_checkpoint(slot);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message().rfind(slot + ": truncated or corrupt checkpoint: optimizer slot: a size of 500000000", 0) == 0);
  const auto growth = test::peak_rss_bytes() - before;
  MESSAGE("peak RSS growth reading hostile checkpoints: " << growth / 1024 << " KiB");
  CHECK(growth < test::hostile_file_memory_bound);
}
