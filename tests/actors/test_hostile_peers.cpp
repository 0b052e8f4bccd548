// A hostile client built on the project's own wire protocol (CAF, the real node and parameter-server
// interfaces, over loopback) attacks a node process and a parameter-server process while an honest
// driver or job runs in this process. Every attack must be refused, the node or PS must keep
// serving, and the honest run must end with exactly the result of an undisturbed run.
// Every process a test starts is stopped by it.

#include "actors/cluster.hpp"
#include "actors/network.hpp"
#include "actors/node.hpp"
#include "actors/node_service.hpp"
#include "actors/parameter_server.hpp"
#include "actors/ps_worker.hpp"
#include "actors/shard.hpp"
#include "io/partition.hpp"
#include "support/node_process.hpp"
#include "support/process.hpp"
#include "support/sockets.hpp"

#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::background_process;
using shardopt::test::node_process;
using shardopt::test::temp_dir;
using namespace std::chrono_literals;

namespace {

/// A random softmax problem (see support/problems.hpp).
std::shared_ptr<const model::dataset> make_problem(std::uint32_t seed, std::int64_t n, std::int64_t d,
                                                  std::int64_t classes) {
  return shardopt::test::random_problem(seed, n, d, classes);
}

actors::runtime network_runtime() {
  return actors::runtime{actors::runtime_options{2, true, {}, false}};
}

/// What a request's error says, or "no error" when it was answered with a value. (Sent untyped,
/// as a peer on the wire would; the reply handler takes nothing, so any value arrives as CAF's
/// unexpected_response.)
template <class Handle, class... Ts>
std::string error_of(caf::scoped_actor& self, const Handle& to, Ts&&... xs) {
  std::string text = "no reply";
  self->request(caf::actor_cast<caf::actor>(to), 10s, std::forward<Ts>(xs)...)
    .receive([&]() { text = "no error"; },
             [&](caf::error& err) {
               text = err == caf::sec::unexpected_response ? "no error"
                      : err == caf::sec::request_timeout   ? "no reply"
                                                           : actors::describe(err, self->system());
             });
  return text;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A node's hello answered with a node_info: it is alive and serving.
bool node_serves(caf::scoped_actor& self, const actors::node_actor& node) {
  bool ok = false;
  self->request(node, 10s, actors::hello_atom::value, std::uint64_t{1}, actors::protocol_version,
                actors::wire_probe())
    .receive([&](std::uint64_t, const actors::node_info& info) { ok = info.threads > 0; },
             [](caf::error&) {});
  return ok;
}

const model::model_shape shape{model::model_kind::softmax, 20, 3};
/// How the honest PS job's workers describe their model in a hello (lambda 1e-3).
const std::string job_model = model::describe(shape) + ", lambda 0.001";

/// An honest driver: 4 shards of `data` shipped to the node, the objective and gradient at 8 fixed
/// thetas; `attack(cluster, objective, k)` runs before evaluation k. Returns every bit it saw, and
/// checks that it never had to recreate its shards (no attack ended them).
std::vector<double> honest_run(actors::runtime& rt, const actors::endpoint& node,
                               const std::shared_ptr<const model::dataset>& data,
                               const std::function<void(actors::sharded_objective&, int)>& attack) {
  auto cluster = actors::cluster::connect(rt, {node});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  auto events = std::make_shared<std::vector<std::string>>();
  cluster->ship_in_pieces_of(4096);  // 150 rows of 88 bytes a shard: 4 pieces each
  auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(data->rows(), 4),
                                 {0, 0, 0, 0}, 30s,
                                 [events](const std::string& event) { events->push_back(event); });
  REQUIRE_MESSAGE(objective.ok(), objective.error().message());
  std::vector<double> bits;
  for (int k = 0; k < 8; ++k) {
    if (attack)
      attack(*objective, k);
    const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.1 * k, 0.05 * k);
    Eigen::VectorXd grad;
    auto f = objective->evaluate(theta, grad);
    REQUIRE_MESSAGE(f.ok(), f.error().message());
    bits.push_back(*f);
    bits.insert(bits.end(), grad.data(), grad.data() + grad.size());
  }
  for (const auto& event : *events)
    FAIL_CHECK("the honest driver had to recover: " << event);
  return bits;
}

actors::endpoint endpoint_of(const node_process& node) {
  return {"127.0.0.1", static_cast<std::uint16_t>(node.port)};
}

