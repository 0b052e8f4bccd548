#include "optimizer/lbfgspp.hpp"

#include "optimizer/line_search.hpp"

#include <LBFGSpp/BFGSMat.h>
#include <LBFGSB.h>

#include <stdexcept>

namespace shardopt::optimizer {

struct bfgs_matrix::impl {
  LBFGSpp::BFGSMat<double> matrix;
};

bfgs_matrix::bfgs_matrix() : impl_(std::make_unique<impl>()) {}
bfgs_matrix::~bfgs_matrix() = default;
bfgs_matrix::bfgs_matrix(bfgs_matrix&&) noexcept = default;
bfgs_matrix& bfgs_matrix::operator=(bfgs_matrix&&) noexcept = default;

void bfgs_matrix::reset(Eigen::Index dimension, int pairs) {
  impl_->matrix.reset(static_cast<int>(dimension), pairs);
}

void bfgs_matrix::add_correction(const Eigen::VectorXd& s, const Eigen::VectorXd& y) {
  impl_->matrix.add_correction(s, y);
}

void bfgs_matrix::apply(const Eigen::VectorXd& v, double a, Eigen::VectorXd& out) {
  impl_->matrix.apply_Hv(v, a, out);
}

int bfgs_matrix::pairs() const {
  return impl_->matrix.num_corrections();
}

namespace {

/// Carries a stop out of LBFGS++'s solver loop, which offers no other way to end it early: thrown
/// by the function it calls and by the line search, caught in `minimize_bounded` only.
struct stop_thrown {
  run_stop stop;
};

/// What LBFGS++'s solver calls: the objective (its own first evaluation, through operator()) and,
/// through the line search, `evaluate` and `accept`.
class bounded_run {
public:
  bounded_run(const evaluate_function& f, run_log& log) : f_(f), log_(log) {}

  double operator()(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    auto value = evaluate(x, grad);
    if (!value)
      throw stop_thrown{evaluation_failed(value.error())};
    if (!std::isfinite(*value) || !grad.allFinite())
      throw stop_thrown{{stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"}};
    best_ = x;
    log_.record(*value, grad, 0);
    return *value;
  }

  result<double> evaluate(const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    log_.count_evaluation();
    return f_(x, grad);
  }

  std::optional<run_stop> accept(double fx, const Eigen::VectorXd& x, const Eigen::VectorXd& grad, double step) {
    best_ = x;
    return log_.accept(fx, grad, step);
  }

  const Eigen::VectorXd& best() const { return best_; }

private:
  const evaluate_function& f_;
  run_log& log_;
  Eigen::VectorXd best_;
};

/// The line search in the shape LBFGS++'s L-BFGS-B solver calls.
template <class Scalar>
struct lbfgsb_line_search {
  using vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  template <class Foo>
  static void LineSearch(Foo& f, Scalar& fx, vector& x, vector& grad, Scalar& step, Scalar step_max,
                         const vector& drt, const vector& xp, const LBFGSpp::LBFGSBParam<Scalar>& param) {
    if (auto stop = wolfe_search(f, fx, x, grad, step, step_max, drt, xp, param.ftol, param.wolfe,
                                 param.max_linesearch))
      throw stop_thrown{std::move(*stop)};
  }
};

} // namespace

run_stop minimize_bounded(const evaluate_function& f, Eigen::VectorXd& theta, const lbfgs_options& o,
                          const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, run_log& log) {
  // The params object must outlive the solver, which keeps a reference to it.
  LBFGSpp::LBFGSBParam<double> param;
  param.m = o.history;
  param.epsilon = o.epsilon;
  param.epsilon_rel = o.epsilon_rel;
  param.past = 0;  // the run log applies the objective-change test, so it can name the reason
  param.max_iterations = o.max_iterations;
  param.max_linesearch = o.max_linesearch;
  param.ftol = o.ftol;
  param.wolfe = o.wolfe;
  LBFGSpp::LBFGSBSolver<double, lbfgsb_line_search> solver{param};
  bounded_run fn{f, log};
  Eigen::VectorXd x = theta;
  double fx = 0;
  run_stop stop;
  try {
    solver.minimize(fn, x, fx, lower, upper);
    // The solver returned: the gradient test passed or the iteration limit was hit.
    const auto& info = log.info();
    const bool limit = o.max_iterations > 0 && info.iteration >= o.max_iterations;
    const bool small = info.grad_norm <= o.epsilon || info.grad_norm <= o.epsilon_rel * fn.best().norm();
    stop.reason = small || !limit ? stop_reason::converged : stop_reason::max_iterations;
  } catch (const stop_thrown& thrown) {
    stop = thrown.stop;
  } catch (const std::exception& e) {
    // LBFGS++'s own checks (a non-positive-definite update, say) end up here.
    stop = {stop_reason::line_search_failed, e.what()};
  }
  if (fn.best().size() == theta.size())
    theta = fn.best();
  return stop;
}

} // namespace shardopt::optimizer
