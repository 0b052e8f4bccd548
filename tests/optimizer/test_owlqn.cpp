// OWL-QN: the pseudo-gradient by its cases, the lasso's closed form (soft thresholding), the
// optimality conditions on a correlated problem and on softmax data, weights that reach exactly 0,
// the same bits for K shards as for one, runs resumed from any saved state, and misfit options.

#include "model/local_objective.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/owlqn.hpp"
#include "optimizer/vector_pool.hpp"

#include "support/bits.hpp"
#include "support/sessions.hpp"
#include "support/problems.hpp"
#include "support/optimality.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

using shardopt::test::kkt_violation;

/// f(x) = 0.5 (x - b)' A (x - b), A symmetric positive definite.
struct quadratic {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
  std::int64_t dimension() const { return b.size(); }
  double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    const Eigen::VectorXd r = x - b;
    grad = a * r;
    return 0.5 * r.dot(grad);
  }
};

opt::lbfgs_options tight() {
  opt::lbfgs_options o;
  o.epsilon = 1e-10;
  o.max_iterations = 10000;
  return o;
}

/// Softmax over 400 rows of 13 features and 4 classes, L2 1e-4 and L1 0.01 on the weights.
/// With plain OWL-QN (every state with its pairs) and 5 pairs.
struct softmax_l1 {
  model::model_shape shape{model::model_kind::softmax, 13, 4};
  model::local_objective f{shape, shardopt::test::random_problem(7, 400, 13, 4), 1e-4};
  Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  opt::owlqn_shrinking plain = [] {
    opt::owlqn_shrinking s;
    s.enabled = false;
    return s;
  }();
  opt::lbfgs_options o = [] {
    auto options = tight();
    options.history = 5;
    return options;
  }();
};

} // namespace

TEST_CASE("the pseudo-gradient takes the one-sided derivative that descends, 0 inside the subdifferential") {
  const Eigen::Vector4d x{1.0, -2.0, 0.0, 0.0};
  const Eigen::Vector4d c{0.5, 0.5, 0.5, 0.5};
  CHECK(opt::pseudo_gradient(x, Eigen::Vector4d{0.1, 0.1, 0.1, 0.0}, c)
        .isApprox(Eigen::Vector4d{0.6, -0.4, 0.0, 0.0}));
  // At 0: g + c < 0 moves up, g - c > 0 moves down, |g| <= c stays.
  CHECK(opt::pseudo_gradient(Eigen::Vector3d::Zero(), Eigen::Vector3d{-2.0, 2.0, 0.5},
                             Eigen::Vector3d::Constant(1.0)).isApprox(Eigen::Vector3d{-1.0, 1.0, 0.0}));
  // Unpenalised entries keep the gradient, at 0 too.
  CHECK(opt::pseudo_gradient(Eigen::Vector2d::Zero(), Eigen::Vector2d{0.3, -0.3}, Eigen::Vector2d::Zero())
        .isApprox(Eigen::Vector2d{0.3, -0.3}));
  CHECK(opt::l1_term(x, c) == doctest::Approx(1.5));
  CHECK(opt::nonzero_penalised(x, Eigen::Vector4d{1, 0, 1, 1}) == 1);
}

TEST_CASE("OWL-QN on a separable quadratic ends at the soft-thresholded point, with zeros that are exactly 0") {
  // min 0.5 ||x - b||^2 + sum c|x|: x_i = sign(b_i) max(|b_i| - c_i, 0).
  const Eigen::VectorXd b = (Eigen::VectorXd(6) << 3.0, -2.0, 0.4, -0.7, 0.05, 1.5).finished();
  const Eigen::VectorXd c = (Eigen::VectorXd(6) << 1.0, 1.0, 1.0, 1.0, 1.0, 0.0).finished();
  quadratic f{Eigen::MatrixXd::Identity(6, 6), b};
  Eigen::VectorXd x = Eigen::VectorXd::Constant(6, 0.9);  // starts with every entry non-zero
  std::vector<std::int64_t> counts;
  const auto run = *opt::minimize_owlqn(f, x, tight(), c, [&](const opt::iteration_info& info) {
    counts.push_back(info.nonzeros);
    return true;
  });
  CHECK(run.reason == opt::stop_reason::converged);
  const Eigen::VectorXd expected = (Eigen::VectorXd(6) << 2.0, -1.0, 0.0, 0.0, 0.0, 1.5).finished();
  for (Eigen::Index i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(x[i] == doctest::Approx(expected[i]).epsilon(1e-9));
  }
  CHECK(x[2] == 0.0);  // exactly: the projection put them there
  CHECK(x[3] == 0.0);
  CHECK(x[4] == 0.0);
  CHECK(run.nonzeros == 2);
  REQUIRE_FALSE(counts.empty());
  CHECK(counts.back() == 2);
  CHECK(run.f == doctest::Approx(0.5 * (1 + 1 + 0.16 + 0.49 + 0.0025) + 3.0).epsilon(1e-12));
}

