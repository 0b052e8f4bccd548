#include "actors/ps_worker.hpp"

#include "io/checkpoint.hpp"
#include "io/partition.hpp"
#include "model/local_objective.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>

#include <algorithm>
#include <cmath>
#include <thread>
#include <type_traits>

namespace shardopt::actors {

std::vector<std::int64_t> slice_bounds(std::int64_t dimension, std::uint32_t count) {
  std::vector<std::int64_t> bounds{0};
  for (const auto& block : io::partition_rows(dimension, std::max<std::uint32_t>(count, 1)))
    bounds.push_back(block.end);
  return bounds;
}

namespace {

using clock_type = std::chrono::steady_clock;

/// A worker's link to its parameter servers: sends one request to each of a range of them and
/// collects the replies, noticing a PS that goes down, answers with an error or says nothing.
class ps_link {
public:
  ps_link(caf::blocking_actor* self, const ps_group& group)
    : self_(self), group_(group), gone_(group.servers.size()) {
    for (auto& server : group_.servers)
      self_->monitor(server);
  }

  std::size_t size() const { return group_.servers.size(); }
  const ps_actor& server(std::size_t j) const { return group_.servers[j]; }

  /// Calls `send(j, round)` for every PS j in [first, last) and `on_reply(j, values...)` for each
  /// reply. Returns what went wrong, or nullopt.
  /// With `farewell`, a PS that goes down instead of answering counts as having answered: it
  /// may end (and its process exit) right after a final request.
  template <class Send, class OnReply>
  std::optional<std::string> ask(std::size_t first, std::size_t last, std::chrono::milliseconds timeout,
                                 const char* what, Send send, OnReply on_reply, bool farewell = false) {
    for (auto j = first; j < last; ++j)
      if (!gone_[j].empty() && !farewell)
        return group_.names[j] + " went down (" + gone_[j] + ")";
    const auto round = ++rounds_;
    std::vector<bool> answered(size(), false);
    auto remaining = last - first;
    for (auto j = first; j < last; ++j) {
      if (gone_[j].empty()) {
        send(j, round);
      } else {
        answered[j] = true;
        --remaining;
      }
    }
    std::optional<std::string> problem;
    const auto deadline = clock_type::now() + timeout;
    auto index_of = [&](const caf::actor_addr& who) -> std::ptrdiff_t {
      for (auto j = first; j < last; ++j)
        if (caf::actor_cast<caf::actor_addr>(group_.servers[j]) == who)
          return static_cast<std::ptrdiff_t>(j);
      return -1;
    };
    auto accept = [&](std::uint64_t r, auto&&... values) {
      const auto j = index_of(caf::actor_cast<caf::actor_addr>(self_->current_sender()));
      if (r != round || j < 0 || answered[static_cast<std::size_t>(j)])
        return;
      if constexpr (std::is_invocable_v<OnReply&, std::size_t, decltype(values)...>) {
        on_reply(static_cast<std::size_t>(j), std::forward<decltype(values)>(values)...);
        answered[static_cast<std::size_t>(j)] = true;
        --remaining;
      }
    };
    while (remaining > 0 && !problem) {
      const auto left = deadline - clock_type::now();
      if (left <= clock_type::duration::zero()) {
        std::string late;
        for (auto j = first; j < last; ++j)
          if (!answered[j])
            late += (late.empty() ? "" : ", ") + group_.names[j];
        problem = late + ": no reply to " + what + " within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s";
        break;
      }
      self_->receive(
        [&](std::uint64_t r) { accept(r); },
        [&](std::uint64_t r, ps_view& view) { accept(r, std::move(view)); },
        [&](std::uint64_t r, std::int64_t step, bool accepted) { accept(r, step, accepted); },
        [&](std::uint64_t r, std::int64_t step) { accept(r, step); },
        [&](std::uint64_t r, ps_snapshot& snapshot) { accept(r, std::move(snapshot)); },
        [&](std::uint64_t r, ps_stats& stats) { accept(r, stats); },
        [&](caf::error& err) {
          const auto j = index_of(caf::actor_cast<caf::actor_addr>(self_->current_sender()));
          if (j >= 0)
            problem = group_.names[static_cast<std::size_t>(j)] + ": " + what + ": " +
                      describe(err, self_->system());
        },
        [&](caf::down_msg& down) {
          for (std::size_t j = 0; j < size(); ++j) {
            if (caf::actor_cast<caf::actor_addr>(group_.servers[j]) != down.source)
              continue;
            gone_[j] = describe(down.reason, self_->system());
            if (j < first || j >= last || answered[j])
              continue;
            if (farewell) {
              answered[j] = true;
              --remaining;
            } else {
              problem = group_.names[j] + " went down (" + gone_[j] + ")";
            }
          }
        },
        caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; },
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [] {});
    }
    return problem;
  }

