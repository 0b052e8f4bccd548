// shardopt benchmarks (issue targets in parentheses):
//   1. one full softmax loss+gradient evaluation on all 60,000 Fashion-MNIST images: direct
//      single-threaded model call vs 1, 2, 4 local shard actors (actor overhead <= 3%; 2 shards on
//      2 cores >= 1.8x faster than 1), against the two matrix products it needs (<= 1.5x);
//   2. end-to-end L-BFGS time until the objective is within 1e-6 (relative) of the best value found;
//   3. the same evaluation summed exactly (model::local_objective, one thread: canonical blocks and
//      fixed-point gradient sums) against the direct call's plain sums (overhead <= 3%, as the
//      median of interleaved pairs of calls);
//   4. the remote and parameter-server benchmarks of bench_remote.cpp and bench_ps.cpp.
// Google Benchmark measures; a reporter collects the runs and prints the target table, which is also
// written as JSON (--summary FILE). Run: scripts/bench (see docs/benchmarks.md).

#include "bench/fixtures.hpp"

#include "actors/wire/runtime.hpp"
#include "actors/driver/sharded_objective.hpp"
#include "apps/run/data.hpp"
#include "io/partition.hpp"
#include "model/linear_model.hpp"
#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <Eigen/Dense>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

namespace {

using namespace shardopt;

} // namespace

namespace shardopt::bench {

const apps::prepared_data& fashion() {
  static const apps::prepared_data data = [] {
    apps::data_options options;
    auto prepared = apps::prepare_training_data(options, model::model_shape{model::model_kind::softmax, 0, 1}, 0);
    if (!prepared) {
      std::fprintf(stderr, "bench: %s\n", prepared.error().message().c_str());
      std::exit(1);
    }
    return std::move(*prepared);
  }();
  return data;
}

/// The actor runtime, owned by main() so that it is torn down before static destructors run.
actors::runtime* runtime_instance = nullptr;

std::map<std::string, std::vector<double>>& figures() {
  static std::map<std::string, std::vector<double>> instance;
  return instance;
}

void record(const std::string& name, double value) {
  figures()[name].push_back(value);
}

const std::map<std::string, std::vector<double>>& recorded() {
  return figures();
}

actors::runtime& runtime() {
  return *runtime_instance;
}

} // namespace shardopt::bench

