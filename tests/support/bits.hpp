#pragma once

// Test helper for bit-for-bit comparisons: NaN equals the same NaN, -0 differs from +0.

#include <Eigen/Core>

#include <cstddef>
#include <cstring>

namespace shardopt::test {

/// The same `n` doubles, bit for bit.
inline bool same_bits(const double* a, const double* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(double)) == 0;
}

/// The same size and the same bits in every entry.
inline bool same_bits(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), static_cast<std::size_t>(a.size()));
}

} // namespace shardopt::test