  /// Sends the same request to every PS; replies are acknowledgements.
  template <class Atom, class... Ts>
  std::optional<std::string> tell_all(std::chrono::milliseconds timeout, const char* what, Atom atom,
                                      Ts... xs) {
    constexpr bool farewell = std::is_same_v<Atom, psstop_atom> || std::is_same_v<Atom, bye_atom>
                              || std::is_same_v<Atom, psfail_atom>;
    return ask(0, size(), timeout, what, [&](std::size_t j, std::uint64_t round) {
      self_->send(group_.servers[j], atom, round, xs...);
    }, [](std::size_t) {}, farewell);
  }

  caf::blocking_actor* self() { return self_; }

private:
  caf::blocking_actor* self_;
  const ps_group& group_;
  std::vector<std::string> gone_;  ///< why each PS went down; empty while it is up
  std::uint64_t rounds_ = 0;
};


/// Short timeout for control messages to PSs that are known to be up.
constexpr std::chrono::milliseconds control_timeout{std::chrono::seconds{30}};

/// One worker's run (see run_worker).
class worker_run {
public:
  worker_run(caf::blocking_actor* self, const ps_group& ps, const ps_job& job, const worker_task& task,
             const chief_options* chief)
    : link_(self, ps), job_(job), task_(task), chief_(chief),
      bounds_(slice_bounds(job.shape.dimension(), static_cast<std::uint32_t>(ps.servers.size()))),
      objective_(job.shape, task.data, job.lambda) {}

  result<ps_outcome> run() {
    if (auto problem = link_.tell_all(control_timeout, "hello", pshello_atom::value, task_.index))
      return fail(*problem);
    if (auto started = chief_ ? initialise() : wait_for_chief(); !started)
      return started.error();
    return train();
  }

private:
  std::string me() const { return "worker " + std::to_string(task_.index); }

  /// Pulls every slice into theta_; the step, status and note come from the PSs.
  struct pulled {
    std::int64_t step = 0;
    std::vector<std::int64_t> stamps;
    ps_status status = ps_status::running;
    std::string note;
  };

  result<pulled> pull() {
    pulled out;
    out.stamps.assign(link_.size(), 0);
    theta_.resize(job_.shape.dimension());
    std::optional<std::string> shape_problem;
    std::vector<ps_status> statuses(link_.size(), ps_status::waiting);
    auto problem = link_.ask(0, link_.size(), job_.step_timeout, "pull",
      [&](std::size_t j, std::uint64_t round) { link_.self()->send(link_.server(j), pull_atom::value, round); },
      [&](std::size_t j, ps_view view) {
        const auto status = static_cast<ps_status>(view.status);
        out.stamps[j] = view.step;
        if (j == 0)
          out.step = view.step;
        // Failed if any PS failed; finished only when every PS is (in synchronous mode with
        // backup workers a PS may finish its last step a little after another).
        statuses[j] = status;
        if (status == ps_status::failed)
          out.note = view.note;
        if (status == ps_status::running || status == ps_status::finished) {
          const auto n = bounds_[j + 1] - bounds_[j];
          if (static_cast<std::int64_t>(view.theta.size()) != n)
            shape_problem = "PS " + std::to_string(j) + " holds " + std::to_string(view.theta.size()) +
                            " parameters, this worker expects " + std::to_string(n) +
                            " (do all tasks use the same model, data and --ps count?)";
          else
            theta_.segment(bounds_[j], n) = view.theta.map();
        }
      });
    if (problem)
      return fail(*problem);
    if (shape_problem)
      return fail(*shape_problem);
    auto any = [&](ps_status x) { return std::find(statuses.begin(), statuses.end(), x) != statuses.end(); };
    out.status = any(ps_status::failed)    ? ps_status::failed
                 : any(ps_status::waiting) ? ps_status::waiting
                 : any(ps_status::running) ? ps_status::running
                                           : ps_status::finished;
    return out;
  }