TEST_CASE("OWL-QN on a correlated quadratic meets the optimality conditions, and its objective only falls") {
  const int n = 30;
  Eigen::MatrixXd m = Eigen::MatrixXd::Random(n, n);
  quadratic f{m.transpose() * m / n + 0.1 * Eigen::MatrixXd::Identity(n, n), Eigen::VectorXd::Random(n) * 3};
  const Eigen::VectorXd c = Eigen::VectorXd::Constant(n, 0.5);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  auto o = tight();
  o.epsilon = 1e-6;  // about sqrt(ulp(f) ||A||): below it no step lowers f by a rounding unit
  double last = std::numeric_limits<double>::infinity();
  bool fell = true;
  const auto run = *opt::minimize_owlqn(f, x, o, c, [&](const opt::iteration_info& info) {
    fell = fell && info.f <= last;
    last = info.f;
    return true;
  });
  CHECK(fell);
  CHECK(run.reason == opt::stop_reason::converged);
  Eigen::VectorXd g;
  f.evaluate(x, g);
  CHECK(kkt_violation(x, g, c) <= 1e-6);
  CHECK(run.nonzeros > 0);
  CHECK(run.nonzeros < n);  // the penalty set some weights to 0
}

TEST_CASE("OWL-QN on softmax data: optimal, biases unpenalised, and K shards give the bits of one") {
  const model::model_shape shape{model::model_kind::softmax, 13, 4};
  const auto data = shardopt::test::random_problem(20261125, 600, 13, 4, true);
  model::local_objective one{shape, data, 1e-3};
  // Shards of whole canonical blocks (9 rows for 600: exact_sum.hpp), as the actors cut them: at 150
  // and 420 the blocks' loss sums group otherwise and F differs in its last bits.
  model::local_objective three{shape, data, 1e-3, {{0, 153}, {153, 423}, {423, 600}}};
  const Eigen::VectorXd c = 0.02 * model::weight_mask(shape);
  auto o = tight();
  o.epsilon = 1e-8;
  // Plain, and with shrinking (the local objective restricts itself: test_owlqn_shrinking.cpp).
  opt::owlqn_shrinking plain;
  plain.enabled = false;
  Eigen::VectorXd x1 = Eigen::VectorXd::Zero(shape.dimension());
  Eigen::VectorXd x3 = x1;
  const auto r1 = *opt::minimize_owlqn(one, x1, o, c, {}, {}, plain);
  const auto r3 = *opt::minimize_owlqn(three, x3, o, c, {}, {}, plain);
  CHECK(r1.reason == opt::stop_reason::converged);
  CHECK(r3.iterations == r1.iterations);
  CHECK(shardopt::test::same_bits(x1, x3));
  Eigen::VectorXd s1 = Eigen::VectorXd::Zero(shape.dimension());
  Eigen::VectorXd s3 = s1;
  const auto q1 = *opt::minimize_owlqn(one, s1, o, c);
  const auto q3 = *opt::minimize_owlqn(three, s3, o, c);
  CHECK(q1.reason == opt::stop_reason::converged);
  CHECK(q3.iterations == q1.iterations);
  CHECK(shardopt::test::same_bits(s1, s3));
  CHECK(q1.f == doctest::Approx(r1.f).epsilon(1e-12));
  Eigen::VectorXd g;
  const double smooth = one.evaluate(x1, g);
  CHECK(r1.f == doctest::Approx(smooth + opt::l1_term(x1, c)).epsilon(1e-15));
  CHECK(kkt_violation(x1, g, c) <= 1e-7);
  CHECK(r1.nonzeros == opt::nonzero_penalised(x1, c));
  CHECK(r1.nonzeros < 13 * 4);
  CHECK((x1.tail(4).array() != 0).all());  // the biases, unpenalised, stay in
}

