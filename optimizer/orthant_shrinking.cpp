// Orthant-wise Newton-CG with shrinking (newton_cg.hpp): rounds of the orthant-wise loop
// (orthant_newton.cpp) on the compact problems of working sets, each decided by a full evaluation.

#include "optimizer/l1_rounds.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/newton_run.hpp"
#include "optimizer/orthant_cg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace shardopt::optimizer {

namespace {

/// Orthant-wise Newton-CG's rounds on working sets (see minimize_orthant_shrinking_erased).
class orthant_rounds : detail::l1_rounds {
public:
  orthant_rounds(const newton_objective& full, const restrict_function& restrict, const newton_options& o,
                 const owlqn_shrinking& shrinking, const iteration_hook& hook, const newton_session& session)
    : l1_rounds(full.evaluate, restrict, o.l1, hook, {o.epsilon, o.epsilon_rel, o.max_iterations, o.past, o.delta}),
      o_(o), shrink_(shrinking), session_(session) {}

  run_result run(Eigen::VectorXd& x) {
    auto stop = loop(x);
    return result_of(info_, std::move(stop), seconds());
  }

private:
  /// Hands the session the state at x (a full evaluation's: a round starts from it alone). None
  /// before the first iteration, as plain Newton-CG hands none out there (a state's iteration is
  /// at least 1).
  std::optional<run_stop> hand_out(const Eigen::VectorXd& x, bool last) {
    if (!session_.on_state || info_.iteration == 0
        || (!last && session_.due && !session_.due(info_.iteration, seconds())))
      return std::nullopt;
    newton_state state;
    fill_state(state, x);
    state.products = info_.products;
    if (auto saved = session_.on_state(state, last); !saved)
      return evaluation_failed(saved.error());
    return std::nullopt;
  }

  run_stop loop(Eigen::VectorXd& x) {
    const auto n = x.size();
    if (session_.resume) {
      const auto& saved = *session_.resume;
      x = saved.theta;
      resume(x, saved.f, saved.grad, saved.iterations, saved.evaluations, saved.products, saved.seconds,
             saved.f_history);
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
      if (!uncapped_)  // a round run again without the cap starts where its state was handed out
        if (auto failed = hand_out(x, false))
          return *failed;
      restricted_objective restricted;
      // Of the weights at 0 that could enter, those of the largest |pseudo-gradient| join the set:
      // four times the non-zeros, and at least the 1,024 the orthant's first step lets enter. At
      // the start, where 133,750 of SpamAssassin's 262,144 could, a round's products then read a
      // thousand columns, not most of the data (docs/benchmarks.md).
      const auto entering = uncapped_ ? 0 : std::max<std::int64_t>(detail::min_entering, 4 * info_.nonzeros);
      uncapped_ = false;
      if (auto stop = restrict_working_set(x, restricted, entering))
        return *stop;
      if (!restricted.hessian)
        return run_stop{stop_reason::evaluation_failed,
                        "the objective's working set has no Hessian-vector products"};
      const auto& entries = restricted.entries;
      const auto m = static_cast<Eigen::Index>(entries.size());
      // The round evaluates its start itself (its products refer to the compact objective's
      // evaluation there): a compact pass, besides the full one that chose the set.
      Eigen::VectorXd xc(m), cc(m);
      for (Eigen::Index k = 0; k < m; ++k) {
        const auto i = entries[static_cast<std::size_t>(k)];
        xc[k] = x[i];
        cc[k] = c_[i];
      }
      const Eigen::VectorXd start = xc;
      newton_options inner = o_;
      inner.l1 = cc;
      // Until the set's pseudo-gradient falls to `tolerance` of the full one's, or to the run's own
      // threshold at the round's start (the full evaluation after the round decides).
      const double threshold = stop_threshold(x);
      inner.epsilon = std::max(shrink_.tolerance * pg_.norm(), threshold);
      inner.epsilon_rel = 0;
      inner.past = 0;
      inner.max_iterations = shrink_.refresh;
      if (o_.max_iterations > 0)
        inner.max_iterations = std::min(inner.max_iterations, o_.max_iterations - info_.iteration);
      std::optional<run_stop> outer_stop;
      begin_round(info_.evaluations);
      const double round_start = fx_;
      const newton_objective compact{restricted.evaluate, restricted.hessian, restricted.diagonal, restricted.line};
      auto round = minimize_newton_erased(compact, xc, inner, forward(outer_stop));
      if (!round)
        return run_stop{stop_reason::evaluation_failed, round.error().message()};
      for (Eigen::Index k = 0; k < m; ++k)
        x[entries[static_cast<std::size_t>(k)]] = xc[k];
      count_round(round->evaluations, round->products);
      if (outer_stop) {
        // The objective-change test ends the run on its own: report the full pseudo-gradient.
        if (outer_stop->reason == stop_reason::objective_converged)
          if (auto stop = evaluate_full(x))
            return *stop;
        return *outer_stop;
      }
      if (round->reason == stop_reason::evaluation_failed)
        return run_stop{round->reason, round->message};
      if (round->iterations == 0) {
        // Met at its start: the set's pseudo-gradient is the full one's summed in another order,
        // and the full one at the threshold to rounding.
        if (round->reason == stop_reason::converged && pg_.norm() <= threshold * (1 + 1e-9)) {
          if (auto failed = hand_out(x, true))
            return *failed;
          return run_stop{stop_reason::converged, ""};
        }
        // A capped set can be met at its start (its pseudo-gradient below the round's threshold)
        // while the weights left out are not: the round runs again on every free entry, decided
        // by the round's start alone, so a resume repeats it.
        if (capped_) {
          uncapped_ = true;
          continue;
        }
        // No step on the set of every free entry: no round after it would take one. The round's
        // message weighs its pseudo-gradient against the round's threshold; the run's is told.
        auto message = round->message.empty() ? std::string{"a round on the working set took no step"}
                                              : round->message;
        if (const auto at = message.find(note); at != std::string::npos)
          message = message.substr(0, at) + detail::where(pg_.norm(), x, o_);
        return run_stop{stop_reason::line_search_failed, std::move(message)};
      }
      if (auto stop = close_round(x, entries, start, round_start))
        return *stop;
    }
  }

  static constexpr const char* note = "; the pseudo-gradient's norm is";
  bool uncapped_ = false;  ///< the next round's set takes every weight that could enter
  const newton_options& o_;
  const owlqn_shrinking& shrink_;
  const newton_session& session_;
};

} // namespace

result<run_result> minimize_orthant_shrinking_erased(const newton_objective& objective,
                                                     const restrict_function& restrict, Eigen::VectorXd& theta,
                                                     const newton_options& options, const owlqn_shrinking& shrinking,
                                                     const iteration_hook& hook, const newton_session& session) {
  if (auto ok = check_options(options); !ok)
    return ok.error().with_context("invalid Newton-CG options");
  if (options.l1.size() != theta.size())
    return fail_invalid("invalid Newton-CG options: the L1 weights have " + std::to_string(options.l1.size())
                        + " entries, theta " + std::to_string(theta.size()));
  if (shrinking.refresh < 1 || !(shrinking.tolerance >= 0 && shrinking.tolerance < 1))
    return fail_invalid("invalid Newton-CG options: shrinking needs refresh >= 1 and 0 <= tolerance < 1");
  if (session.resume)
    if (auto ok = check_state(*session.resume, theta.size(), options); !ok)
      return ok.error().with_context("invalid Newton-CG options: the state to resume does not fit");
  orthant_rounds run{objective, restrict, options, shrinking, hook, session};
  return run.run(theta);
}

} // namespace shardopt::optimizer
