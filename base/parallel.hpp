#pragma once

// Work spread over the cores a process may use, for the passes over a dataset outside the actors
// (parsing, setting up shards): plain threads, started and joined within one call.

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace shardopt {

/// The CPUs this process may run on (its affinity mask: 1 under `taskset -c 0`), at least 1.
inline unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return static_cast<unsigned>(std::max(CPU_COUNT(&set), 1));
  return std::max(std::thread::hardware_concurrency(), 1U);
}

/// Runs f(i) for every i in [0, n) on up to `threads` threads, the calling one among them, and
/// returns when all are done. f must not throw.
inline void run_parallel(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& f) {
  const auto workers = std::min<std::size_t>(std::max(threads, 1U), n);
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      f(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (auto i = next++; i < n; i = next++)
      f(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(workers - 1);
  for (std::size_t t = 1; t < workers; ++t)
    helpers.emplace_back(work);
  work();
  for (auto& helper : helpers)
    helper.join();
}

} // namespace shardopt
