// Orthant-wise Newton-CG (newton_options::l1): the lasso's closed form with exact zeros, the
// optimality conditions to 1e-8 on logistic and softmax data (dense and sparse, L1 alone and the
// elastic net), biases unpenalised, K shards giving the bits of one, resumed runs ending bit for
// bit, a bound on its passes to a fixed objective, and misfit options refused by name.

#include "model/local_objective.hpp"
#include "model/restriction.hpp"
#include "optimizer/held_at_zero.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/owlqn.hpp"

#include "support/bits.hpp"
#include "support/newton_problems.hpp"
#include "support/problems.hpp"
#include "support/sessions.hpp"
#include "support/optimality.hpp"

#include <doctest/doctest.h>

#include <Eigen/SparseCore>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

using shardopt::test::kkt_violation;

opt::newton_options l1_options(const Eigen::VectorXd& c, double lambda, double epsilon) {
  opt::newton_options o;
  o.l1 = c;
  o.lambda = lambda;
  o.epsilon = epsilon;
  o.max_iterations = 500;
  return o;
}

/// Plain orthant-wise Newton-CG: every evaluation and product over every entry.
const opt::owlqn_shrinking plain{false};

} // namespace

TEST_CASE("orthant-wise Newton-CG on a separable quadratic ends at the soft-thresholded point, its zeros exactly 0") {
  // min 0.5 ||x||^2 - b'x + sum c|x|: x_i = sign(b_i) max(|b_i| - c_i, 0).
  shardopt::test::quadratic f{Eigen::MatrixXd::Identity(6, 6),
                              (Eigen::VectorXd(6) << 3.0, -2.0, 0.4, -0.7, 0.05, 1.5).finished()};
  const Eigen::VectorXd c = (Eigen::VectorXd(6) << 1.0, 1.0, 1.0, 1.0, 1.0, 0.0).finished();
  Eigen::VectorXd x = Eigen::VectorXd::Constant(6, 0.9);  // every entry non-zero at the start
  std::vector<std::int64_t> counts;
  const auto run = *opt::minimize_newton(f, x, l1_options(c, 0, 1e-12), [&](const opt::iteration_info& info) {
    counts.push_back(info.nonzeros);
    return true;
  });
  CHECK(run.reason == opt::stop_reason::converged);
  const Eigen::VectorXd expected = (Eigen::VectorXd(6) << 2.0, -1.0, 0.0, 0.0, 0.0, 1.5).finished();
  for (Eigen::Index i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(x[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
  CHECK(x[2] == 0.0);
  CHECK(x[3] == 0.0);
  CHECK(x[4] == 0.0);
  CHECK(run.nonzeros == 2);
  REQUIRE_FALSE(counts.empty());
  CHECK(counts.back() == 2);
  CHECK(run.iterations <= 3);  // a quadratic: Newton's step is exact once the orthant is right
}

TEST_CASE("orthant-wise Newton-CG, plain and shrinking, meets the optimality conditions to 1e-8 on logistic and "
          "softmax data, dense and sparse, L1 alone and the elastic net, biases unpenalised") {
  for (const auto& [kind, outputs] : std::vector<std::pair<model::model_kind, std::int64_t>>{
         {model::model_kind::logistic, 1}, {model::model_kind::softmax, 4}}) {
    for (const bool sparse : {false, true}) {
      for (const double lambda : {0.0, 1e-3}) for (const bool shrinking : {false, true}) {
        CAPTURE(model::to_string(kind));
        CAPTURE(sparse);
        CAPTURE(lambda);
        CAPTURE(shrinking);
        const model::model_shape shape{kind, 13, outputs};
        auto data = std::const_pointer_cast<model::dataset>(shardopt::test::random_problem(20261127, 600, 13, 4, sparse));
        if (outputs == 1)
          for (Eigen::Index i = 0; i < data->y.size(); ++i)
            data->y[i] = data->y[i] > 1 ? 1.0 : -1.0;
        model::local_objective f{shape, data, lambda};
        const Eigen::VectorXd c = 0.02 * model::weight_mask(shape);
        Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
        const auto run = *opt::minimize_newton(f, x, l1_options(c, lambda, 1e-10), {}, {},
                                               opt::owlqn_shrinking{shrinking});
        CHECK(run.reason == opt::stop_reason::converged);
        Eigen::VectorXd g;
        const double smooth = f.evaluate(x, g);
        CHECK(run.f == doctest::Approx(smooth + opt::l1_term(x, c)).epsilon(1e-15));
        CHECK(kkt_violation(x, g, c) <= 1e-8);
        CHECK(run.nonzeros == opt::nonzero_penalised(x, c));
        CHECK(run.nonzeros > 0);
        CHECK(run.nonzeros < 13 * outputs);  // the penalty set weights to 0
        for (Eigen::Index k = 0; k < outputs; ++k)  // the biases, unpenalised, stay in
          CHECK(std::abs(g[shape.dimension() - outputs + k]) <= 1e-8);
      }
    }
  }
}

TEST_CASE("orthant-wise Newton-CG run past machine precision stops saying the pseudo-gradient's norm and what to try") {
  const model::model_shape shape{model::model_kind::logistic, 13, 1};
  auto data = std::const_pointer_cast<model::dataset>(shardopt::test::random_problem(20261128, 600, 13, 4));
  for (Eigen::Index i = 0; i < data->y.size(); ++i)
    data->y[i] = data->y[i] > 1 ? 1.0 : -1.0;
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 0.02 * model::weight_mask(shape);
  const auto run_to = [&](double epsilon) {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
    auto o = l1_options(c, 0, epsilon);
    o.max_iterations = 0;
    return *opt::minimize_newton(f, x, o, {}, {}, plain);
  };
  // Without a threshold: both causes named. The run's path does not depend on epsilon, so a
  // threshold a tenth of where it ended fails at the same point, near that threshold.
  const auto endless = run_to(0);
  REQUIRE(endless.reason == opt::stop_reason::line_search_failed);
  CAPTURE(endless.message);
  CHECK(endless.message.find("the pseudo-gradient's norm is ") != std::string::npos);
  CHECK(endless.message.find("machine precision") != std::string::npos);
  CHECK(endless.message.find("stalled") != std::string::npos);
  REQUIRE(endless.grad_norm > 0);
  const auto near = run_to(endless.grad_norm / 10);
  REQUIRE(near.reason == opt::stop_reason::line_search_failed);
  CAPTURE(near.message);
  CHECK(near.iterations == endless.iterations);
  CHECK(near.message.find("near the stopping threshold") != std::string::npos);
  CHECK(near.message.find("consider a larger epsilon") != std::string::npos);
  CHECK(near.message.find("stalled") == std::string::npos);
  // A threshold far below where it ended: the steps stalled, and OWL-QN is the advice.
  const auto far = run_to(endless.grad_norm / 1000);
  REQUIRE(far.reason == opt::stop_reason::line_search_failed);
  CAPTURE(far.message);
  CHECK(far.message.find("far above the stopping threshold") != std::string::npos);
  CHECK(far.message.find("--solver owlqn") != std::string::npos);
}

TEST_CASE("orthant-wise Newton-CG, plain and shrinking: K shards give the bits of one, on any number of threads") {
  const model::model_shape shape{model::model_kind::softmax, 13, 4};
  const auto data = shardopt::test::random_problem(20261125, 600, 13, 4, true);
  model::local_objective one{shape, data, 1e-4};
  // Shards of whole canonical blocks, as io::partition_blocks cuts them.
  const auto rows = model::block_rows_for(600);
  REQUIRE(rows * 7 < 600);
  model::local_objective three{shape, data, 1e-4, {{0, 2 * rows}, {2 * rows, 7 * rows}, {7 * rows, 600}}};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  for (const bool shrinking : {false, true}) {
    CAPTURE(shrinking);
    auto o = l1_options(c, 1e-4, 1e-9);
    Eigen::VectorXd x1 = Eigen::VectorXd::Zero(shape.dimension());
    Eigen::VectorXd x3 = x1;
    const auto r1 = *opt::minimize_newton(one, x1, o, {}, {}, opt::owlqn_shrinking{shrinking});
    opt::vector_pool pool{2};
    o.pool = &pool;
    const auto r3 = *opt::minimize_newton(three, x3, o, {}, {}, opt::owlqn_shrinking{shrinking});
    CHECK(r1.reason == opt::stop_reason::converged);
    CHECK(r3.iterations == r1.iterations);
    CHECK(r3.evaluations == r1.evaluations);
    CHECK(r3.products == r1.products);
    CHECK(shardopt::test::same_bits(x1, x3));
    CHECK(shardopt::test::same_bits(&r1.f, &r3.f, 1));
  }
}

namespace {

/// 3,000 rows of 30 normal values among 40,000 features; the labels (+-1) follow the 2,500 features
/// whose index is a multiple of 16, with noise.
std::shared_ptr<model::dataset> forty_thousand_features(std::uint32_t seed) {
  const std::int64_t n = 3000, d = 40000;
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<std::int64_t> column(0, d - 1);
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double score = 0;
    for (int k = 0; k < 30; ++k) {
      const auto j = column(rng);
      const float value = normal(rng);
      entries.emplace_back(static_cast<int>(i), static_cast<int>(j), value);
      score += j % 16 == 0 ? (j % 32 == 0 ? 1.0 : -1.0) * value : 0.0;
    }
    data->y[i] = score + 0.3 * normal(rng) > 0 ? 1.0 : -1.0;
  }
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end());
  data->x = std::move(x);
  return data;
}

/// A local objective that records the size of every working set it is restricted to, and the
/// non-zero count the hook saw last before it.
struct recording_restrictions {
  model::local_objective& f;
  std::vector<std::size_t> sizes;
  std::vector<std::int64_t> nonzeros_before;
  std::int64_t nonzeros = 0;

  std::int64_t dimension() const { return f.dimension(); }
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) { return f.evaluate(theta, grad); }
  double evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
    return f.evaluate_diagonal(theta, grad, diagonal);
  }
  shardopt::result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) { return f.hessian_vector(v, hv); }
  shardopt::result<void> line_values(const std::vector<double>& alphas, std::vector<double>& values) {
    return f.line_values(alphas, values);
  }
  bool can_restrict() const { return f.can_restrict(); }
  auto restrict(const std::vector<Eigen::Index>& wanted) {
    sizes.push_back(wanted.size());
    nonzeros_before.push_back(nonzeros);
    return f.restrict(wanted);
  }
};

} // namespace

