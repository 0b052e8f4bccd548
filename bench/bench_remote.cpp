// Remote benchmarks: node processes on loopback, started here and stopped at exit.
//   BM_round_trip/N    one evaluation of a 1-row least-squares shard of N - 1 features on a node:
//                      theta (N doubles) there and the gradient back (target: >= 1 GB/s at 10^6)
//   BM_eval_remote/2   one Fashion-MNIST softmax evaluation over 2 nodes x 1 shard, to compare with
//                      BM_eval_actors/2 (2 local shards): overhead target <= 1 ms
//   BM_eval_nodes/G    one logistic evaluation at dimension 2^20 + 1 over 2 nodes x 4 shards, the
//                      driver talking to one peer per node (G = 1: the node's shards grouped) or to
//                      one per shard (G = 0, as before per-node sums); bytes counted on the
//                      driver's sockets (target: within 1.1x of 2 x 8 x dimension x nodes)
//   BM_shard_memory/D  resident memory that 2 fresh nodes x 4 shards add for their data and one
//                      evaluation, over the bytes of that data (target: <= 1.2x). D = 0:
//                      Fashion-MNIST; D = 2: the synthetic set at the scale, 2,000,000 rows
//                      (about a minute to write and read); D = 1: the 16,384-row set above, where a
//                      node's dimension-sized buffers (theta, the reply, CAF's buffers for both:
//                      8 MB each) outweigh its 3 MB of data, so the ratio says little

#include "bench/fixtures.hpp"

#include "actors/driver/cluster.hpp"
#include "actors/driver/placement.hpp"
#include "io/assembly.hpp"
#include "io/partition.hpp"
#include "io/synthetic.hpp"
#include "support/memory.hpp"
#include "support/process.hpp"
#include "support/sockets.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

namespace {

using namespace shardopt;

/// Node processes (each announcing this machine's threads, as a node does by default) and a
/// cluster connected to them, made once.
struct remote_setup {
  std::vector<std::unique_ptr<test::background_process>> processes;
  std::optional<actors::cluster> cluster;
  std::vector<std::uint16_t> ports;
  std::string problem;

  explicit remote_setup(int nodes) {
    std::vector<actors::endpoint> endpoints;
    for (int i = 0; i < nodes; ++i) {
      processes.push_back(std::make_unique<test::background_process>(std::vector<std::string>{
        std::string{SHARDOPT_BINARY_DIR} + "/apps/shardopt", "node", "--port", "0"}));
      if (!processes.back()->wait_for_output("listening on", std::chrono::seconds{20})) {
        problem = "node did not start: " + processes.back()->err();
        return;
      }
      std::smatch match;
      const auto out = processes.back()->out();
      std::regex_search(out, match, std::regex{"listening on 127\\.0\\.0\\.1:([0-9]+)"});
      ports.push_back(static_cast<std::uint16_t>(std::stoi(match[1])));
      endpoints.push_back({"127.0.0.1", ports.back()});
    }
    auto connected = actors::cluster::connect(bench::runtime(), endpoints);
    if (!connected)
      problem = connected.error().message();
    else
      cluster = std::move(*connected);
  }
};

std::unique_ptr<remote_setup>& remote_instance() {
  static std::unique_ptr<remote_setup> instance;
  return instance;
}

remote_setup& two_nodes() {
  auto& instance = remote_instance();
  if (!instance)
    instance = std::make_unique<remote_setup>(2);
  return *instance;
}

void BM_round_trip(benchmark::State& state) {
  auto& setup = two_nodes();
  if (!setup.cluster) {
    state.SkipWithError(setup.problem.c_str());
    return;
  }
  // One row: the evaluation costs N multiply-adds, the rest is moving theta and the gradient.
  const auto features = static_cast<Eigen::Index>(state.range(0) - 1);
  auto row = std::make_shared<model::dataset>();
  row->x = model::dense_features::Ones(1, features);
  row->y = Eigen::VectorXd::Ones(1);
  const model::model_shape shape{model::model_kind::linear, features, 1};
  auto objective = setup.cluster->ship(shape, 0, row, io::partition_blocks(1, 1),
                                       actors::place_shards({1, 1}, 1), std::chrono::minutes{5}, {});
  if (!objective) {
    state.SkipWithError(objective.error().message().c_str());
    return;
  }
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(state.range(0), -1, 1);
  Eigen::VectorXd grad;
  for (auto _ : state)
    if (auto f = objective->evaluate(theta, grad); !f)
      state.SkipWithError(f.error().message().c_str());
  // Bytes moved per round trip: the vector there and back.
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0) * 16);
}

void BM_eval_remote(benchmark::State& state) {
  auto& setup = two_nodes();
  if (!setup.cluster) {
    state.SkipWithError(setup.problem.c_str());
    return;
  }
  const auto& data = bench::fashion();
  const auto shards = static_cast<std::size_t>(state.range(0));
  auto objective = setup.cluster->ship(data.shape, 1e-4, data.train,
                                       io::partition_blocks(data.train->rows(), shards),
                                       actors::place_shards({1, 1}, shards),
                                       std::chrono::minutes{5}, {});
  if (!objective) {
    state.SkipWithError(objective.error().message().c_str());
    return;
  }
  const auto theta = bench::test_theta(data.shape.dimension());
  Eigen::VectorXd grad;
  for (auto _ : state)
    if (auto f = objective->evaluate(theta, grad); !f)
      state.SkipWithError(f.error().message().c_str());
}

