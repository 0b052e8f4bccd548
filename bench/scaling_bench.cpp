// Two cores over one, without actors: how much a second core gives a pass over a large sparse set
// on this machine. Issue 39 asks for 2 shards at 1.8x one on sets of 50 million non-zeros or more;
// this measures what a pass split in two halves of the same rows gains here, with no driver:
//   - the floor: a plain fused logistic pass (one gather per non-zero for the scores, one scatter
//     for the gradient into lines kept next to the weights, plain double sums), written here by
//     hand, on one thread over all rows and on two threads over a half each (each its own lines,
//     filled from the vector at the start of every pass, as a shard fills its records);
//   - shardopt's shard evaluator (model/block_evaluator: exact sums), the same way, for an
//     evaluation and a Hessian-vector product.
// The data are generated (uniform features, 40 non-zeros a row by default, 2.5 million rows x
// 2^22: the real-data suite's generated-2^22 set of 100 million non-zeros). Prints a table and
// writes JSON (--out FILE). Run: scripts/bench scaling [--rows N --log2-features K --per-row P].

#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "model/linear_model.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace shardopt;

struct options {
  std::int64_t rows = 2'500'000;
  int log2_features = 22;
  std::int64_t per_row = 40;
  int repeats = 5;
  std::string out = "bench/results/scaling.json";
};

std::shared_ptr<model::dataset> make(const options& o) {
  const std::int64_t features = std::int64_t{1} << o.log2_features;
  auto data = std::make_shared<model::dataset>();
  model::sparse_features x(o.rows, features);
  x.resizeNonZeros(o.rows * o.per_row);
  std::mt19937_64 rng{11};
  std::vector<int> columns(static_cast<std::size_t>(o.per_row));
  for (std::int64_t r = 0; r <= o.rows; ++r)
    x.outerIndexPtr()[r] = static_cast<int>(r * o.per_row);
  for (std::int64_t r = 0; r < o.rows; ++r) {
    for (auto& c : columns)
      c = static_cast<int>(rng() & static_cast<std::uint64_t>(features - 1));
    std::sort(columns.begin(), columns.end());
    for (std::size_t k = 1; k < columns.size(); ++k) // distinct and increasing; wraps are rare
      if (columns[k] <= columns[k - 1])
        columns[k] = columns[k - 1] + 1;
    if (columns.back() >= features) // pushed past the end: take the last ones from the top down
      for (std::size_t k = columns.size(); k-- > 0;)
        columns[k] = std::min<int>(columns[k], static_cast<int>(features) - static_cast<int>(columns.size() - k));
    for (std::int64_t k = 0; k < o.per_row; ++k) {
      x.innerIndexPtr()[r * o.per_row + k] = columns[static_cast<std::size_t>(k)];
      x.valuePtr()[r * o.per_row + k] = 1.0f;
    }
  }
  data->x = std::move(x);
  data->y.resize(o.rows);
  for (std::int64_t r = 0; r < o.rows; ++r)
    data->y[r] = rng() % 2 ? 1.0 : -1.0;
  return data;
}

/// The floor over rows [first, last): scores by one gather per non-zero
/// (prefetched 32 ahead), the logistic residual, and the scatter into gradient
/// entries beside the weights, in plain double. `product`: the same pass for a
/// Hessian-vector product with the curvature of the last evaluation.
double floor_pass(const model::dataset& data, model::row_range range, std::vector<double>& lines,
                  std::vector<double>& curvature, bool product) {
  const auto x = data.sparse();
  const auto* starts = x.outerIndexPtr();
  const auto* index = x.innerIndexPtr();
  const auto* value = x.valuePtr();
  const auto end = starts[range.end];
  double loss = 0;
  for (std::int64_t r = range.begin; r < range.end; ++r) {
    double z = 0;
    for (auto q = starts[r]; q < starts[r + 1]; ++q) {
      if (q + 32 < end)
        __builtin_prefetch(&lines[2 * static_cast<std::size_t>(index[q + 32])], 1);
      z += value[q] * lines[2 * static_cast<std::size_t>(index[q])];
    }
    double residual;
    auto& d = curvature[static_cast<std::size_t>(r - range.begin)];
    if (product) {
      residual = d * z;
    } else {
      const double yz = data.y[r] * z;
      const double p = 1 / (1 + std::exp(-yz));
      loss += -std::log(p);
      d = p * (1 - p);
      residual = -data.y[r] * (1 - p);
    }
    for (auto q = starts[r]; q < starts[r + 1]; ++q)
      lines[2 * static_cast<std::size_t>(index[q]) + 1] += value[q] * residual;
  }
  return loss;
}

