// OWL-QN with shrinking (owlqn.hpp): rounds on working sets end at the optimum plain OWL-QN
// reaches (the optimality conditions on every entry, not only the set's), K shards give the bits of
// one, a run resumed from any state it hands out ends bit for bit, the working sets' columns cost
// fewer non-zeros than plain OWL-QN's passes to the same objective, and misfits are refused.

#include "model/local_objective.hpp"
#include "optimizer/owlqn.hpp"

#include "support/bits.hpp"
#include "support/sessions.hpp"
#include "support/optimality.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace opt = shardopt::optimizer;
namespace model = shardopt::model;

namespace {

using shardopt::test::kkt_violation;

/// n rows of d features: each of the first 8 with probability 1/2 and 12 others drawn at random
/// (normal values), labelled by the sign of their score under the first 8 plus noise: an L1
/// penalty finds few of the d.
std::shared_ptr<const model::dataset> sparse_labelled(std::int64_t n, std::int64_t d, std::uint32_t seed,
                                                     bool skewed = false) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  // Skewed: the other features' values on scales from about 0.05 to 20 (as term counts are), which
  // makes the problem ill-conditioned, as text is.
  std::vector<float> scale(static_cast<std::size_t>(d), 1.0f);
  if (skewed)
    for (auto& s : scale)
      s = std::exp(1.5f * normal(rng));
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    double score = 0.3 * normal(rng);
    for (int j = 0; j < 8; ++j)
      if (rng() % 2 == 0) {
        const float v = normal(rng);
        entries.emplace_back(static_cast<int>(i), j, v);
        score += (j % 2 == 0 ? 2.0 : -2.0) * v;
      }
    for (int k = 0; k < 12; ++k) {
      const auto j = static_cast<int>(8 + rng() % static_cast<std::uint32_t>(d - 8));
      entries.emplace_back(static_cast<int>(i), j, scale[static_cast<std::size_t>(j)] * normal(rng));
    }
    data->y[i] = score > 0 ? 1.0 : -1.0;
  }
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end());
  x.makeCompressed();
  data->x = std::move(x);
  return data;
}

/// A local objective that counts what its evaluations cost: the non-zeros of the columns each
/// one reads (every column for a full evaluation, the working set's for a restricted one).
struct counting {
  counting(model::local_objective& objective, std::int64_t nonzeros) : f(objective), all(nonzeros) {}

  model::local_objective& f;
  std::int64_t all;           // the data's non-zeros
  double nonzeros_read = 0;   // over every evaluation
  std::vector<std::size_t> set_sizes;
  int full = 0, restricted = 0;  // evaluations of each kind
  int at_round_start = 0;        // restricted ones at the point of the full evaluation before them
  Eigen::VectorXd last_full;

  std::int64_t dimension() const { return f.dimension(); }
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    nonzeros_read += static_cast<double>(all);
    ++full;
    last_full = theta;
    return f.evaluate(theta, grad);
  }
  bool can_restrict() const { return f.can_restrict(); }
  shardopt::result<model::local_objective::restriction> restrict(const std::vector<Eigen::Index>& wanted) {
    auto made = f.restrict(wanted);
    if (!made)
      return made;
    set_sizes.push_back(made->entries.size());
    const auto read = static_cast<double>(made->nonzeros);
    made->evaluate = [this, read, entries = made->entries, first = true,
                      inner = std::move(made->evaluate)](const Eigen::VectorXd& t, Eigen::VectorXd& g) mutable {
      nonzeros_read += read;
      ++restricted;
      if (first) {
        first = false;
        bool same = true;
        for (std::size_t k = 0; k < entries.size(); ++k)
          same = same && t[static_cast<Eigen::Index>(k)] == last_full[entries[k]];
        at_round_start += same;
      }
      return inner(t, g);
    };
    return made;
  }
};

opt::lbfgs_options tight() {
  opt::lbfgs_options o;
  o.epsilon = 1e-8;
  o.max_iterations = 5000;
  return o;
}

opt::owlqn_shrinking plain() {
  opt::owlqn_shrinking s;
  s.enabled = false;
  return s;
}

