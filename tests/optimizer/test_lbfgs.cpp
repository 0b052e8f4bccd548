// L-BFGS / L-BFGS-B through the adapter: known optima, bounds, every stop reason.

#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"
#include "support/sessions.hpp"

#include <doctest/doctest.h>

#include <Eigen/Dense>

#include <cmath>
#include <random>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

/// Extended Rosenbrock: sum over pairs of 100 (x_{2i+1} - x_{2i}^2)^2 + (1 - x_{2i})^2.
/// Minimum 0 at (1, ..., 1) (ensmallen's problems/rosenbrock_function.hpp carries the same answer).
struct rosenbrock {
  std::int64_t n = 2;
  std::int64_t dimension() const { return n; }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    grad.setZero(n);
    double f = 0;
    for (std::int64_t i = 0; i + 1 < n; i += 2) {
      const double a = x[i + 1] - x[i] * x[i];
      const double b = 1 - x[i];
      f += 100 * a * a + b * b;
      grad[i] += -400 * a * x[i] - 2 * b;
      grad[i + 1] += 200 * a;
    }
    return f;
  }
};

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

namespace {

/// The 40-D extended Rosenbrock run that the resume tests interrupt.
opt::lbfgs_options resume_options() {
  opt::lbfgs_options options;
  options.history = 5;  // fewer pairs than iterations, so the memory has wrapped when saved
  options.past = 3;
  options.delta = 1e-14;
  return options;
}

Eigen::VectorXd resume_start() {
  Eigen::VectorXd x(40);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x[i] = i % 2 == 0 ? -1.2 : 1.0;
  return x;
}

} // namespace

TEST_CASE("a run resumed from any saved state ends bit for bit where the uninterrupted run ends") {
  const auto options = resume_options();
  rosenbrock f{40};

  // The uninterrupted run, keeping every state it hands out.
  std::vector<opt::lbfgs_state> states;
  const auto saving = shardopt::test::keep_states(states);
  Eigen::VectorXd whole = resume_start();
  const auto full = *opt::minimize(f, whole, options, {}, saving);
  REQUIRE(full.reason == opt::stop_reason::converged);
  REQUIRE(full.iterations > 20);
  REQUIRE(states.size() >= 20);

  // The session changes nothing: a run without one ends at the same bits.
  Eigen::VectorXd plain = resume_start();
  const auto unsaved = *opt::minimize(f, plain, options);
  CHECK(unsaved.iterations == full.iterations);
  CHECK(plain == whole);

  for (const std::size_t k : {std::size_t{0}, std::size_t{3}, states.size() / 2, states.size() - 1}) {
    CAPTURE(k);
    const auto& saved = states[k];
    CHECK(saved.iterations == static_cast<int>(k) + 1);
    CHECK(saved.s.size() == std::min<std::size_t>(k + 1, 5));
    CHECK(saved.f_history.size() == 3);
    opt::lbfgs_session resuming;
    resuming.resume = &saved;
    Eigen::VectorXd resumed = Eigen::VectorXd::Zero(40);  // ignored: the state's theta is used
    const auto rest = *opt::minimize(f, resumed, options, {}, resuming);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.evaluations == full.evaluations);
    CHECK(rest.f == full.f);  // exact: the same bits
    CHECK(resumed == whole);
  }
}

TEST_CASE("the objective-change test carries over a resume") {
  auto options = resume_options();
  options.epsilon = 0;
  options.delta = 1e-6;
  rosenbrock f{40};
  std::vector<opt::lbfgs_state> states;
  const auto saving = shardopt::test::keep_states(states);
  Eigen::VectorXd whole = resume_start();
  const auto full = *opt::minimize(f, whole, options, {}, saving);
  REQUIRE(full.reason == opt::stop_reason::objective_converged);
  REQUIRE(states.size() > 2);
  opt::lbfgs_session resuming;
  resuming.resume = &states[states.size() - 2];
  Eigen::VectorXd resumed = Eigen::VectorXd::Zero(40);
  const auto rest = *opt::minimize(f, resumed, options, {}, resuming);
  CHECK(rest.reason == opt::stop_reason::objective_converged);
  CHECK(rest.iterations == full.iterations);
  CHECK(resumed == whole);
}

