// Trust-region Newton-CG: known optima (a quadratic's solve, Rosenbrock through negative curvature,
// regularised least squares' normal equations), the same minimum as L-BFGS on logistic and softmax
// problems, and every stop reason. Passes against L-BFGS on real data: tests/apps, bench/.

#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"

#include "support/rosenbrock.hpp"

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <cmath>
#include <memory>
#include <random>
#include <string>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

using shardopt::test::rosenbrock;

/// f = 0.5 x'Ax - b'x with A symmetric positive definite: minimum at A^{-1} b.
struct quadratic {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
  std::int64_t dimension() const { return b.size(); }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    grad = a * x - b;
    return 0.5 * x.dot(a * x) - b.dot(x);
  }
  void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) { hv = a * v; }
};

quadratic random_quadratic(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<double> normal;
  Eigen::MatrixXd m(n, n);
  for (auto& value : m.reshaped())
    value = normal(rng);
  quadratic q;
  q.a = m * m.transpose() + Eigen::MatrixXd::Identity(n, n);
  q.b.resize(n);
  for (auto& value : q.b)
    value = normal(rng);
  return q;
}

/// A random logistic or softmax problem as a local objective over 3 blocks.
model::local_objective linear_problem(model::model_kind kind, std::int64_t outputs, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> normal;
  const std::int64_t n = 500;
  const std::int64_t d = 12;
  auto data = std::make_shared<model::dataset>();
  model::dense_features x(n, d);
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double score = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      x(i, j) = normal(rng);
      score += (j % 3 - 1) * x(i, j);
    }
    const double noisy = score + normal(rng);
    if (outputs == 1)
      data->y(i) = noisy > 0 ? 1.0 : -1.0;
    else
      data->y(i) = noisy < -0.7 ? 0.0 : noisy < 0.7 ? 1.0 : 2.0;
  }
  data->x = std::move(x);
  return model::local_objective{model::model_shape{kind, d, outputs}, data, 1e-3,
                                std::vector<model::row_range>{{0, 170}, {170, 333}, {333, 500}}};
}

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
    CHECK((x_newton - x_lbfgs).norm() <= 1e-7 * x_lbfgs.norm());
  }
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
    CHECK(run.message.find("no further reduction") != std::string::npos);
  }
}

TEST_CASE("after a rejected step Newton-CG replays the iterate's products: the same steps, one pass per rejection") {
  // Both objectives answer products at their last evaluated point, as shards do: a product asked
  // after a trial without evaluating the iterate again would take other steps.
  struct trace {
    opt::run_result run;
    Eigen::VectorXd x;
    std::vector<opt::iteration_info> iterations;
  };
  const auto solve = [](auto f, Eigen::VectorXd x, std::int64_t replay_bytes, int pairs) {
    opt::newton_options options;
    options.epsilon = 1e-9;
    options.replay_bytes = replay_bytes;
    options.preconditioner_pairs = pairs;
    trace t;
    t.run = *opt::minimize_newton(f, x, options, [&](const opt::iteration_info& info) {
      t.iterations.push_back(info);
      return true;
    });
    t.x = x;
    return t;
  };
  const auto check = [&](const auto& make, const Eigen::VectorXd& start, int pairs) {
    const auto n = start.size();
    const std::int64_t one_product = n * std::int64_t{sizeof(double)};
    const trace asked = solve(make(), start, 0, pairs);
    const trace replayed = solve(make(), start, std::int64_t{256} << 20, pairs);
    const trace partly = solve(make(), start, one_product, pairs);  // replays one, asks the rest
    REQUIRE(asked.run.reason == opt::stop_reason::converged);
    // Without replay a rejection costs its trial and an evaluation of the iterate again.
    int rejections = 0;
    int previous = 1;
    for (const auto& info : asked.iterations) {
      rejections += (info.evaluations - previous - 1) / 2;
      previous = info.evaluations;
    }
    REQUIRE(rejections >= 1);  // else this test checks nothing
    for (const trace* t : {&replayed, &partly}) {
      CHECK(t->run.reason == asked.run.reason);
      CHECK(t->run.f == asked.run.f);
      CHECK(t->x == asked.x);
      REQUIRE(t->iterations.size() == asked.iterations.size());
      for (std::size_t i = 0; i < asked.iterations.size(); ++i) {
        CHECK(t->iterations[i].f == asked.iterations[i].f);
        CHECK(t->iterations[i].step == asked.iterations[i].step);
      }
    }
    INFO(rejections << " rejections; products asked " << asked.run.products << ", replayed "
                    << replayed.run.products << ", partly " << partly.run.products);
    CHECK(replayed.run.evaluations == asked.run.evaluations - rejections);
    CHECK(replayed.run.products < asked.run.products);
    CHECK(partly.run.products > replayed.run.products);
    CHECK(partly.run.products < asked.run.products);
  };
  SUBCASE("Rosenbrock from (-1.2, 1), unpreconditioned") {
    // (Preconditioned, its repeated solves in two dimensions end after the first product.)
    Eigen::VectorXd start(2);
    start << -1.2, 1;
    check([] { return rosenbrock{}; }, start, 0);
  }
  SUBCASE("logistic regression from theta = 3 (its products use the curvature of the last evaluation)") {
    const auto probe = linear_problem(model::model_kind::logistic, 1, 46);
    const auto make = [] { return linear_problem(model::model_kind::logistic, 1, 46); };
    const Eigen::VectorXd start = Eigen::VectorXd::Constant(probe.dimension(), 3.0);
    SUBCASE("unpreconditioned") { check(make, start, 0); }
    SUBCASE("preconditioned: the preconditioner changes only with the iterate") { check(make, start, 20); }
  }
}