/// An elastic-net problem of 700 rows and 800 features (L2 1e-4, L1 0.01) that takes several
/// rounds, with the options its tests start from.
struct elastic_net {
  model::model_shape shape{model::model_kind::logistic, 800, 1};
  model::local_objective f{shape, sparse_labelled(700, 800, 14), 1e-4};
  Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  opt::lbfgs_options o = [] {
    auto options = tight();
    options.epsilon = 1e-6;
    return options;
  }();
};

} // namespace

TEST_CASE("OWL-QN with shrinking ends at plain OWL-QN's optimum, optimal on every entry, in rounds on small sets") {
  const std::int64_t d = 3000;
  const auto data = sparse_labelled(1500, d, 11);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 0.02 * model::weight_mask(shape);
  counting counted{f, data->nonzeros()};
  Eigen::VectorXd shrunk = Eigen::VectorXd::Zero(shape.dimension());
  const auto r = *opt::minimize_owlqn(counted, shrunk, tight(), c);
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(shape.dimension());
  const auto p = *opt::minimize_owlqn(f, whole, tight(), c, {}, {}, plain());
  CAPTURE(r.message);
  CHECK(r.reason == opt::stop_reason::converged);
  CHECK(p.reason == opt::stop_reason::converged);
  Eigen::VectorXd g;
  const double smooth = f.evaluate(shrunk, g);
  CHECK(kkt_violation(shrunk, g, c) <= 1e-8);  // the full gradient's conditions, off the sets too
  CHECK(r.f == doctest::Approx(smooth + opt::l1_term(shrunk, c)).epsilon(1e-14));
  CHECK(r.f == doctest::Approx(p.f).epsilon(1e-12));
  CHECK(r.nonzeros == p.nonzeros);
  CHECK(r.nonzeros == opt::nonzero_penalised(shrunk, c));
  CHECK(r.nonzeros >= 8);
  CHECK(r.nonzeros < d / 10);
  CHECK((shrunk - whole).lpNorm<Eigen::Infinity>() <= 1e-6);
  // More than one round, and the later sets far smaller than the dimension.
  REQUIRE(counted.set_sizes.size() >= 2);
  CHECK(counted.set_sizes.back() < static_cast<std::size_t>(d / 5));
}

TEST_CASE("each round of OWL-QN with shrinking starts from the full evaluation before it, and counts only what it evaluates") {
  const std::int64_t d = 2000;
  const auto data = sparse_labelled(1000, d, 15);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 1e-4};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  counting counted{f, data->nonzeros()};
  opt::owlqn_shrinking s;
  s.refresh = 4;  // many rounds
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  const auto r = *opt::minimize_owlqn(counted, theta, tight(), c, {}, {}, s);
  CHECK(r.reason == opt::stop_reason::converged);
  REQUIRE(counted.set_sizes.size() >= 3);
  // A round's first restricted evaluation is its first trial step, never its start point again.
  CHECK(counted.at_round_start == 0);
  CHECK(r.evaluations == counted.full + counted.restricted);
  // One full evaluation to start and one to end each round.
  CHECK(counted.full == static_cast<int>(counted.set_sizes.size()) + 1);
}

TEST_CASE("OWL-QN with shrinking reads fewer non-zeros than plain OWL-QN to the same objective") {
  const std::int64_t d = 3000;
  const auto data = sparse_labelled(1500, d, 12, true);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  const Eigen::VectorXd c = 0.001 * model::weight_mask(shape);
  // The target: plain OWL-QN's objective near the optimum.
  model::local_objective reference{shape, data, 0.0};
  Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
  const double target = opt::minimize_owlqn(reference, x, tight(), c, {}, {}, plain())->f * (1 + 1e-8);
  const auto until_target = [&](const opt::iteration_info& info) { return info.f > target; };
  double read[2] = {0, 0};
  for (const bool shrink : {false, true}) {
    model::local_objective f{shape, data, 0.0};
    counting counted{f, data->nonzeros()};
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
    auto s = plain();
    s.enabled = shrink;
    const auto run = *opt::minimize_owlqn(counted, theta, tight(), c, until_target, {}, s);
    REQUIRE(run.reason == opt::stop_reason::stopped_by_hook);
    read[shrink] = counted.nonzeros_read / static_cast<double>(data->nonzeros());
  }
  CAPTURE(read[0]);
  CAPTURE(read[1]);
  // In full passes' worth of non-zeros: measured 79.5 against 225, and 96.8 with rounds that start
  // without the last round's pair (steepest descent, halved from 1 / ||pg||: the bound fails), a
  // shrinking that read every column would read more than plain OWL-QN.
  CHECK(read[1] < 0.4 * read[0]);
}

