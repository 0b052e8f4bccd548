// Stochastic-gradient update rules against independent scalar formulas, convergence on a quadratic
// with a known minimum, learning-rate schedules, and the minibatch sampler's epoch guarantees.

#include "optimizer/sgd.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace opt = shardopt::optimizer;

namespace {

/// Applies `rule` for `steps` steps to a 3-vector with fixed gradients g_t = grads[t], and checks
/// every coordinate against `scalar(t, x, g, state...)`, the textbook formula per coordinate.
template <class Scalar>
void check_against_scalar(const opt::update_rule& rule, Scalar scalar) {
  const std::vector<Eigen::Vector3d> grads{{0.5, -1.0, 2.0}, {0.25, 0.0, -3.0}, {-1.5, 0.75, 0.125}};
  Eigen::VectorXd theta(3);
  theta << 1.0, -2.0, 0.5;
  auto state = opt::initial_state(rule, 3);
  std::vector<double> x(theta.data(), theta.data() + 3);
  std::vector<double> s1(3, rule.kind == opt::update_kind::adagrad ? rule.initial_accumulator : 0.0);
  std::vector<double> s2(3, 0.0);
  for (std::size_t t = 0; t < grads.size(); ++t) {
    opt::apply_update(rule, static_cast<std::int64_t>(t), theta, grads[t], state);
    for (int i = 0; i < 3; ++i)
      scalar(static_cast<std::int64_t>(t), x[static_cast<std::size_t>(i)], grads[t][i],
             s1[static_cast<std::size_t>(i)], s2[static_cast<std::size_t>(i)]);
    for (int i = 0; i < 3; ++i)
      CHECK(theta[i] == doctest::Approx(x[static_cast<std::size_t>(i)]).epsilon(1e-14));
  }
  CHECK(state.updates == 3);
}

} // namespace

TEST_CASE("learning-rate schedules follow their closed forms") {
  opt::learning_rate rate{opt::schedule_kind::constant, 0.1, 0.5, 100};
  CHECK(rate.at(0) == 0.1);
  CHECK(rate.at(12345) == 0.1);
  rate.kind = opt::schedule_kind::step;
  CHECK(rate.at(99) == doctest::Approx(0.1));
  CHECK(rate.at(100) == doctest::Approx(0.05));
  CHECK(rate.at(250) == doctest::Approx(0.025));
  rate.kind = opt::schedule_kind::inverse_time;
  CHECK(rate.at(0) == doctest::Approx(0.1));
  CHECK(rate.at(200) == doctest::Approx(0.1 / (1 + 0.5 * 2)));
}

TEST_CASE("each update rule matches its scalar formula step by step") {
  opt::update_rule rule;
  rule.rate = {opt::schedule_kind::step, 0.1, 0.5, 2};
  const auto lr = [&](std::int64_t t) { return 0.1 * std::pow(0.5, std::floor(t / 2.0)); };
  SUBCASE("sgd") {
    rule.kind = opt::update_kind::sgd;
    check_against_scalar(rule, [&](std::int64_t t, double& x, double g, double&, double&) { x -= lr(t) * g; });
  }
  SUBCASE("momentum") {
    rule.kind = opt::update_kind::momentum;
    check_against_scalar(rule, [&](std::int64_t t, double& x, double g, double& v, double&) {
      v = 0.9 * v + g;
      x -= lr(t) * v;
    });
  }
  SUBCASE("nesterov") {
    rule.kind = opt::update_kind::nesterov;
    check_against_scalar(rule, [&](std::int64_t t, double& x, double g, double& v, double&) {
      v = 0.9 * v + g;
      x -= lr(t) * (g + 0.9 * v);
    });
  }
  SUBCASE("adagrad") {
    rule.kind = opt::update_kind::adagrad;
    check_against_scalar(rule, [&](std::int64_t t, double& x, double g, double& a, double&) {
      a += g * g;
      x -= lr(t) * g / std::sqrt(a);
    });
  }
  SUBCASE("adam (Kingma and Ba, Algorithm 1)") {
    rule.kind = opt::update_kind::adam;
    check_against_scalar(rule, [&](std::int64_t t, double& x, double g, double& m, double& v) {
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      const double m_hat = m / (1 - std::pow(0.9, t + 1));
      const double v_hat = v / (1 - std::pow(0.999, t + 1));
      // TensorFlow's form puts epsilon outside the bias correction of v: eps_hat = eps*sqrt(1-b2^t).
      x -= lr(t) * m_hat / (std::sqrt(v_hat) + 1e-8 / std::sqrt(1 - std::pow(0.999, t + 1)));
    });
  }
}

