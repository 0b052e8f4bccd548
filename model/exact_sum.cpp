#include "model/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace shardopt::model {

namespace {

constexpr double unit_limit = 4611686018427387904.0;  // 2^62: the most a block may deposit

/// Whether 2^k is a normal double.
inline bool normal_power(int k) {
  return k >= -1022 && k <= 1023;
}

/// 2^k for a k where `normal_power(k)`, from its bits.
inline double power_of_two(int k) {
  const auto bits = static_cast<std::uint64_t>(k + 1023) << 52;
  double power;
  std::memcpy(&power, &bits, sizeof power);
  return power;
}

/// value * 2^k, as std::ldexp gives it (correctly rounded), without its cost where 2^k is a normal
/// double: a product with an exact power of two is rounded once, as ldexp rounds.
inline double scaled(double value, int k) {
  return normal_power(k) ? value * power_of_two(k) : std::ldexp(value, k);
}

} // namespace

std::int64_t block_rows_for(std::int64_t rows) {
  constexpr std::int64_t chunk = 256;  // the kernels' chunk (kernels.hpp)
  const auto rows_per_64th = rows / 64;
  if (rows_per_64th < chunk)
    return std::max<std::int64_t>(rows_per_64th, 1);
  return std::min(rows_per_64th / chunk * chunk, 4 * chunk);
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
  if (!(max_abs <= std::numeric_limits<double>::max()))
    return highest_grid;
  const double bound = std::max(max_abs, std::numeric_limits<double>::min())
                       * static_cast<double>(std::max<std::int64_t>(terms, 1));
  // 2^ilogb(bound) <= bound < 2^(ilogb(bound) + 1) = 2^(62 + e).
  return std::clamp(std::ilogb(bound) + 1 - fixed_bits, lowest_grid, highest_grid);
}

bool fits_grid(double units, std::int64_t terms) {
  return std::isfinite(units)
         && units * static_cast<double>(std::max<std::int64_t>(terms, 1)) < std::ldexp(1.0, fixed_bits);
}

int grid_shift(double units, std::int64_t terms) {
  const double total = units * static_cast<double>(std::max<std::int64_t>(terms, 1));
  if (!(total <= std::numeric_limits<double>::max()))  // infinite (or NaN): as coarse as grids go
    return highest_grid - lowest_grid;
  const int log = std::ilogb(total);  // FP_ILOGB0 (INT_MIN) for 0
  return log < fixed_bits ? 1 : std::min(log + 1 - fixed_bits, highest_grid - lowest_grid);
}

exact_sum::exact_sum(const std::vector<int>& exponents)
  : words_(exponents.size(), 0), exponents_(exponents.size()) {
  for (std::size_t i = 0; i < exponents.size(); ++i)
    exponents_[i] = static_cast<std::int16_t>(std::clamp(exponents[i], lowest_grid, highest_grid));
}

void exact_sum::deposit(std::size_t i, double value) {
  if (!(std::fabs(value) <= std::numeric_limits<double>::max())) {
    max_units_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double units = scaled(value, -exponents_[i]);
  if (std::fabs(units) > max_units_)  // false once max_units_ is NaN: it stays NaN
    max_units_ = std::fabs(units);
  // Unsigned arithmetic: wrapping is defined, and exact while the true total fits (fits_grid).
  words_[i] = static_cast<std::int64_t>(
    static_cast<std::uint64_t>(words_[i])
    + static_cast<std::uint64_t>(std::llrint(std::clamp(units, -unit_limit, unit_limit))));
}

void exact_sum::deposit(std::size_t first, Eigen::Ref<const Eigen::VectorXd> values) {
  const auto n = static_cast<std::size_t>(values.size());
  const double* v = values.data();
  const std::int16_t* e = exponents_.data() + first;
  // The common case, in a loop without branches that the compiler can vectorise: every value
  // finite and every grid's power of two a normal double. Otherwise entry by entry.
  bool plain = true;
  for (std::size_t i = 0; i < n; ++i)
    plain &= std::fabs(v[i]) <= std::numeric_limits<double>::max() && normal_power(-e[i]);
  if (!plain) {
    for (std::size_t i = 0; i < n; ++i)
      deposit(first + i, v[i]);
    return;
  }
  std::int64_t* w = words_.data() + first;
  double most = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double units = v[i] * power_of_two(-e[i]);  // as scaled(): one rounding, as ldexp's
    most = std::max(most, std::fabs(units));
    // nearbyint rounds as llrint does (to nearest, ties to even); the value is an integer in range.
    const double whole = std::nearbyint(std::clamp(units, -unit_limit, unit_limit));
    w[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(w[i])
                                     + static_cast<std::uint64_t>(static_cast<std::int64_t>(whole)));
  }
  if (most > max_units_)  // false once max_units_ is NaN: it stays NaN
    max_units_ = most;
}

void add_words(std::int64_t* into, const std::int64_t* from, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)  // unsigned: wrapping is defined
    into[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(into[i])
                                        + static_cast<std::uint64_t>(from[i]));
}

void exact_sum::merge(const std::int64_t* words, double max_units) {
  add_words(words_.data(), words, words_.size());
  if (std::isnan(max_units) || max_units > max_units_)
    max_units_ = max_units;
}

void exact_sum::to_doubles(Eigen::Ref<Eigen::VectorXd> out) const {
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out[i] = scaled(static_cast<double>(words_[static_cast<std::size_t>(i)]),
                    exponents_[static_cast<std::size_t>(i)]);
}

} // namespace shardopt::model
