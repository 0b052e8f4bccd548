#include "model/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardopt::model {

std::int64_t block_rows_for(std::int64_t rows) {
  return std::clamp<std::int64_t>(rows / 256, 1, 256);
}

std::int64_t block_count(std::int64_t rows, std::int64_t block_rows) {
  return rows <= 0 ? 0 : (rows + block_rows - 1) / block_rows;
}

std::vector<row_range> blocks_of(row_range rows, std::int64_t block_rows) {
  std::vector<row_range> blocks;
  blocks.reserve(static_cast<std::size_t>(block_count(rows.size(), block_rows)));
  for (auto begin = rows.begin; begin < rows.end; begin += block_rows)
    blocks.push_back({begin, std::min(begin + block_rows, rows.end)});
  return blocks;
}

int grid_exponent(double max_abs, std::int64_t terms) {
  const double bound = std::max(max_abs, std::numeric_limits<double>::min())
                       * static_cast<double>(std::max<std::int64_t>(terms, 1));
  // 2^ilogb(bound) <= bound < 2^(ilogb(bound) + 1) = 2^(62 + e).
  return std::ilogb(bound) + 1 - fixed_bits;
}

bool fits_grid(double max_abs, std::int64_t terms, int exponent) {
  if (!std::isfinite(max_abs))
    return false;
  return max_abs * static_cast<double>(std::max<std::int64_t>(terms, 1))
         < std::ldexp(1.0, fixed_bits + exponent);
}

exact_sum::exact_sum(std::size_t size, int exponent) : words_(size, 0), exponent_(exponent) {}

void exact_sum::deposit(std::size_t i, double value) {
  const double magnitude = std::fabs(value);
  if (!(magnitude <= std::numeric_limits<double>::max())) {
    max_abs_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (magnitude > max_abs_)  // false once max_abs_ is NaN: it stays NaN
    max_abs_ = magnitude;
  constexpr double limit = 4611686018427387904.0;  // 2^62
  const double units = std::clamp(std::ldexp(value, -exponent_), -limit, limit);
  // Unsigned arithmetic: wrapping is defined, and exact while the true total fits (fits_grid).
  words_[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(words_[i])
                                        + static_cast<std::uint64_t>(std::llrint(units)));
}

void exact_sum::deposit(std::size_t first, Eigen::Ref<const Eigen::VectorXd> values) {
  for (Eigen::Index i = 0; i < values.size(); ++i)
    deposit(first + static_cast<std::size_t>(i), values[i]);
}

void exact_sum::merge(const std::int64_t* words, double max_abs) {
  for (std::size_t i = 0; i < words_.size(); ++i)
    words_[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(words_[i])
                                          + static_cast<std::uint64_t>(words[i]));
  if (std::isnan(max_abs) || max_abs > max_abs_)
    max_abs_ = max_abs;
}

void exact_sum::to_doubles(Eigen::Ref<Eigen::VectorXd> out) const {
  fixed_to_doubles(words_.data(), exponent_, out);
}

void fixed_to_doubles(const std::int64_t* words, int exponent, Eigen::Ref<Eigen::VectorXd> out) {
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out[i] = std::ldexp(static_cast<double>(words[i]), exponent);
}

} // namespace shardopt::model
