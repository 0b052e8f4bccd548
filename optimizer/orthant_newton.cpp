// Orthant-wise Newton-CG for an objective plus an L1 term (Byrd, Chin, Nocedal and Oztoprak, Math.
// Programming 2016), over the same evaluations, Hessian-vector products and line values as the
// smooth line-search loop: the L1 term lives here only, so the shards and their exact sums do not
// change. Every loop over the dimension runs on the pool in its fixed chunks, and every sum adds
// the chunks in order: the iterates are the same bits on any number of threads.

#include "optimizer/newton_run.hpp"
#include "optimizer/orthant_cg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace shardopt::optimizer::detail {

std::string where(double pseudo_norm, const Eigen::VectorXd& x, const newton_options& o) {
  const double threshold = std::max(o.epsilon, o.epsilon_rel * x.norm());
  std::ostringstream out;
  out.precision(3);
  out << "; the pseudo-gradient's norm is " << pseudo_norm;
  if (!(threshold > 0))
    out << ": the objective may be at machine precision (a larger epsilon ends the run there), or the "
           "orthant's steps have stalled (--solver owlqn may go further)";
  else if (pseudo_norm <= 100 * threshold)
    out << ", near the stopping threshold " << threshold
        << ": the objective may be at machine precision; consider a larger epsilon";
  else
    out << ", far above the stopping threshold " << threshold
        << ": the orthant's steps have stalled; --solver owlqn may go further";
  return out.str();
}

run_stop run_orthant(newton_run& newton, const newton_objective& objective, run_log& log, vector_pool& pool,
                     Eigen::VectorXd& x, const newton_options& o, const newton_session& session) {
  const auto n = x.size();
  Eigen::VectorXd grad(n), m;
  Eigen::VectorXd trial(n), trial_grad(n), trial_m;
  Eigen::VectorXd s(n), d(n);
  orthant at{o.l1, pool};
  double f = 0;  // the objective's part
  double F = 0;  // with the L1 term
  auto& preconditioner = newton.preconditioner();
  if (auto failed = newton.start(session, x, f, grad, m))
    return *failed;
  at.update(x, grad);
  F = f + at.l1();
  log.set_nonzeros(at.nonzeros());
  log.record(F, at.v(), 0);
  if (auto stop = newton.finished(at.v(), x))
    return *stop;
  for (;;) {
    // Newton's model on the orthant's face, then the step projected onto the orthant.
    double vd = 0;
    if (auto stop = at.solve(objective.hessian, log, preconditioner.diagonal(), newton.settings(), s, vd))
      return *stop;
    at.project(x, s, trial);
    double gain = at.gain(x, trial);
    if (!(gain < 0)) {
      // The projection undid the descent: keep the entries that descend alone, else follow -v.
      at.align(s);
      at.project(x, s, trial);
      gain = at.gain(x, trial);
    }
    if (!(gain < 0)) {  // -v, preconditioned by the diagonal as CG's first direction is
      const auto& m_diag = preconditioner.diagonal();
      s = m_diag.size() > 0 ? Eigen::VectorXd(-at.v().cwiseQuotient(m_diag)) : Eigen::VectorXd(-at.v());
      at.project(x, s, trial);
      gain = at.gain(x, trial);
      if (!(gain < 0))
        return {stop_reason::line_search_failed, "no descent direction in the orthant" + where(at.v().norm(), x, o)};
    }
    // The segment from x to the projection p: on it the L1 term is linear, (1 - t) |x| + t |p|,
    // and the line values price a point without a pass. `d` keeps the direction for the path.
    d.swap(s);
    pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      s.segment(begin, end - begin) = trial.segment(begin, end - begin) - x.segment(begin, end - begin);
    });
    auto full = newton.evaluate(trial, trial_grad, trial_m);
    if (!full)
      return evaluation_failed(full.error());
    const double l1_x = at.l1(), l1_p = at.l1_of(trial);
    double f_trial = *full;
    double t = 1;
    const bool finite = std::isfinite(f_trial + l1_p) && trial_grad.allFinite();
    if (-gain <= flat_decrease * std::abs(F)) {
      if (!(finite && at.pseudo_norm(trial, trial_grad) <= flat_gradient_decrease * at.v().norm()))
        return {stop_reason::line_search_failed,
                "the Newton step allows no further reduction (predicted decrease " + std::to_string(-gain) + ")"
                  + where(at.v().norm(), x, o)};
    } else if (!(finite && f_trial + l1_p - F <= armijo * gain)) {
      bool found = false;
      for (int halving = 0; halving < max_halvings && !found; ++halving) {
        t *= 0.5;
        auto value = newton.along(x, s, t);
        if (!value)
          return evaluation_failed(value.error());
        const double at_t = *value + (1 - t) * l1_x + t * l1_p;
        found = std::isfinite(at_t) && at_t - F <= armijo * t * gain;
      }
      if (!found)
        return {stop_reason::line_search_failed,
                "no step towards the projected Newton step lowers the objective enough (20 halvings)"
                  + where(at.v().norm(), x, o)};
      // The projected path's point at t, P(x + t d), is the segment's with the entries that cross 0
      // before t at 0: tried first (a pass), since a weight the segment only shrinks would
      // otherwise approach 0 step after step and never reach it.
      at.project(x, d, trial, t);
      bool on_path = false;
      if (at.crosses(x, d, t)) {
        const double path_gain = at.gain(x, trial);
        auto taken = newton.evaluate(trial, trial_grad, trial_m);
        if (!taken)
          return evaluation_failed(taken.error());
        f_trial = *taken;
        on_path = path_gain < 0 && std::isfinite(f_trial) && trial_grad.allFinite()
                  && f_trial + at.l1_of(trial) - F <= armijo * path_gain;
      }
      if (!on_path) {
        pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
          trial.segment(begin, end - begin) = x.segment(begin, end - begin) + t * s.segment(begin, end - begin);
        });
        auto taken = newton.evaluate(trial, trial_grad, trial_m);
        if (!taken)
          return evaluation_failed(taken.error());
        f_trial = *taken;
        if (!std::isfinite(f_trial) || !trial_grad.allFinite())
          return {stop_reason::evaluation_failed, "objective or gradient is not finite at the accepted step"};
      }
      pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
        s.segment(begin, end - begin) = trial.segment(begin, end - begin) - x.segment(begin, end - begin);
      });
      t = 1;
    }
    const double step = t * std::sqrt(pool.dot(s, s));
    x.swap(trial);
    grad.swap(trial_grad);
    preconditioner.moved_swapping(trial_m);  // the step's diagonal; trial_m gets the last one's memory
    at.update(x, grad);
    f = f_trial;
    F = f + at.l1();
    log.set_nonzeros(at.nonzeros());
    if (auto stop = log.accept(F, at.v(), step))
      return *stop;
    const auto stop = newton.finished(at.v(), x);
    if (auto failed = newton.hand_out(session, stop.has_value(), F, x, grad))
      return *failed;
    if (stop)
      return *stop;
  }
}

} // namespace shardopt::optimizer::detail
