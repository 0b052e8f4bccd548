#pragma once

// What the line-search Newton loops share, private to the optimizer layer: the smooth loop
// (newton_cg.cpp) and the orthant-wise loop for an L1 term (orthant_newton.cpp) evaluate, mix
// the preconditioner's diagonal and backtrack the same way.

#include "optimizer/newton_cg.hpp"
#include "optimizer/pcg.hpp"

#include <Eigen/Core>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::optimizer::detail {

/// Armijo's sufficient decrease: f(theta + alpha s) - f(theta) <= eta alpha g's (LIBLINEAR's eta).
constexpr double armijo = 0.01;
/// Halvings of the step after the full one, at most (LIBLINEAR tries 20 steps in all).
constexpr int max_halvings = 19;
/// The weight of the Hessian's diagonal in the preconditioner (LIBLINEAR's alpha_pcg).
constexpr double diagonal_weight = 0.01;
/// Decreases at most this fraction of |f| are below what f's rounding resolves: there the gradient's
/// norm judges the full step (it still shrinks quadratically under Newton steps).
constexpr double flat_decrease = 1e-13;
/// ...and there a step must cut the gradient's norm by 10% (at a kink of the squared hinge it may
/// not, and the run ends instead of crawling).
constexpr double flat_gradient_decrease = 0.9;

inline bool gradient_small(const Eigen::VectorXd& grad, const Eigen::VectorXd& x, const newton_options& o) {
  const double norm = grad.norm();
  return norm <= o.epsilon || norm <= o.epsilon_rel * x.norm();
}

/// One Newton run: the objective, the bookkeeping and the iterate's evaluation.
class newton_run {
public:
  newton_run(const newton_objective& objective, run_log& log, vector_pool& pool, const newton_options& o,
             cg_preconditioner preconditioner)
    : objective_(objective), log_(log), pool_(pool), o_(o), preconditioner_(std::move(preconditioner)) {}

  cg_preconditioner& preconditioner() { return preconditioner_; }

  /// The start: x (or the session's resumed iterate, its counts taken over) evaluated, f and its
  /// gradient set, the preconditioner moved there (with a resumed run's pairs) and given the
  /// diagonal (`m` is left empty: the preconditioner's is the one in use).
  /// Products and the preconditioner refer to the objective's last evaluation, so a resumed
  /// iterate is evaluated again (it gives the saved f and gradient again).
  std::optional<run_stop> start(const newton_session& session, Eigen::VectorXd& x, double& f, Eigen::VectorXd& grad,
                                Eigen::VectorXd& m) {
    if (session.on_state)
      preconditioner_.keep_pairs();
    if (session.resume) {
      const auto& saved = *session.resume;
      x = saved.theta;
      log_.resume(saved.iterations, saved.evaluations, saved.seconds, saved.f_history, saved.products);
    }
    auto first = evaluate(x, grad, m);
    if (!first)
      return evaluation_failed(first.error());
    f = *first;
    if (!std::isfinite(f) || !grad.allFinite())
      return run_stop{stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"};
    if (session.resume)
      preconditioner_.restore(session.resume->s, session.resume->y, m);
    else
      preconditioner_.moved_swapping(m);
    m.resize(0);
    return std::nullopt;
  }

  /// Where the run ends at x with (pseudo-)gradient g: converged, or at its iteration limit.
  std::optional<run_stop> finished(const Eigen::VectorXd& g, const Eigen::VectorXd& x) const {
    if (gradient_small(g, x, o_))
      return run_stop{stop_reason::converged, ""};
    if (o_.max_iterations > 0 && log_.info().iteration >= o_.max_iterations)
      return run_stop{stop_reason::max_iterations, ""};
    return std::nullopt;
  }

  /// Hands the session the state after an accepted iteration (objective f, f's gradient grad), as
  /// the next one starts from it, when it is due or the run's `last`.
  std::optional<run_stop> hand_out(const newton_session& session, bool last, double f, const Eigen::VectorXd& x,
                                   const Eigen::VectorXd& grad) {
    const auto& info = log_.info();
    if (!session.on_state || (!last && session.due && !session.due(info.iteration, log_.seconds())))
      return std::nullopt;
    const newton_state state{info.iteration, info.evaluations, info.products, log_.seconds(), f, 0.0, x, grad,
                             preconditioner_.pairs_s(), preconditioner_.pairs_y(), log_.history()};
    if (auto saved = session.on_state(state, last); !saved)
      return evaluation_failed(saved.error());
    return std::nullopt;
  }

  /// The objective, gradient and (where the objective gives it) preconditioning diagonal at x.
  result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad, Eigen::VectorXd& m) {
    log_.count_evaluation();
    if (!objective_.diagonal) {
      m.resize(0);
      return objective_.evaluate(x, grad);
    }
    auto f = objective_.diagonal(x, grad, m);
    if (f)
      mix(m);
    return f;
  }