TEST_CASE("OWL-QN with shrinking: K shards give the bits of one, for softmax with biases unpenalised") {
  const model::model_shape shape{model::model_kind::softmax, 40, 3};
  std::mt19937 rng{5};
  auto base = sparse_labelled(600, 40, 13);
  auto data = std::make_shared<model::dataset>(*base);
  for (Eigen::Index i = 0; i < data->y.size(); ++i)
    data->y[i] = data->y[i] > 0 ? static_cast<double>(rng() % 2) : 2.0;
  model::local_objective one{shape, data, 1e-4};
  // Shards of whole canonical blocks (9 rows for 600: exact_sum.hpp) give the bits of one.
  model::local_objective three{shape, data, 1e-4, {{0, 153}, {153, 423}, {423, 600}}};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  auto o = tight();
  o.epsilon = 1e-8;
  Eigen::VectorXd x1 = Eigen::VectorXd::Zero(shape.dimension());
  Eigen::VectorXd x3 = x1;
  const auto r1 = *opt::minimize_owlqn(one, x1, o, c);
  const auto r3 = *opt::minimize_owlqn(three, x3, o, c);
  CHECK(r1.reason == opt::stop_reason::converged);
  CHECK(r3.iterations == r1.iterations);
  CHECK(r3.evaluations == r1.evaluations);
  CHECK(shardopt::test::same_bits(x1, x3));
  Eigen::VectorXd g;
  one.evaluate(x1, g);
  CHECK(kkt_violation(x1, g, c) <= 1e-7);
  CHECK(r1.nonzeros < 40 * 3);
  CHECK((x1.tail(3).array() != 0).all());  // the biases, unpenalised, stay in every set
}

TEST_CASE("an OWL-QN run with shrinking resumed from any state it hands out ends bit for bit") {
  elastic_net problem;
  auto& [shape, f, c, o] = problem;
  o.past = 3;
  o.delta = 1e-300;  // the ring is kept and saved, the test never fires
  opt::owlqn_shrinking s;
  s.refresh = 4;  // many rounds
  std::vector<opt::lbfgs_state> states;
  Eigen::VectorXd whole = Eigen::VectorXd::Zero(shape.dimension());
  const auto full = *opt::minimize_owlqn(f, whole, o, c, {}, shardopt::test::keep_states(states), s);
  REQUIRE(full.reason == opt::stop_reason::converged);
  REQUIRE(states.size() >= 4);
  for (const std::size_t k : {std::size_t{0}, std::size_t{1}, states.size() / 2, states.size() - 2}) {
    CAPTURE(k);
    // Before the first round no pair; then (in this run) the last round's newest pair, which the
    // next one starts from, on theta's entries.
    CHECK(states[k].s.size() == (k == 0 ? 0u : 1u));
    if (k > 0) {
      REQUIRE(states[k].s[0].size() == shape.dimension());
      CHECK(states[k].s[0].dot(states[k].y[0]) > 0);
    }
    opt::lbfgs_session resuming;
    resuming.resume = &states[k];
    Eigen::VectorXd resumed = Eigen::VectorXd::Ones(shape.dimension());  // ignored: the state's theta
    const auto rest = *opt::minimize_owlqn(f, resumed, o, c, {}, resuming, s);
    CHECK(rest.reason == full.reason);
    CHECK(rest.iterations == full.iterations);
    CHECK(rest.evaluations == full.evaluations);
    CHECK(shardopt::test::same_bits(&rest.f, &full.f, 1));
    CHECK(shardopt::test::same_bits(resumed, whole));
  }
  // Stopped by the iteration limit inside a round: the round ends there, and its last state starts
  // a new one, so the continued run takes another path (not the bits) to the same optimum.
  auto limited = o;
  limited.max_iterations = 6;
  std::vector<opt::lbfgs_state> early;
  Eigen::VectorXd short_run = Eigen::VectorXd::Zero(shape.dimension());
  const auto stopped = *opt::minimize_owlqn(f, short_run, limited, c, {}, shardopt::test::keep_states(early), s);
  REQUIRE(stopped.reason == opt::stop_reason::max_iterations);
  CHECK(stopped.iterations == 6);
  REQUIRE(early.back().iterations == 6);
  opt::lbfgs_session resuming;
  resuming.resume = &early.back();
  Eigen::VectorXd continued = short_run;
  const auto rest = *opt::minimize_owlqn(f, continued, o, c, {}, resuming, s);
  CHECK(rest.reason == opt::stop_reason::converged);
  CHECK(rest.iterations > 6);
  CHECK(rest.f == doctest::Approx(full.f).epsilon(1e-10));
  CHECK(rest.nonzeros == full.nonzeros);
}

