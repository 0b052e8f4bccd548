// Sparse kernels, one core: ns per non-zero per pass for an evaluation (loss and gradient, summed
// exactly per model/exact_sum.hpp) and a Hessian-vector product, for each linear model, against a
// floor: the same fused pass (one gather, one scatter into the same lines) summing in plain double,
// written here by hand. The gap is what the exact sums cost.
//
// Data: CSR rows of 40 non-zeros, 200,000 rows x 2^20 features (one output) and x 2^17 features
// (softmax, 10 classes), uniform features, values and labels from a fixed seed. Prints a table and
// writes JSON (--out FILE). Run: scripts/bench sparse.

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/exact_sum.hpp"
#include "model/kernels.hpp"
#include "model/linear_model.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>

namespace {

using namespace shardopt;

constexpr std::int64_t rows = 200'000;
constexpr std::int64_t per_row = 40;

struct problem {
  model::model_shape shape;
  model::dataset data;
  Eigen::VectorXd theta;
  Eigen::VectorXd v;
  std::vector<model::row_range> blocks;
  std::int64_t block_rows = 1;
  model::data_bounds bounds;
};

problem make(model::model_kind kind) {
  const std::int64_t outputs = kind == model::model_kind::softmax ? 10 : 1;
  const std::int64_t features = outputs > 1 ? (1 << 17) : (1 << 20);
  problem p;
  p.shape = model::model_shape{kind, features, outputs};
  std::mt19937_64 rng{7};
  std::uniform_int_distribution<int> column(0, static_cast<int>(features) - 1);
  std::normal_distribution<float> value;
  model::sparse_features x(rows, features);
  x.resizeNonZeros(rows * per_row);
  std::vector<int> columns(per_row);
  for (std::int64_t r = 0; r <= rows; ++r)
    x.outerIndexPtr()[r] = static_cast<int>(r * per_row);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (auto& c : columns)
      c = column(rng);
    std::sort(columns.begin(), columns.end());
    columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
    while (static_cast<std::int64_t>(columns.size()) < per_row)
      columns.push_back(columns.back() + 1 < features ? columns.back() + 1 : 0), std::sort(columns.begin(), columns.end()),
        columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
    for (std::int64_t k = 0; k < per_row; ++k) {
      x.innerIndexPtr()[r * per_row + k] = columns[static_cast<std::size_t>(k)];
      x.valuePtr()[r * per_row + k] = value(rng) * 0.15f;
    }
  }
  p.data.x = std::move(x);
  p.data.y.resize(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    p.data.y[r] = kind == model::model_kind::linear ? std::normal_distribution<double>{}(rng)
                  : outputs > 1 ? static_cast<double>(rng() % static_cast<std::uint64_t>(outputs))
                                : (rng() % 2 ? 1.0 : -1.0);
  std::normal_distribution<double> normal;
  p.theta = Eigen::VectorXd::NullaryExpr(p.shape.dimension(), [&] { return 0.3 * normal(rng); });
  p.v = Eigen::VectorXd::NullaryExpr(p.shape.dimension(), [&] { return normal(rng); });
  p.block_rows = model::block_rows_for(rows);
  p.blocks = model::blocks_of({0, rows}, p.block_rows);
  p.bounds = model::bounds_of(p.data, {0, rows}, p.block_rows);
  return p;
}

problem& get(model::model_kind kind) {
  static std::map<model::model_kind, problem> problems;
  auto it = problems.find(kind);
  if (it == problems.end())
    it = problems.emplace(kind, make(kind)).first;
  return it->second;
}

const model::model_kind kinds[] = {model::model_kind::logistic, model::model_kind::linear,
                                   model::model_kind::svm, model::model_kind::softmax};

/// The floor: the same fused pass (chunks of 64 rows: scores by one gather per non-zero, the
/// model's own residuals, curvature and curvature products from kernels.hpp, then the scatter into
/// gradient entries kept next to the coefficients), summing in plain double. What it lacks is only
/// what exact sums add: the grid, the rounding and the integers.
double floor_pass(const problem& p, bool product, const std::vector<model::curvature>& kept) {
  const auto x = p.data.sparse();
  const auto k = p.shape.outputs;
  const auto d = p.shape.features;
  std::vector<double> lines(static_cast<std::size_t>(2 * k * d));
  const Eigen::VectorXd& w = product ? p.v : p.theta;
  for (std::int64_t j = 0; j < d; ++j)
    for (std::int64_t o = 0; o < k; ++o)
      lines[static_cast<std::size_t>(2 * k * j + o)] = w[o * d + j];
  const auto* starts = x.outerIndexPtr();
  const auto* index = x.innerIndexPtr();
  const auto* value = x.valuePtr();
  const auto last = static_cast<std::int32_t>(x.nonZeros());
  double loss = 0;
  Eigen::MatrixXd zt;
  Eigen::MatrixXd rt;
  Eigen::MatrixXd ct;
  Eigen::VectorXd y;
  for (std::size_t b = 0; b < p.blocks.size(); ++b) {
    const model::row_selection block = p.blocks[b];
    model::detail::for_each_chunk(block, [&](const model::detail::chunk& c) {
      zt.resize(k, c.count);
      for (std::int64_t i = 0; i < c.count; ++i) {
        double* zi = zt.col(i).data();
        std::fill(zi, zi + k, 0.0);
        for (auto q = starts[c.row(i)]; q < starts[c.row(i) + 1]; ++q) {
          if (q < last - 32)
            for (std::int64_t at = 0; at < 16 * k; at += 64)
              __builtin_prefetch(reinterpret_cast<const char*>(&lines[static_cast<std::size_t>(2 * k * index[q + 32])]) + at, 1);
          const double* l = &lines[static_cast<std::size_t>(2 * k * index[q])];
          for (std::int64_t o = 0; o < k; ++o)
            zi[o] += value[q] * l[o];
        }
      }
      rt.resize(k, c.count);
      if (product) {
        if (kept[b].d.size() > 0)
          ct = kept[b].d.middleCols(c.first, c.count);
        model::detail::chunk_curvature_product(p.shape.kind, ct, zt, rt);
      } else {
        model::detail::gather_labels(p.data, c, y);
        loss += model::detail::chunk_loss(p.shape.kind, zt, y, rt, &ct);
      }
      for (std::int64_t i = 0; i < c.count; ++i) {
        const double* r = rt.col(i).data();
        for (auto q = starts[c.row(i)]; q < starts[c.row(i) + 1]; ++q) {
          double* g = &lines[static_cast<std::size_t>(2 * k * index[q] + k)];
          for (std::int64_t o = 0; o < k; ++o)
            g[o] += value[q] * r[o];
        }
      }
    }, 64);
  }
  double sum = loss;
  for (std::int64_t j = 0; j < d; j += 4099)
    sum += lines[static_cast<std::size_t>(2 * k * j + k)];
  return sum;
}

/// The curvature an evaluation keeps, for the floor's products.
const std::vector<model::curvature>& kept_curvature(const problem& p) {
  static std::map<const problem*, std::vector<model::curvature>> kept;
  auto& out = kept[&p];
  if (out.empty())
    for (const auto& block : p.blocks)
      out.push_back(model::curvature_at(p.shape, p.data, block, p.theta));
  return out;
}

/// A shard holding all of a problem's rows, as the shard actor evaluates them (one per problem).
model::block_evaluator& evaluator_of(const problem& p) {
  static std::map<const problem*, std::unique_ptr<model::block_evaluator>> made;
  auto& out = made[&p];
  if (!out)
    out = std::make_unique<model::block_evaluator>(
      p.shape, std::shared_ptr<const model::dataset>(&p.data, [](const model::dataset*) {}),
      model::row_range{0, p.data.rows()}, p.block_rows);
  return *out;
}

void BM_exact_eval(benchmark::State& state) {
  auto& p = get(kinds[state.range(0)]);
  auto& evaluator = evaluator_of(p);
  const model::grid_plan plan{p.shape, p.bounds};
  std::vector<double> losses;
  std::uint64_t tag = 0;
  for (auto _ : state) {
    const auto grad = evaluator.loss_grad(p.theta, plan.gradient(p.theta), losses, ++tag);
    benchmark::DoNotOptimize(grad.words.data());
  }
  state.counters["ns_per_nnz"] = benchmark::Counter(static_cast<double>(rows * per_row),
                                                    benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_exact_product(benchmark::State& state) {
  auto& p = get(kinds[state.range(0)]);
  auto& evaluator = evaluator_of(p);
  const model::grid_plan plan{p.shape, p.bounds};
  std::vector<double> losses;
  evaluator.loss_grad(p.theta, plan.gradient(p.theta), losses, 0);
  for (auto _ : state) {
    const auto hv = evaluator.hessian_vector(p.v, plan.hessian_vector(p.v));
    benchmark::DoNotOptimize(hv.words.data());
  }
  state.counters["ns_per_nnz"] = benchmark::Counter(static_cast<double>(rows * per_row),
                                                    benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_floor_eval(benchmark::State& state) {
  auto& p = get(kinds[state.range(0)]);
  const std::vector<model::curvature> none;
  for (auto _ : state)
    benchmark::DoNotOptimize(floor_pass(p, false, none));
  state.counters["ns_per_nnz"] = benchmark::Counter(static_cast<double>(rows * per_row),
                                                    benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_floor_product(benchmark::State& state) {
  auto& p = get(kinds[state.range(0)]);
  const auto& kept = kept_curvature(p);
  for (auto _ : state)
    benchmark::DoNotOptimize(floor_pass(p, true, kept));
  state.counters["ns_per_nnz"] = benchmark::Counter(static_cast<double>(rows * per_row),
                                                    benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_exact_eval)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_floor_eval)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_exact_product)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_floor_product)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Repetitions(5);

/// Keeps each benchmark's median time per iteration.
class median_reporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs)
      if (run.aggregate_name == "median") {
        auto name = run.run_name.str();  // "BM_x/3/repeats:5"
        name = name.substr(0, name.find("/repeats:"));
        seconds[name] = run.GetAdjustedRealTime() * 1e-3;  // ms -> s
      }
  }
  std::map<std::string, double> seconds;
};

} // namespace

int main(int argc, char** argv) {
  std::string out = "bench/results/kernels.json";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--out=", 0) == 0)
      out = arg.substr(6);
    else
      rest.push_back(argv[i]);
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  median_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double nnz = static_cast<double>(rows * per_row);
  const char* names[] = {"logistic", "linear", "svm", "softmax (10)"};
  nlohmann::json table = nlohmann::json::array();
  std::printf("\n%-14s %-10s %12s %12s %12s\n", "model", "pass", "exact ns/nnz", "floor ns/nnz", "exact cost");
  for (int m = 0; m < 4; ++m)
    for (const char* pass : {"eval", "product"}) {
      const auto key = [&](const char* what) {
        return std::string{"BM_"} + what + "_" + pass + "/" + std::to_string(m);
      };
      const double exact = reporter.seconds[key("exact")] / nnz * 1e9;
      const double floor = reporter.seconds[key("floor")] / nnz * 1e9;
      std::printf("%-14s %-10s %12.2f %12.2f %11.1f%%\n", names[m], pass, exact, floor, (exact / floor - 1) * 100);
      table.push_back({{"model", names[m]}, {"pass", pass}, {"exact_ns_per_nnz", exact},
                       {"floor_ns_per_nnz", floor}, {"exact_cost_percent", (exact / floor - 1) * 100}});
    }
  std::ofstream{out} << table.dump(2) << '\n';
  std::printf("written to %s\n", out.c_str());
  return 0;
}