TEST_CASE("Newton-CG takes the same steps on f and on 1e-6 f: its first radius is the first step's length, not ||grad||") {
  // A mean of losses is smaller than their sum by the number of examples; TRON's first radius,
  // ||grad||, would shrink with it and cost one iteration per factor 4 of growth back.
  struct scaled {
    quadratic inner;
    double by = 1;
    std::int64_t dimension() const { return inner.dimension(); }
    double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
      const double f = inner.evaluate(x, grad);
      grad *= by;
      return by * f;
    }
    void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
      inner.hessian_vector(v, hv);
      hv *= by;
    }
  };
  const auto q = random_quadratic(40, 5);
  std::vector<opt::run_result> runs;
  std::vector<Eigen::VectorXd> minima;
  for (const double by : {1.0, 1e-6}) {
    scaled f{q, by};
    Eigen::VectorXd x = Eigen::VectorXd::Constant(40, 3.0);
    opt::newton_options options;
    options.epsilon = 1e-8 * by;
    // Unpreconditioned: scaling f rounds the preconditioner's pairs differently, and a CG solve
    // that ends at its tolerance's edge may then take one product more.
    options.preconditioner_pairs = 0;
    runs.push_back(*opt::minimize_newton(f, x, options));
    minima.push_back(x);
    CHECK(runs.back().reason == opt::stop_reason::converged);
  }
  CHECK(runs[1].iterations == runs[0].iterations);
  CHECK(runs[1].evaluations == runs[0].evaluations);
  CHECK(runs[1].products == runs[0].products);
  const Eigen::VectorXd exact = q.a.ldlt().solve(q.b);
  for (const auto& x : minima)
    CHECK((x - exact).norm() <= 1e-6 * exact.norm());
}

TEST_CASE("Newton-CG ends, with a stop reason, where the first unbounded solve would step past a double's range") {
  // f = 1e-310 x0^2 / 2 - x0 + x1^2 / 2: the curvature along the first direction is subnormal,
  // so the unbounded CG step rr / curvature overflows (the minimum is at x0 = 1e310).
  struct flat {
    int evaluations = 0;
    std::int64_t dimension() const { return 2; }
    double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
      ++evaluations;
      grad.resize(2);
      grad << 1e-310 * x[0] - 1, x[1];
      return 0.5e-310 * x[0] * x[0] - x[0] + 0.5 * x[1] * x[1];
    }
    void hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
      hv.resize(2);
      hv << 1e-310 * v[0], v[1];
    }
  };
  flat f;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  opt::newton_options options;
  options.max_iterations = 30;
  const auto run = *opt::minimize_newton(f, x, options);
  INFO(run.message);
  CHECK(run.reason != opt::stop_reason::evaluation_failed);
  CHECK(f.evaluations <= 2 * 30 + 2);
  CHECK(x.allFinite());
  CHECK(x[0] >= 1.0);  // it went downhill, along x0
  CHECK(run.f <= -1.0);
}