  /// The CG settings of this run: LIBLINEAR's units are the objective divided by lambda.
  /// With an L1 term and no L2 one, the units are the objective divided by the largest L1 weight
  /// (LIBLINEAR's -s 6 minimises ||w||_1 + C sum(loss)).
  pcg_settings settings() const {
    const double l1 = o_.l1.size() > 0 ? o_.l1.maxCoeff() : 0.0;
    const double units = o_.lambda > 0 ? 1.0 / o_.lambda : l1 > 0 ? 1.0 / l1 : 1.0;
    return pcg_settings{o_.cg_tolerance > 0 ? o_.cg_tolerance : 0.5, o_.max_cg_iterations, units};
  }

  /// The objective at theta + alpha s, from the line values between the last two evaluations (at
  /// theta and theta + s), or, for an objective without them, by an evaluation.
  result<double> along(const Eigen::VectorXd& x, const Eigen::VectorXd& s, double alpha) {
    if (objective_.line) {
      std::vector<double> values;
      if (auto ok = objective_.line({alpha}, values); !ok)
        return ok.error();
      if (values.size() != 1)
        return fail_runtime("the objective gave " + std::to_string(values.size()) + " line values for 1 step");
      return values[0];
    }
    Eigen::VectorXd unused_grad, unused_m;
    return evaluate(x + alpha * s, unused_grad, unused_m);
  }

private:
  /// The diagonal as LIBLINEAR mixes it: (1 - w) lambda + w diag(H), lambda standing for the
  /// regulariser's identity (without one, the diagonal's mean); entries that are not positive and
  /// finite (a feature no example has, without a regulariser) become that identity's.
  void mix(Eigen::VectorXd& m) const {
    double identity = o_.lambda;
    if (!(identity > 0)) {
      double sum = 0;
      Eigen::Index count = 0;
      for (Eigen::Index i = 0; i < m.size(); ++i)
        if (m[i] > 0 && std::isfinite(m[i])) {
          sum += m[i];
          ++count;
        }
      identity = count > 0 ? sum / static_cast<double>(count) : 1.0;
    }
    pool_.for_chunks(m.size(), [&](Eigen::Index begin, Eigen::Index end) {
      for (Eigen::Index i = begin; i < end; ++i) {
        const double mixed = (1 - diagonal_weight) * identity + diagonal_weight * m[i];
        m[i] = mixed > 0 && std::isfinite(mixed) ? mixed : identity;
      }
    });
  }

  const newton_objective& objective_;
  run_log& log_;
  vector_pool& pool_;
  const newton_options& o_;
  cg_preconditioner preconditioner_;
};

/// Where a failed orthant-wise search stops, for its message (it starts "; the pseudo-gradient's
/// norm is"): near the stopping threshold (epsilon, or epsilon_rel ||x|| where that is larger) the
/// objective may be at machine precision, and a larger epsilon ends the run; far above it the
/// orthant's steps have stalled (weights that cross 0 near the optimum), and OWL-QN may go further.
std::string where(double pseudo_norm, const Eigen::VectorXd& x, const newton_options& o);

/// The orthant-wise loop (orthant_newton.cpp): Newton-CG for the objective plus options.l1's term,
/// from and updating the iterate x (or from the session's state); returns where it stops.
run_stop run_orthant(newton_run& newton, const newton_objective& objective, run_log& log, vector_pool& pool,
                     Eigen::VectorXd& x, const newton_options& o, const newton_session& session);

} // namespace shardopt::optimizer::detail
