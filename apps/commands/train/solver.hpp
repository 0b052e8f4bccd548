#pragma once

// The full-batch solver of `train --mode lbfgs`: which one, with which settings, checked before any
// data is read and completed once the problem's size is known; and the run itself, over an
// objective that an interrupt can stop.

#include "apps/commands/train/train.hpp"
#include "optimizer/lbfgs.hpp"
#include "optimizer/newton_cg.hpp"
#include "optimizer/owlqn.hpp"

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace shardopt::apps {

/// A run's solver and its settings. Newton-CG takes L-BFGS's stopping tests, by the same options;
/// OWL-QN takes all of L-BFGS's, and `l1`, the penalty on each entry of theta, which Newton-CG takes too.
struct solver_plan {
  solver_kind kind = solver_kind::lbfgs;  ///< never automatic
  optimizer::lbfgs_options lbfgs;
  optimizer::newton_options newton;
  Eigen::VectorXd l1;                     ///< --l1 at the weights, 0 at the biases (OWL-QN, Newton-CG)
  optimizer::owlqn_shrinking shrinking;   ///< --l1's, OWL-QN's and Newton-CG's (off with --no-shrinking)
};

/// The plan `options` asks for, with the checks that need no data. With --l1, `auto` and `lbfgs`
/// become OWL-QN, and `newton-cg` is orthant-wise; otherwise `auto` becomes Newton-CG for the linear
/// models without bounds, L-BFGS for networks and bounds. Newton-CG takes the linear models and no
/// bounds; --l1 no bounds.
result<solver_plan> plan_solver(const train_options& options, const model::model_shape& architecture);

/// Completes a plan for a problem of `shape` whose training features take `feature_bytes` in
/// memory, wherever they are (so that the solver is the same for every placement), and checks the
/// solver's options. L-BFGS-B's bounds become vectors; Newton-CG's replayed products and
/// preconditioner pairs each get a quarter of the features' bytes, at least 16 MiB and at most 256
/// MiB; `--newton-step auto` becomes the line search for sparse data and the trust region for
/// dense data, and `--cg-pairs auto` 20 pairs with the trust region, none with the line search.
result<void> size_plan(solver_plan& plan, const train_options& options, const model::model_shape& shape,
                       std::int64_t feature_bytes, bool sparse);

/// An objective that stops answering once `flag` is set, so an interrupted run ends at its next
/// pass over the data (as a failed evaluation, which leaves theta at the last accepted iterate).
/// `stopped()` tells whether the interrupt ended the run, as opposed to arriving after its end.
template <class F>
class interruptible {
public:
  interruptible(F& f, const std::atomic<bool>* flag) : f_(f), flag_(flag) {}

  std::int64_t dimension() const { return f_.dimension(); }

  result<double> evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    if (stop_now())
      return fail_runtime("interrupted");
    return f_.evaluate(theta, grad);
  }

  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (stop_now())
      return fail_runtime("interrupted");
    return f_.hessian_vector(v, hv);
  }

  template <class G = F, std::enable_if_t<optimizer::has_diagonal<G>::value, int> = 0>
  result<double> evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
    if (stop_now())
      return fail_runtime("interrupted");
    return f_.evaluate_diagonal(theta, grad, diagonal);
  }

  template <class G = F, std::enable_if_t<optimizer::has_line_values<G>::value, int> = 0>
  result<void> line_values(const std::vector<double>& alphas, std::vector<double>& values) {
    if (stop_now())
      return fail_runtime("interrupted");
    return f_.line_values(alphas, values);
  }

  template <class G = F, std::enable_if_t<optimizer::has_restrict<G>::value, int> = 0>
  bool can_restrict() const {
    return f_.can_restrict();
  }

  /// The objective's restriction, whose evaluations stop answering once the flag is set too.
  template <class G = F, std::enable_if_t<optimizer::has_restrict<G>::value, int> = 0>
  auto restrict(const std::vector<Eigen::Index>& wanted) -> decltype(std::declval<G&>().restrict(wanted)) {
    if (stop_now())
      return fail_runtime("interrupted");
    auto made = f_.restrict(wanted);
    if (made) {
      made->evaluate = [this, inner = std::move(made->evaluate)](const Eigen::VectorXd& theta,
                                                                  Eigen::VectorXd& grad) -> result<double> {
        if (stop_now())
          return fail_runtime("interrupted");
        return inner(theta, grad);
      };
      if (made->hessian)
        made->hessian = [this, inner = std::move(made->hessian)](const Eigen::VectorXd& v,
                                                                  Eigen::VectorXd& hv) -> result<void> {
          if (stop_now())
            return fail_runtime("interrupted");
          return inner(v, hv);
        };
      if (made->diagonal)
        made->diagonal = [this, inner = std::move(made->diagonal)](const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                                                    Eigen::VectorXd& d) -> result<double> {
          if (stop_now())
            return fail_runtime("interrupted");
          return inner(theta, grad, d);
        };
      if (made->line)
        made->line = [this, inner = std::move(made->line)](const std::vector<double>& alphas,
                                                            std::vector<double>& values) -> result<void> {
          if (stop_now())
            return fail_runtime("interrupted");
          return inner(alphas, values);
        };
    }
    return made;
  }

  /// Whether the run must stop here; remembers that it did.
  bool stop_now() {
    stopped_ = stopped_ || (flag_ && flag_->load());
    return stopped_;
  }

  bool stopped() const { return stopped_; }

private:
  F& f_;
  const std::atomic<bool>* flag_;
  bool stopped_ = false;
};

/// Runs the plan's solver from `theta` (updated to the last accepted iterate), with the session of
/// that solver (resuming and saving; empty ones do neither).
template <class F>
result<optimizer::run_result> run_solver(const solver_plan& plan, F& objective, Eigen::VectorXd& theta,
                                         const optimizer::iteration_hook& hook,
                                         const optimizer::lbfgs_session& lbfgs_session,
                                         const optimizer::newton_session& newton_session) {
  if (plan.kind == solver_kind::newton_cg)
    return optimizer::minimize_newton(objective, theta, plan.newton, hook, newton_session, plan.shrinking);
  if (plan.kind == solver_kind::owlqn)
    return optimizer::minimize_owlqn(objective, theta, plan.lbfgs, plan.l1, hook, lbfgs_session, plan.shrinking);
  return optimizer::minimize(objective, theta, plan.lbfgs, hook, lbfgs_session);
}

} // namespace shardopt::apps
