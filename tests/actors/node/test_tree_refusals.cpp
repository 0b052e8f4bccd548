// What a node's part of a reduction tree refuses, against node processes on loopback: requests
// and slices without the run's token, malformed or repeated slices, tree requests it must not
// serve, and releases of peers that are not the asking driver's. The node keeps serving.

#include "actors/wire/network.hpp"
#include "actors/wire/node_protocol.hpp"
#include "support/node_process.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::endpoint_of;
using shardopt::test::network_runtime;
using shardopt::test::node_process;
using namespace std::chrono_literals;

TEST_CASE("a node's tree refuses requests and slices without the run's token, malformed or repeated slices, tree requests from a driver holding nothing there, with a child tree not on the named node, or a child that is not a node, a child that is not a tree is left out, release ends only the asking driver's own peers, and the node keeps serving") {
  node_process first;
  node_process second;
  auto rt = network_runtime();
  const auto data = shardopt::test::random_problem(13, 64, 10, 3);
  const model::model_shape shape{model::model_kind::softmax, 10, 3};
  caf::scoped_actor driver{rt.system()};
  caf::scoped_actor stranger{rt.system()};
  const auto token = actors::access_token::random();
  std::vector<actors::node_actor> node;
  std::vector<actors::shard_actor> shard;
  for (const auto* process : {&first, &second}) {
    auto handle = actors::connect_to<actors::node_actor>(rt, endpoint_of(*process), "a shardopt node");
    REQUIRE(handle.ok());
    node.push_back(*handle);
    const actors::shard_spec spec{shape, actors::data_block{data, {0, 64}}, {0, 1}};
    driver->request(*handle, 10s, actors::spawn_atom::value, std::uint64_t{1}, token, spec)
      .receive([&](std::uint64_t, const actors::shard_actor& made) { shard.push_back(made); },
               [](caf::error& err) { FAIL(caf::to_string(err)); });
  }
  REQUIRE(shard.size() == 2);
  auto tree_request = [&](caf::scoped_actor& who, const std::vector<actors::shard_actor>& own,
                          const std::string& child_node, const actors::shard_actor& child_tree) {
    std::string text = "no reply";
    who->request(node[0], 30s, actors::tree_atom::value, std::uint64_t{2}, token, own,
                 std::vector<std::string>{child_node}, std::vector<actors::shard_actor>{child_tree})
      .receive([&](std::uint64_t, const actors::shard_actor&) { text = "made"; },
               [&](caf::error& err) { text = actors::describe(err, rt.system()); });
    return text;
  };
  // A driver that holds nothing on the node.
  CHECK(tree_request(stranger, {shard[0]}, endpoint_of(second).text(), shard[1])
          .find("this driver holds no shards here") != std::string::npos);
  // A child tree that lives on another node than the one named (here: the first node itself).
  CHECK(tree_request(driver, {shard[0]}, endpoint_of(first).text(), shard[1])
          .find("does not live on the node at") != std::string::npos);
  // A child address where no node listens.
  CHECK(tree_request(driver, {shard[0]}, "127.0.0.1:1", shard[1]).find("cannot connect") != std::string::npos);
  // Trees: the second node's over its shard, and the first node's over its own shard with the
  // second's tree as its child.
  auto make_tree = [&](std::size_t j, std::uint64_t round, const std::vector<std::string>& child_nodes,
                       const std::vector<actors::shard_actor>& child_trees) {
    actors::shard_actor made;
    driver->request(node[j], 30s, actors::tree_atom::value, round, token,
                    std::vector<actors::shard_actor>{shard[j]}, child_nodes, child_trees)
      .receive([&](std::uint64_t, const actors::shard_actor& tree) { made = tree; },
               [](caf::error& err) { FAIL(caf::to_string(err)); });
    return made;
  };
  const Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  auto grid = actors::encode_grid(std::vector<int>(static_cast<std::size_t>(shape.dimension()), -40));
  const auto dimension = static_cast<std::uint64_t>(shape.dimension());
  const actors::tree_slice whole_slice{0, 0, 0, 1, dimension, 0, dimension, grid.base};
  auto covered_by = [&](const actors::shard_actor& tree, std::uint64_t round) {
    std::int64_t covered = 0;
    driver->request(caf::actor_cast<actors::tree_actor>(tree), 10s, actors::part_atom::value, token,
                    round, whole_slice, grid, actors::dense_vector{theta}, actors::dense_vector{})
      .receive([&](std::uint64_t, std::uint32_t, const actors::block_sums& sums) {
                 covered = sums.count;
               },
               [](caf::error& err) { FAIL(caf::to_string(err)); });
    return covered;
  };
  // A child that is a shard, not a tree, does not answer slices: it is left out.
  const auto over_shard = make_tree(0, 3, {endpoint_of(second).text()}, {shard[1]});
  REQUIRE(over_shard);
  CHECK(covered_by(over_shard, 4) == 64);
  const auto below = make_tree(1, 5, {}, {});
  REQUIRE(below);
  const auto tree = make_tree(0, 6, {endpoint_of(second).text()}, {below});
  REQUIRE(tree);
  // A well-formed tree answers the run's token only, and in slices only.
  auto whole_answer = [&](caf::scoped_actor& who, const actors::access_token& with) {
    std::string text = "no reply";
    who->request(tree, 10s, actors::eval_atom::value, with, std::uint64_t{7}, grid,
                 actors::dense_vector{theta})
      .receive([&](std::uint64_t, const actors::block_sums&) { text = "answered whole"; },
               [&](caf::error& err) { text = actors::describe(err, rt.system()); });
    return text;
  };
  CHECK(whole_answer(stranger, actors::access_token::random()).find("belongs to another driver")
        != std::string::npos);
  CHECK(whole_answer(driver, token).find("takes requests in slices") != std::string::npos);
  auto slice_answer = [&](const actors::access_token& with, actors::tree_slice slice,
                          const actors::exact_grid& part_grid, const Eigen::VectorXd& part) {
    std::string text = "no reply";
    driver->request(caf::actor_cast<actors::tree_actor>(below), 10s, actors::part_atom::value, with,
                    std::uint64_t{8}, slice, part_grid, actors::dense_vector{part},
                    actors::dense_vector{})
      .receive([&](std::uint64_t, std::uint32_t index, const actors::block_sums& sums) {
                 text = "covered " + std::to_string(sums.count) + ", "
                        + std::to_string(sums.length) + " entries, slice "
                        + std::to_string(index);
               },
               [&](caf::error& err) { text = actors::describe(err, rt.system()); });
    return text;
  };
  CHECK(slice_answer(actors::access_token::random(), whole_slice, grid, theta)
          .find("belongs to another driver") != std::string::npos);
  auto bad = whole_slice;
  bad.count = 0;
  CHECK(slice_answer(token, bad, grid, theta).find("invalid slice") != std::string::npos);
  bad = whole_slice;
  bad.index = 1;
  CHECK(slice_answer(token, bad, grid, theta).find("invalid slice") != std::string::npos);
  bad = whole_slice;
  bad.theta_size = dimension + 1;  // the slice does not carry its share
  CHECK(slice_answer(token, bad, grid, theta).find("invalid slice") != std::string::npos);
  // Vectors past the driver's model here, each slice carrying its share: refused before any part
  // is kept (slice 1 of 2 would never come; its parts would be held until the request timed out).
  bad = whole_slice;
  bad.count = 2;
  bad.theta_size = 2 * dimension;
  bad.grid_size = 2 * dimension;
  CHECK(slice_answer(token, bad, grid, theta).find("past the " + std::to_string(dimension) + " parameters")
        != std::string::npos);
  bad = whole_slice;
  bad.kind = 7;
  CHECK(slice_answer(token, bad, grid, theta).find("invalid slice") != std::string::npos);
  // Slice 0 of 2, twice: the second is refused; slice 1 completes the request.
  auto half = whole_slice;
  half.count = 2;
  const auto first_end = actors::slice_bounds(dimension, 0, 2).second;
  const actors::exact_grid half_grid{
    grid.base, std::make_shared<const std::vector<std::uint8_t>>(grid.below(), grid.below() + first_end), first_end};
  const Eigen::VectorXd half_theta = theta.head(static_cast<Eigen::Index>(first_end));
  std::string repeated;
  driver->send(caf::actor_cast<actors::tree_actor>(below), actors::part_atom::value, token,
               std::uint64_t{9}, half, half_grid, actors::dense_vector{half_theta},
               actors::dense_vector{});
  driver->request(caf::actor_cast<actors::tree_actor>(below), 10s, actors::part_atom::value, token,
                  std::uint64_t{9}, half, half_grid, actors::dense_vector{half_theta},
                  actors::dense_vector{})
    .receive([](std::uint64_t, std::uint32_t, const actors::block_sums&) {},
             [&](caf::error& err) { repeated = actors::describe(err, rt.system()); });
  CHECK_MESSAGE(repeated.find("repeats or does not fit") != std::string::npos, repeated);
  CHECK(slice_answer(token, whole_slice, grid, theta)
        == "covered 64, " + std::to_string(dimension) + " entries, slice 0");
  CHECK(covered_by(tree, 10) == 128);  // both nodes' shards, summed on the first
  // Release: only the driver that holds a shard can end it, once.
  auto release = [&](caf::scoped_actor& who, const actors::shard_actor& peer) {
    std::string text = "no reply";
    who->request(node[0], 10s, actors::release_atom::value, std::uint64_t{6}, token, peer)
      .receive([&](std::uint64_t, std::int64_t ended) { text = "ended " + std::to_string(ended); },
               [&](caf::error& err) { text = actors::describe(err, rt.system()); });
    return text;
  };
  CHECK(release(stranger, shard[0]).find("invalid release request") != std::string::npos);
  CHECK(release(driver, shard[1]).find("invalid release request") != std::string::npos);  // not here
  CHECK(release(driver, shard[0]) == "ended 1");
  CHECK(release(driver, shard[0]).find("invalid release request") != std::string::npos);
  for (const auto& handle : node) {
    bool serves = false;
    driver->request(handle, 10s, actors::hello_atom::value, std::uint64_t{9}, actors::protocol_version,
                    actors::wire_probe())
      .receive([&](std::uint64_t, const actors::node_info& info) { serves = info.threads > 0; },
               [](caf::error&) {});
    CHECK(serves);
  }
}
