#include "optimizer/run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardopt::optimizer {

std::string_view to_string(stop_reason reason) {
  switch (reason) {
    case stop_reason::converged:
      return "converged";
    case stop_reason::objective_converged:
      return "objective_converged";
    case stop_reason::max_iterations:
      return "max_iterations";
    case stop_reason::line_search_failed:
      return "line_search_failed";
    case stop_reason::evaluation_failed:
      return "evaluation_failed";
    case stop_reason::stopped_by_hook:
      return "stopped_by_hook";
  }
  return "unknown";
}

bool objective_settled(std::vector<double>& ring, int past, double delta, int iteration, double f) {
  const int slot = iteration % past;
  if (static_cast<int>(ring.size()) < past)
    ring.resize(past, std::numeric_limits<double>::quiet_NaN());
  const double old = ring[slot];
  if (iteration >= past && std::abs(old - f) <= delta * std::max({std::abs(f), std::abs(old), 1.0}))
    return true;
  ring[slot] = f;
  return false;
}

run_log::run_log(const iteration_hook& hook, int past, double delta)
  : hook_(hook), past_(past), delta_(delta) {}

void run_log::resume(int iterations, int evaluations, double seconds, std::vector<double> history,
                     int products) {
  info_.iteration = iterations;
  info_.evaluations = evaluations;
  info_.products = products;
  earlier_seconds_ = seconds;
  history_ = std::move(history);
}

void run_log::record(double f, const Eigen::VectorXd& grad, double step) {
  info_.f = f;
  info_.grad_norm = grad.norm();
  info_.grad_norm_inf = grad.size() > 0 ? grad.lpNorm<Eigen::Infinity>() : 0.0;
  info_.step = step;
  info_.seconds = seconds();
}

std::optional<run_stop> run_log::accept(double f, const Eigen::VectorXd& grad, double step) {
  ++info_.iteration;
  record(f, grad, step);
  if (hook_ && !hook_(info_))
    return run_stop{stop_reason::stopped_by_hook, "stopped by the iteration hook"};
  if (past_ > 0 && objective_settled(history_, past_, delta_, info_.iteration, f))
    return run_stop{stop_reason::objective_converged, ""};
  return std::nullopt;
}

double run_log::seconds() const {
  return earlier_seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

run_result result_of(const iteration_info& info, run_stop stop, double seconds) {
  run_result out;
  out.reason = stop.reason;
  out.message = std::move(stop.message);
  out.f = info.f;
  out.grad_norm = info.grad_norm;
  out.grad_norm_inf = info.grad_norm_inf;
  out.iterations = info.iteration;
  out.evaluations = info.evaluations;
  out.products = info.products;
  out.nonzeros = info.nonzeros;
  out.seconds = seconds;
  return out;
}

run_result run_log::finish(run_stop stop) const {
  return result_of(info_, std::move(stop), seconds());
}

} // namespace shardopt::optimizer
