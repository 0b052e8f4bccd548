#pragma once

#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <string>

namespace shardopt::io {

/// A synthetic dataset with a planted linear model, for testing at scale without downloads.
///
/// Every row has `nonzeros` distinct feature indices drawn uniformly from [0, features), each with a
/// standard-normal value divided by sqrt(nonzeros) (so a row's norm is about 1). The planted weights
/// are standard normal, scaled by `signal`, one vector per class (softmax) or one (otherwise), and a
/// row's scores are z = W^T x. Labels:
/// - `logistic`: +1 with probability sigmoid(z), else -1;
/// - `softmax`: class k with probability softmax(z)_k, written 0..classes-1;
/// - `linear`: z plus Gaussian noise of standard deviation `noise`.
/// The draws come from mt19937_64 bits through our own conversions (no library distributions, whose
/// algorithms differ between implementations): a seed gives the same file on every machine with the
/// same maths library (log, cos and exp are not correctly rounded everywhere).
struct synthetic_spec {
  model::model_kind kind = model::model_kind::logistic;
  std::int64_t rows = 100000;
  std::int64_t features = std::int64_t{1} << 20;
  std::int64_t nonzeros = 40;    ///< per row, at most `features`
  std::int64_t classes = 2;      ///< softmax only
  double signal = 4.0;           ///< scale of the planted weights
  double noise = 0.1;            ///< linear only
  std::uint64_t seed = 1;
};

/// Why `spec` cannot be generated (a bad size, an unsupported kind), naming the option; empty when
/// it can.
std::string check_synthetic(const synthetic_spec& spec);

/// Writes the dataset as LIBSVM text (1-based indices in increasing order, values to 9 significant
/// digits so float32 reads them back exactly), streamed: memory stays O(features) whatever the row
/// count. Atomic (io/atomic_file.hpp): `path` is the old file or the whole new one. Errors name the
/// path.
result<void> write_synthetic(const synthetic_spec& spec, const std::string& path);

} // namespace shardopt::io