TEST_CASE("orthant-wise Newton-CG with shrinking lets at most max(1,024, 4 x the non-zeros) weights at 0 into a round's "
          "set, and ends at plain's optimum") {
  // An L1 weight small enough that thousands of weights at 0 could enter at the start.
  const std::int64_t d = 40000;
  const auto data = forty_thousand_features(43);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 3e-4 * model::weight_mask(shape);
  const auto o = l1_options(c, 0, 1e-9);
  Eigen::VectorXd flat = Eigen::VectorXd::Zero(shape.dimension());
  const auto plain_run = *opt::minimize_newton(f, flat, o, {}, {}, plain);
  REQUIRE(plain_run.reason == opt::stop_reason::converged);
  recording_restrictions recorded{f, {}, {}, 0};
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  const auto run = *opt::minimize_newton(recorded, theta, o, [&](const opt::iteration_info& info) {
    recorded.nonzeros = info.nonzeros;  // a round's last is its end's, the next round's start
    return true;
  });
  REQUIRE(run.reason == opt::stop_reason::converged);
  CHECK(std::abs(run.f - plain_run.f) <= 1e-9 * std::abs(plain_run.f));
  CHECK(run.nonzeros == plain_run.nonzeros);
  CAPTURE(plain_run.nonzeros);
  // The start: far more than 1,024 could enter (the plain run's support alone is larger), 1,024
  // did, with the bias; each later set holds its start's non-zeros, the bias, and at most
  // max(1,024, 4 x those non-zeros) more.
  REQUIRE(recorded.sizes.size() >= 2);
  CHECK(plain_run.nonzeros > 1024);
  CHECK(recorded.sizes.front() == 1024 + 1);
  for (std::size_t k = 0; k < recorded.sizes.size(); ++k) {
    CAPTURE(k);
    const auto before = recorded.nonzeros_before[k];
    CHECK(static_cast<std::int64_t>(recorded.sizes[k]) <= before + 1 + std::max<std::int64_t>(1024, 4 * before));
  }
}

