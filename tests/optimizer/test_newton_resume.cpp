// Newton-CG saved and resumed: a run continued from any state it handed out ends bit for bit where
// the uninterrupted run ends (iterate, objective, iterations, products; one evaluation more, the
// resumed iterate's), a run stopped at its iteration limit continues as if never stopped, and a
// state that does not fit the problem is refused.

#include "model/local_objective.hpp"
#include "optimizer/newton_cg.hpp"

#include "support/bits.hpp"
#include "support/sessions.hpp"
#include "support/problems.hpp"
#include "support/rosenbrock.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

opt::newton_options resume_options() {
  opt::newton_options o;
  o.epsilon = 1e-12;          // many iterations
  o.preconditioner_pairs = 4;
  o.past = 3;
  o.delta = 1e-300;           // the ring is kept and saved, the test never fires
  return o;
}

model::local_objective softmax_problem() {
  const model::model_shape shape{model::model_kind::softmax, 13, 4};
  return model::local_objective{shape, shardopt::test::random_problem(20261125, 400, 13, 4), 1e-4};
}

/// Runs `f` from `start` whole, then from saved states, and past an iteration limit: the same
/// bits. Returns how many evaluations the whole run made beyond one per iteration (backtracking).
template <class F>
int check_resume(F& f, const Eigen::VectorXd& start, const opt::newton_options& options) {
  std::vector<opt::newton_state> states;
  Eigen::VectorXd whole = start;
  const auto full = *opt::minimize_newton(f, whole, options, {}, shardopt::test::keep_states(states));
  REQUIRE(full.iterations >= 6);
  // Every accepted iteration hands out its state, but the one the objective-change test ends.
  REQUIRE(states.size() + (full.reason == opt::stop_reason::objective_converged ? 1 : 0)
          == static_cast<std::size_t>(full.iterations));

  // The session changes nothing.
  Eigen::VectorXd plain = start;
  const auto unsaved = *opt::minimize_newton(f, plain, options);
  CHECK(unsaved.iterations == full.iterations);
  CHECK(shardopt::test::same_bits(plain, whole));

  for (const std::size_t k : {std::size_t{0}, std::size_t{2}, states.size() / 2, states.size() - 2}) {
    CAPTURE(k);
    const auto& saved = states[k];
    CHECK(saved.iterations == static_cast<int>(k) + 1);
    CHECK(saved.s.size() <= static_cast<std::size_t>(options.preconditioner_pairs));
    CHECK(saved.f_history.size() == static_cast<std::size_t>(options.past));
    opt::newton_session resuming;
    resuming.resume = &saved;
    Eigen::VectorXd resumed = Eigen::VectorXd::Ones(start.size());  // ignored: the state's theta
    const auto rest = *opt::minimize_newton(f, resumed, options, {}, resuming);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.products == full.products);
    CHECK(rest.evaluations == full.evaluations + 1);
    CHECK(shardopt::test::same_bits(&rest.f, &full.f, 1));
    CHECK(shardopt::test::same_bits(resumed, whole));
  }
  // Some saved state has preconditioner pairs (else they would go untested).
  CHECK(std::any_of(states.begin(), states.end(), [](const auto& s) { return !s.s.empty(); }));

  // Stopped at 3 iterations: its last state continues, with no limit, to the same end.
  auto limited = options;
  limited.max_iterations = 3;
  std::vector<opt::newton_state> early;
  Eigen::VectorXd short_run = start;
  const auto first = *opt::minimize_newton(f, short_run, limited, {}, shardopt::test::keep_states(early));
  REQUIRE(first.reason == opt::stop_reason::max_iterations);
  opt::newton_session resuming;
  resuming.resume = &early.back();
  Eigen::VectorXd continued = start;
  const auto rest = *opt::minimize_newton(f, continued, options, {}, resuming);
  CHECK(rest.iterations == full.iterations);
  CHECK(shardopt::test::same_bits(continued, whole));
  return full.evaluations - full.iterations - 1;
}

} // namespace