  result<void> wait_for_chief() {
    const auto deadline = clock_type::now() + job_.startup_timeout;
    for (;;) {
      auto state = pull();
      if (!state)
        return state.error();
      if (state->status != ps_status::waiting)
        return {};
      if (clock_type::now() > deadline)
        return fail(me() + ": the chief (worker 0) did not initialise the parameter servers within " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(job_.startup_timeout).count()) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
  }

  ps_config config_for(std::size_t j) const {
    ps_config c;
    c.index = static_cast<std::uint32_t>(j);
    c.count = static_cast<std::uint32_t>(link_.size());
    c.begin = bounds_[j];
    c.end = bounds_[j + 1];
    set_rule(c, job_.rule);
    c.sync = job_.sync;
    c.replicas_to_aggregate = job_.sync ? job_.replicas_to_aggregate : 1;
    c.total_replicas = job_.workers;
    c.staleness = job_.sync ? -1 : job_.staleness;
    c.last_step = job_.last_step;
    return c;
  }

  /// The chief: fresh state, or the newest checkpoint in the checkpoint directory.
  result<void> initialise() {
    const auto dimension = job_.shape.dimension();
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(dimension);
    auto state = optimizer::initial_state(job_.rule, dimension);
    std::int64_t step = 0;
    if (!chief_->checkpoint_dir.empty()) {
      if (auto path = io::latest_checkpoint(chief_->checkpoint_dir)) {
        auto saved = io::load_checkpoint(*path);
        if (!saved)
          return saved.error().with_context("cannot restore");
        if (!(saved->model.shape == job_.shape))
          return fail(*path + ": the checkpoint is of a " + std::string{model::to_string(saved->model.shape.kind)} +
                      " model with " + std::to_string(saved->model.shape.dimension()) +
                      " parameters; this job trains " + std::string{model::to_string(job_.shape.kind)} +
                      " with " + std::to_string(dimension));
        if (saved->rule != optimizer::to_string(job_.rule.kind))
          return fail(*path + ": the checkpoint holds " + saved->rule + " state; this job uses " +
                      std::string{optimizer::to_string(job_.rule.kind)} + " (use another --checkpoint-dir)");
        theta = saved->model.theta;
        state.slots = saved->slots;
        state.updates = saved->updates;
        step = saved->step;
        restored_step_ = step;
        if (chief_->note)
          chief_->note("restored step " + std::to_string(step) + " from " + *path);
      }
    }
    auto problem = link_.ask(0, link_.size(), control_timeout, "initialisation",
      [&](std::size_t j, std::uint64_t round) {
        const auto begin = bounds_[j];
        const auto n = bounds_[j + 1] - begin;
        ps_snapshot start;
        start.step = step;
        start.updates = state.updates;
        start.theta = dense_vector{std::make_shared<const Eigen::VectorXd>(theta.segment(begin, n))};
        Eigen::VectorXd packed(n * static_cast<Eigen::Index>(state.slots.size()));
        for (std::size_t k = 0; k < state.slots.size(); ++k)
          packed.segment(static_cast<Eigen::Index>(k) * n, n) = state.slots[k].segment(begin, n);
        start.slots = dense_vector{std::make_shared<const Eigen::VectorXd>(std::move(packed))};
        link_.self()->send(link_.server(j), psinit_atom::value, round, config_for(j), start);
      },
      [](std::size_t) {});
    if (problem)
      return fail(*problem);
    return {};
  }

  /// The whole state of the job (every slice and the rule's slots), as a checkpoint.
  result<io::checkpoint> snapshot() {
    io::checkpoint out;
    const auto dimension = job_.shape.dimension();
    out.rule = std::string{optimizer::to_string(job_.rule.kind)};
    out.model = chief_->model;
    out.model.shape = job_.shape;
    out.model.lambda = job_.lambda;
    out.model.theta.resize(dimension);
    out.slots.assign(job_.rule.slot_count(), Eigen::VectorXd(dimension));
    std::optional<std::string> shape_problem;
    auto problem = link_.ask(0, link_.size(), control_timeout, "state",
      [&](std::size_t j, std::uint64_t round) { link_.self()->send(link_.server(j), psstate_atom::value, round); },
      [&](std::size_t j, ps_snapshot state) {
        const auto begin = bounds_[j];
        const auto n = bounds_[j + 1] - begin;
        if (static_cast<std::int64_t>(state.theta.size()) != n ||
            static_cast<std::int64_t>(state.slots.size()) != n * static_cast<std::int64_t>(out.slots.size())) {
          shape_problem = "PS " + std::to_string(j) + " returned a state of the wrong size";
          return;
        }
        out.model.theta.segment(begin, n) = state.theta.map();
        for (std::size_t k = 0; k < out.slots.size(); ++k)
          out.slots[k].segment(begin, n) = state.slots.map().segment(static_cast<Eigen::Index>(k) * n, n);
        if (j == 0) {
          out.step = state.step;
          out.updates = state.updates;
        }
      });
    if (problem)
      return fail(*problem);
    if (shape_problem)
      return fail(*shape_problem);
    return out;
  }

  result<ps_stats> stats() {
    ps_stats out;
    auto problem = link_.ask(0, 1, control_timeout, "stats",
      [&](std::size_t j, std::uint64_t round) { link_.self()->send(link_.server(j), psstats_atom::value, round); },
      [&](std::size_t, ps_stats s) { out = s; });
    if (problem)
      return fail(*problem);
    return out;
  }

  double elapsed() const {
    return std::chrono::duration<double>(clock_type::now() - started_).count();
  }

  /// Writes a checkpoint unless theta went non-finite (the last good one stays the newest).
  result<void> checkpoint() {
    auto state = snapshot();
    if (!state)
      return state.error();
    if (!state->model.theta.allFinite())
      return fail("theta is not finite at step " + std::to_string(state->step) +
                  "; the newest checkpoint is the last good state");
    auto written = io::save_checkpoint(chief_->checkpoint_dir, *state, chief_->keep_checkpoints);
    if (!written)
      return written.error();
    last_checkpoint_ = *written;
    if (chief_->note)
      chief_->note("checkpoint at step " + std::to_string(state->step) + ": " + *written);
    return {};
  }

  /// The chief's hooks at global step `step` with theta_ pulled at that step.
  result<void> run_hooks(std::int64_t step, bool final) {
    const double now = elapsed();
    const bool eval_due = chief_->test && chief_->eval_steps > 0 && eval_.due(step, now);
    if (chief_->log && (eval_due || (chief_->log_steps > 0 && log_.due(step, now)) || final)) {
      auto counters = stats();
      if (!counters)
        return counters.error();
      step_log row;
      row.step = step;
      row.seconds = now;
      const auto applied = counters->applied - last_stats_.applied;
      const double dt = now - last_log_seconds_;
      row.loss = applied > 0 ? (counters->loss_sum - last_stats_.loss_sum) / static_cast<double>(applied) : 0;
      row.steps_per_second = dt > 0 ? static_cast<double>(step - last_stats_.step) / dt : 0;
      row.examples_per_second = dt > 0 ? static_cast<double>(counters->examples - last_stats_.examples) / dt : 0;
      row.dropped = counters->dropped;
      row.staleness_max = counters->staleness_max;
      row.staleness_mean = applied > 0 ? (counters->staleness_sum - last_stats_.staleness_sum) / static_cast<double>(applied) : 0;
      if (eval_due || (final && chief_->test)) {
        row.test = model::quality(job_.shape, *chief_->test, {0, chief_->test->rows()}, theta_);
        eval_.mark(step, now);
      }
      last_stats_ = *counters;
      last_stats_.step = step;
      last_log_seconds_ = now;
      log_.mark(step, now);
      chief_->log(row);
    }
    if (!final && !chief_->checkpoint_dir.empty() && checkpoint_.due(step, now)) {
      checkpoint_.mark(step, now);
      if (auto written = checkpoint(); !written)
        return written.error();
    }
    return {};
  }

  /// Tells every PS that training failed, so that the other tasks stop too.
  void report_failure(const std::string& why) {
    link_.tell_all(control_timeout, "failure report", psfail_atom::value, why);
  }

  result<ps_outcome> train() {
    started_ = clock_type::now();
    auto first = pull();
    if (!first)
      return first.error();
    const auto start_step = first->step;
    log_.mark(start_step, 0);
    eval_.mark(start_step, 0);
    checkpoint_.mark(start_step, 0);
    last_stats_.step = start_step;
    if (chief_) {
      if (auto counters = stats())
        last_stats_ = *counters, last_stats_.step = start_step;
    }
    optimizer::batch_sampler sampler{task_.rows.size(), job_.batch_size,
                                     optimizer::worker_seed(job_.seed, task_.index, start_step)};
    std::vector<std::int64_t> rows;
    Eigen::VectorXd grad;
    std::int64_t clock = 0;
    std::optional<pulled> state = std::move(*first);
    for (;;) {
      if (!state) {
        if (!job_.sync && job_.staleness >= 0) {
          auto problem = link_.ask(0, 1, job_.step_timeout, "clock",
            [&](std::size_t j, std::uint64_t round) {
              link_.self()->send(link_.server(j), clock_atom::value, round, task_.index, clock);
            },
            [](std::size_t, std::int64_t) {});
          if (problem)
            return fail(me() + ": " + *problem);
        }
        auto next = pull();
        if (!next)
          return next.error().with_context(me());
        state = std::move(*next);
      }
      if (state->status == ps_status::failed)
        return fail(state->note);
      if (state->status != ps_status::running)
        break;
      if (!theta_.allFinite()) {
        const auto why = "theta is not finite at step " + std::to_string(state->step) +
                         " (is the learning rate too large?)";
        report_failure(why);
        return fail(why);
      }
      if (chief_)
        if (auto hooks = run_hooks(state->step, false); !hooks) {
          report_failure(hooks.error().message());
          return hooks.error();
        }
      // One minibatch gradient on this worker's shard.
      const auto compute_start = clock_type::now();
      const auto& batch = sampler.next();
      rows.resize(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i)
        rows[i] = task_.rows.begin + batch[i];
      const double loss = objective_.evaluate(theta_, model::row_selection{rows}, grad);
      if (!std::isfinite(loss) || !grad.allFinite()) {
        const auto why = me() + ": the minibatch loss is " + std::to_string(loss) + " at step " +
                         std::to_string(state->step) + " (is the learning rate too large?)";
        report_failure(why);
        return fail(why);
      }
      if (task_.slowdown > 1)
        std::this_thread::sleep_for((clock_type::now() - compute_start) * (task_.slowdown - 1));
      const auto examples = static_cast<std::int64_t>(rows.size());
      auto problem = link_.ask(0, link_.size(), job_.step_timeout, "push",
        [&](std::size_t j, std::uint64_t round) {
          const auto begin = bounds_[j];
          const auto n = bounds_[j + 1] - begin;
          link_.self()->send(link_.server(j), push_atom::value, round, task_.index, state->stamps[j], loss,
                             examples,
                             dense_vector{std::make_shared<const Eigen::VectorXd>(grad.segment(begin, n))});
        },
        [](std::size_t, std::int64_t, bool) {});
      if (problem)
        return fail(me() + ": " + *problem);
      ++clock;
      state.reset();
    }
    ps_outcome outcome;
    outcome.step = state->step;
    outcome.seconds = elapsed();
    outcome.restored_step = restored_step_;
    if (!chief_) {
      link_.tell_all(control_timeout, "goodbye", bye_atom::value, task_.index);
      return outcome;
    }
    // The chief: final hooks and checkpoint, then release the PSs.
    if (auto hooks = run_hooks(state->step, true); !hooks)
      return hooks.error();
    if (!chief_->checkpoint_dir.empty())
      if (auto written = checkpoint(); !written)
        return written.error();
    if (auto counters = stats())
      outcome.stats = *counters;
    outcome.theta = theta_;
    outcome.last_checkpoint = last_checkpoint_;
    if (auto problem = link_.tell_all(control_timeout, "stop", psstop_atom::value))
      return fail(*problem);
    return outcome;
  }

  ps_link link_;
  const ps_job& job_;
  const worker_task& task_;
  const chief_options* chief_;
  std::vector<std::int64_t> bounds_;
  model::local_objective objective_;
  Eigen::VectorXd theta_;
  clock_type::time_point started_;
  std::int64_t restored_step_ = -1;
  std::string last_checkpoint_;
  ps_stats last_stats_;
  double last_log_seconds_ = 0;
  optimizer::periodic_trigger log_{chief_ ? chief_->log_steps : 0, 0};
  optimizer::periodic_trigger eval_{chief_ ? chief_->eval_steps : 0, 0};
  optimizer::periodic_trigger checkpoint_{chief_ ? chief_->checkpoint_steps : 0,
                                          chief_ ? chief_->checkpoint_seconds : 0};
};

} // namespace

result<ps_outcome> run_worker(caf::blocking_actor* self, const ps_group& ps, const ps_job& job,
                              const worker_task& task, const chief_options* chief) {
  if (ps.servers.empty())
    return fail("no parameter servers");
  worker_run run{self, ps, job, task, chief};
  return run.run();
}

result<ps_outcome> run_local_job(runtime& rt, const ps_job& job, std::uint32_t ps_count,
                                 std::shared_ptr<const model::dataset> train,
                                 const chief_options& chief, int slow_worker, double slowdown) {
  auto& system = rt.system();
  ps_group group;
  for (std::uint32_t j = 0; j < ps_count; ++j) {
    group.servers.push_back(spawn_parameter_server(system));
    group.names.push_back("ps " + std::to_string(j));
  }
  const auto blocks = io::partition_rows(train->rows(), job.workers);
  // `self` runs the chief; `waiter` watches every actor of the job end (the chief's link consumes
  // the PSs' down messages it sees).
  caf::scoped_actor self{system};
  caf::scoped_actor waiter{system};
  for (auto& server : group.servers)
    waiter->monitor(server);
  auto task_of = [&](std::uint32_t w) {
    worker_task task{w, train, blocks[w], 1.0};
    if (static_cast<int>(w) == slow_worker)
      task.slowdown = slowdown;
    return task;
  };
  std::vector<caf::actor> workers;
  for (std::uint32_t w = 1; w < job.workers; ++w) {
    workers.push_back(system.spawn([group, job, task = task_of(w)](caf::blocking_actor* me) {
      // A failure here reaches the chief through the PSs (psfail) or as a missing gradient.
      (void)run_worker(me, group, job, task, nullptr);
    }));
    waiter->monitor(workers.back());
  }
  const auto chief_task = task_of(0);
  auto outcome = run_worker(self.ptr(), group, job, chief_task, &chief);
  if (!outcome) {
    // Make sure nothing is left running: the PSs release the workers once they fail.
    for (auto& server : group.servers)
      self->send(server, psfail_atom::value, std::uint64_t{0}, outcome.error().message());
    for (auto& server : group.servers)
      self->send(server, psstop_atom::value, std::uint64_t{0});
  }
  // Every worker and PS ends by itself; wait for all of them.
  auto left = group.servers.size() + workers.size();
  bool timed_out = false;
  while (left > 0 && !timed_out)
    waiter->receive([&](caf::down_msg&) { --left; },
                  caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; },
                  caf::after(std::chrono::seconds{60}) >> [&] { timed_out = true; });
  if (timed_out) {
    for (auto& w : workers)
      waiter->send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& server : group.servers)
      waiter->send_exit(server, caf::exit_reason::user_shutdown);
    if (outcome)
      return fail("the workers and parameter servers did not finish within 60 s of the chief");
  }
  return outcome;
}

