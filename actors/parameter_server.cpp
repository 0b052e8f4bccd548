#include "actors/parameter_server.hpp"

#include "actors/guard.hpp"
#include "actors/network.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace shardopt::actors {

optimizer::update_rule rule_of(const ps_config& config) {
  optimizer::update_rule rule;
  rule.kind = static_cast<optimizer::update_kind>(config.rule);
  rule.rate.kind = static_cast<optimizer::schedule_kind>(config.schedule);
  rule.rate.initial = config.learning_rate;
  rule.rate.decay_rate = config.decay_rate;
  rule.rate.decay_steps = config.decay_steps;
  rule.momentum = config.momentum;
  rule.beta1 = config.beta1;
  rule.beta2 = config.beta2;
  rule.epsilon = config.epsilon;
  rule.initial_accumulator = config.initial_accumulator;
  return rule;
}

void set_rule(ps_config& config, const optimizer::update_rule& rule) {
  config.rule = static_cast<std::uint8_t>(rule.kind);
  config.schedule = static_cast<std::uint8_t>(rule.rate.kind);
  config.learning_rate = rule.rate.initial;
  config.decay_rate = rule.rate.decay_rate;
  config.decay_steps = rule.rate.decay_steps;
  config.momentum = rule.momentum;
  config.beta1 = rule.beta1;
  config.beta2 = rule.beta2;
  config.epsilon = rule.epsilon;
  config.initial_accumulator = rule.initial_accumulator;
}

result<void> check_config(const ps_config& c) {
  if (c.count == 0 || c.index >= c.count)
    return fail("PS index " + std::to_string(c.index) + " is not below the PS count " + std::to_string(c.count));
  if (c.begin < 0 || c.end < c.begin || c.end - c.begin > static_cast<std::int64_t>(max_wire_elements))
    return fail("invalid theta slice [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")");
  if (c.rule > static_cast<std::uint8_t>(optimizer::update_kind::adam))
    return fail("unknown update rule code " + std::to_string(c.rule));
  if (c.schedule > static_cast<std::uint8_t>(optimizer::schedule_kind::inverse_time))
    return fail("unknown learning-rate schedule code " + std::to_string(c.schedule));
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate))
    return fail("the learning rate must be positive");
  if (c.total_replicas == 0 || c.replicas_to_aggregate == 0 || c.replicas_to_aggregate > c.total_replicas)
    return fail("replicas_to_aggregate must be 1.." + std::to_string(c.total_replicas) + ", got " +
           std::to_string(c.replicas_to_aggregate));
  if (c.total_replicas > 65536)
    return fail("more than 65536 workers");
  if (c.last_step < 0 || c.staleness < -1)
    return fail("negative last step or staleness");
  return {};
}

namespace {

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

  access_token token;  ///< the job's capability, set by the chief's psinit

