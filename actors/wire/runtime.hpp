#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace caf {
class actor_system;
}

namespace shardopt::actors {

/// Mutual TLS between drivers and nodes (caf_openssl): this process's certificate and key, and the
/// CA that must have signed the peer's certificate. All three or none.
struct tls_options {
  std::string certificate;
  std::string key;
  std::string ca;
  bool enabled() const { return !certificate.empty() || !key.empty() || !ca.empty(); }
};

/// Settings of the process-wide actor runtime.
struct runtime_options {
  /// Scheduler worker threads; 0 = one per hardware thread.
  std::size_t worker_threads = 0;
  /// Load CAF's middleman (remote actors); heartbeats notice a silent peer within seconds.
  bool network = false;
  tls_options tls;
  /// Leave the actor system running when the runtime is destroyed, for a process that ends right
  /// after (main's quick_exit): CAF 0.17's teardown waits for every actor to be released, and the
  /// middleman may hold remote peers' proxies to ours forever. Network processes set this.
  bool abandon_at_exit = false;

  /// Local actors only, on `threads` scheduler threads.
  static runtime_options local(std::size_t threads) { return runtime_options{threads, false, {}, false}; }
};

/// Owns the CAF actor system of a process, configured with the project's message types.
/// Everything spawned through it must be released before it is destroyed (unless
/// `abandon_at_exit`).
class runtime {
public:
  explicit runtime(runtime_options options = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  caf::actor_system& system();
  std::size_t worker_threads() const;
  const runtime_options& options() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace shardopt::actors