TEST_CASE("OWL-QN with shrinking resumed from a plain OWL-QN state starts its first round from the state's newest pair") {
  elastic_net problem;
  auto& [shape, f, c, o] = problem;
  std::vector<opt::lbfgs_state> states;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
  auto limited = o;
  limited.max_iterations = 8;
  REQUIRE(opt::minimize_owlqn(f, x, limited, c, {}, shardopt::test::keep_states(states), plain())->reason
          == opt::stop_reason::max_iterations);
  const auto& saved = states.back();
  REQUIRE(saved.s.size() >= 3);
  // The same state with its newest pair alone, and with none.
  auto newest = saved;
  newest.s.erase(newest.s.begin(), newest.s.end() - 1);
  newest.y.erase(newest.y.begin(), newest.y.end() - 1);
  auto none = saved;
  none.s.clear();
  none.y.clear();
  Eigen::VectorXd ends[3];
  opt::run_result runs[3];
  const opt::lbfgs_state* from[3] = {&saved, &newest, &none};
  for (int k = 0; k < 3; ++k) {
    opt::lbfgs_session resuming;
    resuming.resume = from[k];
    ends[k] = Eigen::VectorXd::Zero(shape.dimension());
    runs[k] = *opt::minimize_owlqn(f, ends[k], o, c, {}, resuming);
    CHECK(runs[k].reason == opt::stop_reason::converged);
  }
  CHECK(runs[0].evaluations == runs[1].evaluations);
  CHECK(shardopt::test::same_bits(ends[0], ends[1]));
  // Without the pair the first round starts from steepest descent: another path, the same optimum.
  CHECK(!shardopt::test::same_bits(ends[0], ends[2]));
  CHECK(runs[0].f == doctest::Approx(runs[2].f).epsilon(1e-10));
  Eigen::VectorXd g;
  f.evaluate(ends[0], g);
  CHECK(kkt_violation(ends[0], g, c) <= 1e-5);
}

/// A local objective whose second restriction's first `refused` evaluations return an infinite
/// F: the line search of the round's start fails from whatever direction it takes.
struct refusing_second_round {
  model::local_objective& f;
  int refused = 0;
  int restrictions = 0;
  std::shared_ptr<int> second_round_calls = std::make_shared<int>(0);

  std::int64_t dimension() const { return f.dimension(); }
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) { return f.evaluate(theta, grad); }
  bool can_restrict() const { return f.can_restrict(); }
  shardopt::result<model::local_objective::restriction> restrict(const std::vector<Eigen::Index>& wanted) {
    auto made = f.restrict(wanted);
    if (!made || ++restrictions != 2)
      return made;
    made->evaluate = [left = refused, calls = second_round_calls,
                      inner = std::move(made->evaluate)](const Eigen::VectorXd& t, Eigen::VectorXd& g) mutable {
      ++*calls;
      const double value = inner(t, g);
      return left-- > 0 ? std::numeric_limits<double>::infinity() : value;
    };
    return made;
  }
};

TEST_CASE("a shrinking round whose line search fails from the carried pair runs again without it") {
  elastic_net problem;
  auto& [shape, f, c, o] = problem;
  o.max_linesearch = 3;
  opt::owlqn_shrinking s;
  s.refresh = 4;  // many rounds: the second starts from the first one's pair
  Eigen::VectorXd reference = Eigen::VectorXd::Zero(shape.dimension());
  const auto plain_run = *opt::minimize_owlqn(f, reference, o, c, {}, {}, plain());
  REQUIRE(plain_run.reason == opt::stop_reason::converged);
  {
    // The pair's 3 trials are refused; the round runs again from steepest descent and steps.
    refusing_second_round g{f, 3};
    Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
    const auto run = *opt::minimize_owlqn(g, x, o, c, {}, {}, s);
    CAPTURE(run.message);
    CHECK(run.reason == opt::stop_reason::converged);
    CHECK(g.restrictions >= 3);
    CHECK(*g.second_round_calls > 3);
    CHECK(run.f == doctest::Approx(plain_run.f).epsilon(1e-9));
  }
  // Refused for both attempts: the run ends at that round, naming it.
  refusing_second_round g{f, 6};
  Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
  const auto run = *opt::minimize_owlqn(g, x, o, c, {}, {}, s);
  CHECK(run.reason == opt::stop_reason::line_search_failed);
  CHECK(run.message.find("no step along the orthant-wise direction") != std::string::npos);
  CHECK(g.restrictions == 2);
  CHECK(*g.second_round_calls == 6);  // 3 trials from the pair, 3 from steepest descent
}