/// A node-local request for part `part` of `parts` of `spec`.
actors::part_message part_of(const std::string& spec, std::int64_t part = 0, std::int64_t parts = 1) {
  actors::part_message message;
  message.request.spec = spec;
  message.request.part = part;
  message.request.parts = parts;
  return message;
}

/// One attack (see the cases below) on a node while an honest driver evaluates on it, made before
/// the honest driver's k-th evaluation: the honest bits do not change, the node refuses
/// `expected_refusals` requests naming why, and it keeps serving.
void attack_a_node(int chosen, std::size_t expected_refusals) {
  temp_dir root;
  temp_dir outside;
  // A secret outside the data root, a link to it inside, and a malformed file inside whose bad
  // field must not be quoted back to a peer.
  const auto secret = outside.write("secret.csv", "TOPSECRET,1,2\n");
  std::filesystem::create_symlink(secret, root.path() / "link.csv");
  root.write("bad.csv", "0,1,2\nSHOULDNOTLEAK,2,3\n");
  root.write("wide.svm", "1 2147483647:1\n");  // 15 bytes; per-feature statistics of 2^31 features
  node_process node{{"--data-root", root.path().string(), "--max-shards-per-driver", "6",
                     "--max-shards", "11", "--max-gib-per-driver", "0.0001"}};
  node_process rootless;
  const auto data = make_problem(1, 600, 20, 3);
  auto rt = network_runtime();
  const auto undisturbed = honest_run(rt, endpoint_of(node), data, {});

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
    const auto& shards = actors::shards_of(honest);
    const actors::dense_vector theta{Eigen::VectorXd::Zero(shape.dimension())};
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
          refusals.push_back(error_of(self, shard, actors::eval_atom::value, token, std::uint64_t{1}, actors::exact_grid{-40, std::vector<std::uint8_t>(shape.dimension(), 0)}, theta));
          CHECK(contains(refusals.back(), "belongs to another driver"));
          refusals.push_back(error_of(self, shard, actors::quality_atom::value, token, std::uint64_t{1}, theta));
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
        const actors::shard_spec small{shape, actors::data_block{data, {0, 20}}, {}};
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
        caf::scoped_actor second{rt.system()};  // another driver: 4 + 6 + 1 = 11 shards in all
        const actors::shard_spec tiny{shape, actors::data_block{data, {0, 2}}, {}};
        CHECK(error_of(second, target, actors::spawn_atom::value, std::uint64_t{1}, token, tiny) == "no error");
        CHECK(contains(error_of(second, target, actors::spawn_atom::value, std::uint64_t{1}, token, tiny),
                       "limit of 11 shards"));
        const auto big_data = make_problem(2, 4000, 20, 3);
        caf::scoped_actor third{rt.system()};
        evil.reset();  // this driver goes away: the node frees its 6 shards
        const actors::shard_spec big{shape, actors::data_block{big_data, {0, 4000}}, {}};
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
        const auto wider = make_problem(4, 20, 21, 3);
        CHECK(contains(append(20, 10, wider, {10, 20}, token), "a piece of 21 dense features, the data has 20 dense"));
        CHECK(contains(append(20, 10, data, {10, 20}, token), "no data is arriving"));  // the refusal dropped rows 0-9
        CHECK(append(20, 0, data, {0, 10}, token) == "received 10");
        CHECK(contains(append(20, 10, data, {10, 20}, other), "belongs to another token"));
        const actors::shard_spec received{shape, actors::data_block{data, {10, 10}}, {}};
        refusals.push_back(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, token, received));
        CHECK(contains(refusals.back(), "its data is incomplete, 10 of 20 rows arrived"));
        CHECK(append(20, 10, data, {10, 20}, token) == "received 20");
        refusals.push_back(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, other, received));
        CHECK(contains(refusals.back(), "belongs to another token"));
        CHECK(error_of(stager, target, actors::spawn_atom::value, std::uint64_t{1}, token, received) == "no error");
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
  const auto attacked = honest_run(rt, endpoint_of(node), data, attack);
  forging = false;
  if (chosen == 0) {
    REQUIRE(forger.valid());
    forger.get();
  }
  REQUIRE(attacked.size() == undisturbed.size());
  CHECK(std::memcmp(attacked.data(), undisturbed.data(), sizeof(double) * attacked.size()) == 0);
  CHECK(refusals.size() == expected_refusals);  // the node's four shards answer as one group
  CHECK(node.process->running());
  CHECK(rootless.process->running());
  node.process->signal(SIGTERM);
  CHECK(node.process->wait(10s).exit_code == 0);
}

} // namespace

