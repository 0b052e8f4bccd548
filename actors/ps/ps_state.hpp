#pragma once

// A parameter server's state and its transitions (see wire/ps_protocol.hpp for the protocol and
// the state diagram): held replies, worker bookkeeping, applying updates, failing and ending.
// Private to parameter_server.cpp and ps_state.cpp.

#include "actors/wire/guard.hpp"
#include "actors/ps/parameter_server.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::actors::detail {

/// A `bye` from this worker index, sent by the PS to itself, is its grace timer, not a worker.
constexpr std::uint32_t grace_timer = 0xffffffffu;

using push_promise = caf::typed_response_promise<std::uint64_t, std::int64_t, bool>;
using clock_promise = caf::typed_response_promise<std::uint64_t, std::int64_t>;

struct parameter_server_state {
  ps_status status = ps_status::waiting;
  ps_config config;
  optimizer::update_rule rule;
  Eigen::VectorXd theta;
  std::shared_ptr<const Eigen::VectorXd> published;  ///< theta as last pulled; reset on update
  optimizer::update_state optimizer_state;
  std::int64_t step = 0;
  ps_stats stats;
  std::string note;

  access_token token;  ///< the job's capability, given at spawn

  // Workers: who said hello (and is monitored), with the token they gave; who holds which index;
  // who is gone (said bye or went down).
  struct claim {
    std::uint32_t worker;
    access_token token;
  };
  std::map<caf::actor_addr, claim> workers;
  std::map<std::uint32_t, caf::actor_addr> holders;
  std::string model;  ///< the job's model, as the first hello described it
  std::vector<bool> gone;
  bool chief_done = false;

  // Synchronous mode: the gradients received for the current step, by worker.
  std::vector<std::optional<dense_vector>> grads;
  std::vector<double> losses;
  std::vector<std::int64_t> examples;
  std::vector<std::pair<push_promise, std::uint64_t>> waiting_pushes;
  std::uint32_t received = 0;

  // Stale synchronous parallel: each worker's clock, and the clock requests held back.
  std::vector<std::int64_t> clocks;
  struct held_clock {
    clock_promise promise;
    std::uint64_t round;
    std::int64_t clock;
    std::uint32_t worker;
  };
  std::vector<held_clock> held_clocks;

  static inline const char* name = "parameter_server";
};

using ps_impl = guarded<ps_actor::stateful_base<parameter_server_state>>;
using ps_pointer = ps_impl*;

/// Workers not gone (neither said goodbye nor went down).
std::uint32_t live_workers(const parameter_server_state& s);
/// Answers held clock requests whose worker is now within the staleness bound (all of them once
/// training is over).
void release_clocks(parameter_server_state& s);
/// Releases every pending reply: no worker may wait on a PS that stopped.
void release_all(parameter_server_state& s);
/// Ends the PS once the chief is done and every worker is gone.
void quit_if_done(ps_pointer self);
/// Stops training with `why` (running or waiting -> failed).
void fail_training(ps_pointer self, std::string why);
/// The chief is done: the other workers have timeouts::goodbye_grace to say goodbye.
void chief_gone(ps_pointer self);
/// Applies one gradient (already averaged in synchronous mode) and advances the step.
void apply(parameter_server_state& s, const Eigen::VectorXd& grad);
/// A worker went down: training fails if it was the chief or a synchronous step can no longer be
/// made.
void on_worker_down(ps_pointer self, std::uint32_t worker, const caf::error& reason);
/// Whether the current request comes from the actor that holds index `worker`.
bool holds(ps_pointer self, std::uint32_t worker);
/// Whether the current request comes from the chief with the job's token.
bool from_chief(ps_pointer self, const access_token& token);

} // namespace shardopt::actors::detail