TEST_CASE("orthant-wise Newton-CG with shrinking runs a round again without the cap when the capped set is met at "
          "its start and the weights left out are not") {
  // 200,000 features, each in one row with a value of magnitude 0.9 to 1.1: at 0 their gradients
  // are as flat, and the 1,024 largest hold about 0.6% of the squared norm, their set's
  // pseudo-gradient below a tenth of the full one's. The capped first round takes no step.
  const std::int64_t n = 2000, per_row = 100, d = n * per_row;
  std::mt19937 rng{20261207};
  std::uniform_real_distribution<float> magnitude(0.9f, 1.1f);
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    data->y[i] = rng() % 2 == 0 ? 1.0 : -1.0;
    for (std::int64_t k = 0; k < per_row; ++k)
      entries.emplace_back(static_cast<int>(i), static_cast<int>(i * per_row + k),
                           (rng() % 2 == 0 ? 1.0f : -1.0f) * magnitude(rng));
  }
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end());
  data->x = std::move(x);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 1e-5 * model::weight_mask(shape);
  auto o = l1_options(c, 0, 1e-9);
  o.max_iterations = 3;
  recording_restrictions recorded{f, {}, {}, 0};
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  const auto run = *opt::minimize_newton(recorded, theta, o);
  CAPTURE(run.message);
  CHECK(run.reason == opt::stop_reason::max_iterations);
  CHECK(run.iterations == 3);
  REQUIRE(recorded.sizes.size() >= 2);
  CHECK(recorded.sizes[0] == 1024 + 1);                 // capped: met at its start
  CHECK(recorded.sizes[1] == static_cast<std::size_t>(d + 1));  // every weight, and the bias
}

