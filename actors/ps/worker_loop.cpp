// The worker loop of parameter-server training: pull, minibatch gradient, push, until the PSs
// report the last step or a failure. The chief (worker 0) also runs its session's hooks.

#include "actors/ps/chief.hpp"
#include "actors/ps/ps_client.hpp"
#include "actors/ps/ps_worker.hpp"
#include "io/partition.hpp"
#include "model/local_objective.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

namespace shardopt::actors {

std::vector<std::int64_t> slice_bounds(std::int64_t dimension, std::uint32_t count) {
  std::vector<std::int64_t> bounds{0};
  for (const auto& block : io::partition_rows(dimension, std::max<std::uint32_t>(count, 1)))
    bounds.push_back(block.end);
  return bounds;
}

namespace {

using clock_type = std::chrono::steady_clock;

class worker_run {
public:
  worker_run(caf::blocking_actor* self, const ps_group& ps, const ps_job& job,
             const worker_task& task, const chief_options* chief)
    : client_(self, ps, job, task.index), job_(job), task_(task),
      objective_(job.shape, task.data, job.lambda) {
    if (chief)
      chief_.emplace(client_, job, *chief);
  }

  result<ps_outcome> run() {
    if (auto said = client_.hello(); !said)
      return said.error();
    std::int64_t restored = -1;
    if (chief_) {
      auto started = chief_->initialise();
      if (!started)
        return started.error();
      restored = *started;
    } else if (auto waited = wait_for_chief(); !waited) {
      return waited.error();
    }
    auto outcome = train();
    if (outcome)
      outcome->restored_step = restored;
    return outcome;
  }

private:
  std::string me() const { return "worker " + std::to_string(task_.index); }

  /// Pulls until the chief has initialised every PS (a worker may start before the chief).
  result<void> wait_for_chief() {
    const auto deadline = clock_type::now() + job_.startup_timeout;
    for (;;) {
      auto state = client_.pull(theta_);
      if (!state)
        return state.error();
      if (state->status != ps_status::waiting)
        return {};
      if (clock_type::now() > deadline)
        return fail_runtime(me() + ": the chief (worker 0) did not initialise the parameter servers within "
                    + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(job_.startup_timeout).count())
                    + " s");
      // Polling a PS that has nothing to announce: there is no event to wait for.
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
  }

  /// Stops the whole job: every PS is told, so the other tasks stop too.
  failure abort(const std::string& why) {
    client_.report_failure(why);
    return fail_runtime(why);
  }

  result<ps_outcome> train() {
    const auto started = clock_type::now();
    auto first = client_.pull(theta_);
    if (!first)
      return first.error();
    if (chief_)
      chief_->start(first->step);
    optimizer::batch_sampler sampler{task_.rows.size(), job_.batch_size,
                                     optimizer::worker_seed(job_.seed, task_.index, first->step)};
    std::vector<std::int64_t> rows;
    Eigen::VectorXd grad;
    std::int64_t clock = 0;
    std::optional<pulled> state = std::move(*first);
    for (;;) {
      if (!state) {
        if (!job_.sync && job_.staleness >= 0)
          if (auto waited = client_.clock(clock); !waited)
            return waited.error().with_context(me());
        auto next = client_.pull(theta_);
        if (!next)
          return next.error().with_context(me());
        state = std::move(*next);
      }
      if (state->status == ps_status::failed)
        return fail_runtime(state->note);
      if (state->status != ps_status::running)
        break;
      if (!theta_.allFinite())
        return abort("theta is not finite at step " + std::to_string(state->step)
                     + " (is the learning rate too large?)");
      if (chief_ && chief_->stop_requested())
        break;  // ends as at the last step: final hooks and checkpoint, the PSs told to stop
      if (chief_)
        if (auto hooks = chief_->hooks(state->step, theta_, false); !hooks)
          return abort(hooks.error().message());
      // One minibatch gradient on this worker's shard.
      const auto compute_start = clock_type::now();
      const auto& batch = sampler.next();
      rows.resize(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i)
        rows[i] = task_.rows.begin + batch[i];
      const double loss = objective_.evaluate(theta_, model::row_selection{rows}, grad);
      if (!std::isfinite(loss) || !grad.allFinite())
        return abort(me() + ": the minibatch loss is " + std::to_string(loss) + " at step "
                     + std::to_string(state->step) + " (is the learning rate too large?)");
      // A straggler (testing) is late by at least 1 ms, so that it stays one when a busy machine
      // delays the other workers too.
      if (task_.slowdown > 1)
        std::this_thread::sleep_for(std::max(std::chrono::duration<double>(clock_type::now() - compute_start)
                                                 * (task_.slowdown - 1),
                                             std::chrono::duration<double>(1e-3)));
      if (auto pushed = client_.push(state->stamps, loss, static_cast<std::int64_t>(rows.size()), grad);
          !pushed)
        return pushed.error().with_context(me());
      ++clock;
      state.reset();
    }
    ps_outcome outcome;
    outcome.step = state->step;
    outcome.seconds = std::chrono::duration<double>(clock_type::now() - started).count();
    if (!chief_) {
      (void)client_.bye();  // the PSs end on their own after the chief; a lost goodbye is harmless
      return outcome;
    }
    // The chief: final hooks and checkpoint, then release the PSs.
    if (auto hooks = chief_->hooks(state->step, theta_, true); !hooks)
      return hooks.error();
    if (auto written = chief_->checkpoint(); !written)
      return written.error();
    if (auto counters = client_.stats())
      outcome.stats = *counters;
    outcome.theta = theta_;
    outcome.last_checkpoint = chief_->last_checkpoint();
    if (auto stopped = client_.stop(); !stopped)
      return stopped.error();
    return outcome;
  }

  ps_client client_;
  const ps_job& job_;
  const worker_task& task_;
  model::local_objective objective_;
  std::optional<chief_session> chief_;
  Eigen::VectorXd theta_;
};

} // namespace

result<ps_outcome> run_worker(caf::blocking_actor* self, const ps_group& ps, const ps_job& job,
                              const worker_task& task, const chief_options* chief) {
  if (ps.servers.empty())
    return fail_runtime("no parameter servers");
  worker_run run{self, ps, job, task, chief};
  return run.run();
}

} // namespace shardopt::actors
