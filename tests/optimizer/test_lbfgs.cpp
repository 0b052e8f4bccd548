// L-BFGS / L-BFGS-B through the adapter: known optima, bounds, every stop reason.

#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"
#include "support/rosenbrock.hpp"
#include "support/sessions.hpp"

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <cmath>
#include <random>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;
using shardopt::test::rosenbrock;

namespace {

/// f = 0.5 sum d_i (x_i - c_i)^2: separable, so the bounded optimum is clamp(c, lower, upper).
struct diagonal_quadratic {
  Eigen::VectorXd d;
  Eigen::VectorXd c;
  std::int64_t dimension() const { return d.size(); }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    grad = d.cwiseProduct(x - c);
    return 0.5 * (x - c).cwiseProduct(d).dot(x - c);
  }
};

/// An objective that fails on its `fail_at`-th evaluation (a dead shard, say).
struct failing_objective {
  rosenbrock inner;
  int fail_at = 5;
  int calls = 0;
  std::int64_t dimension() const { return inner.dimension(); }
  shardopt::result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    if (++calls == fail_at)
      return shardopt::fail_runtime("shard 2 of 4: peer went away");
    return inner.evaluate(x, grad);
  }
};

struct no_evaluate {
  std::int64_t dimension() const { return 1; }
};

} // namespace

static_assert(opt::has_evaluate<rosenbrock>::value && opt::has_dimension<rosenbrock>::value);
static_assert(opt::has_evaluate<failing_objective>::value);
static_assert(!opt::has_evaluate<no_evaluate>::value);
static_assert(opt::has_evaluate<model::local_objective>::value);

TEST_CASE("L-BFGS reaches the minimum of the 2-D Rosenbrock function from (-1.2, 1)") {
  rosenbrock f;
  Eigen::VectorXd x(2);
  x << -1.2, 1.0;
  opt::lbfgs_options options;
  options.epsilon = 1e-10;
  const auto run = *opt::minimize(f, x, options);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK(x[0] == doctest::Approx(1.0).epsilon(1e-8));
  CHECK(x[1] == doctest::Approx(1.0).epsilon(1e-8));
  CHECK(run.f < 1e-16);
  CHECK(run.iterations > 10);
  CHECK(run.evaluations >= run.iterations);
}

TEST_CASE("L-BFGS reaches the minimum of the 100-D extended Rosenbrock function") {
  rosenbrock f{100};
  Eigen::VectorXd x(100);
  for (int i = 0; i < 100; ++i)
    x[i] = i % 2 == 0 ? -1.2 : 1.0;
  opt::lbfgs_options options;
  options.epsilon = 1e-9;
  const auto run = *opt::minimize(f, x, options);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK((x - Eigen::VectorXd::Ones(100)).lpNorm<Eigen::Infinity>() < 1e-7);
}

TEST_CASE("L-BFGS-B reaches the clamped optimum of a bounded quadratic and respects the bounds") {
  const int n = 20;
  std::mt19937 rng{7};
  std::uniform_real_distribution<double> uniform(-3, 3);
  diagonal_quadratic f;
  f.d = Eigen::VectorXd::NullaryExpr(n, [&] { return 0.5 + std::abs(uniform(rng)); });
  f.c = Eigen::VectorXd::NullaryExpr(n, [&] { return uniform(rng); });
  opt::lbfgs_options options;
  options.epsilon = 1e-12;
  options.lower = Eigen::VectorXd::Constant(n, -1.0);
  options.upper = Eigen::VectorXd::Constant(n, 1.5);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  const auto run = *opt::minimize(f, x, options);
  INFO("stop: " << opt::to_string(run.reason) << " " << run.message);
  const Eigen::VectorXd expected = f.c.cwiseMax(-1.0).cwiseMin(1.5);
  CHECK((x - expected).lpNorm<Eigen::Infinity>() < 1e-9);
  CHECK(x.minCoeff() >= -1.0);
  CHECK(x.maxCoeff() <= 1.5);
  CHECK(run.reason == opt::stop_reason::converged);
}

TEST_CASE("L-BFGS-B on Rosenbrock with an active upper bound stays feasible") {
  rosenbrock f;
  Eigen::VectorXd x(2);
  x << -1.2, 0.5;
  opt::lbfgs_options options;
  options.epsilon = 1e-9;
  options.upper = Eigen::VectorXd::Constant(2, 0.5);
  options.lower = Eigen::VectorXd::Constant(2, -2.0);
  const auto run = *opt::minimize(f, x, options);
  INFO("stop: " << opt::to_string(run.reason) << " " << run.message);
  // For x0 <= 0.5, f >= (1 - x0)^2 >= 0.25, with equality only at x0 = 0.5, x1 = x0^2 = 0.25:
  // the bound on x0 is active, the one on x1 is not.
  CHECK(x[0] == doctest::Approx(0.5).epsilon(1e-7));
  CHECK(x[1] == doctest::Approx(0.25).epsilon(1e-7));
  CHECK(x.maxCoeff() <= 0.5);
}