namespace {

using namespace shardopt;
using bench::fashion;
using bench::test_theta;

actors::runtime& shared_runtime() {
  return bench::runtime();
}

void BM_square_dgemm(benchmark::State& state) {
  const Eigen::Index n = 1024;
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n);
  const Eigen::MatrixXd b = Eigen::MatrixXd::Random(n, n);
  Eigen::MatrixXd c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["gflops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

/// The two products of one evaluation, Z = X W and G = X^T R, with X stored as `Scalar`.
template <class Scalar>
void BM_two_products(benchmark::State& state) {
  using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using column_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  const auto& data = fashion();
  const matrix x = data.train->dense().template cast<Scalar>();
  const auto k = data.shape.outputs;
  const column_matrix w = column_matrix::Random(x.cols(), k);
  column_matrix z(x.rows(), k);
  column_matrix g(x.cols(), k);
  for (auto _ : state) {
    z.noalias() = x * w;
    g.noalias() = x.transpose() * z;
    benchmark::DoNotOptimize(g.data());
  }
}

void BM_eval_direct(benchmark::State& state) {
  const auto& data = fashion();
  const auto theta = test_theta(data.shape.dimension());
  Eigen::VectorXd grad(data.shape.dimension());
  for (auto _ : state)
    benchmark::DoNotOptimize(
      model::loss_grad_sum(data.shape, *data.train, model::row_range{0, data.train->rows()}, theta, grad));
}

void BM_eval_exact(benchmark::State& state) {
  const auto& data = fashion();
  model::local_objective objective{data.shape, data.train, 1e-4};
  const auto theta = test_theta(data.shape.dimension());
  Eigen::VectorXd grad(data.shape.dimension());
  for (auto _ : state)
    benchmark::DoNotOptimize(objective.evaluate(theta, grad));
}

/// The exact sums' overhead in pairs: each iteration times one direct and one exact evaluation,
/// in alternating order, so that the machine's drift (several percent here) meets both alike; the
/// summary takes the median of the pairs' ratios.
void BM_exact_overhead(benchmark::State& state) {
  using clock = std::chrono::steady_clock;
  const auto& data = fashion();
  model::local_objective objective{data.shape, data.train, 1e-4};
  const auto theta = test_theta(data.shape.dimension());
  Eigen::VectorXd grad(data.shape.dimension());
  auto timed = [](auto&& evaluate) {
    const auto start = clock::now();
    benchmark::DoNotOptimize(evaluate());
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  auto direct = [&] {
    return model::loss_grad_sum(data.shape, *data.train, model::row_range{0, data.train->rows()}, theta, grad);
  };
  auto exact = [&] { return objective.evaluate(theta, grad); };
  bool exact_first = false;
  for (auto _ : state) {
    double direct_seconds = 0;
    double exact_seconds = 0;
    if (exact_first) {
      exact_seconds = timed(exact);
      direct_seconds = timed(direct);
    } else {
      direct_seconds = timed(direct);
      exact_seconds = timed(exact);
    }
    exact_first = !exact_first;
    bench::record("exact / direct, paired", exact_seconds / direct_seconds);
  }
}

void BM_eval_actors(benchmark::State& state) {
  const auto& data = fashion();
  const auto shards = state.range(0);
  auto objective = actors::sharded_objective::local(
    shared_runtime(), data.shape, 1e-4, data.train, io::partition_blocks(data.train->rows(), shards),
    std::chrono::minutes{5});
  const auto theta = test_theta(data.shape.dimension());
  Eigen::VectorXd grad;
  for (auto _ : state) {
    auto f = objective.evaluate(theta, grad);
    if (!f)
      state.SkipWithError(f.error().message().c_str());
    benchmark::DoNotOptimize(grad.data());
  }
}

/// The best objective L-BFGS reaches (tight tolerance), computed once and shared by the runs below.
double best_objective(int max_iterations) {
  static std::map<int, double> cache;
  if (auto it = cache.find(max_iterations); it != cache.end())
    return it->second;
  const auto& data = fashion();
  auto objective = actors::sharded_objective::local(
    shared_runtime(), data.shape, 1e-4, data.train, io::partition_blocks(data.train->rows(), 2),
    std::chrono::minutes{5});
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(data.shape.dimension());
  optimizer::lbfgs_options options;
  options.epsilon = 1e-9;
  options.max_iterations = max_iterations;
  const auto run = *optimizer::minimize(objective, theta, options);
  std::fprintf(stderr, "best objective %.12g after %d iterations (%s)\n", run.f, run.iterations,
               std::string(optimizer::to_string(run.reason)).c_str());
  return cache[max_iterations] = run.f;
}

int reference_iterations = 3000;

void BM_time_to_target(benchmark::State& state) {
  const auto& data = fashion();
  const double target = best_objective(reference_iterations) * (1 + 1e-6);
  const auto shards = state.range(0);
  int iterations = 0;
  for (auto _ : state) {
    auto objective = actors::sharded_objective::local(
      shared_runtime(), data.shape, 1e-4, data.train, io::partition_blocks(data.train->rows(), shards),
      std::chrono::minutes{5});
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(data.shape.dimension());
    optimizer::lbfgs_options options;
    options.epsilon = 0;
    options.max_iterations = reference_iterations;
    const auto run = *optimizer::minimize(objective, theta, options,
                                         [&](const optimizer::iteration_info& info) {
                                           return info.f > target;
                                         });
    iterations = run.iterations;
    if (run.f > target)
      state.SkipWithError("did not reach the target objective");
  }
  state.counters["iterations"] = iterations;
}

BENCHMARK(BM_square_dgemm)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK_TEMPLATE(BM_two_products, float)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK_TEMPLATE(BM_two_products, double)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_eval_direct)->Unit(benchmark::kMillisecond)->Repetitions(9);
BENCHMARK(BM_eval_exact)->Unit(benchmark::kMillisecond)->Repetitions(9);
BENCHMARK(BM_exact_overhead)->Iterations(40)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eval_actors)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(9);
BENCHMARK(BM_time_to_target)->Arg(1)->Arg(2)->Arg(4)->Iterations(1)->Repetitions(1)->Unit(benchmark::kSecond)->UseRealTime();

/// Shows every run as Google Benchmark does and keeps seconds per iteration by benchmark name: the
/// median when repetitions are run (this machine's noise is several percent), else the single run.
class collecting_reporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.error_occurred)
        continue;
      const double value = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
      const auto& id = run.run_name;
      const auto name = id.function_name + (id.args.empty() ? "" : "/" + id.args);
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median")
        seconds[name] = value;
      else if (run.run_type == Run::RT_Iteration && !seconds.count(name))
        seconds[name] = value;
    }
  }
  std::map<std::string, double> seconds;
};

} // namespace