TEST_CASE("hostile: forged down messages, responses and gatherer replies to a group change no honest bit") {
  attack_a_node(0, 0);
}

TEST_CASE("hostile: exit, kill and error messages end neither a node nor a driver's shards") {
  attack_a_node(1, 0);
}

TEST_CASE("hostile: another driver's shards refuse requests without its token, and cannot be grouped") {
  attack_a_node(2, 3);
}

TEST_CASE("hostile: another protocol version or floating-point format is refused at hello") {
  attack_a_node(3, 2);
}

TEST_CASE("hostile: node-local paths outside the data root are refused, and no file content is quoted") {
  attack_a_node(4, 7);
}

TEST_CASE("hostile: absurd parts, features, dimensions and networks are refused before anything is allocated") {
  attack_a_node(5, 12);
}

TEST_CASE("hostile: a spawn flood stops at the per-driver, total and byte limits, and a driver that leaves frees its room") {
  attack_a_node(6, 0);
}

TEST_CASE("hostile: data in pieces past the limits, out of order or under another token is refused") {
  attack_a_node(7, 9);
}

TEST_CASE("a node whose actor is killed ends its service with an error within a second") {
  auto rt = network_runtime();
  actors::node_limits limits;
  auto service = actors::node_service::start(rt, "127.0.0.1", 0, limits);
  REQUIRE(service.ok());
  auto node = actors::connect_to<actors::node_actor>(
    rt, {"127.0.0.1", service->port()}, "a shardopt node");
  REQUIRE(node.ok());
  {
    // From this process (a bug, or an out-of-memory kill of its thread): the guard lets it through.
    caf::scoped_actor self{rt.system()};
    self->send_exit(*node, caf::exit_reason::kill);
  }
  const auto started = std::chrono::steady_clock::now();
  auto served = service->serve();
  CHECK(std::chrono::steady_clock::now() - started < 1s);
  REQUIRE_FALSE(served.ok());
  CHECK(contains(served.error().message(), "the node actor ended"));
}

namespace {

/// A `shardopt ps-task --job_name ps` on 127.0.0.1 (one PS of a job with one worker).
struct ps_process {
  ps_process() : port(shardopt::test::free_port()) {
    process = std::make_unique<background_process>(std::vector<std::string>{
      shardopt::test::shardopt_binary(), "ps-task", "--ps_hosts", endpoint().text(), "--worker_hosts",
      "127.0.0.1:1", "--job_name", "ps", "--task_index", "0", "--startup-timeout", "120",
      "--job-token", "the honest job"});
    // No wait here: connecting retries a refused connection until the PS listens.
  }
  actors::endpoint endpoint() const { return {"127.0.0.1", static_cast<std::uint16_t>(port)}; }
  int port;
  std::unique_ptr<background_process> process;
};

actors::ps_job honest_job() {
  actors::ps_job job;
  job.shape = shape;
  job.lambda = 1e-3;
  job.rule.kind = shardopt::optimizer::update_kind::adam;
  job.rule.rate.initial = 0.01;
  job.batch_size = 32;
  job.sync = true;
  job.workers = 1;
  job.replicas_to_aggregate = 1;
  job.last_step = 300;
  job.seed = 5;
  job.token = actors::access_token::from_text("the honest job");
  return job;
}

} // namespace