TEST_CASE("plain orthant-wise Newton-CG over two vector chunks and a capped working set: K shards and threads give the bits of one") {
  // Two of the pool's 2^15-entry chunks, and an L1 weight small enough that far more than 1,024
  // weights would enter at the start.
  const std::int64_t n = 3000, d = 40000;
  const auto data = forty_thousand_features(42);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  const auto rows = model::block_rows_for(n);
  model::local_objective one{shape, data, 0.0};
  model::local_objective three{shape, data, 0.0, {{0, 3 * rows}, {3 * rows, 9 * rows}, {9 * rows, n}}};
  const Eigen::VectorXd c = 1e-4 * model::weight_mask(shape);
  auto o = l1_options(c, 0, 1e-8);
  o.max_iterations = 12;
  std::vector<std::int64_t> counts;
  Eigen::VectorXd x1 = Eigen::VectorXd::Zero(shape.dimension());
  const auto r1 = *opt::minimize_newton(
    one, x1, o,
    [&](const opt::iteration_info& info) {
      counts.push_back(info.nonzeros);
      return true;
    },
    {}, plain);
  REQUIRE(counts.size() >= 2);
  CHECK(counts[0] <= 1024);            // the working set capped the first step's entering weights
  CHECK(counts[1] <= 2 * counts[0] + 1024);
  CHECK(r1.nonzeros > 1024);          // ...which grew past the cap as the model did
  Eigen::VectorXd x3 = Eigen::VectorXd::Zero(shape.dimension());
  opt::vector_pool pool{2};
  o.pool = &pool;
  const auto r3 = *opt::minimize_newton(three, x3, o, {}, {}, plain);
  CHECK(r3.iterations == r1.iterations);
  CHECK(r3.products == r1.products);
  CHECK(r3.nonzeros == r1.nonzeros);
  CHECK(shardopt::test::same_bits(x1, x3));
  CHECK(shardopt::test::same_bits(&r1.f, &r3.f, 1));
}

