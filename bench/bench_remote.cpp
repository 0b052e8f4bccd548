// Remote benchmarks: node processes on loopback, started here and stopped at exit.
//   BM_round_trip/N   a vector of N doubles to a node and back (target: >= 1 GB/s at 10^6)
//   BM_eval_remote/2  one Fashion-MNIST softmax evaluation over 2 nodes x 1 shard, to compare with
//                     BM_eval_actors/2 (2 local shards): overhead target <= 1 ms

#include "bench/fixtures.hpp"

#include "actors/cluster.hpp"
#include "actors/placement.hpp"
#include "io/partition.hpp"
#include "support/process.hpp"

#include <benchmark/benchmark.h>

#include <regex>

namespace {

using namespace shardopt;

/// Node processes (one worker thread each) and a cluster connected to them, made once.
struct remote_setup {
  std::vector<std::unique_ptr<test::background_process>> processes;
  std::optional<actors::cluster> cluster;
  std::string problem;

  explicit remote_setup(int nodes) {
    std::vector<actors::endpoint> endpoints;
    for (int i = 0; i < nodes; ++i) {
      processes.push_back(std::make_unique<test::background_process>(std::vector<std::string>{
        std::string{SHARDOPT_BINARY_DIR} + "/apps/shardopt", "node", "--port", "0", "--threads", "1"}));
      if (!processes.back()->wait_for_output("listening on", std::chrono::seconds{20})) {
        problem = "node did not start: " + processes.back()->err();
        return;
      }
      std::smatch match;
      const auto out = processes.back()->out();
      std::regex_search(out, match, std::regex{"listening on 127\\.0\\.0\\.1:([0-9]+)"});
      endpoints.push_back({"127.0.0.1", static_cast<std::uint16_t>(std::stoi(match[1]))});
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
  const Eigen::VectorXd theta = Eigen::VectorXd::LinSpaced(state.range(0), -1, 1);
  for (auto _ : state)
    if (auto ok = setup.cluster->echo(0, theta); !ok)
      state.SkipWithError(ok.error().message().c_str());
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

} // namespace

void shardopt::bench::release_remote() {
  remote_instance().reset();
}

namespace {

BENCHMARK(BM_round_trip)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond)
  ->UseRealTime()->Repetitions(5);
BENCHMARK(BM_eval_remote)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(9);

} // namespace
