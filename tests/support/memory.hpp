#pragma once

// Test helper for bounded-memory checks: the peak resident set size of this process.

#include <sys/resource.h>

#include <cstdint>

namespace shardopt::test {

/// The largest resident set size this process has had so far, in bytes (getrusage's ru_maxrss, which
/// Linux reports in KiB). It never decreases: the growth across a call is the call's peak beyond any
/// earlier one, so a test measuring it should run in a process of its own (CTest runs each case so).
inline std::int64_t peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

/// The bound hostile-file tests hold readers to: far below what any of their headers claims.
constexpr std::int64_t hostile_file_memory_bound = std::int64_t{64} << 20;

} // namespace shardopt::test
