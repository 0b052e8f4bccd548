// A node's group marks the sums it replies with: once the reply has been sent (here, received in
// this process and dropped), its words go back to the kept buffers for the next pass's total,
// beside the member answer the group merged into it (base/spare_words.hpp). And a node keeps
// buffers only while it has drivers (node_holdings turns keeping on and off).

#include "actors/node/group.hpp"
#include "actors/node/node_holdings.hpp"
#include "actors/wire/runtime.hpp"
#include "actors/wire/shard.hpp"
#include "base/spare_words.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using namespace std::chrono_literals;

TEST_CASE("a group's reply gives its words back once dropped, beside the member answer merged into it") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const std::int64_t d = 10000;  // dense answers of d + 1 words: above the smallest kept buffer
  const auto data = shardopt::test::random_problem(3, 40, d, 2, false);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  const auto token = actors::access_token::random();
  const auto first = actors::spawn_shard(rt.system(), shape, data, {0, 20}, {0, 20}, token);
  const auto second = actors::spawn_shard(rt.system(), shape, data, {20, 40}, {1, 20}, token);
  const auto group = actors::spawn_group(rt.system(), {first, second}, 2, token);
  const auto grid = actors::encode_grid(std::vector<int>(static_cast<std::size_t>(shape.dimension()), -40));
  const actors::dense_vector theta{Eigen::VectorXd::Constant(shape.dimension(), 0.01)};
  shardopt::keep_spare_words(true);
  shardopt::release_spare_words();
  caf::scoped_actor self{rt.system()};
  bool marked = false;
  std::size_t words = 0;
  self->request(group, 10s, actors::eval_atom::value, token, std::uint64_t{1}, grid, theta).receive(
    [&](std::uint64_t, actors::block_sums& sums) {
      marked = sums.keep_words_when_dropped;
      words = sums.words.size();
    },
    [&](const caf::error& e) { FAIL(actors::describe(e, rt.system())); });
  CHECK(marked);
  CHECK(words >= shardopt::smallest_kept_words);
  // The second member's words (merged) and the reply's (dropped with the message).
  CHECK(shardopt::kept_word_buffers() == 2);
  self->send_exit(group, caf::exit_reason::user_shutdown);
  shardopt::release_spare_words();
}

TEST_CASE("a node keeps buffers while it has drivers, and frees them when the last one leaves, even one that only staged") {
  actors::runtime rt{actors::runtime_options::local(1)};
  caf::scoped_actor driver{rt.system()};
  const auto address = caf::actor_cast<caf::actor_addr>(driver);
  const auto give_back = [] { shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words)); };
  actors::node_holdings holdings{actors::node_limits{}};
  shardopt::keep_spare_words(false);
  actors::keep_received_vectors(false);
  bool added = false;
  holdings.share_of(address, added);  // what starting to stage data does
  REQUIRE(added);
  give_back();
  CHECK(shardopt::kept_word_buffers() == 1);
  CHECK(holdings.drop_staged(address));  // the staging timed out: the driver holds nothing here
  CHECK(shardopt::kept_word_buffers() == 0);
  give_back();  // what a finished run drops later is freed
  CHECK(shardopt::kept_word_buffers() == 0);
  holdings.share_of(address, added);
  give_back();
  CHECK(shardopt::kept_word_buffers() == 1);
  CHECK(holdings.release(address).has_value());
  CHECK(shardopt::kept_word_buffers() == 0);
  shardopt::keep_spare_words(true);
}

TEST_CASE("two nodes and a driver's run in one process: one node's last driver leaving frees nothing another still uses") {
  actors::runtime rt{actors::runtime_options::local(1)};
  caf::scoped_actor first_driver{rt.system()};
  caf::scoped_actor second_driver{rt.system()};
  const auto first = caf::actor_cast<caf::actor_addr>(first_driver);
  const auto second = caf::actor_cast<caf::actor_addr>(second_driver);
  const auto give_back = [] { shardopt::give_back_words(std::vector<std::int64_t>(shardopt::smallest_kept_words)); };
  const auto receive_one = [] { actors::kept_vector(std::size_t{1} << 17); };  // dropped at once
  shardopt::keep_spare_words(false);
  actors::keep_received_vectors(false);
  shardopt::release_spare_words();
  actors::release_spare_vectors();
  bool added = false;
  {
    actors::node_holdings a{actors::node_limits{}};
    {
      actors::node_holdings b{actors::node_limits{}};
      a.share_of(first, added);
      b.share_of(second, added);
      give_back();
      receive_one();
      CHECK(b.release(second).has_value());  // b's last driver leaves; a still serves one
      give_back();
      receive_one();
      CHECK(shardopt::kept_word_buffers() == 2);
      CHECK(actors::spare_vectors().kept == 1);  // the same length: one kept
      b.release_all();  // b ends with no driver: nothing changes
    }  // b destroyed
    CHECK(shardopt::kept_word_buffers() == 2);
    CHECK(actors::spare_vectors().kept == 1);
    shardopt::hold_spare_words();  // a driver's run in the same process
    CHECK(a.release(first).has_value());  // a's last driver leaves: the run still holds the words
    CHECK(shardopt::kept_word_buffers() == 2);
    CHECK(actors::spare_vectors().kept == 0);  // no node has drivers: received vectors freed
    receive_one();
    CHECK(actors::spare_vectors().kept == 0);
    a.share_of(first, added);  // a has a driver again, and ends while it has
  }
  give_back();  // the run still holds the words
  CHECK(shardopt::kept_word_buffers() == 3);
  receive_one();
  CHECK(actors::spare_vectors().kept == 0);  // a let go as it ended
  shardopt::let_go_spare_words();  // the run ends: freed, and none kept after
  CHECK(shardopt::kept_word_buffers() == 0);
  give_back();
  CHECK(shardopt::kept_word_buffers() == 0);
  shardopt::keep_spare_words(true);
}
