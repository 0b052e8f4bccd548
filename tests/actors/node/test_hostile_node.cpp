// A hostile client built on the project's own wire protocol (CAF, the real node interface, over
// loopback) attacks a node process while an honest driver runs in this process: with its shards
// all on the node (a star), and with the node forwarding as the root of a reduction tree over it
// and a second node. Every attack must be refused, the node must keep serving, and the honest run
// must end with exactly the result of an undisturbed run. Every process a test starts is stopped
// by it.

#include "actors/driver/cluster.hpp"
#include "actors/wire/network.hpp"
#include "actors/wire/node_protocol.hpp"
#include "actors/node/node_service.hpp"
#include "actors/driver/peers.hpp"
#include "io/partition.hpp"
#include "support/hostile.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::contains;
using shardopt::test::endpoint_of;
using shardopt::test::honest_run;
using shardopt::test::layout;
using shardopt::test::node_serves;
using shardopt::test::error_of;
using shardopt::test::network_runtime;
using shardopt::test::node_process;
using shardopt::test::temp_dir;
using namespace std::chrono_literals;

namespace {

using shardopt::test::hostile_shape;

/// A node-local request for part `part` of `parts` of `spec`.
actors::part_message part_of(const std::string& spec, std::int64_t part = 0, std::int64_t parts = 1) {
  actors::part_message message;
  message.request.spec = spec;
  message.request.part = part;
  message.request.parts = parts;
  return message;
}

/// One attack (see the cases below) on a node while an honest driver evaluates on it as `how`
/// says, made before the honest driver's k-th evaluation: the honest bits do not change, the node
/// refuses `expected_refusals` requests naming why, and it keeps serving.
void attack_a_node(int chosen, std::size_t expected_refusals, layout how) {
  temp_dir root;
  temp_dir outside;
  // A secret outside the data root, a link to it inside, and a malformed file inside whose bad
  // field must not be quoted back to a peer.
  const auto secret = outside.write("secret.csv", "TOPSECRET,1,2\n");
  std::filesystem::create_symlink(secret, root.path() / "link.csv");
  root.write("bad.csv", "0,1,2\nSHOULDNOTLEAK,2,3\n");
  root.write("wide.svm", "1 2147483647:1\n");  // 15 bytes; per-feature statistics of 2^31 features
  root.write("small.svm", "1 1:1 3:2\n0 2:1\n");  // columns 0, 2 and 1
  node_process node{{"--data-root", root.path().string(), "--max-shards-per-driver", "6",
                     "--max-shards", "11", "--max-gib-per-driver", "0.0003"}};
  node_process rootless;
  std::vector<actors::endpoint> nodes{endpoint_of(node)};
  std::optional<node_process> second_node;  // the forwarding node's child
  if (how == layout::forwarding)
    nodes.push_back(endpoint_of(second_node.emplace()));
  const auto data = shardopt::test::random_problem(1, 600, 20, 3);
  auto rt = network_runtime();
  const auto undisturbed = honest_run(rt, nodes, how, data, {});

  auto connected = actors::connect_to<actors::node_actor>(rt, endpoint_of(node), "a shardopt node");
  REQUIRE(connected.ok());
  const auto target = *connected;
  auto evil = std::make_unique<caf::scoped_actor>(rt.system());
  auto& self = *evil;
  const auto token = actors::access_token::random();
  std::vector<std::string> refusals;

  std::atomic<bool> forging{true};
  std::future<void> forger;
  struct stop_forging {  // also when a check throws: the forger's future waits for it to end
    std::atomic<bool>& flag;
    ~stop_forging() { flag = false; }
  } stop{forging};
  auto attack = [&](actors::sharded_objective& honest, int k) {
    if (k != chosen)
      return;
    // The honest driver's peers (a group per node) and, in a forwarding run, its tree's root.
    auto shards = actors::shards_of(honest);
    for (const auto& tree_root : actors::tree_roots_of(honest))
      shards.push_back(caf::actor_cast<actors::shard_actor>(tree_root));
    const actors::dense_vector theta{Eigen::VectorXd::Zero(hostile_shape.dimension())};
    switch (k) {
      case 1: {  // Exit and kill messages, to the node and to the honest driver's shards.
        for (auto reason : {caf::exit_reason::kill, caf::exit_reason::user_shutdown}) {
          self->send_exit(target, reason);
          caf::anon_send_exit(target, reason);
          for (const auto& shard : shards) {
            self->send_exit(shard, reason);
            caf::anon_send_exit(shard, reason);
          }
        }
        // A bare error message ends a CAF actor by default.
        self->send(caf::actor_cast<caf::actor>(target), caf::make_error(caf::sec::runtime_error));
        for (const auto& shard : shards)
          self->send(caf::actor_cast<caf::actor>(shard), caf::make_error(caf::sec::runtime_error));
        REQUIRE(node_serves(self, target));  // processed after the exits: they were dropped
        break;
      }
      case 2: {  // Requests to another driver's shards, without its token.
        for (const auto& shard : shards) {
          refusals.push_back(error_of(self, shard, actors::eval_atom::value, token, std::uint64_t{1}, actors::encode_grid(std::vector<int>(static_cast<std::size_t>(hostile_shape.dimension()), -40)), theta));
          CHECK(contains(refusals.back(), "belongs to another driver"));
          refusals.push_back(error_of(self, shard, actors::quality_atom::value, token, std::uint64_t{1}, theta));
          CHECK(contains(refusals.back(), "belongs to another driver"));
          const actors::tree_slice slice{0, 0, 0, 1, static_cast<std::uint64_t>(hostile_shape.dimension()), 0, 0, -40};
          refusals.push_back(error_of(self, shard, actors::part_atom::value, token, std::uint64_t{1}, slice,
                                      actors::exact_grid{}, theta, actors::dense_vector{}));
          CHECK(contains(refusals.back(), "belongs to another driver"));
        }
        // A group over another driver's shards (its node's group among them).
        refusals.push_back(error_of(self, target, actors::group_atom::value, std::uint64_t{1}, token,
                                    std::vector<actors::shard_actor>(shards.begin(), shards.end())));
        CHECK(contains(refusals.back(), "holds no shards here"));
        break;
      }
      case 3: {  // Another protocol version, another floating-point format.
        refusals.push_back(error_of(self, target, actors::hello_atom::value, std::uint64_t{1},
                                    std::uint32_t{999}, actors::wire_probe()));
        CHECK(contains(refusals.back(), "version 999"));
        CHECK(contains(refusals.back(), "version " + std::to_string(actors::protocol_version)));
        refusals.push_back(error_of(self, target, actors::hello_atom::value, std::uint64_t{1},
                                    actors::protocol_version, std::vector<char>(12, '\x7f')));
        CHECK(contains(refusals.back(), "floating-point format"));
        break;
      }
      case 4: {  // Path traversal in node-local requests.
        for (const std::string& spec : {std::string{"../../../../etc/passwd"}, std::string{"/etc/passwd"},
                                       std::string{secret}, std::string{"link.csv"},
                                       std::string{"fashion-mnist"}}) {
          refusals.push_back(error_of(self, target, actors::scan_atom::value, std::uint64_t{1}, token,
                                      part_of(spec)));
          INFO(spec << ": " << refusals.back());
          CHECK(contains(refusals.back(), "outside this node's data root"));
          CHECK_FALSE(contains(refusals.back(), "TOPSECRET"));
          CHECK_FALSE(contains(refusals.back(), "root:"));
        }
        refusals.push_back(error_of(self, target, actors::scan_atom::value, std::uint64_t{1}, token,
                                    part_of("bad.csv")));
        CHECK(contains(refusals.back(), "bad.csv"));  // names the file and line ...
        CHECK_FALSE(contains(refusals.back(), "SHOULDNOTLEAK"));  // ... but quotes nothing of it
        auto other = actors::connect_to<actors::node_actor>(rt, endpoint_of(rootless), "a shardopt node");
        REQUIRE(other.ok());
        refusals.push_back(error_of(self, *other, actors::scan_atom::value, std::uint64_t{1}, token,
                                    part_of("bad.csv")));
        CHECK(contains(refusals.back(), "serves no node-local data"));
        // Maps of used columns (node-local sparse data): out of order, of another size than the
        // model, or leaving out a column the part stores; a right one is taken.
        auto mapped = [&](std::vector<std::int32_t> used, std::int64_t features) {
          actors::part_shard_spec spec;
          spec.request = part_of("small.svm").request;
          spec.shape = {model::model_kind::linear, features, 1};
          spec.full_features = 4;
          spec.used = std::move(used);
          return error_of(self, target, actors::spawnpart_atom::value, std::uint64_t{1}, token, spec);
        };
        refusals.push_back(mapped({2, 1}, 2));
        CHECK(contains(refusals.back(), "a map of 2 used columns that are not increasing columns"));
        refusals.push_back(mapped({0, 1}, 3));
        CHECK(contains(refusals.back(), "a map of 2 used columns that are not increasing columns"));
        refusals.push_back(mapped({0, 2}, 2));
        CHECK(contains(refusals.back(), "part 1 has column 1, which the driver's map of 2 used columns leaves out"));
        CHECK(mapped({0, 1, 2}, 3) == "no error");
        break;
      }
      case 5: {  // Absurd part, feature and dimension values.
        for (auto [part, parts] : {std::pair<std::int64_t, std::int64_t>{-1, 4}, {4, 4}, {0, 0},
                                   {0, std::int64_t{1} << 40}}) {
          refusals.push_back(error_of(self, target, actors::scan_atom::value, std::uint64_t{1}, token,
                                      part_of("bad.csv", part, parts)));
          CHECK(contains(refusals.back(), "is not a valid part"));
        }
        auto features = part_of("bad.csv");
        features.request.options.features = std::int64_t{1} << 50;
        refusals.push_back(error_of(self, target, actors::scan_atom::value, std::uint64_t{1}, token, features));
        CHECK(contains(refusals.back(), "invalid read options"));
        refusals.push_back(error_of(self, target, actors::scan_atom::value, std::uint64_t{1}, token,
                                    part_of("wide.svm")));
        CHECK(contains(refusals.back(), "part 1 has 2147483647 features, more than this node's limit"));
        actors::part_shard_spec huge;
        huge.request = part_of("bad.csv").request;
        huge.shape = {model::model_kind::softmax, std::int64_t{1} << 26, std::int64_t{1} << 26};
        refusals.push_back(error_of(self, target, actors::spawnpart_atom::value, std::uint64_t{1}, token, huge));
        CHECK(contains(refusals.back(), "exceeds this node's limit"));
        actors::shard_spec overflow{{model::model_kind::softmax, std::int64_t{1} << 62, 4},
                                    actors::data_block{data, {0, 10}}, {}};
        refusals.push_back(error_of(self, target, actors::spawn_atom::value, std::uint64_t{1}, token, overflow));
        CHECK(contains(refusals.back(), "exceeds this node's limit"));
        // Networks: too many layers, a layer of no units, layers whose product overflows, no such
        // activation.
        auto network = [&](std::vector<std::int64_t> hidden, int act) {
          actors::shard_spec spec{{model::model_kind::softmax, 4, 3, std::move(hidden), model::activation::relu},
                                  actors::data_block{data, {0, 10}}, {}};
          spec.shape.act = static_cast<model::activation>(act);
          return error_of(self, target, actors::spawn_atom::value, std::uint64_t{1}, token, spec);
        };
        refusals.push_back(network(std::vector<std::int64_t>(10000, 5), 0));
        CHECK(contains(refusals.back(), "bad network: 10000 hidden layers, more than the 64 allowed"));
        refusals.push_back(network({5, 0}, 0));
        CHECK(contains(refusals.back(), "bad network: a hidden layer of 0 units"));
        // Few parameters (1 input), but 2^25 units: gigabytes of activations per chunk.
        refusals.push_back(network({std::int64_t{1} << 25}, 0));
        CHECK(contains(refusals.back(), "bad network: more than the 65536 hidden units allowed"));
        refusals.push_back(network({5}, 7));
        CHECK(contains(refusals.back(), "bad network: an unknown activation"));
        break;
      }
      case 6: {  // A spawn flood: per-driver, total and byte limits.
        const actors::shard_spec small{hostile_shape, actors::data_block{data, {0, 20}}, {}};
        int created = 0;
        std::string refused;
        for (int i = 0; i < 20 && refused.empty(); ++i) {
          auto text = error_of(self, target, actors::spawn_atom::value, std::uint64_t{1}, token, small);
          if (text == "no error")
            ++created;
          else
            refused = text;
        }
        CHECK(created == 6);
        CHECK(contains(refused, "6 shards per driver"));
        // Another driver fills the node up to its 11 shards: the honest driver holds 4 (a star) or 2.
        caf::scoped_actor second{rt.system()};
        const actors::shard_spec tiny{hostile_shape, actors::data_block{data, {0, 2}}, {}};
        int more = 0;
        std::string full;
        for (int i = 0; i < 11 && full.empty(); ++i) {
          auto text = error_of(second, target, actors::spawn_atom::value, std::uint64_t{1}, token, tiny);
          if (text == "no error")
            ++more;
          else
            full = text;
        }
        CHECK(more == 11 - 6 - (how == layout::star ? 4 : 2));
        CHECK(contains(full, "limit of 11 shards"));
        const auto big_data = shardopt::test::random_problem(2, 4000, 20, 3);
        caf::scoped_actor third{rt.system()};
        evil.reset();  // this driver goes away: the node frees its 6 shards
        const actors::shard_spec big{hostile_shape, actors::data_block{big_data, {0, 4000}}, {}};
        std::string big_text;
        for (int attempt = 0; attempt < 500; ++attempt) {  // until the node has noticed
          big_text = error_of(third, target, actors::spawn_atom::value, std::uint64_t{1}, token, big);
          if (!contains(big_text, "shards"))
            break;
          std::this_thread::sleep_for(10ms);
        }
        CHECK(contains(big_text, "bytes per driver"));
        break;
      }
      case 7: {  // Data in pieces: a whole past the byte limit (refused before it is allocated:
                 // 94 GB), no rows, more non-zeros than cells, pieces out of order, of other
                 // features or under another token, a shard on incomplete data or another token.
        caf::scoped_actor stager{rt.system()};
        const auto other = actors::access_token::random();
        // "received N" for an accepted piece, else the refusal.
        auto append = [&](std::int64_t rows, std::int64_t first_row,
                          const std::shared_ptr<const model::dataset>& from, model::row_range piece,
                          const actors::access_token& with, std::int64_t nonzeros = 0) {
          std::string text = "no reply";
          stager->request(target, 10s, actors::append_atom::value, std::uint64_t{1}, with, rows,
                          nonzeros, first_row, actors::data_block{from, piece})
            .receive([&](std::uint64_t, std::int64_t received) { text = "received " + std::to_string(received); },
                     [&](caf::error& err) { text = actors::describe(err, stager->system()); });
          if (!contains(text, "received"))
            refusals.push_back(text);
          return text;
        };
        CHECK(contains(append(std::int64_t{1} << 30, 0, data, {0, 10}, token), "bytes per driver"));
        CHECK(contains(append(20, 0, data, {0, 0}, token), "invalid data piece: no rows"));
        const auto sparse = shardopt::test::random_problem(4, 20, 20, 3, true);
        CHECK(contains(append(20, 0, sparse, {0, 10}, token, std::int64_t{1} << 30),
                       "1073741824 non-zeros in 20 rows of 20 features"));
        CHECK(contains(append(20, 5, data, {5, 10}, token), "it starts at row 5, but no data is arriving"));
        CHECK(append(20, 0, data, {0, 10}, token) == "received 10");
        const auto wider = shardopt::test::random_problem(4, 20, 21, 3);
        CHECK(contains(append(20, 10, wider, {10, 20}, token), "a piece of 21 dense features, the data has 20 dense"));
        CHECK(contains(append(20, 10, data, {10, 20}, token), "no data is arriving"));  // the refusal dropped rows 0-9
        CHECK(append(20, 0, data, {0, 10}, token) == "received 10");
        CHECK(contains(append(20, 10, data, {10, 20}, other), "belongs to another token"));
        const actors::shard_spec received{hostile_shape, actors::data_block{data, {10, 10}}, {}};
        refusals.push_back(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, token, received));
        CHECK(contains(refusals.back(), "its data is incomplete, 10 of 20 rows arrived"));
        CHECK(append(20, 10, data, {10, 20}, token) == "received 20");
        refusals.push_back(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, other, received));
        CHECK(contains(refusals.back(), "belongs to another token"));
        CHECK(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, token, received) == "no error");
        break;
      }
      case 8: {  // Restrictions (OWL-QN's working sets made on the node): of the honest
                 // driver's peer, of a shard under another token (also by another driver), to
                 // columns out of order or out of range, to another kind, a network or an absurd
                 // model; a copy made with the token ends when its source is released.
        refusals.push_back(error_of(self, target, actors::restrict_atom::value, std::uint64_t{1}, token,
                                    actors::shard_restriction{shards.front(), token, {hostile_shape.kind, 2, hostile_shape.outputs},
                                                              {0, 1}, {}}));
        CHECK(contains(refusals.back(), "not a shard here that answers the token given"));
        // A shard of the attacker's own, which it may restrict.
        actors::shard_actor own;
        self->request(target, 10s, actors::spawn_atom::value, std::uint64_t{1}, token,
                      actors::shard_spec{hostile_shape, actors::data_block{data, {0, 20}}, {}})
          .receive([&](std::uint64_t, actors::shard_actor made) { own = std::move(made); }, [](caf::error&) {});
        REQUIRE(own);
        auto restrict = [&](model::model_shape compact, std::vector<std::int64_t> columns,
                            const actors::access_token& with) {
          return error_of(self, target, actors::restrict_atom::value, std::uint64_t{1}, token,
                          actors::shard_restriction{own, with, std::move(compact), std::move(columns), {}});
        };
        const model::model_shape two{hostile_shape.kind, 2, hostile_shape.outputs};
        for (auto [compact, columns, why] : std::vector<std::tuple<model::model_shape, std::vector<std::int64_t>, std::string>>{
               {two, {3, 1}, "the columns must increase"},
               {two, {1, 1}, "the columns must increase"},
               {two, {-1, 4}, "the columns must increase and stay below the source's 20 features"},
               {two, {4, 20}, "the columns must increase and stay below the source's 20 features"},
               {{model::model_kind::logistic, 2, 1}, {0, 1}, "only a linear model, to the same kind and outputs"},
               {{hostile_shape.kind, 2, hostile_shape.outputs, {4}, model::activation::relu}, {0, 1}, "only a linear model"},
               {{hostile_shape.kind, 3, hostile_shape.outputs}, {0, 1}, "2 columns for a model of 3 features"},
               {{hostile_shape.kind, std::int64_t{1} << 62, hostile_shape.outputs}, {0, 1}, "exceeds this node's limit"}}) {
          refusals.push_back(restrict(compact, columns, token));
          INFO(why << ": " << refusals.back());
          CHECK(contains(refusals.back(), "invalid restrict request: " ));
          CHECK(contains(refusals.back(), why));
        }
        refusals.push_back(restrict(two, {0, 1}, actors::access_token::random()));
        CHECK(contains(refusals.back(), "not a shard here that answers the token given"));
        // A good one is made, and answers the attacker's token alone, as any shard does.
        actors::shard_actor compact;
        self->request(target, 10s, actors::restrict_atom::value, std::uint64_t{1}, token,
                      actors::shard_restriction{own, token, two, {2, 7}, {}})
          .receive([&](std::uint64_t, actors::shard_actor made, std::int64_t rows, const actors::dense_vector& bound,
                       double, double) {
                     CHECK(rows == 20);
                     CHECK(bound.size() == 2);
                     compact = std::move(made);
                   },
                   [](caf::error&) {});
        REQUIRE(compact);
        // No columns: a model of biases alone, which a working set can be.
        CHECK(error_of(self, target, actors::restrict_atom::value, std::uint64_t{1}, token,
                       actors::shard_restriction{own, token, {hostile_shape.kind, 0, hostile_shape.outputs}, {}, {}}) == "no error");
        refusals.push_back(error_of(self, compact, actors::quality_atom::value, actors::access_token::random(),
                                    std::uint64_t{1}, actors::dense_vector{Eigen::VectorXd::Zero(two.dimension())}));
        CHECK(contains(refusals.back(), "belongs to another driver"));
        // Another driver: refused without the shard's token; with it (whoever may evaluate on a
        // shard may restrict it), its copy ends when the shard does.
        caf::scoped_actor other{rt.system()};
        auto restrict_as_other = [&](const actors::access_token& with) {
          actors::shard_actor made;
          std::string text = "no reply";
          other->request(target, 10s, actors::restrict_atom::value, std::uint64_t{1}, actors::access_token::random(),
                         actors::shard_restriction{own, with, two, {0, 1}, {}})
            .receive([&](std::uint64_t, actors::shard_actor shard, std::int64_t, const actors::dense_vector&, double,
                         double) { made = std::move(shard); text = "no error"; },
                     [&](caf::error& err) { text = actors::describe(err, other->system()); });
          return std::make_pair(made, text);
        };
        refusals.push_back(restrict_as_other(actors::access_token::random()).second);
        CHECK(contains(refusals.back(), "not a shard here that answers the token given"));
        const auto copy = restrict_as_other(token).first;
        REQUIRE(copy);
        other->monitor(copy);
        CHECK(error_of(self, target, actors::release_atom::value, std::uint64_t{1}, token, own) == "no error");
        bool ended = false;
        other->receive([&](caf::down_msg& down) { ended = down.source == caf::actor_cast<caf::actor_addr>(copy); },
                       caf::after(std::chrono::seconds{10}) >> [] {});
        CHECK(ended);
        break;
      }
      case 0: {  // Forgeries to the group that answers for the honest driver's shards, sent
                 // over and over while the honest driver evaluates: down messages naming it,
                 // responses to made-up request ids (CAF matches a response by id alone) and
                 // replies under made-up tickets.
        forger = std::async(std::launch::async, [&rt, &forging, groups = shards] {
          using gathered_atom = caf::atom_constant<caf::atom("gathered")>;
          caf::scoped_actor forging_self{rt.system()};
          while (forging) {
            for (const auto& group : groups) {
              const auto untyped = caf::actor_cast<caf::actor>(group);
              forging_self->send(untyped, caf::down_msg{caf::actor_cast<caf::actor_addr>(group),
                                                        caf::exit_reason::kill});
              forging_self->send(untyped, gathered_atom::value, actors::access_token::random(),
                                 caf::make_error(caf::sec::runtime_error));
              forging_self->send(untyped, gathered_atom::value, actors::access_token::random(),
                                 actors::block_sums{});
              for (std::uint64_t id = 1; id <= 64; ++id)
                caf::actor_cast<caf::abstract_actor*>(untyped)->enqueue(
                  caf::make_mailbox_element(forging_self->ctrl(), caf::make_message_id(id).response_id(),
                                            {}, caf::make_error(caf::sec::runtime_error)),
                  nullptr);
            }
            std::this_thread::sleep_for(1ms);  // pacing only: the flood runs through every evaluation
          }
        });
        break;
      }
      default:
        break;
    }
  };
  const auto attacked = honest_run(rt, nodes, how, data, attack);
  forging = false;
  if (chosen == 0) {
    REQUIRE(forger.valid());
    forger.get();
  }
  REQUIRE(attacked.size() == undisturbed.size());
  CHECK(std::memcmp(attacked.data(), undisturbed.data(), sizeof(double) * attacked.size()) == 0);
  CHECK(refusals.size() == expected_refusals);
  CHECK(node.process->running());
  CHECK(rootless.process->running());
  node.process->signal(SIGTERM);
  CHECK(node.process->wait(10s).exit_code == 0);
}

} // namespace