TEST_CASE("a hostile client cannot join, steer or stop a parameter server, and the honest job's "
          "theta is unchanged") {
  const auto data = make_problem(3, 800, 20, 3);
  const auto job = honest_job();
  const actors::worker_task task{0, data, {0, 800}, 1.0};
  // The chief's log hook at step 100 holds training (the only worker, synchronous) until the
  // attacks are over, so they meet a running PS whatever the timing.
  std::promise<void> reached;
  std::promise<void> attacked_all;
  auto resume = attacked_all.get_future();
  bool hold = false;
  actors::chief_options chief;
  chief.log_steps = 100;
  chief.log = [&](const actors::step_log& row) {
    if (hold && row.step == 100) {
      reached.set_value();
      resume.wait();
    }
  };
  auto rt = network_runtime();
  auto train = [&](const actors::endpoint& where) {
    auto group = actors::connect_parameter_servers(rt, {where}, 30s);
    REQUIRE_MESSAGE(group.ok(), group.error().message());
    return actors::run_remote_worker(rt, *group, job, task, &chief);
  };
  ps_process quiet;
  auto undisturbed = train(quiet.endpoint());
  REQUIRE_MESSAGE(undisturbed.ok(), undisturbed.error().message());
  CHECK(quiet.process->wait(30s).exit_code == 0);

  ps_process server;
  auto connected =
    actors::connect_to<actors::ps_actor>(rt, server.endpoint(), "a shardopt parameter server", 30s);
  REQUIRE(connected.ok());
  const auto ps = *connected;
  caf::scoped_actor self{rt.system()};
  // Before the chief: a leftover worker of another job, another version, a non-chief init, and an
  // attempt to take index 0 first: all refused, so the chief finds the PS untouched.
  const auto stale_token = actors::access_token::from_text("an earlier job");
  std::vector<std::string> early{
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), stale_token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{999, actors::wire_probe(), job.token, 3, job_model}),
    error_of(self, ps, actors::psinit_atom::value, std::uint64_t{1}, stale_token, actors::ps_config{},
             actors::ps_snapshot{}),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, stale_token, std::string{"boom"}),
  };
  CHECK(contains(early[0], "another job's token"));
  CHECK(contains(early[1], "version 999"));
  CHECK(contains(early[2], "only the chief"));
  CHECK(contains(early[3], "outside the job"));

  hold = true;
  auto honest = std::async(std::launch::async, [&] { return train(server.endpoint()); });
  reached.get_future().wait();  // the chief is at step 100 and waits for us
  const actors::dense_vector grad{Eigen::VectorXd::Constant(shape.dimension(), 1e6)};
  std::vector<std::string> refusals{
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), stale_token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 7, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 0,
                              "mlp 20-100-3 (tanh, softmax output), lambda 0.001"}),
    error_of(self, ps, actors::psinit_atom::value, std::uint64_t{1}, job.token, actors::ps_config{},
             actors::ps_snapshot{}),
    error_of(self, ps, actors::push_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0},
             std::int64_t{0}, 1.0, std::int64_t{1}, grad),
    error_of(self, ps, actors::push_atom::value, std::uint64_t{1}, stale_token, std::uint32_t{5},
             std::int64_t{0}, 1.0, std::int64_t{1}, grad),
    error_of(self, ps, actors::clock_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0},
             std::int64_t{1}),
    error_of(self, ps, actors::psstate_atom::value, std::uint64_t{1}, stale_token),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, stale_token, std::string{"boom"}),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, job.token, std::string{"boom"}),
    error_of(self, ps, actors::bye_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0}),
    error_of(self, ps, actors::psstop_atom::value, std::uint64_t{1}, job.token),
  };
  const std::vector<std::string> expected{
    "already claimed", "another job's token", "not one of the job's 1 workers",
    "worker 0 trains mlp 20-100-3 (tanh, softmax output), lambda 0.001; this job trains " + job_model,
    "already initialised",
    "not worker 0 of this job", "not worker 5 of this job", "not worker 0 of this job",
    "without the job's token", "outside the job", "outside the job", "not worker 0 of this job",
    "only the chief stops"};
  REQUIRE(refusals.size() == expected.size());
  for (std::size_t i = 0; i < refusals.size(); ++i) {
    INFO(i << ": " << refusals[i]);
    CHECK(contains(refusals[i], expected[i]));
  }
  for (auto reason : {caf::exit_reason::kill, caf::exit_reason::user_shutdown}) {
    self->send_exit(ps, reason);
    caf::anon_send_exit(ps, reason);
  }
  self->send(caf::actor_cast<caf::actor>(ps), caf::make_error(caf::sec::runtime_error));
  // Still serving after the exits (processed in order after them): a refusal, not silence.
  CHECK(contains(error_of(self, ps, actors::psstate_atom::value, std::uint64_t{1}, stale_token),
                 "without the job's token"));
  attacked_all.set_value();
  auto attacked = honest.get();
  REQUIRE_MESSAGE(attacked.ok(), attacked.error().message());
  CHECK(attacked->step == undisturbed->step);
  REQUIRE(attacked->theta.size() == undisturbed->theta.size());
  CHECK(std::memcmp(attacked->theta.data(), undisturbed->theta.data(),
                    sizeof(double) * attacked->theta.size()) == 0);
  CHECK(server.process->wait(30s).exit_code == 0);
}

