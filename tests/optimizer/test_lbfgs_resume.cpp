// L-BFGS runs that stop and resume: from any saved state a resumed run ends bit for bit where the
// uninterrupted run ends, the objective-change test carries over, states that do not fit are
// refused, a sink that cannot save ends the run with its message, and iteration limits chain.

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