TEST_CASE("a plain orthant-wise Newton-CG run resumed from any saved state ends bit for bit where the uninterrupted run ends") {
  const model::model_shape shape{model::model_kind::softmax, 13, 4};
  model::local_objective f{shape, shardopt::test::random_problem(7, 400, 13, 4), 1e-4};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  auto o = l1_options(c, 1e-4, 1e-10);
  o.past = 3;
  o.delta = 1e-300;  // the ring is kept and saved, the test never fires
  std::vector<opt::newton_state> states;
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(shape.dimension());
  const auto full = *opt::minimize_newton(f, whole, o, {}, shardopt::test::keep_states(states), plain);
  REQUIRE(full.iterations >= 4);
  REQUIRE(states.size() == static_cast<std::size_t>(full.iterations));
  for (const std::size_t k : {std::size_t{0}, std::size_t{1}, states.size() / 2, states.size() - 2}) {
    CAPTURE(k);
    opt::newton_session resuming;
    resuming.resume = &states[k];
    Eigen::VectorXd resumed = Eigen::VectorXd::Ones(shape.dimension());  // ignored: the state's theta
    const auto rest = *opt::minimize_newton(f, resumed, o, {}, resuming, plain);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.products == full.products);
    CHECK(rest.nonzeros == full.nonzeros);
    CHECK(shardopt::test::same_bits(&rest.f, &full.f, 1));
    CHECK(shardopt::test::same_bits(resumed, whole));
  }
}

