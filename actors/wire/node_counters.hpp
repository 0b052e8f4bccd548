#pragma once

// What a node counts while it serves, for its metrics endpoint and `shardopt status`: written by the
// node actor and its shards, read by any thread at any time (an HTTP server's, the signal
// handler's). Plain relaxed atomics, so that counting never blocks or slows a shard; a reader sees
// each value whole, not all of them at one instant.

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace shardopt::actors {

/// The requests a node counts refusals of: its own protocol's and its shards' (`evaluate`: any
/// request a shard refuses, counted by each shard that refuses it; the refusals of its groups and
/// trees are not counted).
enum class node_request : std::uint8_t {
  hello, append, spawn, scan, moments, spawnpart, group, tree, release, restrict, evaluate, count
};

/// The reasons it counts them by: the error codes its replies carry (messages.hpp, errc).
enum class refusal_reason : std::uint8_t { refused, invalid_data, bad_request, failed, count };

constexpr std::string_view to_string(node_request request) {
  constexpr std::string_view names[] = {"hello", "append", "spawn",   "scan",    "moments",
                                        "spawnpart", "group", "tree", "release", "restrict",
                                        "evaluate"};
  return names[static_cast<std::size_t>(request)];
}

constexpr std::string_view to_string(refusal_reason reason) {
  constexpr std::string_view names[] = {"refused", "invalid_data", "bad_request", "failed"};
  return names[static_cast<std::size_t>(reason)];
}

struct node_counters {
  // Held now: set by the node actor after every request that changes them.
  std::atomic<std::int64_t> drivers{0};       ///< drivers holding anything here
  std::atomic<std::int64_t> shards{0};        ///< shards held, staged ones included
  std::atomic<std::int64_t> bytes_held{0};    ///< their data and buffers, and staged data, in bytes
  std::atomic<std::int64_t> staged_bytes{0};  ///< of it, data still arriving in pieces
  std::atomic<std::int64_t> restrictions{0};  ///< made since it started: shards restricted from others

  // Served since the node started: counted by its shards, one per request they answer.
  std::atomic<std::int64_t> evaluations{0};   ///< losses and gradients
  std::atomic<std::int64_t> products{0};      ///< Hessian-vector products
  std::atomic<std::int64_t> qualities{0};     ///< accuracy and squared-error passes
  std::atomic<std::int64_t> lines{0};         ///< line-search losses (a pass over the examples)
  std::atomic<std::int64_t> busy_nanoseconds{0};          ///< time shards spent computing them
  std::atomic<std::int64_t> last_evaluation_nanoseconds{0};  ///< the latest one's computing time
  std::atomic<std::int64_t> last_evaluation_unix_ms{0};   ///< when it finished (0: none yet)

  /// Requests answered with an error, by request and reason.
  std::array<std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(refusal_reason::count)>,
             static_cast<std::size_t>(node_request::count)>
    refusals{};

  /// Set when the node is shutting down gracefully: it takes no new drivers, and is not ready.
  std::atomic<bool> draining{false};

  void refuse(node_request request, refusal_reason reason) {
    refusals[static_cast<std::size_t>(request)][static_cast<std::size_t>(reason)].fetch_add(
      1, std::memory_order_relaxed);
  }

  std::int64_t refused(node_request request, refusal_reason reason) const {
    return refusals[static_cast<std::size_t>(request)][static_cast<std::size_t>(reason)].load(
      std::memory_order_relaxed);
  }
};

} // namespace shardopt::actors
