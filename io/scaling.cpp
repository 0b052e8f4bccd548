#include "io/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace shardopt::io {

namespace {

/// Per-feature mean and inverse standard deviation (population, dividing by n) of dense data
/// multiplied by `factor`, in double, by two passes: the mean, then squared deviations from it.
void dense_statistics(const model::dense_view& x, double factor, feature_scaling& out) {
  const Eigen::Index n = x.rows();
  const Eigen::Index d = x.cols();
  Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(d);
  Eigen::RowVectorXf low = Eigen::RowVectorXf::Constant(d, std::numeric_limits<float>::infinity());
  Eigen::RowVectorXf high = -low;
  for (Eigen::Index i = 0; i < n; ++i) {
    sum += x.row(i).cast<double>();
    low = low.cwiseMin(x.row(i));
    high = high.cwiseMax(x.row(i));
  }
  const Eigen::RowVectorXd mean = sum * (factor / static_cast<double>(n));
  Eigen::RowVectorXd squares = Eigen::RowVectorXd::Zero(d);
  for (Eigen::Index i = 0; i < n; ++i)
    squares += (x.row(i).cast<double>() * factor - mean).array().square().matrix();
  out.mean = mean.transpose();
  out.inv_std.resize(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    // A feature is constant when its smallest and largest stored values agree: exact, unlike a
    // threshold on a variance that rounding leaves slightly above zero.
    const bool constant = low(j) == high(j);
    out.inv_std(j) = constant ? 1.0 : 1.0 / std::sqrt(squares(j) / static_cast<double>(n));
  }
}

/// Per-feature inverse standard deviation of sparse data multiplied by `factor`, over all rows
/// including the implicit zeros, in double. No mean is kept: sparse data is not centred.
void sparse_statistics(const model::sparse_view& x, double factor, feature_scaling& out) {
  const auto n = static_cast<double>(x.rows());
  const Eigen::Index d = x.cols();
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(d);
  std::vector<std::int64_t> stored(static_cast<std::size_t>(d), 0);
  Eigen::VectorXf low = Eigen::VectorXf::Zero(d);
  Eigen::VectorXf high = Eigen::VectorXf::Zero(d);
  for (Eigen::Index i = 0; i < x.outerSize(); ++i)
    for (model::sparse_view::InnerIterator it(x, i); it; ++it) {
      const auto j = it.col();
      sum(j) += static_cast<double>(it.value());
      const auto k = static_cast<std::size_t>(j);
      low(j) = stored[k] == 0 ? it.value() : std::min(low(j), it.value());
      high(j) = stored[k] == 0 ? it.value() : std::max(high(j), it.value());
      ++stored[k];
    }
  const Eigen::VectorXd mean = sum * (factor / n);
  // Squared deviations of the stored values, plus those of the implicit zeros, (0 - mean)^2 each.
  Eigen::VectorXd squares = Eigen::VectorXd::Zero(d);
  for (Eigen::Index i = 0; i < x.outerSize(); ++i)
    for (model::sparse_view::InnerIterator it(x, i); it; ++it) {
      const double deviation = static_cast<double>(it.value()) * factor - mean(it.col());
      squares(it.col()) += deviation * deviation;
    }
  out.inv_std.resize(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    const auto count = static_cast<double>(stored[static_cast<std::size_t>(j)]);
    squares(j) += (n - count) * mean(j) * mean(j);
    // Constant: no stored value, all stored values equal and no implicit zero, or only zeros.
    const bool constant = count == 0 || (low(j) == high(j) && (count == n || low(j) == 0));
    out.inv_std(j) = constant ? 1.0 : 1.0 / std::sqrt(squares(j) / n);
  }
}

} // namespace

feature_scaling fit_scaling(const raw_dataset& train, scale_mode mode, bool standardize) {
  feature_scaling scaling;
  scaling.factor = mode == scale_mode::automatic && train.pixels ? 1.0 / 255.0 : 1.0;
  if (!standardize || train.data.rows() == 0)
    return scaling;
  if (train.data.is_sparse())
    sparse_statistics(train.data.sparse(), scaling.factor, scaling);
  else
    dense_statistics(train.data.dense(), scaling.factor, scaling);
  return scaling;
}

result<void> apply_scaling(const feature_scaling& scaling, raw_dataset& data) {
  const std::int64_t d = data.data.cols();
  const auto fitted = std::max(scaling.mean.size(), scaling.inv_std.size());
  // Each vector separately: a mean for d features with an inverse deviation for fewer would read
  // past the shorter one.
  const bool sized = (scaling.mean.size() == 0 || scaling.mean.size() == d)
                     && (scaling.inv_std.size() == 0 || scaling.inv_std.size() == d);
  if (!sized || (fitted > 0 && fitted != d))
    return fail_invalid(data.source + " has " + std::to_string(d) + " features, but the scaling was fitted on " +
                std::to_string(fitted));
  if (scaling.identity())
    return {};

  if (data.data.is_sparse()) {
    if (scaling.mean.size() > 0 && !scaling.mean.isZero(0))
      return fail_invalid(data.source + ": sparse data cannot be centred with the means of a dense training set");
    float* values = data.data.writable_values();
    const auto x = data.data.sparse();
    const auto* index = x.innerIndexPtr();
    for (Eigen::Index p = 0; p < x.nonZeros(); ++p) {
      const double inv_std = scaling.inv_std.size() > 0 ? scaling.inv_std(index[p]) : 1.0;
      values[p] = static_cast<float>(static_cast<double>(values[p]) * scaling.factor * inv_std);
    }
    return {};
  }

  // Dense: each row is converted to double, scaled, centred, divided, and stored back as float.
  Eigen::Map<model::dense_features> x{data.data.writable_values(), data.data.rows(), d};
  Eigen::RowVectorXd row(d);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    row = x.row(i).cast<double>() * scaling.factor;
    if (scaling.mean.size() > 0)
      row -= scaling.mean.transpose();
    if (scaling.inv_std.size() > 0)
      row.array() *= scaling.inv_std.transpose().array();
    x.row(i) = row.cast<float>();
  }
  return {};
}

} // namespace shardopt::io