TEST_CASE("OWL-QN with shrinking where every weight stays 0: rounds on the biases alone") {
  // A penalty above every gradient at 0: the working set holds no feature, the compact problem is
  // the biases over a dataset of no columns.
  const std::int64_t d = 50;
  const auto data = sparse_labelled(300, d, 16);
  const model::model_shape shape{model::model_kind::logistic, d, 1};
  model::local_objective f{shape, data, 0.0};
  const Eigen::VectorXd c = 100.0 * model::weight_mask(shape);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
  const auto run = *opt::minimize_owlqn(f, x, tight(), c);
  CAPTURE(run.message);
  CHECK(run.reason == opt::stop_reason::converged);
  CHECK(run.nonzeros == 0);
  CHECK(x.head(d).isZero(0));
  // The bias is the log-odds of the labels.
  const double positive = static_cast<double>((data->y.array() > 0).count()) / static_cast<double>(data->rows());
  CHECK(x[d] == doctest::Approx(std::log(positive / (1 - positive))).epsilon(1e-6));
}

TEST_CASE("OWL-QN with shrinking refuses misfit options and a restriction it cannot use, naming them") {
  const model::model_shape shape{model::model_kind::logistic, 20, 1};
  model::local_objective f{shape, sparse_labelled(50, 20, 15), 0.0};
  const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(shape.dimension());
  auto s = opt::owlqn_shrinking{};
  s.refresh = 0;
  auto refused = opt::minimize_owlqn(f, x, tight(), c, {}, {}, s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("refresh >= 1") != std::string::npos);
  s = opt::owlqn_shrinking{};
  s.tolerance = 1.0;
  refused = opt::minimize_owlqn(f, x, tight(), c, {}, {}, s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message().find("tolerance < 1") != std::string::npos);
  // A restriction that fails ends the run with its message, theta at the last iterate.
  const auto failing = [](const std::vector<Eigen::Index>&) -> shardopt::result<opt::restricted_objective> {
    return shardopt::fail_runtime("shard 2 of 3 is gone");
  };
  const auto run = *opt::minimize_owlqn_shrinking_erased(opt::erase_objective(f), failing, x, tight(), c,
                                                         opt::owlqn_shrinking{});
  CHECK(run.reason == opt::stop_reason::evaluation_failed);
  CHECK(run.message.find("shard 2 of 3 is gone") != std::string::npos);
  // Entries that do not increase fail the run, naming them.
  const auto unordered = [&f](const std::vector<Eigen::Index>& wanted) -> shardopt::result<opt::restricted_objective> {
    auto made = *opt::restrict_of(f)(wanted);
    std::reverse(made.entries.begin(), made.entries.end());
    return made;
  };
  x.setZero();
  const auto misfit = *opt::minimize_owlqn_shrinking_erased(opt::erase_objective(f), unordered, x, tight(), c,
                                                            opt::owlqn_shrinking{});
  CHECK(misfit.reason == opt::stop_reason::evaluation_failed);
  CHECK(misfit.message.find("entries must increase") != std::string::npos);
  // A restriction that leaves out the free entries (the bias alone): once its rounds take no
  // step, the run ends instead of asking again forever.
  const auto bias_only = [&f](const std::vector<Eigen::Index>&) {
    return opt::restrict_of(f)(std::vector<Eigen::Index>{20});
  };
  x.setZero();
  const auto stalled = *opt::minimize_owlqn_shrinking_erased(opt::erase_objective(f), bias_only, x, tight(), c,
                                                             opt::owlqn_shrinking{});
  CHECK(stalled.reason == opt::stop_reason::line_search_failed);
  CHECK(stalled.grad_norm > 1e-3);  // the full pseudo-gradient: far from optimal
  // A network cannot be restricted: minimize_owlqn runs plain OWL-QN for it.
  const model::model_shape net{model::model_kind::logistic, 20, 1, {4}};
  model::local_objective n{net, sparse_labelled(50, 20, 15), 0.0};
  CHECK_FALSE(n.can_restrict());
  CHECK_FALSE(n.restrict({0, 1}).ok());
}

