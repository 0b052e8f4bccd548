#include "actors/ps/parameter_server.hpp"

#include "actors/ps/ps_state.hpp"

#include <cmath>

namespace shardopt::actors {

namespace {

using namespace detail;

ps_actor::behavior_type parameter_server(ps_pointer self, access_token job_token) {
  guard_behavior(self);
  self->state.token = job_token;
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
      if (hello.token != s.token)
        return refused("worker " + std::to_string(hello.worker)
                       + " carries another job's token (is it left over from an earlier job?)");
      if (s.status != ps_status::waiting && hello.worker >= s.config.total_replicas)
        return refused("worker " + std::to_string(hello.worker) + " is not one of the job's "
                       + std::to_string(s.config.total_replicas) + " workers");
      if (hello.worker > 65535)
        return refused("worker index " + std::to_string(hello.worker) + " is out of range");
      if (hello.model.empty() || hello.model.size() > 4096)
        return refused("worker " + std::to_string(hello.worker) + " names no model, or one too long");
      if (!s.model.empty() && hello.model != s.model)
        return refused("worker " + std::to_string(hello.worker) + " trains " + hello.model +
                       "; this job trains " + s.model + " (do all tasks use the same model options?)");
      const auto who = caf::actor_cast<caf::actor_addr>(self->current_sender());
      if (!who)
        return refused("anonymous hello");
      auto holder = s.holders.find(hello.worker);
      if (holder != s.holders.end() && holder->second != who)
        return refused("worker index " + std::to_string(hello.worker)
                       + " is already claimed by another connection");
      const auto known = s.workers.find(who);
      if (known != s.workers.end() && known->second.worker != hello.worker)
        return refused("this connection already is worker " + std::to_string(known->second.worker));
      if (s.workers.size() > 65536)
        return refused("too many workers said hello");
      if (known == s.workers.end())
        self->monitor(who);
      s.workers[who] = {hello.worker, hello.token};
      if (s.model.empty())
        s.model = hello.model;
      s.holders[hello.worker] = who;
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
      // Claims of an index beyond the job are not the job's workers.
      for (auto it = s.workers.begin(); it != s.workers.end();) {
        if (it->second.worker < workers) {
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

ps_actor spawn_parameter_server(caf::actor_system& system, const access_token& token) {
  return system.spawn(parameter_server, token);
}

} // namespace shardopt::actors