result<ps_group> connect_parameter_servers(runtime& rt, const std::vector<node_endpoint>& endpoints,
                                           std::chrono::milliseconds wait) {
  auto& system = rt.system();
  const auto middleman = rt.options().tls.enabled() ? system.openssl_manager().actor_handle()
                                                    : system.middleman().actor_handle();
  const auto expected = system.message_types(caf::detail::type_list<ps_actor>{});
  caf::scoped_actor self{system};
  ps_group group;
  const auto deadline = clock_type::now() + wait;
  for (std::size_t j = 0; j < endpoints.size(); ++j) {
    const auto name = "ps " + std::to_string(j) + " (" + endpoints[j].text() + ")";
    for (;;) {
      std::optional<ps_actor> handle;
      std::string problem;
      bool retry = false;
      self->request(middleman, std::chrono::seconds{30}, caf::connect_atom::value, endpoints[j].host,
                    endpoints[j].port)
        .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& published, const std::set<std::string>& ifs) {
            if (!published)
              problem = "nothing is published on that port";
            else if (ifs != expected)
              problem = "the actor there is not a shardopt parameter server of this version";
            else
              handle = caf::actor_cast<ps_actor>(std::move(published));
          },
          [&](caf::error& err) {
            problem = describe(err, system);
            retry = err == caf::sec::cannot_connect_to_node;
          });
      if (handle) {
        group.servers.push_back(*handle);
        group.names.push_back(name);
        break;
      }
      if (!retry || clock_type::now() > deadline)
        return fail(name + ": cannot connect: " + problem);
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
  }
  return group;
}

