#pragma once

// Test helper for bounded-memory checks: the peak resident set size of this process.

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <string>

namespace shardopt::test {

/// The largest resident set size this process has had so far, in bytes (getrusage's ru_maxrss, which
/// Linux reports in KiB). It never decreases: the growth across a call is the call's peak beyond any
/// earlier one, so a test measuring it should run in a process of its own (CTest runs each case so).
inline std::int64_t peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

/// A "Key:  N kB" field of a /proc status file, in bytes; 0 where there is none (or no such file, as
/// for a process that has ended).
inline std::int64_t status_bytes(const std::string& path, const std::string& field) {
  std::ifstream status{path};
  std::string key;
  while (status >> key) {
    if (key == field + ":") {
      std::int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

/// The largest virtual memory size this process has had so far, in bytes (VmPeak in
/// /proc/self/status; 0 where there is none). Unlike the RSS it also counts allocations that were
/// never touched, which the RSS misses until something writes to them.
inline std::int64_t peak_virtual_bytes() {
  return status_bytes("/proc/self/status", "VmPeak");
}

/// The resident set size of process `pid` now, in bytes (VmRSS in /proc/PID/status; 0 where there
/// is none, as for a process that has ended).
inline std::int64_t resident_bytes(long pid) {
  return status_bytes("/proc/" + std::to_string(pid) + "/status", "VmRSS");
}

/// The bound hostile-file tests hold readers to: far below what any of their headers claims.
constexpr std::int64_t hostile_file_memory_bound = std::int64_t{64} << 20;

} // namespace shardopt::test