TEST_CASE("2 nodes x 4 shards: per evaluation each node's sockets carry 1.0-1.1x of 2 x 8 x dimension bytes, and 4x that with one peer per shard, for the same bits") {
  node_process first;
  node_process second;
  auto rt = network_runtime();
  const model::model_shape wide{model::model_kind::softmax, 1000, 100};  // 100,100 parameters
  const auto data = make_problem(3, 1024, 1000, 100);
  auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second)});
  REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(wide.dimension(), -0.01, 0.01);
  const std::vector<std::uint16_t> ports{static_cast<std::uint16_t>(first.port),
                                         static_cast<std::uint16_t>(second.port)};
  // Bytes on this process's connection to each node over `evaluations` evaluations, per evaluation.
  auto measure = [&](actors::sharded_objective& objective, Eigen::VectorXd& grad, double& f) {
    const int evaluations = 4;
    std::vector<shardopt::test::tcp_bytes> before;
    for (const auto port : ports)
      before.push_back(shardopt::test::connection_bytes(port));
    for (int e = 0; e < evaluations; ++e) {
      auto value = objective.evaluate(theta, grad);
      REQUIRE_MESSAGE(value.ok(), value.error().message());
      f = *value;
    }
    std::vector<double> per_node;
    for (std::size_t j = 0; j < ports.size(); ++j) {
      const auto after = shardopt::test::connection_bytes(ports[j]);
      per_node.push_back(static_cast<double>(after.total() - before[j].total()) / evaluations);
    }
    return per_node;
  };
  const double ideal = 2.0 * 8 * static_cast<double>(wide.dimension());  // per node

  auto grouped = cluster->ship(wide, 1e-3, data, shardopt::io::partition_blocks(1024, 8),
                               {0, 0, 0, 0, 1, 1, 1, 1}, 60s, {});
  REQUIRE_MESSAGE(grouped.ok(), grouped.error().message());
  CHECK(grouped->shard_count() == 2);  // the driver talks to one group per node
  Eigen::VectorXd grad;
  double f = 0;
  const auto per_node = measure(*grouped, grad, f);
  for (const double bytes : per_node) {
    INFO("bytes per evaluation on a node's connection: " << bytes << ", 2 x 8 x dimension: " << ideal);
    CHECK(bytes >= ideal);
    CHECK(bytes <= 1.1 * ideal);
  }

  cluster->group_per_node(false);
  auto separate = cluster->ship(wide, 1e-3, data, shardopt::io::partition_blocks(1024, 8),
                                {0, 0, 0, 0, 1, 1, 1, 1}, 60s, {});
  REQUIRE_MESSAGE(separate.ok(), separate.error().message());
  CHECK(separate->shard_count() == 8);
  Eigen::VectorXd separate_grad;
  double separate_f = 0;
  const auto per_node_separate = measure(*separate, separate_grad, separate_f);
  for (std::size_t j = 0; j < ports.size(); ++j) {
    INFO("node " << j << ": " << per_node_separate[j] << " bytes per evaluation with a peer per shard, "
                  << per_node[j] << " with one per node");
    CHECK(per_node_separate[j] >= 3.9 * per_node[j]);
    CHECK(per_node_separate[j] <= 4.1 * per_node[j]);
  }
  CHECK(std::memcmp(&separate_f, &f, sizeof f) == 0);
  REQUIRE(separate_grad.size() == grad.size());
  CHECK(std::memcmp(separate_grad.data(), grad.data(), sizeof(double) * grad.size()) == 0);
}