result<std::pair<ps_actor, std::uint16_t>> publish_parameter_server(runtime& rt, const std::string& bind,
                                                                    std::uint16_t port) {
  auto server = spawn_parameter_server(rt.system());
  auto bound = rt.options().tls.enabled()
                 ? caf::openssl::publish(server, port, bind.c_str(), true)
                 : rt.system().middleman().publish(server, port, bind.c_str(), true);
  if (!bound) {
    caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    return fail("cannot listen on " + bind + ":" + std::to_string(port) + ": " +
                describe(bound.error(), rt.system()));
  }
  return std::make_pair(server, *bound);
}

result<void> await_parameter_server(runtime& rt, const ps_actor& server, std::chrono::milliseconds startup) {
  caf::scoped_actor self{rt.system()};
  self->monitor(server);
  std::optional<result<void>> out;
  bool initialised = false;
  while (!out) {
    self->receive(
      [&](caf::down_msg& down) {
        if (down.reason && down.reason != caf::exit_reason::normal)
          out = result<void>{fail(describe(down.reason, rt.system()))};
        else
          out = result<void>{};
      },
      caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; },
      caf::after(initialised ? std::chrono::milliseconds{std::chrono::hours{24}} : startup) >> [&] {
        // Still waiting for the chief? Then give up rather than serve forever.
        self->request(server, std::chrono::seconds{10}, pull_atom::value, std::uint64_t{0})
          .receive([&](std::uint64_t, ps_view& view) {
                     initialised = view.status != static_cast<std::uint8_t>(ps_status::waiting);
                   },
                   [&](caf::error&) {});
        if (!initialised)
          out = result<void>{fail("no chief initialised this parameter server within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(startup).count()) + " s")};
      });
  }
  return *out;
}

result<ps_outcome> run_remote_worker(runtime& rt, const ps_group& ps, const ps_job& job,
                                     const worker_task& task, const chief_options* chief) {
  caf::scoped_actor self{rt.system()};
  return run_worker(self.ptr(), ps, job, task, chief);
}

void unpublish_parameter_server(runtime& rt, const ps_actor& server, std::uint16_t port) {
  rt.system().middleman().unpublish(server, port);
}

} // namespace shardopt::actors
