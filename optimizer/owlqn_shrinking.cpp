// OWL-QN with shrinking (owlqn.hpp): rounds of plain OWL-QN (owlqn.cpp) on the compact problems
// of working sets, each started from the full evaluation that ends the round before.

#include "optimizer/l1_rounds.hpp"
#include "optimizer/lbfgs_memory.hpp"
#include "optimizer/owlqn.hpp"
#include "optimizer/sparse_bfgs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace shardopt::optimizer {

namespace {

/// OWL-QN's rounds on working sets (see minimize_owlqn_shrinking_erased).
class shrinking_run : detail::l1_rounds {
public:
  shrinking_run(const evaluate_function& f, const restrict_function& restrict, const lbfgs_options& o,
                const Eigen::VectorXd& c, const owlqn_shrinking& shrinking, const iteration_hook& hook,
                const lbfgs_session& session)
    : l1_rounds(f, restrict, c, hook, {o.epsilon, o.epsilon_rel, o.max_iterations, o.past, o.delta}), o_(o),
      shrink_(shrinking), session_(session) {}

  run_result run(Eigen::VectorXd& x) {
    auto stop = loop(x);
    return result_of(info_, std::move(stop), seconds());
  }

private:
  /// Hands the session the state at x, with the pair the next round starts from (if any).
  std::optional<run_stop> hand_out(const Eigen::VectorXd& x, bool last) {
    if (!session_.on_state || (!last && session_.due && !session_.due(info_.iteration, seconds())))
      return std::nullopt;
    lbfgs_state state;
    if (!carried_.index.empty()) {
      state.s.push_back(Eigen::VectorXd::Zero(x.size()));
      state.y.push_back(Eigen::VectorXd::Zero(x.size()));
      for (std::size_t k = 0; k < carried_.index.size(); ++k) {
        state.s[0][carried_.index[k]] = carried_.s[k];
        state.y[0][carried_.index[k]] = carried_.y[k];
      }
    }
    fill_state(state, x);
    if (auto saved = session_.on_state(state, last); !saved)
      return evaluation_failed(saved.error());
    return std::nullopt;
  }

  run_stop loop(Eigen::VectorXd& x) {
    const auto n = x.size();
    if (session_.resume) {
      const auto& saved = *session_.resume;
      x = saved.theta;
      resume(x, saved.f, saved.grad, saved.iterations, saved.evaluations, 0, saved.seconds, saved.f_history);
      // The pair a round starts from; a plain OWL-QN state's newest.
      if (!saved.s.empty())
        carry(saved.s.back(), saved.y.back());
    } else {
      g_.resize(n);
      if (auto stop = evaluate_full(x))
        return *stop;
    }
    for (;;) {
      if (auto stop = finished(x)) {
        if (auto failed = hand_out(x, true))
          return *failed;
        return *stop;
      }
      if (auto failed = hand_out(x, false))
        return *failed;
      restricted_objective restricted;
      if (auto stop = restrict_working_set(x, restricted))
        return *stop;
      const auto& entries = restricted.entries;
      const auto m = static_cast<Eigen::Index>(entries.size());
      Eigen::VectorXd xc(m), cc(m);
      // The round starts from the full evaluation at x, restricted, not from an evaluation of its
      // own: the entries left out are 0 with c > 0, so f and F are the same there and so is the
      // gradient on the set, up to the order of the sums (a pass fewer per round).
      lbfgs_state start;
      start.grad.resize(m);
      start.f = fx_;
      start.evaluations = 1;  // that full evaluation, counted already
      for (Eigen::Index k = 0; k < m; ++k) {
        const auto i = entries[static_cast<std::size_t>(k)];
        xc[k] = x[i];
        cc[k] = c_[i];
        start.grad[k] = g_[i];
      }
      start.theta = xc;
      start_pair(entries, start);
      lbfgs_session from_full;
      from_full.resume = &start;
      lbfgs_options inner = o_;
      // Until the set's pseudo-gradient falls to a tenth of the full one's, or to the run's own
      // threshold at the round's start (the full evaluation after the round decides).
      const double threshold = stop_threshold(x);
      inner.epsilon = std::max(shrink_.tolerance * pg_.norm(), threshold);
      inner.epsilon_rel = 0;
      inner.past = 0;
      inner.max_iterations = shrink_.refresh;
      if (o_.max_iterations > 0)
        inner.max_iterations = std::min(inner.max_iterations, o_.max_iterations - info_.iteration);
      std::optional<run_stop> outer_stop;
      begin_round(info_.evaluations - start.evaluations);
      const double round_start = fx_;
      const auto hook = forward(outer_stop);
      auto round = detail::minimize_owlqn_keeping_newest(restricted.evaluate, xc, inner, cc, hook, from_full,
                                                         &newest_);
      // A round that took no step from the carried pair (a pair whose curvature on this set is
      // badly scaled can make every trial too long) runs again without it, as rounds ran before:
      // decided by the round's start alone, so a resume repeats it.
      if (round && !outer_stop && round->iterations == 0 && round->reason == stop_reason::line_search_failed
          && !start.s.empty()) {
        spent(round->evaluations - start.evaluations);
        count_round(start.evaluations, 0);
        start.s.clear();
        start.y.clear();
        xc = start.theta;
        round = detail::minimize_owlqn_keeping_newest(restricted.evaluate, xc, inner, cc, hook, from_full,
                                                      &newest_);
      }
      if (!round)
        return run_stop{stop_reason::evaluation_failed, round.error().message()};
      // A round met at its start: the set's pseudo-gradient is the full one's, its norm summed in
      // another order, and the full one is at the threshold to rounding (a restriction that left
      // out free entries is not: it ends below). The last state is the one handed out at the start.
      if (!outer_stop && round->iterations == 0 && round->reason == stop_reason::converged
          && pg_.norm() <= threshold * (1 + 1e-9)) {
        count_round(round->evaluations, 0);
        if (auto failed = hand_out(x, true))
          return *failed;
        return run_stop{stop_reason::converged, ""};
      }
      // The round's newest pair (the one it started from if it kept none), for the next round.
      carried_.index.clear();
      for (const auto k : newest_.index)
        carried_.index.push_back(entries[static_cast<std::size_t>(k)]);
      carried_.s.swap(newest_.s);
      carried_.y.swap(newest_.y);
      for (Eigen::Index k = 0; k < m; ++k)
        x[entries[static_cast<std::size_t>(k)]] = xc[k];
      count_round(round->evaluations, 0);
      if (outer_stop) {
        // The objective-change test ends the run on its own: report the full pseudo-gradient,
        // as plain OWL-QN does. (A hook's stop and a failure report the working set's.)
        if (outer_stop->reason == stop_reason::objective_converged)
          if (auto stop = evaluate_full(x))
            return *stop;
        return *outer_stop;
      }
      if (round->reason == stop_reason::evaluation_failed)
        return run_stop{round->reason, round->message};
      // A round that took no step on the set of every free entry (its line search failed, or a
      // restriction that left out a free entry): no round after it would take one.
      if (round->iterations == 0)
        return run_stop{round->reason == stop_reason::line_search_failed ? round->reason
                                                                           : stop_reason::line_search_failed,
                        round->message.empty() ? "a round on the working set took no step" : round->message};
      if (auto stop = close_round(x, entries, start.theta, round_start))
        return *stop;
    }
  }