/// An objective whose working sets' compact problems sit `below` under the full one: as a compact
/// problem's sums, in another order, may sit a few bits under.
struct lower_compact {
  model::local_objective& f;
  double below;

  std::int64_t dimension() const { return f.dimension(); }
  double evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) { return f.evaluate(theta, grad); }
  bool can_restrict() const { return f.can_restrict(); }
  shardopt::result<model::local_objective::restriction> restrict(const std::vector<Eigen::Index>& wanted) {
    auto made = f.restrict(wanted);
    if (made)
      made->evaluate = [below = below, inner = std::move(made->evaluate)](const Eigen::VectorXd& t,
                                                                          Eigen::VectorXd& g) {
        return inner(t, g) - below;
      };
    return made;
  }
};

TEST_CASE("OWL-QN with shrinking at machine precision stops on its own (epsilon 0), also where its compact problems sit below the full one") {
  // No gradient test can stop it: a round that cannot lower F must. A round's first trial is
  // compared with the full evaluation's F, and a compact problem whose sums sit below it (here by
  // 1e-12) accepts a step that lowers nothing, round after round, unless a round that did not lower
  // the full F ends the run (without that check: 5,000 iterations, the limit).
  for (const std::uint32_t seed : {16u, 17u, 18u}) {
    CAPTURE(seed);
    const std::int64_t d = 600;
    const auto data = sparse_labelled(500, d, seed);
    const model::model_shape shape{model::model_kind::logistic, d, 1};
    model::local_objective f{shape, data, 1e-4};
    const Eigen::VectorXd c = 0.01 * model::weight_mask(shape);
    // Where plain OWL-QN ends on the true objective.
    Eigen::VectorXd plain_theta = Eigen::VectorXd::Zero(shape.dimension());
    const auto p = *opt::minimize_owlqn(f, plain_theta, tight(), c, {}, {}, plain());
    for (const double below : {0.0, 1e-12}) {
      CAPTURE(below);
      lower_compact shifted{f, below};
      auto o = tight();
      o.epsilon = 0;
      o.max_iterations = 5000;
      opt::owlqn_shrinking s;
      s.refresh = 4;
      std::vector<opt::lbfgs_state> states;
      Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
      const auto r = *opt::minimize_owlqn(shifted, theta, o, c, {}, shardopt::test::keep_states(states), s);
      CAPTURE(r.message);
      CHECK(r.reason == opt::stop_reason::line_search_failed);
      CHECK(r.iterations < 2000);
      CHECK(r.f == doctest::Approx(p.f).epsilon(1e-10));
      if (below == 0)
        continue;
      CHECK(r.message.find("did not lower the objective") != std::string::npos);
      // It ends where the round that did not lower F started: the last state handed out.
      REQUIRE(!states.empty());
      CHECK(shardopt::test::same_bits(theta, states.back().theta));
      CHECK(shardopt::test::same_bits(&r.f, &states.back().f, 1));
      // Resumed from that state, it ends the same way, bit for bit.
      opt::lbfgs_session resuming;
      resuming.resume = &states.back();
      Eigen::VectorXd resumed = Eigen::VectorXd::Zero(shape.dimension());
      const auto again = *opt::minimize_owlqn(shifted, resumed, o, c, {}, resuming, s);
      CHECK(again.reason == r.reason);
      CHECK(again.iterations == r.iterations);
      CHECK(shardopt::test::same_bits(resumed, theta));
      // With the iteration limit at that round's end, the limit is the stop.
      auto limited = o;
      limited.max_iterations = r.iterations;
      Eigen::VectorXd capped = Eigen::VectorXd::Zero(shape.dimension());
      const auto at_limit = *opt::minimize_owlqn(shifted, capped, limited, c, {}, {}, s);
      CHECK(at_limit.reason == opt::stop_reason::max_iterations);
    }
  }
}