TEST_CASE("orthant-wise Newton-CG with shrinking ends at plain's optimum, hands out states at its rounds' starts "
          "alone, and resumed from any of them ends bit for bit") {
  // Sparse softmax data with 600 features, most of them left at 0 by the penalty: the working
  // sets are far smaller than theta.
  const model::model_shape shape{model::model_kind::softmax, 600, 3};
  const auto data = shardopt::test::random_problem(20261207, 500, 600, 3, true);
  model::local_objective f{shape, data, 1e-4};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  auto o = l1_options(c, 1e-4, 1e-10);
  o.past = 3;
  o.delta = 1e-300;  // the ring is kept and saved, the test never fires
  Eigen::VectorXd flat = Eigen::VectorXd::Zero(shape.dimension());
  const auto plain_run = *opt::minimize_newton(f, flat, o, {}, {}, plain);
  REQUIRE(plain_run.reason == opt::stop_reason::converged);
  std::vector<opt::newton_state> states;
  std::vector<int> iterations;
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(shape.dimension());
  const opt::owlqn_shrinking rounds{true, 4, 0.1};  // short rounds: several states
  const auto full = *opt::minimize_newton(
    f, whole, o,
    [&](const opt::iteration_info& info) {
      iterations.push_back(info.iteration);
      return true;
    },
    shardopt::test::keep_states(states), rounds);
  REQUIRE(full.reason == opt::stop_reason::converged);
  CHECK(std::abs(full.f - plain_run.f) <= 1e-9 * std::abs(plain_run.f));
  CHECK(full.nonzeros == plain_run.nonzeros);
  for (Eigen::Index i = 0; i < whole.size(); ++i)
    CHECK((whole[i] == 0) == (flat[i] == 0));
  // States at the rounds' starts only (the first after the first round, then at most 4 iterations
  // apart), and the last.
  REQUIRE(states.size() >= 3);
  REQUIRE(states.size() < iterations.size());
  CHECK(states.front().iterations <= 4);
  CHECK(states.back().iterations == full.iterations);
  for (std::size_t k = 1; k < states.size(); ++k)
    CHECK(states[k].iterations - states[k - 1].iterations <= 4);
  // The biases held at 0 (--no-bias): the compact products and diagonals hold them too, and the
  // rounds end at plain's optimum with every bias 0.
  const auto biases = model::entries_of_features(shape, {});
  opt::held_at_zero<model::local_objective> held{f, biases};
  Eigen::VectorXd held_plain = Eigen::VectorXd::Zero(shape.dimension());
  Eigen::VectorXd held_rounds = held_plain;
  const auto plain_held = *opt::minimize_newton(held, held_plain, o, {}, {}, plain);
  const auto rounds_held = *opt::minimize_newton(held, held_rounds, o, {}, {}, rounds);
  REQUIRE(plain_held.reason == opt::stop_reason::converged);
  REQUIRE(rounds_held.reason == opt::stop_reason::converged);
  CHECK(std::abs(rounds_held.f - plain_held.f) <= 1e-9 * std::abs(plain_held.f));
  CHECK(rounds_held.f > full.f);  // without its biases the model fits worse
  for (const auto b : biases)
    CHECK(held_rounds[b] == 0);
  for (std::size_t k = 0; k + 1 < states.size(); ++k) {
    CAPTURE(k);
    opt::newton_session resuming;
    resuming.resume = &states[k];
    Eigen::VectorXd resumed = Eigen::VectorXd::Ones(shape.dimension());  // ignored: the state's theta
    const auto rest = *opt::minimize_newton(f, resumed, o, {}, resuming, rounds);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.evaluations == full.evaluations);
    CHECK(rest.products == full.products);
    CHECK(rest.nonzeros == full.nonzeros);
    CHECK(shardopt::test::same_bits(&rest.f, &full.f, 1));
    CHECK(shardopt::test::same_bits(resumed, whole));
  }
}

TEST_CASE("orthant-wise Newton-CG reaches a fixed objective within a bound on its passes") {
  // An L1 logistic regression on sparse data whose labels follow 40 of its 400 features.
  const std::int64_t n = 4000, d = 400;
  std::mt19937 rng{20261127};
  std::normal_distribution<float> normal;
  model::dense_features x = model::dense_features::Zero(n, d);
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double score = 0;
    for (std::int64_t j = 0; j < d; ++j)
      if (rng() % 10 == 0) {
        x(i, j) = normal(rng);
        score += j % 10 == 0 ? (j % 20 == 0 ? 1.0 : -1.0) * x(i, j) : 0.0;
      }
    data->y[i] = score + 0.5 * normal(rng) > 0 ? 1.0 : -1.0;
  }
  data->x = model::sparse_features(x.sparseView());
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 2e-3 * model::weight_mask(shape);
  Eigen::VectorXd best = Eigen::VectorXd::Zero(shape.dimension());
  const auto optimum = *opt::minimize_newton(f, best, l1_options(c, 0, 1e-12), {}, {}, plain);
  REQUIRE(optimum.reason == opt::stop_reason::converged);
  const double target = optimum.f + 1e-9 * std::abs(optimum.f);
  // Passes (evaluations and products) until F is within 1e-9 of the optimum.
  const auto passes_to_target = [&](auto&& solve) {
    int passes = -1;
    const auto run = solve([&](const opt::iteration_info& info) {
      if (passes < 0 && info.f <= target)
        passes = info.evaluations + info.products;
      return passes < 0;
    });
    return run.ok() ? passes : -2;
  };
  const int newton = passes_to_target([&](const opt::iteration_hook& hook) {
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
    return opt::minimize_newton(f, theta, l1_options(c, 0, 1e-12), hook, {}, plain);
  });
  // With shrinking a pass is a full evaluation, or a compact one or a product over the working
  // set's columns: counted alike here.
  const int shrinking = passes_to_target([&](const opt::iteration_hook& hook) {
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
    return opt::minimize_newton(f, theta, l1_options(c, 0, 1e-12), hook);
  });
  const int owlqn = passes_to_target([&](const opt::iteration_hook& hook) {
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
    opt::lbfgs_options o;
    o.epsilon = 1e-12;
    o.max_iterations = 5000;
    opt::owlqn_shrinking plain;  // the comment's count: OWL-QN's passes, each over every column
    plain.enabled = false;
    return opt::minimize_owlqn(f, theta, o, c, hook, {}, plain);
  });
  CAPTURE(newton);
  CAPTURE(shrinking);
  CAPTURE(owlqn);
  REQUIRE(newton > 0);
  REQUIRE(shrinking > 0);
  REQUIRE(owlqn > 0);
  // Measured: 29 passes (11 evaluations, 18 products) plain, 36 with shrinking (its full
  // evaluations between rounds on top), OWL-QN 14 on this small, well-conditioned problem (its
  // advantage on such problems: docs/benchmarks.md). A solver that lost its Newton steps (steepest
  // descent, or a step per entering weight) needs hundreds.
  CHECK(newton <= 40);
  CHECK(shrinking <= 48);
}

