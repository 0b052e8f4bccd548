#pragma once

#include "actors/wire/runtime.hpp"
#include "base/result.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace shardopt::actors {

struct node_limits;
struct node_counters;

/// A node actor published on a port: what `shardopt node` runs. Serves drivers until stopped or
/// destroyed, which ends the node and every shard it hosts.
class node_service {
public:
  /// Publishes a node actor on `bind`:`port` (port 0: the OS picks one), over TLS when the runtime
  /// has TLS options, serving within `limits`. Errors say why publishing failed.
  /// What it holds and serves is counted in `counters` (null: counts of its own).
  static result<node_service> start(runtime& rt, const std::string& bind, std::uint16_t port,
                                    const node_limits& limits,
                                    std::shared_ptr<node_counters> counters = nullptr);

  node_service(node_service&&) noexcept;
  node_service& operator=(node_service&&) noexcept;
  ~node_service();

  std::uint16_t port() const;

  /// Blocks until `stop` is called (then Ok) or the node actor ends by itself, which it never
  /// should: then a failure saying why, so that the process exits non-zero and its supervisor
  /// restarts it. Call from the thread that started the service.
  result<void> serve();

  /// Wakes `serve`; callable from any thread (a signal-handling thread).
  void stop();

  struct impl;

private:
  explicit node_service(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

struct endpoint;
struct node_status;

/// Asks the node at `where` for its status (wire/node_protocol.hpp: the status request), waiting
/// up to `timeout` for the answer once connected. Errors name the node and say why.
result<node_status> ask_node_status(runtime& rt, const endpoint& where,
                                    std::chrono::milliseconds timeout);

} // namespace shardopt::actors