  /// Keeps the pair (s, y) of theta's entries for the next round's start: its entries where s or y
  /// is not 0.
  void carry(const Eigen::VectorXd& s, const Eigen::VectorXd& y) {
    carried_.index.clear();
    carried_.s.clear();
    carried_.y.clear();
    for (Eigen::Index k = 0; k < s.size(); ++k)
      if (s[k] != 0 || y[k] != 0) {
        carried_.index.push_back(k);
        carried_.s.push_back(s[k]);
        carried_.y.push_back(y[k]);
      }
  }

  /// The round's start takes the carried pair on its entries (0 at the others) when its curvature
  /// there is positive. With it, the round's first direction is a quasi-Newton one, not steepest
  /// descent, and its first step is 1, not 1 / ||pg|| (which took 5 to 7 halvings a round on the
  /// real sets); the older pairs are left behind, as they made runs longer near the optimum
  /// (docs/benchmarks.md).
  void start_pair(const std::vector<Eigen::Index>& entries, lbfgs_state& start) const {
    if (carried_.index.empty())
      return;
    const auto m = static_cast<Eigen::Index>(entries.size());
    Eigen::VectorXd s = Eigen::VectorXd::Zero(m), y = Eigen::VectorXd::Zero(m);
    std::size_t k = 0;
    for (Eigen::Index j = 0; j < m && k < carried_.index.size(); ++j) {
      const auto i = entries[static_cast<std::size_t>(j)];
      while (k < carried_.index.size() && carried_.index[k] < i)
        ++k;
      if (k < carried_.index.size() && carried_.index[k] == i) {
        s[j] = carried_.s[k];
        y[j] = carried_.y[k];
      }
    }
    if (sparse_bfgs::curvature(s, y) > 0) {
      start.s.push_back(std::move(s));
      start.y.push_back(std::move(y));
    }
  }

  const lbfgs_options& o_;
  const owlqn_shrinking& shrink_;
  const lbfgs_session& session_;
  detail::sparse_pair carried_;  // the last round's newest pair, on theta's entries
  detail::sparse_pair newest_;   // the same on the round's entries
};

} // namespace

result<run_result> minimize_owlqn_shrinking_erased(const evaluate_function& f, const restrict_function& restrict,
                                                   Eigen::VectorXd& theta, const lbfgs_options& options,
                                                   const Eigen::VectorXd& l1, const owlqn_shrinking& shrinking,
                                                   const iteration_hook& hook, const lbfgs_session& session) {
  if (auto ok = detail::check_owlqn(options, l1, theta.size()); !ok)
    return ok.error();
  if (shrinking.refresh < 1 || !(shrinking.tolerance >= 0 && shrinking.tolerance < 1))
    return fail_invalid("invalid OWL-QN options: shrinking needs refresh >= 1 and 0 <= tolerance < 1");
  if (session.resume) {
    // A state of plain OWL-QN resumes too: a round starts from its newest pair.
    if (auto ok = check_state(*session.resume, theta.size(), options, true); !ok)
      return ok.error().with_context("invalid OWL-QN options: the state to resume does not fit");
  }
  shrinking_run run{f, restrict, options, l1, shrinking, hook, session};
  return run.run(theta);
}

} // namespace shardopt::optimizer
