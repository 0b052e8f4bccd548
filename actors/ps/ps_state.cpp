#include "actors/ps/ps_state.hpp"

#include "actors/wire/network.hpp"

#include <algorithm>
#include <limits>

namespace shardopt::actors::detail {

std::uint32_t live_workers(const parameter_server_state& s) {
  std::uint32_t live = 0;
  for (bool g : s.gone)
    live += g ? 0 : 1;
  return live;
}

/// Answers held clock requests whose worker is now within the staleness bound (all of them once
/// training is over).
void release_clocks(parameter_server_state& s) {
  std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t w = 0; w < s.clocks.size(); ++w)
    if (!s.gone[w])
      slowest = std::min(slowest, s.clocks[w]);
  const bool over = s.status != ps_status::running;
  auto held = std::move(s.held_clocks);
  s.held_clocks.clear();
  for (auto& h : held) {
    if (over || h.clock - slowest <= s.config.staleness)
      h.promise.deliver(h.round, s.step);
    else
      s.held_clocks.push_back(std::move(h));
  }
}

/// Releases every pending reply: no worker may wait on a PS that stopped.
void release_all(parameter_server_state& s) {
  for (auto& [promise, round] : s.waiting_pushes)
    promise.deliver(round, s.step, false);
  s.waiting_pushes.clear();
  for (auto& g : s.grads)
    g.reset();
  s.received = 0;
  release_clocks(s);
}

void quit_if_done(ps_pointer self) {
  auto& s = self->state;
  if (!s.chief_done)
    return;
  for (bool g : s.gone)
    if (!g)
      return;
  if (s.status == ps_status::failed)
    self->quit(make_error(errc::training_failed, s.note));
  else
    self->quit();
}

void fail_training(ps_pointer self, std::string why) {
  auto& s = self->state;
  if (s.status == ps_status::failed || s.status == ps_status::finished)
    return;
  s.status = ps_status::failed;
  s.note = std::move(why);
  release_all(s);
}

void chief_gone(ps_pointer self) {
  auto& s = self->state;
  if (s.chief_done)
    return;
  s.chief_done = true;
  caf::delayed_anon_send(ps_actor{self}, timeouts::goodbye_grace, bye_atom::value,
                         std::uint64_t{0}, s.token, grace_timer);
}

/// Applies one gradient (already averaged in synchronous mode) and advances the step.
void apply(parameter_server_state& s, const Eigen::VectorXd& grad) {
  optimizer::apply_update(s.rule, s.step, s.theta, grad, s.optimizer_state);
  s.published.reset();
  ++s.step;
  if (s.config.last_step > 0 && s.step >= s.config.last_step) {
    s.status = ps_status::finished;
    release_all(s);
  }
}

void on_worker_down(ps_pointer self, std::uint32_t worker, const caf::error& reason) {
  auto& s = self->state;
  if (worker >= s.gone.size() || s.gone[worker])
    return;
  s.gone[worker] = true;
  if (s.status == ps_status::running) {
    if (worker == 0)
      fail_training(self, "the chief (worker 0) went down (" + to_string(reason) +
                   "); restart the tasks to resume from the newest checkpoint");
    else if (s.config.sync && live_workers(s) < s.config.replicas_to_aggregate)
      fail_training(self, "worker " + std::to_string(worker) + " went down and only " +
                   std::to_string(live_workers(s)) + " of " + std::to_string(s.config.total_replicas) +
                   " workers are left, but a synchronous step needs " +
                   std::to_string(s.config.replicas_to_aggregate) + " gradients");
  }
  release_clocks(s);
  if (worker == 0)
    chief_gone(self);
  quit_if_done(self);
}

/// Whether the current request may act for `worker`: the job's token, from the actor that holds
/// the index.
bool holds(ps_pointer self, std::uint32_t worker) {
  auto& s = self->state;
  if (s.status != ps_status::waiting && worker >= s.config.total_replicas)
    return false;
  const auto it = s.holders.find(worker);
  return it != s.holders.end()
         && it->second == caf::actor_cast<caf::actor_addr>(self->current_sender());
}

/// Whether the current request comes from the chief with the job's token (before initialisation:
/// with the token it said hello with).
bool from_chief(ps_pointer self, const access_token& token) {
  auto& s = self->state;
  return token == s.token && holds(self, 0);
}

} // namespace shardopt::actors::detail