TEST_CASE("OWL-QN's passes over the dimension on a pool of threads give the bits of the caller's thread alone") {
  // 100,000 entries, four of the pool's chunks: a separable quadratic coupled by a rank-one term,
  // with an L1 weight that zeroes about half of the entries.
  const Eigen::Index n = 100000;
  const Eigen::VectorXd a = Eigen::VectorXd::LinSpaced(n, 0.5, 3.0);
  const Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(n, -1.0, 1.0);
  const Eigen::VectorXd u = Eigen::VectorXd::LinSpaced(n, 0.0, 1.0) / std::sqrt(static_cast<double>(n));
  struct coupled {
    const Eigen::VectorXd &a, &b, &u;
    std::int64_t dimension() const { return a.size(); }
    double evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
      const Eigen::VectorXd r = x - b;
      const double t = u.dot(x);
      grad = a.cwiseProduct(r) + t * u;
      return 0.5 * r.dot(a.cwiseProduct(r)) + 0.5 * t * t;
    }
  } f{a, b, u};
  const Eigen::VectorXd c = Eigen::VectorXd::Constant(n, 1.0);
  auto o = tight();
  o.epsilon = 1e-7;
  Eigen::VectorXd alone = Eigen::VectorXd::Zero(n);
  const auto r1 = *opt::minimize_owlqn(f, alone, o, c);
  for (const int threads : {2, 3}) {
    opt::vector_pool pool{threads};
    o.pool = &pool;
    Eigen::VectorXd pooled = Eigen::VectorXd::Zero(n);
    const auto r = *opt::minimize_owlqn(f, pooled, o, c);
    CHECK(r.iterations == r1.iterations);
    CHECK(r.evaluations == r1.evaluations);
    CHECK(shardopt::test::same_bits(alone, pooled));
  }
  CAPTURE(r1.iterations);
  CAPTURE(r1.grad_norm);
  CAPTURE(r1.message);
  CHECK(r1.reason == opt::stop_reason::converged);
  Eigen::VectorXd g;
  f.evaluate(alone, g);
  CHECK(kkt_violation(alone, g, c) <= 1e-7);
  CHECK(r1.nonzeros > n / 4);
  CHECK(r1.nonzeros < 3 * n / 4);
}

TEST_CASE("a plain OWL-QN run resumed from any saved state ends bit for bit where the uninterrupted run ends") {
  softmax_l1 problem;  // plain OWL-QN: every state, with its pairs (shrinking: test_owlqn_shrinking.cpp)
  auto& [shape, f, c, plain, o] = problem;
  o.epsilon = 1e-9;
  o.past = 3;
  o.delta = 1e-300;  // the ring is kept and saved, the test never fires
  std::vector<opt::lbfgs_state> states;
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(shape.dimension());
  const auto full = *opt::minimize_owlqn(f, whole, o, c, {}, shardopt::test::keep_states(states), plain);
  REQUIRE(full.iterations >= 8);
  REQUIRE(states.size() == static_cast<std::size_t>(full.iterations));
  for (const std::size_t k : {std::size_t{0}, std::size_t{3}, states.size() / 2, states.size() - 2}) {
    CAPTURE(k);
    opt::lbfgs_session resuming;
    resuming.resume = &states[k];
    Eigen::VectorXd resumed = Eigen::VectorXd::Ones(shape.dimension());  // ignored: the state's theta
    const auto rest = *opt::minimize_owlqn(f, resumed, o, c, {}, resuming, plain);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.evaluations == full.evaluations);
    CHECK(shardopt::test::same_bits(&rest.f, &full.f, 1));
    CHECK(shardopt::test::same_bits(resumed, whole));
  }
  // Stopped at 4 iterations: its last state continues, with no limit, to the same end.
  auto limited = o;
  limited.max_iterations = 4;
  std::vector<opt::lbfgs_state> early;
  Eigen::VectorXd short_run = Eigen::VectorXd::Zero(shape.dimension());
  REQUIRE(opt::minimize_owlqn(f, short_run, limited, c, {}, shardopt::test::keep_states(early), plain)->reason
          == opt::stop_reason::max_iterations);
  opt::lbfgs_session resuming;
  resuming.resume = &early.back();
  Eigen::VectorXd continued = short_run;
  CHECK(opt::minimize_owlqn(f, continued, o, c, {}, resuming, plain)->iterations == full.iterations);
  CHECK(shardopt::test::same_bits(continued, whole));

  // A state whose pairs lost their curvature is refused by name.
  auto bad = states[3];
  REQUIRE_FALSE(bad.s.empty());
  bad.y.front() = -bad.s.front();
  resuming.resume = &bad;
  Eigen::VectorXd x = whole;
  const auto refused = opt::minimize_owlqn(f, x, o, c, {}, resuming, plain);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("no positive curvature") != std::string::npos);
}

