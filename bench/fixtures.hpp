#pragma once

// What the benchmark files share: the prepared Fashion-MNIST training set and the actor runtime.

#include "actors/wire/runtime.hpp"
#include "apps/run/data.hpp"

#include <Eigen/Core>

#include <map>
#include <string>
#include <vector>

namespace shardopt::bench {

/// Fashion-MNIST training set, prepared as `shardopt train` does (pixels / 255), loaded once.
const apps::prepared_data& fashion();

/// The process's actor runtime (network enabled), owned by main().
actors::runtime& runtime();

/// Stops the node processes and drops the cluster of the remote benchmarks; main() calls it before
/// the runtime goes away.
void release_remote();

/// Records a figure for the summary table (every value is kept; the table shows the median).
void record(const std::string& name, double value);

/// Every recorded figure by name, in the order recorded.
const std::map<std::string, std::vector<double>>& recorded();

/// A fixed theta for timing evaluations.
inline Eigen::VectorXd test_theta(std::int64_t dimension) {
  return Eigen::VectorXd::LinSpaced(dimension, -0.01, 0.01);
}

} // namespace shardopt::bench
