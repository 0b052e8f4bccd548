#include "io/feature_moments.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace shardopt::io {

namespace {

using wide = wide_int;

constexpr double grid_limit = static_cast<double>(std::int64_t{1} << moment_grid_bits);

/// Calls `visit(feature, value)` for every stored value of `data`, row by row.
template <class Visit>
void for_each_stored(const model::dataset& data, Visit visit) {
  if (data.is_sparse()) {
    const auto& x = data.sparse();
    for (Eigen::Index i = 0; i < x.outerSize(); ++i)
      for (model::sparse_view::InnerIterator it(x, i); it; ++it)
        visit(it.col(), it.value());
    return;
  }
  const auto& x = data.dense();
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      visit(j, x(i, j));
}

template <class T>
void grow(std::vector<T>& v, std::size_t size, T fill) {
  if (v.size() < size)
    v.resize(size, fill);
}

wide magnitude(wide v) { return v < 0 ? -v : v; }

} // namespace

feature_bounds bounds_of(const model::dataset& data) {
  feature_bounds out;
  out.rows = data.rows();
  out.sparse = data.is_sparse();
  const auto d = data.cols();
  out.low = Eigen::VectorXd::Constant(d, std::numeric_limits<double>::infinity());
  out.high = Eigen::VectorXd::Constant(d, -std::numeric_limits<double>::infinity());
  out.stored = Eigen::VectorXd::Zero(d);
  for_each_stored(data, [&](Eigen::Index j, float value) {
    const auto v = static_cast<double>(value);
    out.low[j] = std::min(out.low[j], v);
    out.high[j] = std::max(out.high[j], v);
    out.stored[j] += 1;
  });
  return out;
}

void merge_into(feature_bounds& total, const feature_bounds& part) {
  const auto d = std::max(total.low.size(), part.low.size());
  const auto before = total.low.size();
  total.low.conservativeResize(d);
  total.high.conservativeResize(d);
  total.stored.conservativeResize(d);
  total.low.tail(d - before).setConstant(std::numeric_limits<double>::infinity());
  total.high.tail(d - before).setConstant(-std::numeric_limits<double>::infinity());
  total.stored.tail(d - before).setZero();
  const auto c = part.low.size();
  total.low.head(c) = total.low.head(c).cwiseMin(part.low);
  total.high.head(c) = total.high.head(c).cwiseMax(part.high);
  total.stored.head(c) += part.stored;
  total.rows += part.rows;
  total.sparse = total.sparse || part.sparse;
}

moment_grid grid_for(const feature_bounds& bounds, double factor) {
  moment_grid grid;
  grid.factor = factor;
  grid.shift.assign(static_cast<std::size_t>(bounds.low.size()), 0);
  for (Eigen::Index j = 0; j < bounds.low.size(); ++j) {
    const double largest = std::max(std::fabs(bounds.low[j]), std::fabs(bounds.high[j])) * std::fabs(factor);
    if (!std::isfinite(largest) || largest == 0)
      continue;  // nothing stored, or only zeros: any grid sums them exactly
    int exponent = 0;
    std::frexp(largest, &exponent);  // largest < 2^exponent
    grid.shift[static_cast<std::size_t>(j)] = moment_grid_bits - exponent;
  }
  return grid;
}

result<feature_moments> moments_of(const model::dataset& data, const moment_grid& grid, const std::string& source) {
  const auto d = data.cols();
  if (static_cast<std::size_t>(d) > grid.shift.size())
    return fail_invalid(source + ": " + std::to_string(d) + " features, the statistics grid has "
                        + std::to_string(grid.shift.size()));
  std::vector<double> scale(static_cast<std::size_t>(d));
  for (std::size_t j = 0; j < scale.size(); ++j)
    scale[j] = std::ldexp(grid.factor, grid.shift[j]);
  feature_moments out;
  out.sum.assign(static_cast<std::size_t>(d), 0);
  out.squares.assign(static_cast<std::size_t>(d), 0);
  std::optional<std::pair<Eigen::Index, float>> beyond;
  for_each_stored(data, [&](Eigen::Index j, float value) {
    const auto k = static_cast<std::size_t>(j);
    const double t = static_cast<double>(value) * scale[k];
    if (!(std::fabs(t) <= grid_limit)) {  // NaN too
      if (!beyond)
        beyond = std::pair{j, value};
      return;
    }
    const auto q = static_cast<std::int64_t>(std::llround(t));
    out.sum[k] += q;
    out.squares[k] += static_cast<wide>(q) * q;
  });
  if (beyond)
    return fail_invalid(source + ": feature " + std::to_string(beyond->first + 1) + " holds "
                        + std::to_string(beyond->second) + ", beyond the bounds its statistics were"
                        + " fitted on (did the data change since it was scanned?)");
  return out;
}

result<void> check_moments(const feature_moments& moments, std::int64_t rows, std::int64_t features) {
  if (moments.sum.size() != moments.squares.size() || static_cast<std::int64_t>(moments.sum.size()) > features)
    return fail_invalid("feature moments for " + std::to_string(moments.sum.size()) + " features, expected at most "
                        + std::to_string(features));
  if (rows < 0 || rows > max_moment_rows)
    return fail_invalid("feature moments over " + std::to_string(rows) + " rows");
  const wide most_sum = static_cast<wide>(rows) << moment_grid_bits;
  const wide most_squares = static_cast<wide>(rows) << (2 * moment_grid_bits);
  for (std::size_t j = 0; j < moments.sum.size(); ++j)
    if (magnitude(moments.sum[j]) > most_sum || moments.squares[j] < 0 || moments.squares[j] > most_squares)
      return fail_invalid("feature moments of feature " + std::to_string(j + 1) + " beyond what "
                          + std::to_string(rows) + " rows can give");
  return {};
}

void merge_into(feature_moments& total, const feature_moments& part) {
  grow(total.sum, part.sum.size(), wide{0});
  grow(total.squares, part.squares.size(), wide{0});
  for (std::size_t j = 0; j < part.sum.size(); ++j) {
    total.sum[j] += part.sum[j];
    total.squares[j] += part.squares[j];
  }
}

feature_statistics statistics_of(std::int64_t rows, const moment_grid& grid, const feature_moments& moments) {
  const auto d = static_cast<Eigen::Index>(grid.shift.size());
  feature_statistics out{Eigen::VectorXd::Zero(d), Eigen::VectorXd::Zero(d)};
  if (rows <= 0)
    return out;
  const wide n = rows;
  const auto nd = static_cast<double>(rows);
  for (Eigen::Index j = 0; j < d && static_cast<std::size_t>(j) < moments.sum.size(); ++j) {
    const auto k = static_cast<std::size_t>(j);
    const wide s1 = moments.sum[k];
    const wide s2 = moments.squares[k];
    // s1 = a n + r with 0 <= r < n; then sum (q - a)^2 = s2 - a s1 - a r exactly, and
    // n^2 var = n sum (q - a)^2 - r^2: the one rounding is in the last division.
    wide a = s1 / n;
    if (s1 % n != 0 && s1 < 0)
      --a;
    const wide r = s1 - a * n;
    const wide around_a = s2 - a * s1 - a * r;
    const double fraction = static_cast<double>(r) / nd;
    const double mean = static_cast<double>(a) + fraction;
    const double variance = std::max(0.0, static_cast<double>(around_a) / nd - fraction * fraction);
    out.mean[j] = std::ldexp(mean, -grid.shift[k]);
    out.variance[j] = std::ldexp(variance, -2 * grid.shift[k]);
  }
  return out;
}

} // namespace shardopt::io