TEST_CASE("hostile: forged down messages, responses and gatherer replies to a group or a forwarding tree change no honest bit") {
  attack_a_node(0, 0, layout::star);
  attack_a_node(0, 0, layout::forwarding);
}

TEST_CASE("hostile: exit, kill and error messages end neither a node nor a driver's shards, groups or tree") {
  attack_a_node(1, 0, layout::star);
  attack_a_node(1, 0, layout::forwarding);
}

TEST_CASE("hostile: another driver's shards, groups and tree refuse requests and slices without its token, and cannot be grouped") {
  attack_a_node(2, 4, layout::star);
  attack_a_node(2, 10, layout::forwarding);
}

TEST_CASE("hostile: another protocol version or floating-point format is refused at hello") {
  attack_a_node(3, 2, layout::star);
  attack_a_node(3, 2, layout::forwarding);
}

TEST_CASE("hostile: node-local paths outside the data root and bad maps of used columns are refused, and no file content is quoted") {
  attack_a_node(4, 10, layout::star);
  attack_a_node(4, 10, layout::forwarding);
}

TEST_CASE("hostile: absurd parts, features, dimensions and networks are refused before anything is allocated") {
  attack_a_node(5, 12, layout::star);
  attack_a_node(5, 12, layout::forwarding);
}

TEST_CASE("hostile: a spawn flood stops at the per-driver, total and byte limits, and a driver that leaves frees its room") {
  attack_a_node(6, 0, layout::star);
  attack_a_node(6, 0, layout::forwarding);
}

TEST_CASE("hostile: restrictions of another driver's shard without its token, or to bad columns or models, are refused, and a copy ends with its source") {
  attack_a_node(8, 12, layout::star);
  attack_a_node(8, 12, layout::forwarding);
}

TEST_CASE("hostile: data in pieces past the limits, out of order or under another token is refused") {
  attack_a_node(7, 9, layout::star);
  attack_a_node(7, 9, layout::forwarding);
}
