#pragma once

// Internal to the model layer: the arithmetic of one fixed-point deposit (exact_sum.hpp), shared by
// the block deposits of dense data and the term deposits of sparse data, so that both round the
// same way. Not part of the interface.

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace shardopt::model::detail {

/// 2^62: the most one deposit may carry, in grid units (past `fits_grid`: the sum is redone).
constexpr double unit_limit = 4611686018427387904.0;

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

/// `units` (finite, at most `unit_limit` in magnitude) rounded to the nearest integer, ties to even:
/// one instruction on x86-64 (cvtsd2si, in the default rounding mode), std::llrint elsewhere.
inline std::int64_t round_units(double units) {
#if defined(__x86_64__)
  return _mm_cvtsd_si64(_mm_set_sd(units));
#else
  return std::llrint(units);
#endif
}

/// word + units, wrapping (defined for unsigned arithmetic, exact while the true total fits).
inline std::int64_t add_units(std::int64_t word, double units) {
  const double clamped = units < -unit_limit ? -unit_limit : units > unit_limit ? unit_limit : units;
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(word)
                                   + static_cast<std::uint64_t>(round_units(clamped)));
}

} // namespace shardopt::model::detail