TEST_CASE("a session's due says which states OWL-QN and L-BFGS assemble, and the last one still holds every pair") {
  softmax_l1 problem;
  problem.o.epsilon = 1e-6;
  for (const bool l1 : {true, false}) {
    CAPTURE(l1);
    const auto run = [&](std::vector<opt::lbfgs_state>& states, bool every) {
      auto session = shardopt::test::keep_states(states);
      if (!every)
        session.due = [](int iterations, double) { return iterations == 3; };
      auto& [shape, f, c, plain, o] = problem;
      Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
      return l1 ? *opt::minimize_owlqn(f, x, o, c, {}, session, plain) : *opt::minimize(f, x, o, {}, session);
    };
    std::vector<opt::lbfgs_state> all, due;
    const auto whole = run(all, true);
    const auto some = run(due, false);
    REQUIRE(whole.reason == opt::stop_reason::converged);  // a last state
    REQUIRE(whole.iterations >= 8);
    CHECK(some.iterations == whole.iterations);
    // The state due at iteration 3 and the last one: the same pairs as the run that saw every state.
    REQUIRE(due.size() == 2);
    for (const auto& [seen, kept] : {std::pair{&due[0], &all[2]}, std::pair{&due[1], &all.back()}}) {
      CHECK(seen->iterations == kept->iterations);
      REQUIRE(seen->s.size() == kept->s.size());
      CHECK(seen->s.size() == std::min<std::size_t>(static_cast<std::size_t>(seen->iterations), 5));
      for (std::size_t p = 0; p < seen->s.size(); ++p) {
        CHECK(shardopt::test::same_bits(seen->s[p], kept->s[p]));
        CHECK(shardopt::test::same_bits(seen->y[p], kept->y[p]));
      }
      CHECK(shardopt::test::same_bits(seen->theta, kept->theta));
    }
  }
}

TEST_CASE("OWL-QN refuses L1 weights that do not fit, negative ones, and bounds, naming them") {
  quadratic f{Eigen::MatrixXd::Identity(3, 3), Eigen::VectorXd::Ones(3)};
  const auto message = [&](const Eigen::VectorXd& c, const opt::lbfgs_options& o) {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
    auto run = opt::minimize_owlqn(f, x, o, c);
    return run ? std::string{"ran"} : run.error().message();
  };
  CHECK(message(Eigen::VectorXd::Ones(2), {}).find("the L1 weights have 2 entries, theta 3") != std::string::npos);
  CHECK(message(Eigen::VectorXd::Constant(3, -1), {}).find("non-negative") != std::string::npos);
  opt::lbfgs_options bounded;
  bounded.lower = Eigen::VectorXd::Zero(3);
  CHECK(message(Eigen::VectorXd::Ones(3), bounded).find("takes no bounds") != std::string::npos);
  // A NaN at the start is a failed evaluation, not a run.
  quadratic nan{Eigen::MatrixXd::Identity(3, 3), Eigen::VectorXd::Constant(3, std::nan(""))};
  Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
  CHECK(opt::minimize_owlqn(nan, x, {}, Eigen::VectorXd::Ones(3))->reason == opt::stop_reason::evaluation_failed);
}