TEST_CASE("a state that does not fit the problem, or bounds with a session, are refused") {
  const auto options = resume_options();
  rosenbrock f{40};
  std::vector<opt::lbfgs_state> states;
  opt::lbfgs_session saving;
  saving.on_state = [&](const opt::lbfgs_state& state, bool) -> shardopt::result<void> {
    if (states.empty())
      states.push_back(state);
    return {};
  };
  Eigen::VectorXd x = resume_start();
  REQUIRE(opt::minimize(f, x, options, {}, saving).ok());
  REQUIRE(states.size() == 1);

  auto refused = [&](opt::lbfgs_state state, const opt::lbfgs_options& with, const std::string& why) {
    opt::lbfgs_session resuming;
    resuming.resume = &state;
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(40);
    const auto run = opt::minimize(f, theta, with, {}, resuming);
    REQUIRE_FALSE(run.ok());  // refused before the run: no evaluation
    CHECK(run.error().kind() == shardopt::failure_kind::invalid);
    CHECK_MESSAGE(run.error().message().find(why) != std::string::npos, run.error().message());
  };
  auto wrong_size = states[0];
  wrong_size.theta.resize(39);
  refused(wrong_size, options, "theta has 39 entries, the problem 40");
  auto too_many = states[0];
  auto fewer = options;
  fewer.history = 1;
  too_many.s.push_back(too_many.s[0]);
  too_many.y.push_back(too_many.y[0]);
  refused(too_many, fewer, "2 correction pairs for a history of 1");
  auto not_finite = states[0];
  not_finite.y[0][3] = std::nan("");
  refused(not_finite, options, "not finite");
  auto other_past = options;
  other_past.past = 4;
  refused(states[0], other_past, "--past is 4");
  auto bounded = options;
  bounded.lower = Eigen::VectorXd::Constant(40, -5);
  refused(states[0], bounded, "cannot be saved or resumed");
}

TEST_CASE("a state that cannot be saved ends the run with the sink's message and the last iterate") {
  rosenbrock f{40};
  opt::lbfgs_session saving;
  int calls = 0;
  saving.on_state = [&](const opt::lbfgs_state&, bool) -> shardopt::result<void> {
    if (++calls == 3)
      return shardopt::fail_runtime("ckpt/lbfgs-000000000003.txt: cannot write: No space left on device");
    return {};
  };
  Eigen::VectorXd x = resume_start();
  const auto run = *opt::minimize(f, x, resume_options(), {}, saving);
  CHECK(run.reason == opt::stop_reason::evaluation_failed);
  CHECK(run.message == "ckpt/lbfgs-000000000003.txt: cannot write: No space left on device");
  CHECK(run.iterations == 3);
  Eigen::VectorXd g;
  CHECK(f.evaluate(x, g) == run.f);
}

TEST_CASE("a run stopped at its iteration limit continues, with a higher limit, as if never stopped, resumes chain") {
  const auto options = resume_options();
  rosenbrock f{40};
  Eigen::VectorXd whole = resume_start();
  std::vector<int> hook_iterations;
  const auto full = *opt::minimize(f, whole, options, [&](const opt::iteration_info& info) {
    hook_iterations.push_back(info.iteration);
    return true;
  });
  REQUIRE(full.reason == opt::stop_reason::converged);

  // Stop at 10 iterations; the last state handed out is the one to continue from.
  auto limited = options;
  limited.max_iterations = 10;
  opt::lbfgs_state last;
  bool marked_last = false;
  opt::lbfgs_session saving;
  saving.on_state = [&](const opt::lbfgs_state& state, bool is_last) -> shardopt::result<void> {
    last = state;
    marked_last = is_last;
    return {};
  };
  Eigen::VectorXd first = resume_start();
  const auto stopped = *opt::minimize(f, first, limited, {}, saving);
  REQUIRE(stopped.reason == opt::stop_reason::max_iterations);
  CHECK(marked_last);
  CHECK(last.iterations == 10);

  // Continue to iteration 20 (saving again), then from there to the end: a chain of two resumes.
  auto twenty = options;
  twenty.max_iterations = 20;
  opt::lbfgs_session second_leg;
  second_leg.resume = &last;
  opt::lbfgs_state at_twenty;
  second_leg.on_state = [&](const opt::lbfgs_state& state, bool) -> shardopt::result<void> {
    at_twenty = state;
    return {};
  };
  Eigen::VectorXd second = Eigen::VectorXd::Zero(40);
  REQUIRE(opt::minimize(f, second, twenty, {}, second_leg)->reason == opt::stop_reason::max_iterations);
  REQUIRE(at_twenty.iterations == 20);
  opt::lbfgs_session third_leg;
  third_leg.resume = &at_twenty;
  std::vector<int> resumed_hooks;
  Eigen::VectorXd third = Eigen::VectorXd::Zero(40);
  const auto rest = *opt::minimize(f, third, options, [&](const opt::iteration_info& info) {
    resumed_hooks.push_back(info.iteration);
    return true;
  }, third_leg);
  CHECK(rest.reason == full.reason);
  CHECK(rest.iterations == full.iterations);
  CHECK(rest.evaluations == full.evaluations);
  CHECK(rest.f == full.f);
  CHECK(third == whole);
  // The hook sees the iterations after the resume point, numbered as in the uninterrupted run.
  CHECK(resumed_hooks == std::vector<int>(hook_iterations.begin() + 20, hook_iterations.end()));
}
