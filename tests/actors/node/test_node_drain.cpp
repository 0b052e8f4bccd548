// A node's counters (what /metrics and `shardopt status` report) and its drain, on a node actor in
// this process: what it holds and serves is counted as drivers come and go, refusals by request and
// reason, and a draining node refuses every way in for a new driver while its drivers go on.

#include "actors/node/node.hpp"
#include "actors/node/node_holdings.hpp"
#include "io/assembly.hpp"
#include "model/block_evaluator.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <thread>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using namespace std::chrono_literals;

namespace {

const model::model_shape shape{model::model_kind::softmax, 20, 3};

/// The error a request is answered with ("" when it is answered with a value, which the empty
/// reply handler takes as CAF's unexpected_response).
template <class Handle, class... Ts>
std::string refusal(caf::scoped_actor& self, const Handle& to, Ts&&... xs) {
  std::string text = "no reply";
  self->request(caf::actor_cast<caf::actor>(to), 10s, std::forward<Ts>(xs)...)
    .receive([&]() { text.clear(); },
             [&](caf::error& err) {
               text = err == caf::sec::unexpected_response ? "" : actors::describe(err, self->system());
             });
  return text;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

actors::shard_actor spawn(caf::scoped_actor& driver, const actors::node_actor& node,
                          const actors::shard_spec& spec, const actors::access_token& token) {
  actors::shard_actor shard;
  driver->request(node, 10s, actors::spawn_atom::value, std::uint64_t{1}, token, spec)
    .receive([&](std::uint64_t, actors::shard_actor& made) { shard = std::move(made); },
             [&](caf::error& err) { FAIL(actors::describe(err, driver->system())); });
  return shard;
}

actors::node_status status_of(caf::scoped_actor& self, const actors::node_actor& node) {
  actors::node_status out;
  self->request(node, 10s, actors::status_atom::value, std::uint64_t{1})
    .receive([&](std::uint64_t, actors::node_status& status) { out = std::move(status); },
             [&](caf::error& err) { FAIL(actors::describe(err, self->system())); });
  return out;
}

/// A node actor in this process with default limits, its counters, and a shard's spec and token.
struct node_fixture {
  actors::runtime rt{actors::runtime_options::local(2)};
  std::shared_ptr<actors::node_counters> counters = std::make_shared<actors::node_counters>();
  actors::node_actor node = actors::spawn_node(rt, 2, actors::node_limits{}, counters);
  std::shared_ptr<const model::dataset> data = shardopt::test::random_problem(7, 60, 20, 3);
  actors::shard_spec spec{shape, actors::data_block{data, {0, 60}}, {0, 20}};
  actors::access_token token = actors::access_token::random();
};

} // namespace

TEST_CASE_FIXTURE(node_fixture, "a node counts what it holds and serves, and a draining node takes no new driver by any request") {
  using refused = actors::refusal_reason;
  using request = actors::node_request;

  auto first = std::make_unique<caf::scoped_actor>(rt.system());
  auto shard = spawn(*first, node, spec, token);
  CHECK(counters->drivers == 1);
  CHECK(counters->shards == 1);
  // A shard counts its data and its buffers; the driver, once, what a request brings.
  const auto bytes = shardopt::io::bytes_of(*data) + model::block_evaluator{shape, data, {0, 60}, 20}.working_bytes();
  const auto requests = actors::request_bytes_of(shape.dimension());
  CHECK(bytes > 60 * 20 * 4 + 24 * 3 * 60);  // the data (floats), and the scores and curvature kept
  CHECK(counters->bytes_held == bytes + requests);
  const actors::dense_vector theta{Eigen::VectorXd::Zero(shape.dimension())};
  CHECK(refusal(*first, shard, actors::quality_atom::value,
                token, std::uint64_t{1}, theta).empty());
  CHECK(counters->qualities == 1);
  CHECK(refusal(*first, shard, actors::quality_atom::value,
                actors::access_token::random(), std::uint64_t{2}, theta)
          .find("belongs to another driver") != std::string::npos);
  CHECK(counters->refused(request::evaluate, refused::refused) == 1);
  CHECK(counters->qualities == 1);

  counters->draining = true;
  caf::scoped_actor newcomer{rt.system()};
  CHECK(refusal(newcomer, node, actors::hello_atom::value, std::uint64_t{1}, actors::protocol_version,
                actors::wire_probe()).find("draining") != std::string::npos);
  CHECK(refusal(newcomer, node, actors::spawn_atom::value, std::uint64_t{1}, token, spec)
          .find("draining") != std::string::npos);
  CHECK(refusal(newcomer, node, actors::append_atom::value, std::uint64_t{1}, token, std::int64_t{60},
                std::int64_t{0}, std::int64_t{0}, actors::data_block{data, {0, 30}})
          .find("draining") != std::string::npos);
  CHECK(counters->refused(request::hello, refused::refused) == 1);
  CHECK(counters->refused(request::spawn, refused::refused) == 1);
  CHECK(counters->refused(request::append, refused::refused) == 1);
  CHECK(counters->drivers == 1);  // the newcomer holds nothing

  spawn(*first, node, spec, token);  // a driver it holds goes on
  CHECK(counters->shards == 2);
  const auto status = status_of(newcomer, node);
  CHECK(status.draining);
  CHECK(status.drivers == 1);
  CHECK(status.shards == 2);
  CHECK(status.bytes_held == 2 * bytes + requests);
  CHECK(status.info.version == actors::protocol_version);

  first.reset();  // the driver goes away: its shards end, and the drain can end
  for (int i = 0; i < 200 && counters->drivers > 0; ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(counters->drivers == 0);
  CHECK(counters->shards == 0);
  CHECK(counters->bytes_held == 0);
  newcomer->send_exit(node, caf::exit_reason::user_shutdown);  // from this process: accepted
}

TEST_CASE("a node counts the buffers a shard's passes and its driver's requests need, not only its data") {
  // Two rows of 8 non-zeros: a few hundred bytes of data. At 2^24 features a request brings
  // theta and v of 128 MiB each, and a total's words twice that: the node must count them, or a
  // driver could make it allocate gigabytes past --max-gib on a few bytes.
  const model::model_shape wide{model::model_kind::logistic, std::int64_t{1} << 24, 1};
  const auto data = shardopt::test::sparse_rows(2, wide.features, 2, 11);
  const actors::shard_spec spec{wide, actors::data_block{data, {0, 2}}, {0, 2}};
  const auto data_bytes = shardopt::io::bytes_of(*data);
  const auto needed = data_bytes + model::block_evaluator{wide, data, {0, 2}, 2}.working_bytes()
                      + actors::request_bytes_of(wide.dimension());
  REQUIRE(data_bytes < 1024);
  REQUIRE(needed > std::int64_t{1} << 29);
  const auto token = actors::access_token::random();
  actors::runtime rt{actors::runtime_options::local(2)};

  for (const bool fits : {false, true}) {
    CAPTURE(fits);
    actors::node_limits limits;
    limits.bytes_per_driver = fits ? needed : needed - 1;
    limits.bytes = needed;
    auto counters = std::make_shared<actors::node_counters>();
    auto node = actors::spawn_node(rt, 2, limits, counters);
    caf::scoped_actor driver{rt.system()};
    if (fits) {
      // Released, a shard gives back its bytes and the driver its requests': it fits again, and
      // while it is held nothing more does.
      for (std::uint64_t round = 1; round <= 2; ++round) {
        const auto held = spawn(driver, node, spec, token);
        REQUIRE(held);
        CHECK(counters->bytes_held == needed);
        CHECK(contains(refusal(driver, node, actors::spawn_atom::value, round, token, spec), "bytes per driver"));
        std::int64_t ended = 0;
        driver->request(node, 10s, actors::release_atom::value, round, token, held)
          .receive([&](std::uint64_t, std::int64_t count) { ended = count; },
                   [&](caf::error& err) { FAIL(actors::describe(err, driver->system())); });
        CHECK(ended == 1);
        CHECK(counters->bytes_held == 0);
        CHECK(counters->drivers == 0);  // holding nothing, it is forgotten
      }
    } else {
      const auto text = refusal(driver, node, actors::spawn_atom::value, std::uint64_t{1}, token, spec);
      CHECK(contains(text, "(" + std::to_string(needed) + " bytes) would exceed"));
      CHECK(contains(text, "limit of " + std::to_string(needed - 1) + " bytes per driver"));
      CHECK(counters->shards == 0);
      CHECK(counters->bytes_held == 0);
    }
    driver->send_exit(node, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE_FIXTURE(node_fixture, "a shard that ends by itself gives its bytes back, and its driver is forgotten when that was all") {
  caf::scoped_actor driver{rt.system()};
  const auto first = spawn(driver, node, spec, token);
  const auto second = spawn(driver, node, spec, token);
  REQUIRE(first);
  REQUIRE(second);
  const auto both = counters->bytes_held.load();
  // An unregistered actor of this process: the exit a failing pass would end the shard with.
  auto end_shard = [&](const actors::shard_actor& shard, std::int64_t left) {
    caf::scoped_actor ender{rt.system()};
    ender->send_exit(shard, caf::exit_reason::unhandled_exception);
    for (int i = 0; i < 500 && counters->bytes_held.load() != left; ++i)
      std::this_thread::sleep_for(10ms);
    return counters->bytes_held.load();
  };
  const auto one = model::block_evaluator{shape, data, {0, 60}, 20}.working_bytes() + shardopt::io::bytes_of(*data);
  CHECK(end_shard(first, both - one) == both - one);
  CHECK(counters->shards == 1);
  CHECK(counters->drivers == 1);
  CHECK(end_shard(second, 0) == 0);  // with the driver's request bytes
  CHECK(counters->shards == 0);
  CHECK(counters->drivers == 0);
  driver->send_exit(node, caf::exit_reason::user_shutdown);
}
