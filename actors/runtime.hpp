#pragma once

#include <cstddef>
#include <memory>

namespace caf {
class actor_system;
}

namespace shardopt::actors {

/// Settings of the process-wide actor runtime.
struct runtime_options {
  /// Scheduler worker threads; 0 = one per hardware thread.
  std::size_t worker_threads = 0;
};

/// Owns the CAF actor system of a process, configured with the project's message types.
/// Everything spawned through it must be released before it is destroyed.
class runtime {
public:
  explicit runtime(runtime_options options = {});
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  caf::actor_system& system();
  std::size_t worker_threads() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace shardopt::actors