TEST_CASE("a Newton-CG run resumed from any saved state ends bit for bit where the uninterrupted run ends, also past an iteration limit and after backtracking") {
  auto softmax = softmax_problem();
  check_resume(softmax, Eigen::VectorXd::Zero(softmax.dimension()), resume_options());
  shardopt::test::rosenbrock valley;
  auto options = resume_options();
  options.preconditioner_pairs = 2;
  const int rejected = check_resume(valley, Eigen::Vector2d{-1.2, 1.0}, options);
  CHECK(rejected > 0);  // the resumed runs backtracked too
}

TEST_CASE("a trust-region Newton-CG run resumed from any saved state ends bit for bit where the uninterrupted run ends, its radius and replayed products included") {
  auto softmax = softmax_problem();
  auto options = resume_options();
  options.step = opt::newton_step::trust_region;
  check_resume(softmax, Eigen::VectorXd::Zero(softmax.dimension()), options);
  shardopt::test::rosenbrock valley;
  options.preconditioner_pairs = 2;
  const int rejected = check_resume(valley, Eigen::Vector2d{-1.2, 1.0}, options);
  CHECK(rejected > 0);  // the resumed runs replayed rejected steps too
}

TEST_CASE("a Newton-CG state that does not fit the problem is refused, naming the misfit") {
  auto f = softmax_problem();
  const auto options = resume_options();
  std::vector<opt::newton_state> states;
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(f.dimension());
  REQUIRE(opt::minimize_newton(f, theta, options, {}, shardopt::test::keep_states(states)).ok());
  REQUIRE(states.size() > 2);
  auto refused = [&](opt::newton_state state) {
    opt::newton_session session;
    session.resume = &state;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    auto run = opt::minimize_newton(f, x, options, {}, session);
    return run ? std::string{"ran"} : run.error().message();
  };
  auto bad = states[1];
  bad.theta.conservativeResize(3);
  CHECK(refused(bad).find("its iterate has 3 entries") != std::string::npos);
  bad = states[1];
  bad.grad[0] = std::numeric_limits<double>::quiet_NaN();
  CHECK(refused(bad).find("non-finite") != std::string::npos);
  {
    // The trust region's state needs its radius.
    auto region = options;
    region.step = opt::newton_step::trust_region;
    bad = states[1];
    bad.radius = 0;
    opt::newton_session session;
    session.resume = &bad;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    auto run = opt::minimize_newton(f, x, region, {}, session);
    REQUIRE_FALSE(run.ok());
    CHECK(run.error().message().find("radius") != std::string::npos);
  }
  bad = states[1];
  bad.s.resize(5, bad.theta);
  bad.y.resize(5, bad.theta);
  CHECK(refused(bad).find("preconditioner pairs") != std::string::npos);
  bad = states[1];
  for (std::size_t i = 0; i < bad.s.size(); ++i)
    bad.y[i] = -bad.s[i];  // s'y < 0: an indefinite preconditioner
  if (!bad.s.empty())
    CHECK(refused(bad).find("no positive curvature") != std::string::npos);
  auto small = options;
  small.preconditioner_bytes = 1;  // this run's memory holds no pair
  auto with_pairs = std::find_if(states.begin(), states.end(), [](const auto& s) { return !s.s.empty(); });
  REQUIRE(with_pairs != states.end());
  {
    opt::newton_session session;
    session.resume = &*with_pairs;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    auto run = opt::minimize_newton(f, x, small, {}, session);
    REQUIRE_FALSE(run);
    CHECK(run.error().message().find("this run's memory holds 0") != std::string::npos);
  }
  bad = states[1];
  bad.grad[0] = std::numeric_limits<double>::quiet_NaN();
  CHECK(refused(bad).find("non-finite") != std::string::npos);
  {
    // The trust region's state needs its radius.
    auto region = options;
    region.step = opt::newton_step::trust_region;
    bad = states[1];
    bad.radius = 0;
    opt::newton_session session;
    session.resume = &bad;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(f.dimension());
    auto run = opt::minimize_newton(f, x, region, {}, session);
    REQUIRE_FALSE(run.ok());
    CHECK(run.error().message().find("radius") != std::string::npos);
  }
}
