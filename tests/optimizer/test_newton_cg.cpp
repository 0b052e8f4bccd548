// Trust-region Newton-CG: known optima (a quadratic's solve, Rosenbrock through negative curvature,
// regularised least squares' normal equations), the same minimum as L-BFGS on logistic and softmax
// problems, and every stop reason. Passes against L-BFGS on real data: tests/apps, bench/.

#include "model/local_objective.hpp"
#include "optimizer/held_at_zero.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/owlqn.hpp"

#include "support/newton_problems.hpp"
#include "support/rosenbrock.hpp"

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

using shardopt::test::linear_problem;
using shardopt::test::quadratic;
using shardopt::test::random_quadratic;
using shardopt::test::rosenbrock;

/// Fails its `fail_at`-th evaluation or product (a shard lost for good).
struct failing {
  quadratic inner;
  int fail_evaluation = 0;
  int fail_product = 0;
  int evaluations = 0;
  int products = 0;
  std::int64_t dimension() const { return inner.dimension(); }
  shardopt::result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    if (++evaluations == fail_evaluation)
      return shardopt::fail_runtime("shard 1 of 3: went down");
    return inner.evaluate(x, grad);
  }
  shardopt::result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (++products == fail_product)
      return shardopt::fail_runtime("shard 2 of 3: no reply to the product within 10 ms");
    inner.hessian_vector(v, hv);
    return {};
  }
};

static_assert(opt::has_hessian_vector<quadratic>::value);
static_assert(opt::has_hessian_vector<failing>::value);
static_assert(opt::has_hessian_vector<model::local_objective>::value);
struct first_order_only {
  std::int64_t dimension() const { return 1; }
  double evaluate(const Eigen::VectorXd&, Eigen::VectorXd&) { return 0; }
};
static_assert(!opt::has_hessian_vector<first_order_only>::value);

} // namespace

TEST_CASE("Newton-CG solves a positive-definite quadratic: the minimum is A^{-1} b") {
  auto q = random_quadratic(30, 11);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(30);
  opt::newton_options options;
  options.epsilon = 1e-10;
  options.cg_tolerance = 1e-6;
  const auto run = *opt::minimize_newton(q, x, options);
  CHECK(run.reason == opt::stop_reason::converged);
  const Eigen::VectorXd exact = q.a.ldlt().solve(q.b);
  CHECK((x - exact).norm() <= 1e-9 * exact.norm());
  CHECK(run.products > 0);
  CHECK(run.grad_norm <= 1e-10);
}

TEST_CASE("Newton-CG reaches the minimum of Rosenbrock from (-1.2, 1) through negative curvature") {
  rosenbrock f;
  Eigen::VectorXd x(2);
  x << -1.2, 1;
  opt::newton_options options;
  options.epsilon = 1e-9;
  const auto run = *opt::minimize_newton(f, x, options);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK(std::abs(x[0] - 1) < 1e-8);
  CHECK(std::abs(x[1] - 1) < 1e-8);
  CHECK(run.f < 1e-15);
}

TEST_CASE("Newton-CG and L-BFGS reach the same minimum of logistic and softmax problems") {
  for (const auto& [kind, outputs] : {std::pair{model::model_kind::logistic, std::int64_t{1}},
                                      std::pair{model::model_kind::softmax, std::int64_t{3}}}) {
    INFO(model::to_string(kind));
    auto newton_f = linear_problem(kind, outputs, 21);
    auto lbfgs_f = linear_problem(kind, outputs, 21);
    const auto n = newton_f.dimension();
    Eigen::VectorXd x_newton = Eigen::VectorXd::Zero(n);
    Eigen::VectorXd x_lbfgs = Eigen::VectorXd::Zero(n);
    opt::newton_options newton_options;
    newton_options.epsilon = 1e-10;
    opt::lbfgs_options lbfgs_options;
    lbfgs_options.epsilon = 1e-10;
    const auto newton = *opt::minimize_newton(newton_f, x_newton, newton_options);
    const auto lbfgs = *opt::minimize(lbfgs_f, x_lbfgs, lbfgs_options);
    INFO("newton: " << newton.evaluations << " evaluations + " << newton.products << " products; lbfgs "
                    << lbfgs.evaluations << " evaluations");
    CHECK(newton.reason == opt::stop_reason::converged);
    CHECK(std::abs(newton.f - lbfgs.f) <= 1e-12 * std::abs(lbfgs.f));
    // Softmax's biases are free up to a common shift (the classes' scores move together): both
    // minima are compared with their biases centred.
    const auto centred = [&](Eigen::VectorXd x) {
      auto biases = x.tail(outputs);
      biases.array() -= biases.mean();
      return x;
    };
    CHECK((centred(x_newton) - centred(x_lbfgs)).norm() <= 1e-7 * x_lbfgs.norm());
  }
}