  // Workers: who said hello (and is monitored), with the token they gave; who holds which index;
  // who is gone (said bye or went down).
  struct claim {
    std::uint32_t worker;
    access_token token;
  };
  std::map<caf::actor_addr, claim> workers;
  std::map<std::uint32_t, caf::actor_addr> holders;
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

caf::error refused(const std::string& why) {
  return make_error(errc::refused, why);
}

/// Whether the current request may act for `worker`: the job's token, from the actor that holds
/// the index.
bool holds(ps_pointer self, std::uint32_t worker) {
  auto& s = self->state;
  const auto it = s.holders.find(worker);
  return it != s.holders.end()
         && it->second == caf::actor_cast<caf::actor_addr>(self->current_sender());
}

/// Whether the current request comes from the chief with the job's token (before initialisation:
/// with the token it said hello with).
bool from_chief(ps_pointer self, const access_token& token) {
  auto& s = self->state;
  if (!holds(self, 0))
    return false;
  if (s.status != ps_status::waiting)
    return token == s.token;
  const auto it = s.workers.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
  return it != s.workers.end() && it->second.token == token;
}

ps_actor::behavior_type parameter_server(ps_pointer self) {
  guard_behavior(self);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& s = self->state;
    auto it = s.workers.find(down.source);
    if (it == s.workers.end())
      return;
    const auto worker = it->second.worker;
    s.workers.erase(it);
    auto holder = s.holders.find(worker);
    if (holder == s.holders.end() || holder->second != down.source)
      return;  // a refused claimant, not the worker
    s.holders.erase(holder);
    if (s.status != ps_status::waiting)
      on_worker_down(self, worker, down.reason);
  });
  return {
    [=](pshello_atom, std::uint64_t round, const ps_hello& hello) -> caf::result<std::uint64_t> {
      auto& s = self->state;
      if (auto ok = check_hello(hello.version, hello.probe, "worker " + std::to_string(hello.worker));
          !ok)
        return refused(ok.error().message());
      if (s.status != ps_status::waiting && hello.token != s.token)
        return refused("worker " + std::to_string(hello.worker)
                       + " carries another job's token (is it left over from an earlier job?)");
      if (s.status != ps_status::waiting && hello.worker >= s.config.total_replicas)
        return refused("worker " + std::to_string(hello.worker) + " is not one of the job's "
                       + std::to_string(s.config.total_replicas) + " workers");
      if (hello.worker > 65535)
        return refused("worker index " + std::to_string(hello.worker) + " is out of range");
      const auto who = caf::actor_cast<caf::actor_addr>(self->current_sender());
      if (!who)
        return refused("anonymous hello");
      auto holder = s.holders.find(hello.worker);
      if (holder != s.holders.end() && holder->second != who)
        return refused("worker index " + std::to_string(hello.worker)
                       + " is already claimed by another connection");
      if (s.workers.size() > 4 * 65536)
        return refused("too many workers said hello");
      s.workers[who] = {hello.worker, hello.token};
      s.holders[hello.worker] = who;
      self->monitor(who);
      if (hello.worker < s.gone.size())
        s.gone[hello.worker] = false;
      return round;
    },
    [=](psinit_atom, std::uint64_t round, const access_token& token, ps_config& config,
        ps_snapshot& start) -> caf::result<std::uint64_t> {
      auto& s = self->state;
      if (s.status != ps_status::waiting)
        return refused("this parameter server is already initialised");
      const auto who = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto chief = s.workers.find(who);
      if (chief == s.workers.end() || chief->second.worker != 0 || chief->second.token != token)
        return refused("only the chief (worker 0, after its hello) initialises a parameter server");
      if (auto ok = check_config(config); !ok)
        return make_error(errc::bad_request, "invalid configuration: " + ok.error().message());
      const auto n = config.end - config.begin;
      const auto rule = rule_of(config);
      const auto slots = static_cast<std::int64_t>(rule.slot_count());
      if (static_cast<std::int64_t>(start.theta.size()) != n
          || static_cast<std::int64_t>(start.slots.size()) != slots * n || start.step < 0
          || start.updates < 0 || !start.theta.map().allFinite() || !start.slots.map().allFinite())
        return make_error(errc::dimension_mismatch,
                          "the initial state does not fit the slice of " + std::to_string(n)
                            + " or is not finite");
      s.token = token;
      s.config = config;
      s.rule = rule;
      s.theta = start.theta.map();
      s.optimizer_state = optimizer::initial_state(rule, n);
      for (std::int64_t k = 0; k < slots; ++k)
        s.optimizer_state.slots[static_cast<std::size_t>(k)] = start.slots.map().segment(k * n, n);
      s.optimizer_state.updates = start.updates;
      s.step = start.step;
      s.stats.step = start.step;
      const auto workers = config.total_replicas;
      s.gone.assign(workers, false);
      s.grads.assign(workers, std::nullopt);
      s.losses.assign(workers, 0.0);
      s.examples.assign(workers, 0);
      s.clocks.assign(workers, 0);
      // Claims made with another token, or of an index beyond the job, are not the job's workers.
      for (auto it = s.workers.begin(); it != s.workers.end();) {
        if (it->second.token == token && it->second.worker < workers) {
          ++it;
          continue;
        }
        auto holder = s.holders.find(it->second.worker);
        if (holder != s.holders.end() && holder->second == it->first)
          s.holders.erase(holder);
        self->demonitor(it->first);
        it = s.workers.erase(it);
      }
      s.status = (config.last_step > 0 && s.step >= config.last_step) ? ps_status::finished
                                                                      : ps_status::running;
      return round;
    },
    [=](pull_atom, std::uint64_t round, const access_token& token)
      -> caf::result<std::uint64_t, ps_view> {
      auto& s = self->state;
      ps_view view;
      view.step = s.step;
      view.status = static_cast<std::uint8_t>(s.status);
      if (s.status != ps_status::waiting) {
        if (token != s.token)
          return refused("pull with another job's token");
        view.note = s.note;
        if (!s.published)
          s.published = std::make_shared<const Eigen::VectorXd>(s.theta);
        view.theta = dense_vector{s.published};
      }
      return {round, std::move(view)};
    },
    [=](push_atom, std::uint64_t round, const access_token& token, std::uint32_t worker,
        std::int64_t stamp, double loss, std::int64_t examples,
        dense_vector& grad) -> caf::result<std::uint64_t, std::int64_t, bool> {
      auto& s = self->state;
      if (s.status == ps_status::waiting || token != s.token || !holds(self, worker))
        return refused("push from an actor that is not worker " + std::to_string(worker)
                       + " of this job");
      if (s.status != ps_status::running)
        return {round, s.step, false};
      if (static_cast<std::int64_t>(grad.size()) != s.theta.size())
        return make_error(errc::dimension_mismatch,
                          "gradient slice has " + std::to_string(grad.size()) + " entries, expected " +
                            std::to_string(s.theta.size()));
      if (stamp > s.step || stamp < 0)
        return make_error(errc::bad_request, "gradient stamped with step " + std::to_string(stamp) +
                                               ", current step is " + std::to_string(s.step));
      if (!std::isfinite(loss) || !grad.map().allFinite() || examples <= 0)
        return make_error(errc::bad_request, "worker " + std::to_string(worker)
                                               + " pushed a non-finite gradient or loss, or no examples");
      if (!s.config.sync) {
        const auto staleness = s.step - stamp;
        s.stats.staleness_max = std::max(s.stats.staleness_max, staleness);
        s.stats.staleness_sum += static_cast<double>(staleness);
        s.stats.loss_sum += loss;
        s.stats.examples += examples;
        ++s.stats.applied;
        apply(s, grad.map());
        return {round, s.step, true};
      }
      if (stamp < s.step || s.grads[worker]) {
        ++s.stats.dropped;
        return {round, s.step, false};
      }
      s.grads[worker] = std::move(grad);
      s.losses[worker] = loss;
      s.examples[worker] = examples;
      auto promise = self->make_response_promise<std::uint64_t, std::int64_t, bool>();
      s.waiting_pushes.emplace_back(promise, round);
      if (++s.received < s.config.replicas_to_aggregate)
        return promise;
      // Average in worker order: the same bits whatever order the pushes arrived in.
      Eigen::VectorXd average;
      bool first = true;
      for (std::size_t w = 0; w < s.grads.size(); ++w) {
        if (!s.grads[w])
          continue;
        if (first)
          average = s.grads[w]->map();
        else
          average += s.grads[w]->map();
        first = false;
        s.stats.loss_sum += s.losses[w];
        s.stats.examples += s.examples[w];
        ++s.stats.applied;
        s.grads[w].reset();
      }
      average /= static_cast<double>(s.received);
      s.received = 0;
      apply(s, average);
      auto replies = std::move(s.waiting_pushes);
      s.waiting_pushes.clear();
      for (auto& [p, r] : replies)
        p.deliver(r, s.step, true);
      return promise;
    },
    [=](clock_atom, std::uint64_t round, const access_token& token, std::uint32_t worker,
        std::int64_t clock) -> caf::result<std::uint64_t, std::int64_t> {
      auto& s = self->state;
      if (s.status == ps_status::waiting || token != s.token || !holds(self, worker))
        return refused("clock from an actor that is not worker " + std::to_string(worker)
                       + " of this job");
      if (s.status != ps_status::running || s.config.staleness < 0)
        return {round, s.step};
      if (clock < s.clocks[worker])
        return make_error(errc::bad_request, "worker " + std::to_string(worker) + "'s clock went back from "
                                               + std::to_string(s.clocks[worker]) + " to "
                                               + std::to_string(clock));
      for (const auto& held : s.held_clocks)
        if (held.worker == worker)
          return make_error(errc::bad_request, "worker " + std::to_string(worker)
                                                 + " already waits for its clock");
      s.clocks[worker] = clock;
      auto promise = self->make_response_promise<std::uint64_t, std::int64_t>();
      s.held_clocks.push_back({promise, round, clock, worker});
      release_clocks(s);
      return promise;
    },
    [=](psstate_atom, std::uint64_t round, const access_token& token)
      -> caf::result<std::uint64_t, ps_snapshot> {
      auto& s = self->state;
      if (s.status == ps_status::waiting || token != s.token)
        return refused("state request without the job's token");
      ps_snapshot snapshot;
      snapshot.step = s.step;
      snapshot.updates = s.optimizer_state.updates;
      snapshot.theta = dense_vector{s.theta};
      const auto n = s.theta.size();
      Eigen::VectorXd packed(n * static_cast<Eigen::Index>(s.optimizer_state.slots.size()));
      for (std::size_t k = 0; k < s.optimizer_state.slots.size(); ++k)
        packed.segment(static_cast<Eigen::Index>(k) * n, n) = s.optimizer_state.slots[k];
      snapshot.slots = dense_vector{std::make_shared<const Eigen::VectorXd>(std::move(packed))};
      return {round, std::move(snapshot)};
    },
    [=](psstats_atom, std::uint64_t round, const access_token& token)
      -> caf::result<std::uint64_t, ps_stats> {
      auto& s = self->state;
      if (s.status == ps_status::waiting || token != s.token)
        return refused("stats request without the job's token");
      s.stats.step = s.step;
      return {round, s.stats};
    },
    [=](psfail_atom, std::uint64_t round, const access_token& token,
        std::string& reason) -> caf::result<std::uint64_t> {
      auto& s = self->state;
      const bool member = s.status != ps_status::waiting && token == s.token
                          && s.workers.count(caf::actor_cast<caf::actor_addr>(self->current_sender())) > 0;
      if (!member && !from_chief(self, token))
        return refused("a failure report from outside the job");
      if (s.status == ps_status::waiting)
        s.token = token;  // the chief failed before initialising: its workers may read why
      fail_training(self, reason.substr(0, 1000));
      return round;
    },
    [=](bye_atom, std::uint64_t round, const access_token& token,
        std::uint32_t worker) -> caf::result<std::uint64_t> {
      auto& s = self->state;
      // The timer is anonymous and carries the job's token, which only the job's members know.
      const bool timer = worker == grace_timer && !self->current_sender() && token == s.token;
      if (timer && s.chief_done) {
        // The grace period after the chief finished is over: leave without the stragglers.
        std::fill(s.gone.begin(), s.gone.end(), true);
      } else if (s.status == ps_status::waiting || token != s.token || !holds(self, worker)) {
        return refused("goodbye from an actor that is not worker " + std::to_string(worker)
                       + " of this job");
      } else if (worker < s.gone.size()) {
        s.gone[worker] = true;
        release_clocks(s);
      }
      auto promise = self->make_response_promise<std::uint64_t>();
      promise.deliver(round);
      quit_if_done(self);
      return promise;
    },
    [=](psstop_atom, std::uint64_t round, const access_token& token) -> caf::result<std::uint64_t> {
      auto& s = self->state;
      if (!from_chief(self, token))
        return refused("only the chief stops a parameter server");
      if (!s.gone.empty())
        s.gone[0] = true;
      if (s.status == ps_status::running) {
        // Another PS reached the last step first: this one is done too.
        s.status = ps_status::finished;
        release_all(s);
      }
      chief_gone(self);
      auto promise = self->make_response_promise<std::uint64_t>();
      promise.deliver(round);
      quit_if_done(self);
      return promise;
    },
  };
}

} // namespace

ps_actor spawn_parameter_server(caf::actor_system& system) {
  return system.spawn(parameter_server);
}

} // namespace shardopt::actors
