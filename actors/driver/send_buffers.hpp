#pragma once

// Internal to the sharded objective's source (objective_state.hpp): the buffers the vectors of its
// requests are copied into, reused once no message holds them. Not part of the actors library's
// interface.

#include "actors/wire/messages.hpp"
#include "optimizer/vector_pool.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

namespace shardopt::actors {

/// Buffers for the vectors requests carry, reused once no message holds them (two evaluations
/// kept, the one being sent, and a product's v).
class send_buffers {
public:
  /// A copy of x in shared storage for this round's requests, in a buffer no message and no kept
  /// evaluation holds any more where there is one (no allocation, and so no page faults, from the
  /// second request of a run on), copied on `pool`'s threads (the driver's).
  dense_vector copy(const Eigen::VectorXd& x, optimizer::vector_pool& pool) {
    // The buffers are made at once, at the first request: the last two evaluations' thetas, a
    // product's vector and one a shard has not yet dropped are in use together, and a set that
    // grew when timing first asked for its fourth would allocate in the middle of a run.
    if (buffers_.empty()) {
      for (std::size_t i = 0; i < max_send_buffers; ++i)
        buffers_.push_back(std::make_shared<Eigen::VectorXd>(x.size()));
    }
    std::shared_ptr<Eigen::VectorXd> buffer;
    const auto free_buffer = [&] {
      for (const auto& candidate : buffers_)
        if (candidate.use_count() == 1 && candidate->size() == x.size())
          return candidate;
      return std::shared_ptr<Eigen::VectorXd>{};
    };
    buffer = free_buffer();
    // A shard drops its request's message just after it replies: with every buffer taken, wait a
    // moment (at most 2 ms) for one rather than allocate a vector of the dimension.
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
         !buffer && buffers_.size() >= max_send_buffers && std::chrono::steady_clock::now() < until;) {
      std::this_thread::yield();
      buffer = free_buffer();
    }
    if (!buffer) {
      buffer = std::make_shared<Eigen::VectorXd>(x.size());
      if (buffers_.size() < max_send_buffers)
        buffers_.push_back(buffer);
    }
    pool.for_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
      buffer->segment(begin, end - begin) = x.segment(begin, end - begin);
    });
    return dense_vector{std::shared_ptr<const Eigen::VectorXd>(std::move(buffer))};
  }

private:
  static constexpr std::size_t max_send_buffers = 4;
  std::vector<std::shared_ptr<Eigen::VectorXd>> buffers_;
};

} // namespace shardopt::actors
