#pragma once

// Work spread over the cores a process may use, for the passes over a dataset outside the actors
// (parsing, setting up shards): plain threads, started and joined within one call.

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
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
/// returns when all are done. An exception from f (std::bad_alloc) stops the work not yet started
/// and is thrown again here once every thread has finished, as a loop would throw it; a thread
/// that cannot be started leaves its share to the others.
inline void run_parallel(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& f) {
  const auto workers = std::min<std::size_t>(std::max(threads, 1U), n);
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      f(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::mutex failing;
  std::exception_ptr failure;
  const auto work = [&]() noexcept {
    try {
      for (auto i = next++; i < n; i = next++)
        f(i);
    } catch (...) {
      next = n;
      const std::lock_guard<std::mutex> lock{failing};
      if (!failure)
        failure = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  try {
    helpers.reserve(workers - 1);
    for (std::size_t t = 1; t < workers; ++t)
      helpers.emplace_back(work);
  } catch (...) {  // std::system_error or std::bad_alloc: fewer threads do the work
  }
  work();
  for (auto& helper : helpers)
    helper.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace shardopt
