#include "actors/ps/chief.hpp"

#include "io/ps_checkpoint.hpp"

namespace shardopt::actors {

chief_session::chief_session(ps_client& client, const ps_job& job, const chief_options& options)
  : client_(client), job_(job), options_(options), started_(std::chrono::steady_clock::now()),
    log_{options.log_steps, 0}, eval_{options.eval_steps, 0},
    checkpoint_{options.checkpoint_steps, options.checkpoint_seconds} {}

double chief_session::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

result<std::int64_t> chief_session::initialise() {
  const auto dimension = job_.shape.dimension();
  // A network starts at its seeded initialisation (zero is a saddle), the linear models at zero.
  Eigen::VectorXd theta = model::initial_theta(job_.shape, job_.seed);
  auto state = optimizer::initial_state(job_.rule, dimension);
  std::int64_t step = 0;
  std::int64_t restored = -1;
  if (!options_.checkpoint_dir.empty()) {
    // The newest checkpoint that reads back whole; a corrupt newer one is skipped with a warning.
    auto found = io::newest_readable_ps_checkpoint(options_.checkpoint_dir);
    if (!found)
      return found.error().with_context("cannot restore");
    if (options_.note)
      for (const auto& warning : found->warnings)
        options_.note("warning: " + warning);
    if (found->state) {
      const auto& saved = *found->state;
      const auto& path = found->path;
      if (saved.model.shape != job_.shape)
        return fail_runtime(path + ": the checkpoint is of a model of shape " + model::describe(saved.model.shape) +
                    "; this job trains " + model::describe(job_.shape) + " (use another --checkpoint-dir)");
      if (saved.rule != optimizer::to_string(job_.rule.kind))
        return fail_runtime(path + ": the checkpoint holds " + saved.rule + " state; this job uses " +
                    std::string{optimizer::to_string(job_.rule.kind)} + " (use another --checkpoint-dir)");
      theta = saved.model.theta;
      state.slots = saved.slots;
      state.updates = saved.updates;
      step = saved.step;
      restored = step;
      if (options_.note)
        options_.note("restored step " + std::to_string(step) + " from " + path);
    }
  }
  if (auto done = client_.initialise(theta, state.slots, step, state.updates); !done)
    return done.error();
  return restored;
}

void chief_session::start(std::int64_t step) {
  started_ = std::chrono::steady_clock::now();
  log_.mark(step, 0);
  eval_.mark(step, 0);
  checkpoint_.mark(step, 0);
  last_stats_.step = step;
  if (auto counters = client_.stats()) {
    last_stats_ = *counters;
    last_stats_.step = step;
  }
}

result<void> chief_session::checkpoint() {
  if (options_.checkpoint_dir.empty())
    return {};
  io::ps_checkpoint out;
  out.rule = std::string{optimizer::to_string(job_.rule.kind)};
  out.model = options_.model;
  out.model.shape = job_.shape;
  out.model.lambda = job_.lambda;
  if (auto got = client_.state(out.model.theta, out.slots, out.step, out.updates); !got)
    return got.error();
  if (!out.model.theta.allFinite())
    return fail_runtime("theta is not finite at step " + std::to_string(out.step) +
                "; the newest checkpoint is the last good state");
  auto written = io::save_ps_checkpoint(options_.checkpoint_dir, out, options_.keep_checkpoints);
  if (!written)
    return written.error();
  last_checkpoint_ = *written;
  if (options_.note)
    options_.note("checkpoint at step " + std::to_string(out.step) + ": " + *written);
  return {};
}

result<void> chief_session::hooks(std::int64_t step, const Eigen::VectorXd& theta, bool final) {
  const double now = elapsed();
  const bool eval_due = options_.test && options_.eval_steps > 0 && eval_.due(step, now);
  if (options_.log && (eval_due || (options_.log_steps > 0 && log_.due(step, now)) || final)) {
    auto counters = client_.stats();
    if (!counters)
      return counters.error();
    step_log row;
    row.step = step;
    row.seconds = now;
    const auto applied = counters->applied - last_stats_.applied;
    const double dt = now - last_log_seconds_;
    const auto per_applied = [&](double total) {
      return applied > 0 ? total / static_cast<double>(applied) : 0;
    };
    row.loss = per_applied(counters->loss_sum - last_stats_.loss_sum);
    row.steps_per_second = dt > 0 ? static_cast<double>(step - last_stats_.step) / dt : 0;
    row.examples_per_second = dt > 0 ? static_cast<double>(counters->examples - last_stats_.examples) / dt : 0;
    row.dropped = counters->dropped;
    row.staleness_max = counters->staleness_max;
    row.staleness_mean = per_applied(counters->staleness_sum - last_stats_.staleness_sum);
    if (eval_due || (final && options_.test)) {
      row.test = model::quality(job_.shape, *options_.test, {0, options_.test->rows()}, theta);
      eval_.mark(step, now);
    }
    last_stats_ = *counters;
    last_stats_.step = step;
    last_log_seconds_ = now;
    log_.mark(step, now);
    options_.log(row);
  }
  if (!final && !options_.checkpoint_dir.empty() && checkpoint_.due(step, now)) {
    checkpoint_.mark(step, now);
    return checkpoint();
  }
  return {};
}

} // namespace shardopt::actors