TEST_CASE("preconditioned by the previous solve's pairs, Newton-CG reaches the same minimum with fewer products") {
  // Ill-conditioned problems, where CG needs many products a solve: a quadratic whose Hessian has
  // eigenvalues from 1 to 1e4 (then the previous solve's pairs are the Hessian's own), and a
  // logistic regression whose features span four orders of magnitude (its Hessian changes).
  const auto compare = [](auto make, const Eigen::VectorXd& start, double mu, double epsilon,
                          double at_most) {
    std::vector<opt::run_result> runs;
    std::vector<Eigen::VectorXd> minima;
    for (const int pairs : {0, 20}) {
      auto f = make();
      Eigen::VectorXd x = start;
      opt::newton_options options;
      options.epsilon = epsilon;
      options.preconditioner_pairs = pairs;
      runs.push_back(*opt::minimize_newton(f, x, options));
      minima.push_back(x);
      INFO(pairs << " pairs: " << runs.back().message);
      REQUIRE(runs.back().reason == opt::stop_reason::converged);
    }
    INFO("products " << runs[0].products << " unpreconditioned, " << runs[1].products
                     << " preconditioned; iterations " << runs[0].iterations << ", "
                     << runs[1].iterations);
    // Both ends are within what strong convexity (modulus mu) allows of the one minimum; with no
    // known modulus (mu = 0), the same objective to 1e-10 relative.
    const double g0 = runs[0].grad_norm;
    const double g1 = runs[1].grad_norm;
    if (mu > 0) {
      CHECK((minima[1] - minima[0]).norm() <= (g0 + g1) / mu);
      CHECK(std::abs(runs[1].f - runs[0].f)
            <= std::max(g0, g1) * std::max(g0, g1) / (2 * mu) + 1e-12 * std::max(1.0, std::abs(runs[0].f)));
    } else {
      CHECK(std::abs(runs[1].f - runs[0].f) <= 1e-10 * std::max(1.0, std::abs(runs[0].f)));
    }
    CHECK(runs[1].products <= at_most * runs[0].products);
    return runs;
  };
  SUBCASE("a quadratic, eigenvalues 1 to 1e4") {
    const std::int64_t n = 200;
    std::mt19937_64 rng{7};
    std::normal_distribution<double> normal;
    Eigen::MatrixXd m(n, n);
    for (auto& value : m.reshaped())
      value = normal(rng);
    const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(m).householderQ();
    Eigen::VectorXd eigenvalues(n);
    for (std::int64_t i = 0; i < n; ++i)
      eigenvalues[i] = std::pow(1e4, static_cast<double>(i) / static_cast<double>(n - 1));
    quadratic problem;
    problem.a = q * eigenvalues.asDiagonal() * q.transpose();
    problem.b = Eigen::VectorXd::NullaryExpr(n, [&] { return normal(rng); });
    compare([&] { return problem; }, Eigen::VectorXd::Zero(n), 1.0, 1e-10, 0.95);
  }
  SUBCASE("logistic regression, feature scales 1 to 1e3") {
    const std::int64_t rows = 600;
    const std::int64_t d = 40;
    std::mt19937_64 rng{12};
    std::normal_distribution<float> normal;
    auto data = std::make_shared<model::dataset>();
    model::dense_features x(rows, d);
    data->y.resize(rows);
    for (std::int64_t i = 0; i < rows; ++i) {
      double score = 0;
      for (std::int64_t j = 0; j < d; ++j) {
        const double scale = std::pow(1e3, static_cast<double>(j) / static_cast<double>(d - 1));
        x(i, j) = static_cast<float>(scale * normal(rng));
        score += (j % 3 - 1) * x(i, j) / scale;
      }
      data->y(i) = score + normal(rng) > 0 ? 1.0 : -1.0;
    }
    data->x = std::move(x);
    const auto make = [&] {
      return model::local_objective{model::model_shape{model::model_kind::logistic, d, 1}, data, 1e-3,
                                    std::vector<model::row_range>{{0, 200}, {200, 600}}};
    };
    // Its bias is not regularised, so lambda is no modulus of the whole.
    compare(make, Eigen::VectorXd::Zero(make().dimension()), 0.0, 1e-6, 0.5);
  }
}
