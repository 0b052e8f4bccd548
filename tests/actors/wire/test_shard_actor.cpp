// The shard actor asked directly, without a sharded objective: the products it refuses (at an
// evaluation it did not serve, of the wrong size, under another token, for networks).

#include "actors/wire/runtime.hpp"
#include "actors/wire/shard.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using namespace std::chrono_literals;

TEST_CASE("a shard refuses products at an evaluation it did not serve, of the wrong size, and for networks") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto data = shardopt::test::random_problem(10, 60, 4, 3, false);
  const auto token = actors::access_token::random();
  caf::scoped_actor self{rt.system()};
  auto ask = [&](const actors::shard_actor& shard, auto... request) {
    std::string error;
    self->request(shard, 10s, request...).receive(
      [](std::uint64_t, const actors::block_sums&) {},
      [&](const caf::error& e) { error = actors::describe(e, rt.system()); });
    return error;
  };
  const model::model_shape shape{model::model_kind::softmax, 4, 3};
  const auto shard = actors::spawn_shard(rt.system(), shape, data, {0, 60}, {0, 1}, token);
  const actors::exact_grid grid = actors::encode_grid(std::vector<int>(static_cast<std::size_t>(shape.dimension()), -40));
  const actors::dense_vector v{Eigen::VectorXd::Ones(shape.dimension())};
  const actors::dense_vector none;
  CHECK(ask(shard, actors::hessvec_atom::value, token, std::uint64_t{1}, std::uint64_t{7}, grid, none, v)
          .find("kept nothing") != std::string::npos);
  self->request(shard, 10s, actors::eval_atom::value, token, std::uint64_t{7}, grid, v).receive(
    [](std::uint64_t, const actors::block_sums&) {}, [](const caf::error&) {});
  CHECK(ask(shard, actors::hessvec_atom::value, token, std::uint64_t{8}, std::uint64_t{7}, grid, none, v).empty());
  CHECK(ask(shard, actors::hessvec_atom::value, token, std::uint64_t{9}, std::uint64_t{6}, grid, none, v)
          .find("was round 7") != std::string::npos);
  const actors::dense_vector short_v{Eigen::VectorXd::Ones(3)};
  CHECK(ask(shard, actors::hessvec_atom::value, token, std::uint64_t{10}, std::uint64_t{7}, grid, none, short_v)
          .find("v has 3 entries") != std::string::npos);
  CHECK(ask(shard, actors::hessvec_atom::value, actors::access_token::random(), std::uint64_t{11},
            std::uint64_t{7}, grid, none, v).find("another driver") != std::string::npos);

  const model::model_shape network{model::model_kind::softmax, 4, 3, {5}};
  const auto net_shard = actors::spawn_shard(rt.system(), network, data, {0, 60}, {0, 1}, token);
  const actors::dense_vector net_v{Eigen::VectorXd::Ones(network.dimension())};
  CHECK(ask(net_shard, actors::hessvec_atom::value, token, std::uint64_t{1}, std::uint64_t{1}, grid, net_v, net_v)
          .find("linear models") != std::string::npos);
  for (const auto& s : {shard, net_shard})
    self->send_exit(s, caf::exit_reason::user_shutdown);
}