/// A sparse logistic problem at dimension 2^20 + 1: `shardopt generate`'s planted model, `rows` rows
/// of 40 non-zeros (16,384 rows: 64 canonical blocks of 256 rows), read as `shardopt train` reads
/// it. Made once per row count.
const apps::prepared_data& synthetic(std::int64_t rows = 16384) {
  static std::map<std::int64_t, apps::prepared_data> made;
  if (const auto it = made.find(rows); it != made.end())
    return it->second;
  const apps::prepared_data& data = made[rows] = [rows] {
    const auto path = std::filesystem::temp_directory_path()
                      / ("shardopt-bench-" + std::to_string(::getpid()) + ".svm");
    io::synthetic_spec spec;
    spec.rows = rows;
    spec.features = std::int64_t{1} << 20;
    if (auto written = io::write_synthetic(spec, path.string()); !written) {
      std::fprintf(stderr, "bench: %s\n", written.error().message().c_str());
      std::exit(1);
    }
    apps::data_options options;
    options.data = path.string();
    options.features = spec.features;
    options.scale = "none";
    auto prepared = apps::prepare_training_data(options, model::model_shape{model::model_kind::logistic, 0, 1}, 0);
    std::filesystem::remove(path);
    if (!prepared) {
      std::fprintf(stderr, "bench: %s\n", prepared.error().message().c_str());
      std::exit(1);
    }
    return std::move(*prepared);
  }();
  return data;
}

const std::vector<std::size_t> two_by_four{0, 0, 0, 0, 1, 1, 1, 1};

void BM_eval_nodes(benchmark::State& state) {
  auto& setup = two_nodes();
  if (!setup.cluster) {
    state.SkipWithError(setup.problem.c_str());
    return;
  }
  const auto& data = synthetic();
  const bool per_node = state.range(0) == 1;
  setup.cluster->group_per_node(per_node);
  auto objective = setup.cluster->ship(data.shape, 1e-5, data.train,
                                       io::partition_blocks(data.train->rows(), two_by_four.size()),
                                       two_by_four, std::chrono::minutes{5}, {});
  setup.cluster->group_per_node(true);
  if (!objective) {
    state.SkipWithError(objective.error().message().c_str());
    return;
  }
  const auto theta = bench::test_theta(data.shape.dimension());
  Eigen::VectorXd grad;
  auto bytes = [&] {
    std::uint64_t total = 0;
    for (const auto port : setup.ports)
      total += test::connection_bytes(port).total();
    return total;
  };
  const auto before = bytes();
  for (auto _ : state)
    if (auto f = objective->evaluate(theta, grad); !f)
      state.SkipWithError(f.error().message().c_str());
  const double per_evaluation = static_cast<double>(bytes() - before) / static_cast<double>(state.iterations());
  state.counters["bytes"] = per_evaluation;
  bench::record(per_node ? "eval bytes, peer per node" : "eval bytes, peer per shard", per_evaluation);
  bench::record("eval dimension", static_cast<double>(data.shape.dimension()));
}

void BM_shard_memory(benchmark::State& state) {
  const char* names[] = {"fashion", "synthetic 16k", "synthetic 2M"};
  const auto& data = state.range(0) == 0   ? bench::fashion()
                     : state.range(0) == 1 ? synthetic()
                                           : synthetic(2'000'000);
  const auto blocks = io::partition_blocks(data.train->rows(), two_by_four.size());
  for (auto _ : state) {
    remote_setup fresh{2};
    if (!fresh.cluster) {
      state.SkipWithError(fresh.problem.c_str());
      return;
    }
    std::vector<std::int64_t> before;
    for (const auto& process : fresh.processes)
      before.push_back(test::resident_bytes(process->pid()));
    auto objective = fresh.cluster->ship(data.shape, 1e-4, data.train, blocks, two_by_four,
                                         std::chrono::minutes{5}, {});
    Eigen::VectorXd grad;
    if (!objective || !objective->evaluate(bench::test_theta(data.shape.dimension()), grad)) {
      state.SkipWithError("shipping or evaluating failed");
      return;
    }
    for (std::size_t j = 0; j < fresh.processes.size(); ++j) {
      double held = 0;
      for (std::size_t i = 0; i < blocks.size(); ++i)
        if (two_by_four[i] == j)
          held += static_cast<double>(io::bytes_of(io::extent_of(*data.train, blocks[i])));
      const auto grown = test::resident_bytes(fresh.processes[j]->pid()) - before[j];
      bench::record(std::string{"shard memory / data, "} + names[state.range(0)],
                    static_cast<double>(grown) / held);
    }
  }
}

} // namespace

void shardopt::bench::release_remote() {
  remote_instance().reset();
}

namespace {

BENCHMARK(BM_round_trip)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond)
  ->UseRealTime()->Repetitions(5);
BENCHMARK(BM_eval_remote)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(9);
BENCHMARK(BM_eval_nodes)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5);
BENCHMARK(BM_shard_memory)->Arg(0)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

} // namespace
