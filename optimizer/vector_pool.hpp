#pragma once

// The driver's threads for its work over the dimension: the vector updates and dot products of
// Newton's conjugate gradients, and (in the actors layer) adding the shards' exact sums and turning
// them into doubles. Work is cut into fixed chunks of the dimension, so that a sum over chunks is
// added in chunk order and comes out the same bits on one thread or on many.

#include "model/exact_sum.hpp"

#include <Eigen/Core>

#include <array>
#include <functional>
#include <memory>
#include <vector>

namespace Eigen {
class ThreadPoolInterface;
}

namespace shardopt::optimizer {

/// Threads that share dimension-sized work with the calling thread. Idle threads sleep (Eigen's
/// non-blocking pool without spinning), so they take nothing from the shards while these compute.
/// One caller at a time.
class vector_pool {
public:
  /// Entries a chunk holds: model::vector_chunk (2^15 doubles, 256 KiB), the unit of work and of
  /// a sum's order, the same as the model layer's.
  static constexpr Eigen::Index chunk = model::vector_chunk;

  /// A pool of `threads` threads in all, the caller's included (1: the caller alone).
  explicit vector_pool(int threads = 1);
  ~vector_pool();
  vector_pool(const vector_pool&) = delete;
  vector_pool& operator=(const vector_pool&) = delete;

  int threads() const { return threads_; }

  /// Calls f(begin, end) for each chunk of [0, n), on the pool's threads and the caller's; returns
  /// when every call has. f must be safe to call concurrently on disjoint chunks.
  void for_chunks(Eigen::Index n, const std::function<void(Eigen::Index, Eigen::Index)>& f);

  /// The sum over the chunks of [0, n), in chunk order, of f(begin, end): the same bits whatever
  /// the number of threads.
  double sum_chunks(Eigen::Index n, const std::function<double(Eigen::Index, Eigen::Index)>& f);

  /// a . b, summed chunk by chunk.
  double dot(const Eigen::VectorXd& a, const Eigen::VectorXd& b);

  /// The N sums over the chunks of [0, n), each in chunk order, of the N figures f(begin, end)
  /// returns (a std::array<double, N>): one pass for several sums, the same bits on any threads.
  template <std::size_t N, class F>
  std::array<double, N> sums(Eigen::Index n, F f) {
    std::vector<std::array<double, N>> parts(static_cast<std::size_t>((n + chunk - 1) / chunk));
    for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) { parts[static_cast<std::size_t>(begin / chunk)] = f(begin, end); });
    std::array<double, N> total{};
    for (const auto& part : parts)
      for (std::size_t i = 0; i < N; ++i)
        total[i] += part[i];
    return total;
  }

private:
  int threads_;
  std::unique_ptr<Eigen::ThreadPoolInterface> pool_;
};

} // namespace shardopt::optimizer
