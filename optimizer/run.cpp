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

} // namespace shardopt::optimizer