/// The wall time of `pass(t)` for t < threads, each on its own thread at once.
double seconds(int threads, const std::function<void(int)>& pass) {
  const auto start = std::chrono::steady_clock::now();
  if (threads == 1) {
    pass(0);
  } else {
    std::thread other{[&] { pass(1); }};
    pass(0);
    other.join();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct paired_times {
  double one = 0;   // median seconds, one thread over all rows
  double two = 0;   // median seconds, two threads over a half each
  double ratio = 0; // median of the runs' one / two, each pair run back to back
};

/// `repeats` pairs of a one-core and a two-core run, back to back, the order alternating: this
/// machine's speed drifts by tens of percent over a minute, and a ratio of neighbours is steadier
/// than a ratio of medians (so the ratio need not equal the medians' quotient).
paired_times paired(int repeats, const std::function<void(int)>& one, const std::function<void(int)>& two) {
  std::vector<double> ones, twos, ratios;
  for (int i = 0; i < repeats; ++i) {
    if (i % 2 == 0) {
      ones.push_back(seconds(1, one));
      twos.push_back(seconds(2, two));
    } else {
      twos.push_back(seconds(2, two));
      ones.push_back(seconds(1, one));
    }
    ratios.push_back(ones.back() / twos.back());
  }
  return {median(ones), median(twos), median(ratios)};
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* name) -> const char* {
      if (arg == name && i + 1 < argc)
        return argv[++i];
      std::fprintf(stderr, "scaling_bench: unknown or incomplete option %s\n", arg.c_str());
      std::exit(2);
    };
    try {
      if (arg == "--rows")
        o.rows = std::stoll(value("--rows"));
      else if (arg == "--log2-features")
        o.log2_features = std::stoi(value("--log2-features"));
      else if (arg == "--per-row")
        o.per_row = std::stoll(value("--per-row"));
      else if (arg == "--repeats")
        o.repeats = std::stoi(value("--repeats"));
      else if (arg == "--out")
        o.out = value("--out");
      else
        value("");
    } catch (const std::logic_error&) { // stoll/stoi: not a number, or out of range
      std::fprintf(stderr, "scaling_bench: %s takes a number\n", arg.c_str());
      return 2;
    }
  }
  if (o.rows < 2 || o.log2_features < 6 || o.log2_features > 30 || o.per_row < 1 ||
      o.per_row > (std::int64_t{1} << o.log2_features) || o.rows * o.per_row > 2'000'000'000 || o.repeats < 1) {
    std::fprintf(stderr, "scaling_bench: rows >= 2, 6 <= log2-features <= 30, "
                         "1 <= per-row <= features, "
                         "rows x per-row < 2e9, repeats >= 1\n");
    return 2;
  }
  std::printf("generating %lld rows x 2^%d, %lld non-zeros a row...\n", static_cast<long long>(o.rows), o.log2_features,
              static_cast<long long>(o.per_row));
  const auto data = make(o);
  const auto features = std::int64_t{1} << o.log2_features;
  const model::model_shape shape{model::model_kind::logistic, features, 1};
  const double nnz = static_cast<double>(data->sparse().nonZeros());
  const model::row_range all{0, o.rows};
  const model::row_range halves[2] = {{0, o.rows / 2}, {o.rows / 2, o.rows}};

  std::mt19937_64 rng{5};
  std::normal_distribution<double> normal;
  const Eigen::VectorXd theta = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return 0.01 * normal(rng); });
  const Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(shape.dimension(), [&] { return normal(rng); });

  nlohmann::json table = nlohmann::json::array();
  std::printf("\n%-26s %10s %10s %12s %12s %14s\n", "pass", "1 core s", "2 cores s", "1 core ns/nnz", "2 cores ns/nnz",
              "2 cores over 1");
  std::printf("(medians of %d runs; the ratio is the median of back-to-back pairs, not the medians' quotient)\n",
              o.repeats);
  const auto report = [&](const char* name, const paired_times& t) {
    std::printf("%-26s %10.3f %10.3f %12.2f %12.2f %13.2fx\n", name, t.one, t.two, t.one / nnz * 1e9, t.two / nnz * 1e9,
                t.ratio);
    table.push_back({{"pass", name},
                     {"one_core_s", t.one},
                     {"two_cores_s", t.two},
                     {"one_core_ns_per_nnz", t.one / nnz * 1e9},
                     {"two_cores_ns_per_nnz", t.two / nnz * 1e9},
                     {"two_over_one", t.ratio}});
  };

  { // The floor: each run its own lines (weights and gradient side by side) and curvature.
    const auto fill = [&](std::vector<double>& lines, const Eigen::VectorXd& w) {
      lines.assign(2 * static_cast<std::size_t>(features), 0.0);
      for (std::int64_t j = 0; j < features; ++j)
        lines[2 * static_cast<std::size_t>(j)] = w[j];
    };
    std::vector<double> lines[3];      // [0]: one thread; [1], [2]: the halves
    std::vector<double> curvature[3];  // each run's own, from its last evaluation
    const auto pass = [&](bool product, int threads) {
      return [&, product, threads](int t) {
        const auto range = threads == 1 ? all : halves[t];
        const auto k = static_cast<std::size_t>(threads == 1 ? 0 : 1 + t);
        curvature[k].resize(static_cast<std::size_t>(range.size()));
        fill(lines[k], product ? v : theta);  // a pass starts from its vector, as a shard's does
        floor_pass(*data, range, lines[k], curvature[k], product);
      };
    };
    report("floor evaluation", paired(o.repeats, pass(false, 1), pass(false, 2)));
    report("floor product", paired(o.repeats, pass(true, 1), pass(true, 2)));
  }
  { // shardopt's evaluator: one over all rows, then one per half, each on its own thread.
    const auto bounds = model::bounds_of(*data, all, model::block_rows_for(o.rows));
    const model::grid_plan plan{shape, bounds};
    const auto gradient_grid = plan.gradient(theta);
    const auto product_grid = plan.hessian_vector(v);
    std::vector<model::block_evaluator> one;
    one.emplace_back(shape, data, all, model::block_rows_for(o.rows));
    std::vector<model::block_evaluator> two;
    for (const auto& half : halves)
      two.emplace_back(shape, data, half, model::block_rows_for(o.rows));
    std::vector<double> losses[2];
    std::uint64_t tags[2] = {0, 0}; // one counter a thread
    const auto pass = [&](std::vector<model::block_evaluator>& shards, bool product) {
      return [&, product](int t) {
        auto& shard = shards[static_cast<std::size_t>(t)];
        if (product)
          (void)shard.hessian_vector(v, product_grid);
        else
          (void)shard.loss_grad(theta, gradient_grid, losses[t], ++tags[t]);
      };
    };
    report("shardopt evaluation", paired(o.repeats, pass(one, false), pass(two, false)));
    report("shardopt product", paired(o.repeats, pass(one, true), pass(two, true)));
  }
  std::ofstream file{o.out};
  file << nlohmann::json{{"rows", o.rows},
                         {"log2_features", o.log2_features},
                         {"per_row", o.per_row},
                         {"non_zeros", nnz},
                         {"passes", table}}
              .dump(2)
       << '\n';
  if (!file) {
    std::fprintf(stderr, "scaling_bench: could not write %s\n", o.out.c_str());
    return 1;
  }
  std::printf("written to %s\n", o.out.c_str());
  return 0;
}
