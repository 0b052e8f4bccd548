#pragma once

#include "actors/runtime.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace shardopt::actors {

struct node_limits;

/// A node actor published on a port: what `shardopt node` runs. Serves drivers until stopped or
/// destroyed, which ends the node and every shard it hosts.
class node_service {
public:
  /// Publishes a node actor on `bind`:`port` (port 0: the OS picks one), over TLS when the runtime
  /// has TLS options, serving within `limits`. Errors say why publishing failed.
  static result<node_service> start(runtime& rt, const std::string& bind, std::uint16_t port,
                                    const node_limits& limits);

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

} // namespace shardopt::actors