TEST_CASE("orthant-wise Newton-CG refuses L1 weights that do not fit, negative ones, the trust region and pairs, naming them") {
  shardopt::test::quadratic f{Eigen::MatrixXd::Identity(3, 3), Eigen::VectorXd::Ones(3)};
  const auto message = [&](const opt::newton_options& o) {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
    auto run = opt::minimize_newton(f, x, o);
    return run ? std::string{"ran"} : run.error().message();
  };
  auto o = l1_options(Eigen::VectorXd::Ones(2), 0, 1e-8);
  CHECK(message(o).find("the L1 weights have 2 entries, theta 3") != std::string::npos);
  o.l1 = (Eigen::VectorXd(3) << 1.0, -1.0, 1.0).finished();
  CHECK(message(o).find("the L1 weights must be finite and non-negative") != std::string::npos);
  o.l1 = Eigen::VectorXd::Ones(3);
  o.step = opt::newton_step::trust_region;
  CHECK(message(o).find("an L1 term takes the line search") != std::string::npos);
  o.step = opt::newton_step::line_search;
  o.preconditioner_pairs = 5;
  CHECK(message(o).find("an L1 term takes no preconditioner pairs") != std::string::npos);
  o.preconditioner_pairs = 0;
  CHECK(message(o) == "ran");
  // Shrinking's limits, with an objective that can restrict itself.
  const model::model_shape shape{model::model_kind::logistic, 3, 1};
  auto data = std::const_pointer_cast<model::dataset>(shardopt::test::random_problem(5, 50, 3, 2));
  for (Eigen::Index i = 0; i < data->y.size(); ++i)
    data->y[i] = data->y[i] > 0 ? 1.0 : -1.0;
  model::local_objective local{shape, data, 0.0};
  o.l1 = 0.01 * model::weight_mask(shape);
  for (const auto& [refresh, tolerance] : std::vector<std::pair<int, double>>{{0, 0.1}, {100, 1.0}, {100, -0.1}}) {
    CAPTURE(refresh);
    CAPTURE(tolerance);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
    auto run = opt::minimize_newton(local, x, o, {}, {}, opt::owlqn_shrinking{true, refresh, tolerance});
    REQUIRE_FALSE(run.ok());
    CHECK(run.error().message().find("shrinking needs refresh >= 1 and 0 <= tolerance < 1") != std::string::npos);
  }
}