TEST_CASE("held_at_zero: every solver minimises over the free entries and leaves the held ones at 0") {
  // A quadratic with entries 0, 7 and 29 held: the minimum solves A_ff x_f = b_f.
  auto q = random_quadratic(30, 5);
  const std::vector<Eigen::Index> held{0, 7, 29};
  std::vector<Eigen::Index> free;
  for (Eigen::Index i = 0; i < 30; ++i)
    if (std::find(held.begin(), held.end(), i) == held.end())
      free.push_back(i);
  const Eigen::MatrixXd a_free = q.a(free, free);
  const Eigen::VectorXd b_free = q.b(free);
  const Eigen::VectorXd exact_free = a_free.ldlt().solve(b_free);
  const auto check_solution = [&](const Eigen::VectorXd& x, double tolerance) {
    for (const auto i : held)
      CHECK(x[i] == 0.0);
    const Eigen::VectorXd x_free = x(free);
    CHECK((x_free - exact_free).norm() <= tolerance * exact_free.norm());
  };
  for (const auto step : {opt::newton_step::trust_region, opt::newton_step::line_search}) {
    opt::held_at_zero restricted{q, held};
    Eigen::VectorXd x = Eigen::VectorXd::Ones(30);
    restricted.clear(x);
    opt::newton_options options;
    options.epsilon = 1e-10;
    options.cg_tolerance = 1e-6;
    options.step = step;
    const auto run = *opt::minimize_newton(restricted, x, options);
    CHECK(run.reason == opt::stop_reason::converged);
    check_solution(x, 1e-9);
  }
  {
    opt::held_at_zero restricted{q, held};
    Eigen::VectorXd x = Eigen::VectorXd::Zero(30);
    opt::lbfgs_options options;
    options.epsilon = 1e-8;
    const auto lbfgs = *opt::minimize(restricted, x, options);
    INFO(lbfgs.message, " at |g| ", lbfgs.grad_norm, " after ", lbfgs.iterations);
    // (L-BFGS's Wolfe search meets this quadratic's rounding near |g| 1e-7: either stop will do.)
    REQUIRE((lbfgs.reason == opt::stop_reason::converged || lbfgs.reason == opt::stop_reason::line_search_failed));
    check_solution(x, 1e-6);
    // OWL-QN with an L1 weight on the free entries only (held ones are unpenalised, as biases).
    Eigen::VectorXd l1 = Eigen::VectorXd::Constant(30, 1e-14);
    for (const auto i : held)
      l1[i] = 0;
    x.setZero();
    REQUIRE(opt::minimize_owlqn(restricted, x, options, l1)->f < 0);
    check_solution(x, 1e-6);
  }
  // A logistic problem through its diagonal and line values (the line-search path LIBLINEAR takes):
  // the bias held, the weights at the minimum of the problem without it.
  auto logistic = linear_problem(model::model_kind::logistic, 1, 21);
  const Eigen::Index bias = logistic.dimension() - 1;
  opt::held_at_zero without_bias{logistic, {bias}};
  static_assert(opt::has_diagonal<decltype(without_bias)>::value);
  static_assert(opt::has_line_values<decltype(without_bias)>::value);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(logistic.dimension());
  opt::newton_options options;
  options.epsilon = 1e-10;
  options.step = opt::newton_step::line_search;
  const auto run = *opt::minimize_newton(without_bias, x, options);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK(x[bias] == 0.0);
  Eigen::VectorXd grad;
  logistic.evaluate(x, grad);
  CHECK(grad.head(bias).norm() <= 1e-9);
  CHECK(std::abs(grad[bias]) > 1e-6);  // the bias would have moved: its problem was a different one
}

