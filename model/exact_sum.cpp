#include "model/exact_sum.hpp"

#include "model/fixed_point.hpp"
#include "base/spare_words.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace shardopt::model {

using detail::normal_power;
using detail::power_of_two;
using detail::scaled;
using detail::unit_limit;

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

int grid_exponent(double max_abs, std::int64_t terms, int bits) {
  if (!(max_abs <= std::numeric_limits<double>::max()))
    return highest_grid;
  const double bound = std::max(max_abs, std::numeric_limits<double>::min())
                       * static_cast<double>(std::max<std::int64_t>(terms, 1));
  if (!(bound <= std::numeric_limits<double>::max()))
    return highest_grid;
  // 2^ilogb(bound) <= bound < 2^(ilogb(bound) + 1) = 2^(bits + e); bound is a normal
  // double, so ilogb is its biased exponent field less the bias (std::ilogb is a library call).
  std::uint64_t pattern;
  std::memcpy(&pattern, &bound, sizeof pattern);
  const int log = static_cast<int>((pattern >> 52) & 0x7ff) - 1023;
  return std::clamp(log + 1 - bits, lowest_grid, highest_grid);
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

int grid::exponent(std::size_t i) const {
  return std::max(base - static_cast<int>((*below)[i]), lowest_grid);
}

grid make_grid(const std::vector<int>& exponents) {
  grid out;
  out.base = exponents.empty() ? 0 : lowest_grid;
  for (const int e : exponents)
    out.base = std::max(out.base, std::clamp(e, lowest_grid, highest_grid));
  auto below = std::make_shared<std::vector<std::uint8_t>>(exponents.size());
  for (std::size_t i = 0; i < exponents.size(); ++i)
    (*below)[i] = static_cast<std::uint8_t>(
      std::min(out.base - std::clamp(exponents[i], lowest_grid, highest_grid), max_grid_below));
  out.entries = exponents.size();
  out.below = std::move(below);
  return out;
}

bool entries_fit(const entry_sums& sums, std::size_t size) {
  if (!sums.entries)
    return sums.words.size() == size;
  const auto& entries = *sums.entries;
  if (entries.size() != sums.words.size() || entries.size() > size)
    return false;
  for (std::size_t k = 0; k < entries.size(); ++k)
    if (entries[k] < 0 || static_cast<std::size_t>(entries[k]) >= size || (k > 0 && entries[k] <= entries[k - 1]))
      return false;
  return true;
}

void exact_sum::reset(grid g, bool zero) {
  grid_ = std::move(g);
  if (words_.capacity() < grid_.size())  // its words were taken for an answer: a kept buffer
    words_ = spare_words(grid_.size());
  if (zero)
    words_.assign(grid_.size(), 0);
  else
    words_.resize(grid_.size());
  max_units_ = 0;
}

void exact_sum::deposit(std::size_t i, double value) {
  if (!(std::fabs(value) <= std::numeric_limits<double>::max())) {
    max_units_ = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double units = scaled(value, -exponent(i));
  if (std::fabs(units) > max_units_)  // false once max_units_ is NaN: it stays NaN
    max_units_ = std::fabs(units);
  words_[i] = detail::add_units(words_[i], units);
}

void exact_sum::deposit(std::size_t first, Eigen::Ref<const Eigen::VectorXd> values) {
  const auto n = static_cast<std::size_t>(values.size());
  const double* v = values.data();
  const std::uint8_t* below = grid_.below->data() + first;
  const int base = grid_.base;
  // The common case, in a loop without branches that the compiler can vectorise: every value
  // finite and every grid's power of two a normal double (base - 255 >= -1023). Otherwise entry
  // by entry.
  bool plain = normal_power(-(base - max_grid_below)) && normal_power(-base);
  for (std::size_t i = 0; i < n; ++i)
    plain &= std::fabs(v[i]) <= std::numeric_limits<double>::max();
  if (!plain) {
    for (std::size_t i = 0; i < n; ++i)
      deposit(first + i, v[i]);
    return;
  }
  std::int64_t* w = words_.data() + first;
  double most = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double units = v[i] * power_of_two(static_cast<int>(below[i]) - base);  // as scaled()
    most = std::max(most, std::fabs(units));
    // nearbyint rounds as llrint does (to nearest, ties to even); the value is an integer in range.
    const double whole = std::nearbyint(std::clamp(units, -unit_limit, unit_limit));
    w[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(w[i])
                                     + static_cast<std::uint64_t>(static_cast<std::int64_t>(whole)));
  }
  note_units(most);
}

void add_words(std::int64_t* into, const std::int64_t* from, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)  // unsigned: wrapping is defined
    into[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(into[i])
                                        + static_cast<std::uint64_t>(from[i]));
}

void exact_sum::merge(const std::int64_t* words, double max_units) {
  add_words(words_.data(), words, words_.size());
  note_units(max_units);
}

void exact_sum::merge(const std::int32_t* entries, const std::int64_t* words, std::size_t count,
                      double max_units) {
  if (!entries) {
    add_words(words_.data(), words, count);
  } else {
    for (std::size_t k = 0; k < count; ++k) {  // unsigned: wrapping is defined
      auto& word = words_[static_cast<std::size_t>(entries[k])];
      word = static_cast<std::int64_t>(static_cast<std::uint64_t>(word) + static_cast<std::uint64_t>(words[k]));
    }
  }
  note_units(max_units);
}

void exact_sum::note_units(double units) {
  if (std::isnan(units) || units > max_units_)  // once NaN, it stays NaN
    max_units_ = units;
}

void exact_sum::to_doubles(Eigen::Ref<Eigen::VectorXd> out, Eigen::Index begin, Eigen::Index end,
                           Eigen::Index first) const {
  const std::uint8_t* below = grid_.below->data();
  const int base = grid_.base;
  // Every exponent's power of two a normal double: a product with it, in a loop the compiler
  // vectorises; otherwise entry by entry (ldexp).
  if (normal_power(base) && normal_power(std::max(base - max_grid_below, lowest_grid))) {
    for (Eigen::Index i = begin; i < end; ++i)
      out[i - first] = static_cast<double>(words_[static_cast<std::size_t>(i)])
                       * power_of_two(std::max(base - static_cast<int>(below[i]), lowest_grid));
    return;
  }
  for (Eigen::Index i = begin; i < end; ++i)
    out[i - first] = scaled(static_cast<double>(words_[static_cast<std::size_t>(i)]),
                            exponent(static_cast<std::size_t>(i)));
}

} // namespace shardopt::model