int main(int argc, char** argv) {
  std::string summary_path = "bench-eval.json";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--summary=", 0) == 0)
      summary_path = arg.substr(10);
    else if (arg.rfind("--reference-iterations=", 0) == 0)
      reference_iterations = std::stoi(arg.substr(23));
    else
      rest.push_back(argv[i]);
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  actors::runtime rt{actors::runtime_options{std::max(1u, std::thread::hardware_concurrency()), true, {}, false}};
  bench::runtime_instance = &rt;
  collecting_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  bench::release_remote();

  const auto& s = reporter.seconds;
  auto get = [&](const std::string& name) {
    auto it = s.find(name);
    return it == s.end() ? std::nan("") : it->second;
  };
  const double gflops = 2.0 * 1024 * 1024 * 1024 / get("BM_square_dgemm") / 1e9;
  const auto& shape = fashion().shape;
  // Z = X W and G = X^T R: 2 n d K flops each, at the measured square-GEMM speed.
  const double product_flops = 2 * 2.0 * static_cast<double>(fashion().train->rows())
                               * static_cast<double>(shape.features) * static_cast<double>(shape.outputs);
  const double products_at_peak = product_flops / (gflops * 1e9);
  const double direct = get("BM_eval_direct");
  const double exact = get("BM_eval_exact");
  const double one = get("BM_eval_actors/1");
  const double two = get("BM_eval_actors/2");
  const double four = get("BM_eval_actors/4");
  if (std::getenv("SHARDOPT_BENCH_NAMES"))
    for (const auto& [name, value] : s)
      std::printf("%s = %g s\n", name.c_str(), value);
  const double products_float = get("BM_two_products<float>");
  const double products_double = get("BM_two_products<double>");
  struct row {
    std::string name;
    double value;
    std::string unit;
    std::string target;
    bool met;
  };
  std::vector<row> rows{
    {"direct evaluation (1 thread)", direct * 1e3, "ms", "", true},
    {"exact sums (1 thread, local_objective)", exact * 1e3, "ms", "", true},
    {"exact-sum overhead vs direct (medians)", (exact / direct - 1) * 100, "%", "(info)", true},
    {"1 shard actor", one * 1e3, "ms", "", true},
    {"2 shard actors", two * 1e3, "ms", "", true},
    {"4 shard actors", four * 1e3, "ms", "", true},
    {"actor overhead, 1 shard vs direct", (one / direct - 1) * 100, "%", "<= 3", one / direct - 1 <= 0.03},
    {"speedup, 2 shards vs 1 shard", one / two, "x", ">= 1.8", one / two >= 1.8},
    {"square dgemm speed", gflops, "GF/s", "", true},
    {"direct / two products at dgemm speed", direct / products_at_peak, "x", "<= 1.5",
     direct / products_at_peak <= 1.5},
    {"direct / two float products (Eigen)", direct / products_float, "x", "(info)", true},
    {"direct / two double products (Eigen)", direct / products_double, "x", "(info)", true},
  };
  // Figures recorded by the benchmarks themselves (bytes, memory, PS throughput): their medians.
  auto median = [](const std::string& name) {
    auto it = bench::recorded().find(name);
    if (it == bench::recorded().end() || it->second.empty())
      return std::nan("");
    auto values = it->second;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    return values[values.size() / 2];
  };
  {
    const double paired = median("exact / direct, paired");
    rows.insert(rows.begin() + 3, row{"exact-sum overhead, 40 interleaved pairs", (paired - 1) * 100,
                                      "%", "<= 3", paired - 1 <= 0.03});
  }
  const double remote_two = get("BM_eval_remote/2");
  rows.push_back({"2 remote nodes x 1 shard (loopback)", remote_two * 1e3, "ms", "", true});
  rows.push_back({"remote overhead vs 2 local shards", (remote_two - two) * 1e3, "ms", "<= 1",
                  remote_two - two <= 1e-3});
  {
    const double dimension = median("eval dimension");
    const double ideal = 2 * 8 * dimension * 2;
    const double per_shard_bytes = median("eval bytes, peer per shard");
    const double per_node_bytes = median("eval bytes, peer per node");
    rows.push_back({"2 nodes x 4 shards over loopback: dimension", dimension, "", "(info)", true});
    rows.push_back({"  evaluation, one peer per shard (before)", get("BM_eval_nodes/0") * 1e3, "ms", "", true});
    rows.push_back({"  evaluation, one peer per node (after)", get("BM_eval_nodes/1") * 1e3, "ms", "", true});
    rows.push_back({"  socket bytes, one peer per shard", per_shard_bytes / 1e6, "MB", "", true});
    rows.push_back({"  socket bytes, one peer per node", per_node_bytes / 1e6, "MB", "", true});
    rows.push_back({"  per node / (2 x 8 x dimension x nodes)", per_node_bytes / ideal, "x", "<= 1.1",
                    per_node_bytes / ideal <= 1.1});
  }
  for (const char* data : {"fashion", "synthetic 2M"}) {
    const double ratio = median(std::string{"shard memory / data, "} + data);
    rows.push_back({std::string{"node memory / shard data, "} + data, ratio, "x", "<= 1.2", ratio <= 1.2});
  }
  rows.push_back({"  the same, synthetic 16k (3 MB a node at dimension 2^20)",
                  median("shard memory / data, synthetic 16k"), "x", "(info)", true});
  for (long n : {10'000L, 100'000L, 1'000'000L}) {
    const double t = get("BM_round_trip/" + std::to_string(n));
    rows.push_back({"round trip, " + std::to_string(n) + " doubles", t * 1e3, "ms", "", true});
    const double rate = 16.0 * static_cast<double>(n) / t / 1e9;
    rows.push_back({"  effective rate (both ways)", rate, "GB/s", n == 1'000'000L ? ">= 1" : "",
                    n != 1'000'000L || rate >= 1});
  }
  for (int k : {1, 2, 4})
    rows.push_back({"time to 1e-6 of best, " + std::to_string(k) + " shard(s)",
                    get("BM_time_to_target/" + std::to_string(k)), "s", "",
                    true});
  // Parameter-server throughput: medians of the recorded runs.
  for (const char* where : {"local", "processes"})
    for (const char* mode : {"sync", "async"})
      for (int w : {1, 2, 4}) {
        const auto name = std::string{where} + " " + std::to_string(w) + " " + mode;
        rows.push_back({"PS " + name + ", steps/s", median(name + " steps/s"), "1/s", "", true});
        rows.push_back({"PS " + name + ", examples/s", median(name + " examples/s"), "1/s", "", true});
      }
  const double steady = median("straggler 1x steps/s");
  const double slowed = median("straggler 5x steps/s");
  rows.push_back({"PS sync 4 workers (1 backup), steps/s", steady, "1/s", "", true});
  rows.push_back({"  the same, one worker 5x slower", slowed, "1/s", "", true});
  rows.push_back({"  throughput drop", (1 - slowed / steady) * 100, "%", "<= 15", 1 - slowed / steady <= 0.15});
  std::printf("\n%-44s %12s %-4s %-8s %s\n", "measure", "value", "unit", "target", "met");
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& r : rows) {
    std::printf("%-44s %12.3f %-4s %-8s %s\n", r.name.c_str(), r.value, r.unit.c_str(),
                r.target.c_str(), r.target.empty() || r.target == "(info)" ? "" : (r.met ? "yes" : "NO"));
    summary.push_back({{"measure", r.name}, {"value", std::isnan(r.value) ? nlohmann::json() : nlohmann::json(r.value)},
                       {"unit", r.unit}, {"target", r.target}, {"met", r.met}});
  }
  std::ofstream{summary_path} << summary.dump(2) << '\n';
  std::printf("summary written to %s\n", summary_path.c_str());
  return 0;
}