TEST_CASE("shards shipped in pieces of 2 KiB give the bits of shards shipped in one message each, dense and sparse, and the pieces carry each row once") {
  node_process first;
  node_process second;
  auto rt = network_runtime();
  for (const bool sparse : {false, true}) {
    CAPTURE(sparse);
    const auto data = shardopt::test::random_problem(5, 600, 20, 3, sparse);
    // Bytes on this process's connections to both nodes while shipping.
    std::vector<double> shipped;
    auto bits = [&](std::int64_t piece_bytes) {
      auto cluster = actors::cluster::connect(rt, {endpoint_of(first), endpoint_of(second)});
      REQUIRE_MESSAGE(cluster.ok(), cluster.error().message());
      if (piece_bytes > 0)
        cluster->ship_in_pieces_of(piece_bytes);
      auto bytes = [&] {
        return static_cast<double>(shardopt::test::connection_bytes(static_cast<std::uint16_t>(first.port)).total()
                                   + shardopt::test::connection_bytes(static_cast<std::uint16_t>(second.port)).total());
      };
      const double before = bytes();
      auto objective = cluster->ship(shape, 1e-3, data, shardopt::io::partition_blocks(600, 4),
                                     {0, 0, 1, 1}, 30s, {});
      REQUIRE_MESSAGE(objective.ok(), objective.error().message());
      shipped.push_back(bytes() - before);
      const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(shape.dimension(), -0.3, 0.2);
      Eigen::VectorXd grad;
      auto f = objective->evaluate(theta, grad);
      REQUIRE_MESSAGE(f.ok(), f.error().message());
      std::vector<double> out{*f};
      out.insert(out.end(), grad.data(), grad.data() + grad.size());
      return out;
    };
    const auto whole = bits(0);
    const auto pieces = bits(2048);
    REQUIRE(pieces.size() == whole.size());
    CHECK(std::memcmp(pieces.data(), whole.data(), sizeof(double) * whole.size()) == 0);
    // 150 rows a shard (88 bytes dense, about 70 sparse): 5 or more pieces each, 20 or more
    // requests and replies in all where whole shipping sends none (together at least 100 bytes of
    // headers each), and no row twice.
    INFO("bytes shipped whole: " << shipped[0] << ", in pieces: " << shipped[1]);
    CHECK(shipped[1] >= shipped[0] + 24 * 64);
    CHECK(shipped[1] <= 1.5 * shipped[0]);
  }
}

TEST_CASE("data a driver stops sending in pieces holds a node's room only until --staging-timeout, "
          "and its next piece is refused saying so") {
  const auto data = make_problem(6, 40, 20, 3);
  const actors::shard_spec small{shape, actors::data_block{data, {0, 10}}, {}};
  auto rt = network_runtime();
  caf::scoped_actor stalled{rt.system()};
  caf::scoped_actor other{rt.system()};
  const auto token = actors::access_token::random();
  auto append = [&](const actors::node_actor& node, model::row_range piece) {
    std::string text = "no reply";
    stalled->request(node, 10s, actors::append_atom::value, std::uint64_t{1}, token, std::int64_t{40},
                     std::int64_t{0}, piece.begin, actors::data_block{data, piece})
      .receive([&](std::uint64_t, std::int64_t received) { text = "received " + std::to_string(received); },
               [&](caf::error& err) { text = actors::describe(err, stalled->system()); });
    return text;
  };
  // One shard's room: the stalled driver's first piece takes it.
  for (const std::string timeout : {"60", "0.2"}) {
    CAPTURE(timeout);
    node_process process{{"--max-shards", "1", "--staging-timeout", timeout}};
    auto node = actors::connect_to<actors::node_actor>(rt, endpoint_of(process), "a shardopt node");
    REQUIRE(node.ok());
    REQUIRE(append(*node, {0, 20}) == "received 20");
    std::string text = error_of(other, *node, actors::spawn_atom::value, std::uint64_t{1}, token, small);
    if (timeout == "60") {  // within the timeout the room stays taken, and the data keeps arriving
      CHECK(contains(text, "limit of 1 shards"));
      CHECK(append(*node, {20, 40}) == "received 40");
      continue;
    }
    // Past it, the next request that needs room finds it free (asked until then, for up to 30 s).
    for (int attempt = 0; attempt < 3000 && text != "no error"; ++attempt) {
      CHECK(contains(text, "limit of 1 shards"));
      std::this_thread::sleep_for(10ms);
      text = error_of(other, *node, actors::spawn_atom::value, std::uint64_t{1}, token, small);
    }
    CHECK(text == "no error");
    const auto late = append(*node, {20, 40});
    CHECK(contains(late, "no data is arriving"));
    CHECK(contains(late, "gets no piece for 0.2 s is dropped"));
    CHECK(process.process->running());
  }
}