TEST_CASE("every rule reaches the minimum of a separable quadratic") {
  // f(x) = 0.5 sum a_i (x_i - c_i)^2, minimum at c.
  const Eigen::Vector4d a{1.0, 4.0, 0.5, 2.0};
  const Eigen::Vector4d c{1.0, -2.0, 3.0, 0.5};
  for (auto kind : {opt::update_kind::sgd, opt::update_kind::momentum, opt::update_kind::nesterov,
                    opt::update_kind::adagrad, opt::update_kind::adam}) {
    CAPTURE(opt::to_string(kind));
    opt::update_rule rule;
    rule.kind = kind;
    rule.rate.initial = kind == opt::update_kind::adagrad ? 0.5 : kind == opt::update_kind::adam ? 0.05 : 0.1;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(4);
    auto state = opt::initial_state(rule, 4);
    for (int t = 0; t < 5000; ++t) {
      const Eigen::VectorXd g = a.cwiseProduct(x - c);
      opt::apply_update(rule, t, x, g, state);
    }
    CHECK((x - c).norm() < 1e-4);
  }
}

TEST_CASE("rule and schedule names round-trip, unknown names are refused") {
  for (auto kind : {opt::update_kind::sgd, opt::update_kind::momentum, opt::update_kind::nesterov,
                    opt::update_kind::adagrad, opt::update_kind::adam})
    CHECK(opt::parse_update_kind(opt::to_string(kind)) == kind);
  for (auto kind : {opt::schedule_kind::constant, opt::schedule_kind::step, opt::schedule_kind::inverse_time})
    CHECK(opt::parse_schedule_kind(opt::to_string(kind)) == kind);
  CHECK(!opt::parse_update_kind("rmsprop"));
  CHECK(!opt::parse_schedule_kind("cosine"));
}

TEST_CASE("the batch sampler visits every row once per epoch and is reproducible") {
  opt::batch_sampler sampler{103, 10, 7};
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::int64_t> seen;
    for (int b = 0; b < 11; ++b) {
      const auto& batch = sampler.next();
      CHECK(batch.size() == (b < 10 ? 10u : 3u));
      seen.insert(seen.end(), batch.begin(), batch.end());
    }
    CHECK(sampler.epoch() == epoch);
    std::sort(seen.begin(), seen.end());
    std::vector<std::int64_t> all(103);
    for (std::int64_t i = 0; i < 103; ++i)
      all[static_cast<std::size_t>(i)] = i;
    CHECK(seen == all);
  }
  opt::batch_sampler again{103, 10, 7};
  opt::batch_sampler other{103, 10, 8};
  const auto first = again.next();
  CHECK(first == opt::batch_sampler{103, 10, 7}.next());
  CHECK(first != other.next());
}

TEST_CASE("worker seeds differ between workers, restarts, and in the high bits of seed and step") {
  std::set<std::uint64_t> seeds;
  for (std::uint32_t w = 0; w < 8; ++w)
    for (std::int64_t step : {0, 1, 1000})
      seeds.insert(opt::worker_seed(42, w, step));
  CHECK(seeds.size() == 24);
  // Every bit of the inputs counts: seeds and steps that differ only above 32 bits differ too.
  CHECK(opt::worker_seed(42, 3, 1000) != opt::worker_seed(42 + (std::uint64_t{1} << 32), 3, 1000));
  CHECK(opt::worker_seed(42, 3, 1000) != opt::worker_seed(42, 3, 1000 + (std::int64_t{1} << 32)));
}

TEST_CASE("the periodic trigger fires on steps or seconds, whichever comes first") {
  opt::periodic_trigger steps{100, 0};
  CHECK(!steps.due(99, 1e9));
  CHECK(steps.due(100, 0));
  steps.mark(100, 0);
  CHECK(!steps.due(150, 0));
  CHECK(steps.due(200, 0));
  opt::periodic_trigger seconds{0, 5.0};
  CHECK(!seconds.due(1000000, 4.9));
  CHECK(seconds.due(1, 5.0));
  CHECK(!opt::periodic_trigger{0, 0}.enabled());
}
