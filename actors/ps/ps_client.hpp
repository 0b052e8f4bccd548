#pragma once

// A worker's client for its parameter servers (see wire/ps_protocol.hpp for the protocol): one
// peer_group (wire/fan_out.hpp) over the PSs, every request carrying the job's token. Used by the
// worker loop and the chief's hooks. Blocks the calling actor; use from the worker's own actor only.

#include "actors/wire/fan_out.hpp"
#include "actors/ps/parameter_server.hpp"
#include "actors/ps/ps_worker.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace shardopt::actors {

/// What a pull learned: the global step (PS 0's), each PS's step, the job's status, and why it
/// failed when it did.
struct pulled {
  std::int64_t step = 0;
  std::vector<std::int64_t> stamps;
  ps_status status = ps_status::running;
  std::string note;
};

class ps_client {
public:
  ps_client(caf::blocking_actor* self, const ps_group& group, const ps_job& job,
            std::uint32_t worker);

  std::size_t size() const { return servers_.size(); }
  const std::vector<std::int64_t>& bounds() const { return bounds_; }
  caf::blocking_actor* self() const { return servers_.self(); }

  /// Says hello to every PS (version, probe, token, this worker's index).
  result<void> hello();

  /// Pulls every slice into `theta` (resized to the model's dimension).
  result<pulled> pull(Eigen::VectorXd& theta);

  /// Initialises every PS with its slice of `theta` and `slots` at `step` (the chief).
  result<void> initialise(const Eigen::VectorXd& theta, const std::vector<Eigen::VectorXd>& slots,
                          std::int64_t step, std::int64_t updates);

  /// Pushes each PS its slice of `grad`, computed at the PS's step `stamps[j]`.
  result<void> push(const std::vector<std::int64_t>& stamps, double loss, std::int64_t examples,
                    const Eigen::VectorXd& grad);

  /// Stale synchronous parallel: waits (on PS 0) until this worker's `clock` is within bounds.
  result<void> clock(std::int64_t clock);

  /// The whole state (every slice and the rule's slots) as of now.
  result<void> state(Eigen::VectorXd& theta, std::vector<Eigen::VectorXd>& slots,
                     std::int64_t& step, std::int64_t& updates);

  /// PS 0's counters.
  result<ps_stats> stats();

  /// Tells every PS that training failed; a PS that ends on it counts as told.
  void report_failure(const std::string& why);
  /// This worker is done (a PS may end right after).
  result<void> bye();
  /// The chief is done (a PS may end right after).
  result<void> stop();

private:
  template <class Atom, class... Ts>
  result<void> tell_all(const std::string& what, Atom atom, const Ts&... xs);

  peer_group<ps_actor> servers_;
  const ps_job& job_;
  std::uint32_t worker_;
  std::vector<std::int64_t> bounds_;
};

} // namespace shardopt::actors
