// Newton-CG's trust-region step (optimizer/trust_region.hpp): after a rejected step it replays the
// iterate's products, it takes the same steps on f and on 1e-6 f, it stops where an unbounded
// solve would overflow, and preconditioned by the previous solve's pairs it needs fewer products
// for the same minimum.

#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"

#include "support/newton_problems.hpp"
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

using shardopt::test::linear_problem;
using shardopt::test::quadratic;
using shardopt::test::random_quadratic;
using shardopt::test::rosenbrock;

} // namespace

TEST_CASE("trust region: after a rejected step Newton-CG replays the iterate's products: the same steps, one pass per rejection") {
  // Both objectives answer products at their last evaluated point, as shards do: a product asked
  // after a trial without evaluating the iterate again would take other steps.
  struct trace {
    opt::run_result run;
    Eigen::VectorXd x;
    std::vector<opt::iteration_info> iterations;
  };
  const auto solve = [](auto f, Eigen::VectorXd x, std::int64_t replay_bytes, int pairs) {
    opt::newton_options options;
    options.step = opt::newton_step::trust_region;
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

TEST_CASE("trust region: Newton-CG takes the same steps on f and on 1e-6 f: its first radius is the first step's length, not ||grad||") {
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
    options.step = opt::newton_step::trust_region;
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

TEST_CASE("trust region: Newton-CG ends, with a stop reason, where the first unbounded solve would step past a double's range") {
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
    options.step = opt::newton_step::trust_region;
  options.max_iterations = 30;
  const auto run = *opt::minimize_newton(f, x, options);
  INFO(run.message);
  CHECK(run.reason != opt::stop_reason::evaluation_failed);
  CHECK(f.evaluations <= 2 * 30 + 2);
  CHECK(x.allFinite());
  CHECK(x[0] >= 1.0);  // it went downhill, along x0
  CHECK(run.f <= -1.0);
}

TEST_CASE("trust region: preconditioned by the previous solve's pairs, Newton-CG reaches the same minimum with fewer products") {
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
    options.step = opt::newton_step::trust_region;
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