TEST_CASE("regularised least squares through Newton-CG reaches the normal equations' solution") {
  std::mt19937_64 rng{31};
  std::normal_distribution<float> normal;
  auto data = std::make_shared<model::dataset>();
  model::dense_features x(200, 5);
  data->y.resize(200);
  for (std::int64_t i = 0; i < 200; ++i) {
    for (std::int64_t j = 0; j < 5; ++j)
      x(i, j) = normal(rng);
    data->y(i) = x(i, 0) - 2 * x(i, 3) + 0.5 + 0.1 * normal(rng);
  }
  const Eigen::MatrixXd features = x.cast<double>();
  data->x = std::move(x);
  const double lambda = 0.05;
  model::local_objective f{model::model_shape{model::model_kind::linear, 5, 1}, data, lambda, {}};
  // Normal equations of (1/2n)||Xw + b - y||^2 + (lambda/2)||w||^2 over [w; b].
  Eigen::MatrixXd a(200, 6);
  a << features, Eigen::VectorXd::Ones(200);
  Eigen::MatrixXd normal_matrix = a.transpose() * a / 200.0;
  normal_matrix.topLeftCorner(5, 5) += lambda * Eigen::MatrixXd::Identity(5, 5);
  const Eigen::VectorXd exact = normal_matrix.ldlt().solve(a.transpose() * data->y / 200.0);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(6);
  opt::newton_options options;
  options.epsilon = 1e-12;
  const auto run = *opt::minimize_newton(f, theta, options);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK((theta - exact).norm() <= 1e-10 * exact.norm());
}

TEST_CASE("every Newton-CG run ends with a stop reason, and theta is the last accepted iterate") {
  opt::newton_options options;
  options.epsilon = 1e-12;
  SUBCASE("max_iterations") {
    auto f = linear_problem(model::model_kind::softmax, 3, 41);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    options.max_iterations = 2;
    const auto run = *opt::minimize_newton(f, x, options);
    CHECK(run.reason == opt::stop_reason::max_iterations);
    CHECK(run.iterations == 2);
    Eigen::VectorXd grad;
    CHECK(f.evaluate(x, grad) == run.f);  // theta is the iterate the result reports
  }
  SUBCASE("stopped_by_hook, after the hook saw increasing counts") {
    auto f = linear_problem(model::model_kind::logistic, 1, 42);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    int seen = 0;
    int last_passes = 0;
    const auto run = *opt::minimize_newton(f, x, options, [&](const opt::iteration_info& info) {
      CHECK(info.iteration == seen + 1);
      CHECK(info.evaluations + info.products > last_passes);
      CHECK(info.step > 0);
      last_passes = info.evaluations + info.products;
      return ++seen < 3;
    });
    CHECK(run.reason == opt::stop_reason::stopped_by_hook);
    CHECK(run.iterations == 3);
  }
  SUBCASE("objective_converged") {
    auto f = linear_problem(model::model_kind::softmax, 3, 43);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    options.past = 1;
    options.delta = 1e-3;
    const auto run = *opt::minimize_newton(f, x, options);
    CHECK(run.reason == opt::stop_reason::objective_converged);
  }
  SUBCASE("evaluation_failed: an evaluation, then a product, fails; theta stays the last accepted") {
    for (const bool in_product : {false, true}) {
      failing f{random_quadratic(8, 44)};
      if (in_product)
        f.fail_product = 4;
      else
        f.fail_evaluation = 3;
      Eigen::VectorXd x = Eigen::VectorXd::Zero(8);
      const auto run = *opt::minimize_newton(f, x, options);
      CHECK(run.reason == opt::stop_reason::evaluation_failed);
      CHECK(run.message.find(in_product ? "no reply to the product" : "went down") != std::string::npos);
      Eigen::VectorXd grad;
      CHECK(f.inner.evaluate(x, grad) == run.f);
    }
  }
  SUBCASE("evaluation_failed: a non-finite start; invalid options are no run, by name") {
    rosenbrock f;
    Eigen::VectorXd x = Eigen::VectorXd::Constant(2, std::nan(""));
    CHECK(opt::minimize_newton(f, x, options)->reason == opt::stop_reason::evaluation_failed);
    x.setZero();
    options.cg_tolerance = 1.5;
    const auto run = opt::minimize_newton(f, x, options);
    REQUIRE_FALSE(run.ok());
    CHECK(run.error().kind() == shardopt::failure_kind::invalid);
    CHECK(run.error().message().find("cg_tolerance") != std::string::npos);
  }
  SUBCASE("line_search_failed: no reduction is possible below machine precision") {
    auto f = linear_problem(model::model_kind::logistic, 1, 45);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    options.epsilon = 0;
    const auto run = *opt::minimize_newton(f, x, options);
    CHECK(run.reason == opt::stop_reason::line_search_failed);
    CHECK((run.message.find("no further reduction") != std::string::npos
           || run.message.find("lowers the objective enough") != std::string::npos));
  }
}