TEST_CASE("every run ends with a stop reason") {
  opt::lbfgs_options options;
  Eigen::VectorXd x(2);

  SUBCASE("max_iterations") {
    rosenbrock f;
    x << -1.2, 1.0;
    options.max_iterations = 3;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::max_iterations);
    CHECK(run.iterations == 3);
  }
  SUBCASE("stopped_by_hook") {
    rosenbrock f;
    x << -1.2, 1.0;
    int seen = 0;
    const auto run = *opt::minimize(f, x, options, [&](const opt::iteration_info& info) {
      ++seen;
      CHECK(info.iteration == seen);
      CHECK(std::isfinite(info.f));
      return info.iteration < 2;
    });
    CHECK(run.reason == opt::stop_reason::stopped_by_hook);
    CHECK(run.iterations == 2);
    CHECK(seen == 2);
  }
  SUBCASE("evaluation_failed keeps the last accepted iterate and the message") {
    failing_objective f;
    x << -1.2, 1.0;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::evaluation_failed);
    CHECK(run.message == "shard 2 of 4: peer went away");
    CHECK(x.allFinite());
    Eigen::VectorXd g;
    CHECK(rosenbrock{}.evaluate(x, g) == doctest::Approx(run.f));
  }
  SUBCASE("a NaN objective at the start is an evaluation failure, not a crash") {
    struct nan_objective {
      std::int64_t dimension() const { return 2; }
      double evaluate(const Eigen::VectorXd&, Eigen::VectorXd& grad) {
        grad.setZero(2);
        return std::nan("");
      }
    } f;
    x << 0, 0;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::evaluation_failed);
    CHECK(run.message.find("not finite") != std::string::npos);
  }
  SUBCASE("objective_converged") {
    rosenbrock f;
    x << -1.2, 1.0;
    options.epsilon = 0;
    options.past = 1;
    options.delta = 1e-3;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::objective_converged);
  }
  SUBCASE("invalid options are reported") {
    rosenbrock f;
    x << 0, 0;
    options.wolfe = 2;
    const auto run = opt::minimize(f, x, options);
    REQUIRE_FALSE(run.ok());  // no run, and no stop reason: invalid before it starts
    CHECK(run.error().kind() == shardopt::failure_kind::invalid);
    CHECK(run.error().message().find("invalid L-BFGS options") != std::string::npos);
  }
  SUBCASE("line_search_failed: a gradient that points uphill leaves no acceptable step") {
    // f = |x|^2 reported with the gradient's sign flipped: every trial along the "descent"
    // direction raises f, so the search shrinks its interval to nothing and gives up.
    struct uphill {
      std::int64_t dimension() const { return 2; }
      double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
        grad = -2 * x;
        return x.squaredNorm();
      }
    } f;
    x << 1.0, -2.0;
    const Eigen::VectorXd start = x;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::line_search_failed);
    CHECK(run.message.find("strong Wolfe") != std::string::npos);
    CHECK(run.iterations == 0);
    CHECK(x == start);  // never a worse point than the start
  }
  SUBCASE("already optimal: converged with zero iterations") {
    rosenbrock f;
    x << 1, 1;
    const auto run = *opt::minimize(f, x, options);
    CHECK(run.reason == opt::stop_reason::converged);
    CHECK(run.iterations == 0);
  }
}

TEST_CASE("least squares through L-BFGS reaches the closed-form solution of the normal equations") {
  const std::uint32_t seed = 11;
  INFO("seed " << seed);
  std::mt19937 rng{seed};
  std::normal_distribution<double> normal;
  const int n = 300;
  const int d = 8;
  auto data = std::make_shared<model::dataset>();
  model::dense_features x(n, d);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j)
      x(i, j) = static_cast<float>(normal(rng));
  data->y.resize(n);
  for (int i = 0; i < n; ++i)
    data->y[i] = x.row(i).cast<double>().sum() * 0.3 + 2.0 + normal(rng);
  data->x = x;
  const double lambda = 0.05;
  const model::model_shape shape{model::model_kind::linear, d, 1};
  model::local_objective f{shape, data, lambda};

  // Normal equations of (1/2n)||A theta - y||^2 + (lambda/2)||w||^2 with A = [X 1].
  Eigen::MatrixXd a(n, d + 1);
  a.leftCols(d) = x.cast<double>();
  a.col(d).setOnes();
  Eigen::MatrixXd h = a.transpose() * a / n;
  h.diagonal().head(d).array() += lambda;
  const Eigen::VectorXd expected = h.ldlt().solve(a.transpose() * data->y / n);

  Eigen::VectorXd theta = Eigen::VectorXd::Zero(d + 1);
  opt::lbfgs_options options;
  options.epsilon = 1e-12;
  const auto run = *opt::minimize(f, theta, options);
  INFO("stop: " << opt::to_string(run.reason) << " " << run.message);
  CHECK((theta - expected).lpNorm<Eigen::Infinity>() < 1e-8);
}
