#include "apps/commands/train/ps_train.hpp"
#include "apps/commands/train/architecture.hpp"

#include "actors/ps/ps_worker.hpp"
#include "apps/serving/service_metrics.hpp"
#include "apps/run/summary.hpp"
#include "io/partition.hpp"
#include "io/tls_files.hpp"
#include "model/local_objective.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

namespace shardopt::apps {

namespace {

using clock_type = std::chrono::steady_clock;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds{static_cast<long long>(seconds * 1000)};
}

/// The job every task agrees on, from the options; errors name the option.
result<actors::ps_job> make_job(const ps_options& o, const model::model_shape& shape, double lambda,
                                int workers) {
  actors::ps_job job;
  auto rule = optimizer::parse_update_kind(o.rule);
  if (!rule)
    return fail_invalid("--optimizer: unknown rule '" + o.rule + "' (expected sgd, momentum, nesterov, adagrad or adam)");
  auto schedule = optimizer::parse_schedule_kind(o.schedule);
  if (!schedule)
    return fail_invalid("--lr-schedule: unknown schedule '" + o.schedule + "' (expected constant, step or inverse-time)");
  if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate))
    return fail_invalid("--lr must be positive");
  if (o.batch_size < 1)
    return fail_invalid("--batch-size must be at least 1");
  if (workers < 1)
    return fail_invalid("--workers must be at least 1");
  if (o.backup_workers < 0 || o.backup_workers >= workers)
    return fail_invalid("--backup-workers must be 0.." + std::to_string(workers - 1));
  const int replicas = o.replicas_to_aggregate > 0 ? o.replicas_to_aggregate : workers - o.backup_workers;
  if (replicas > workers)
    return fail_invalid("--replicas-to-aggregate (" + std::to_string(replicas) + ") exceeds the " +
                std::to_string(workers) + " workers");
  if (o.staleness < -1)
    return fail_invalid("--staleness must be -1 (unbounded) or >= 0");
  if (o.last_step < 0)
    return fail_invalid("--last-step must be >= 0");
  job.shape = shape;
  job.lambda = lambda;
  job.rule.kind = *rule;
  job.rule.rate = {*schedule, o.learning_rate, o.decay_rate, o.decay_steps};
  job.rule.momentum = o.momentum;
  job.rule.beta1 = o.beta1;
  job.rule.beta2 = o.beta2;
  job.rule.epsilon = o.adam_epsilon;
  job.rule.initial_accumulator = o.adagrad_initial;
  job.batch_size = o.batch_size;
  job.sync = o.sync;
  job.workers = static_cast<std::uint32_t>(workers);
  job.replicas_to_aggregate = static_cast<std::uint32_t>(replicas);
  job.staleness = o.staleness;
  job.last_step = o.last_step;
  job.seed = o.seed;
  job.step_timeout = millis(o.step_timeout);
  job.startup_timeout = millis(o.startup_timeout);
  return job;
}

/// "index:factor" of the testing-only straggler option.
result<std::pair<int, double>> parse_slow_worker(const std::string& text) {
  if (text.empty())
    return std::make_pair(-1, 1.0);
  const auto colon = text.find(':');
  char* end = nullptr;
  const long index = colon == std::string::npos ? -1 : std::strtol(text.c_str(), &end, 10);
  const double factor = colon == std::string::npos ? 0 : std::strtod(text.c_str() + colon + 1, nullptr);
  if (index < 0 || end != text.c_str() + colon || !(factor >= 1))
    return fail_invalid("--slow-worker: expected index:factor with factor >= 1, got '" + text + "'");
  return std::make_pair(static_cast<int>(index), factor);
}

/// The chief's hooks as the user sees them: progress lines on stderr, a JSON-lines metrics file,
/// the rows kept for the caller and shown to the caller's hook, which may stop the job.
struct chief_hooks {
  bool quiet = false;
  model::model_kind kind = model::model_kind::softmax;
  metrics_file metrics;
  bool keep_history = false;
  std::vector<nlohmann::json> history;
  row_hook on_row;
  const std::atomic<bool>* interrupt = nullptr;
  bool hook_stopped = false;       ///< the caller's hook asked to stop
  bool interrupt_stopped = false;  ///< the interrupt ended the job (not one that came after its end)

  bool interrupted() const { return interrupt && interrupt->load(); }

  actors::chief_options options(const train_options& o, const prepared_data& data) {
    actors::chief_options chief;
    chief.checkpoint_dir = o.checkpoints.dir;
    chief.keep_checkpoints = o.checkpoints.keep;
    chief.checkpoint_steps = o.checkpoints.steps;
    chief.checkpoint_seconds = o.checkpoints.secs;
    chief.log_steps = o.ps.log_steps;
    chief.eval_steps = o.ps.eval_steps;
    chief.test = data.test;
    chief.model = io::saved_model{data.shape, {}, data.labels, data.scaling, o.lambda, 0, data.hashing};
    chief.note = [this](const std::string& text) {
      if (!quiet)
        std::fprintf(stderr, "%s\n", text.c_str());
    };
    chief.log = [this](const actors::step_log& row) { log(row); };
    chief.stop_requested = [this] {
      interrupt_stopped = interrupt_stopped || interrupted();
      return hook_stopped || interrupt_stopped;
    };
    return chief;
  }

  void log(const actors::step_log& row) {
    nlohmann::json json{{"step", row.step},
                        {"seconds", row.seconds},
                        {"loss", row.loss},
                        {"steps_per_second", row.steps_per_second},
                        {"examples_per_second", row.examples_per_second},
                        {"dropped_gradients", row.dropped},
                        {"staleness_max", row.staleness_max},
                        {"staleness_mean", row.staleness_mean}};
    std::string test;
    if (row.test && row.test->count > 0) {
      add_quality(json, "test", kind, *row.test);
      const auto key = model::is_classifier(kind) ? "test_accuracy" : "test_rmse";
      test = std::string{"  "} + key + " " + std::to_string(json[key].get<double>());
    }
    metrics.write(json, "step " + std::to_string(row.step), quiet);
    if (keep_history)
      history.push_back(json);
    if (on_row && !hook_stopped && !interrupted() && !on_row(json))
      hook_stopped = true;
    if (!quiet)
      std::fprintf(stderr, "step %7lld  loss %.6g  %.0f steps/s  %.0f examples/s  dropped %lld  staleness %.2f (max %lld)%s  %.1fs\n",
                   static_cast<long long>(row.step), row.loss, row.steps_per_second,
                   row.examples_per_second, static_cast<long long>(row.dropped), row.staleness_mean,
                   static_cast<long long>(row.staleness_max), test.c_str(), row.seconds);
  }
};

/// The outcome of a job (a summary like train's) and the model file.
result<train_outcome> finish(const train_options& o, const actors::ps_job& job, const prepared_data& data,
                            const actors::ps_outcome& outcome, int ps_count, chief_hooks& hooks,
                            clock_type::time_point started) {
  const auto& theta = outcome.theta;
  model::local_objective objective{data.shape, data.train, o.lambda};
  Eigen::VectorXd grad;
  const double f = objective.evaluate(theta, grad);
  const auto examples = outcome.stats.examples;
  auto summary = data_summary(o.model, data, o.lambda);
  summary.update(nlohmann::json{
    {"mode", "ps"},
    {"optimizer", o.ps.rule},
    {"sync", job.sync},
    {"workers", job.workers},
    {"ps", ps_count},
    {"replicas_to_aggregate", job.sync ? job.replicas_to_aggregate : 1},
    {"staleness", job.staleness},
    {"batch_size", job.batch_size},
    {"objective", f},
    {"grad_norm", grad.norm()},
    {"grad_norm_inf", grad.lpNorm<Eigen::Infinity>()},
    {"steps", outcome.step},
    {"restored_step", outcome.restored_step},
    {"seconds", outcome.seconds},
    {"steps_per_second", outcome.seconds > 0 ? static_cast<double>(outcome.step - std::max<std::int64_t>(outcome.restored_step, 0)) / outcome.seconds : 0},
    {"examples_per_second", outcome.seconds > 0 ? static_cast<double>(examples) / outcome.seconds : 0},
    {"dropped_gradients", outcome.stats.dropped},
    {"staleness_max", outcome.stats.staleness_max},
    {"stop_reason", hooks.interrupt_stopped ? "interrupted"
                    : hooks.hook_stopped ? "stopped_by_hook"
                                             : "last_step"}});
  if (!outcome.last_checkpoint.empty())
    summary["checkpoint"] = outcome.last_checkpoint;
  add_qualities(summary, data, model::quality(data.shape, *data.train, {0, data.train->rows()}, theta), theta);
  summary["total_seconds"] = std::chrono::duration<double>(clock_type::now() - started).count();
  train_outcome trained{std::move(summary), {data.shape, theta, data.labels, data.scaling, o.lambda, 0, data.hashing},
                      std::move(hooks.history), std::nullopt};
  if (auto written = hooks.metrics.written(); !written)
    trained.metrics_error = written.error();
  if (!o.save.empty())
    if (auto ok = io::save_model(o.save, trained.model); !ok)
      return ok.error();
  if (!o.quiet)
    std::fprintf(stderr, "stopped at step %lld after %.2fs; objective %.10g\n",
                 static_cast<long long>(outcome.step), outcome.seconds, f);
  return trained;
}

result<prepared_data> read_data(const train_options& o, memory_data* in_memory = nullptr) {
  auto architecture = model_architecture(o);
  if (!architecture)
    return architecture.error();
  auto data = in_memory ? prepare_memory_data(std::move(*in_memory), o.data, *architecture, o.classes)
                        : prepare_training_data(o.data, *architecture, o.classes);
  if (data)
    if (auto fits = check_model_size(data->shape); !fits)
      return fits.error();
  return data;
}

/// The job's capability: from --job-token, or derived from the host lists every task shares.
actors::access_token job_token(const ps_task_options& o) {
  return actors::access_token::from_text(o.job_token.empty() ? o.ps_hosts + " " + o.worker_hosts
                                                             : o.job_token);
}

int run_ps_server(const ps_task_options& o, const actors::endpoint& self_endpoint) {
  const auto& t = o.train;
  const auto bind = o.bind.empty() ? self_endpoint.host : o.bind;
  if (auto ok = actors::check_exposure(bind, t.tls.enabled(), o.insecure, "ps " + std::to_string(o.task_index));
      !ok)
    return exit_with_error(ok.error().message());
  // Left running at exit: the process ends right after (see runtime_options).
  actors::runtime rt{actors::runtime_options{t.threads, true, t.tls, true}};
  auto published = actors::publish_parameter_server(rt, bind, self_endpoint.port, job_token(o));
  if (!published)
    return exit_with_error(published.error().message());
  auto [server, port] = *published;
  if (!t.quiet)
    std::fprintf(stderr, "ps %d listening on %s:%u\n", o.task_index, bind.c_str(), static_cast<unsigned>(port));
  auto endpoint = start_metrics(
    t.serve_metrics,
    {[&rt, server = server, token = job_token(o)] {
       auto stats = actors::parameter_server_stats(rt, server, token, std::chrono::seconds{2});
       return joined(process_metrics("ps"), ps_metrics(stats ? &*stats : nullptr));
     },
     [] { return std::string{}; }},
    "ps " + std::to_string(o.task_index));
  if (!endpoint)
    return exit_with_error(endpoint.error().message());
  auto served = actors::await_parameter_server(rt, server, millis(t.ps.startup_timeout));
  if (!served)
    std::fprintf(stderr, "shardopt ps %d: %s\n", o.task_index, served.error().message().c_str());
  const int code = served ? 0 : 1;
  actors::unpublish_parameter_server(rt, server, port);
  // Give the middleman a moment to send the last replies before the process leaves.
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  if (!t.quiet)
    std::fprintf(stderr, "ps %d: %s\n", o.task_index, code == 0 ? "training finished, exiting" : "exiting");
  return code;
}

int run_ps_worker(const ps_task_options& o, const std::vector<actors::endpoint>& servers,
                  std::uint32_t workers) {
  const auto started = clock_type::now();
  const auto& t = o.train;
  auto data = read_data(t);
  if (!data)
    return exit_with_error(data.error().message());
  auto job = make_job(t.ps, data->shape, t.lambda, static_cast<int>(workers));
  if (!job)
    return exit_with_error(job.error().message());
  auto slow = parse_slow_worker(t.ps.slow_worker);
  if (!slow)
    return exit_with_error(slow.error().message());
  if (auto ok = io::check_tls_files(t.tls.certificate, t.tls.key, t.tls.ca); !ok)
    return exit_with_error(ok.error().message());
  const auto index = static_cast<std::uint32_t>(o.task_index);
  const auto blocks = io::partition_rows(data->train->rows(), workers);
  actors::worker_task task{index, data->train, blocks[index], slow->first == o.task_index ? slow->second : 1.0};
  job->token = job_token(o);
  // Left running at exit: the process ends right after (see runtime_options).
  actors::runtime rt{actors::runtime_options{t.threads, true, t.tls, true}};
  driver_progress progress;
  auto endpoint = start_metrics(t.serve_metrics, driver_sources(progress, "worker", index == 0),
                                "worker " + std::to_string(index));
  if (!endpoint)
    return exit_with_error(endpoint.error().message());
  auto group = actors::connect_parameter_servers(rt, servers, job->startup_timeout);
  if (!group)
    return exit_with_error(group.error().message());
  progress.connected();
  chief_hooks hooks;
  hooks.on_row = recording(progress);
  hooks.quiet = t.quiet;
  hooks.kind = data->shape.kind;
  if (index == 0 && !t.metrics.empty()) {
    if (auto ok = hooks.metrics.open(t.metrics); !ok)
      return exit_with_error(ok.error().message());
  }
  auto chief = hooks.options(t, *data);
  auto outcome = actors::run_remote_worker(rt, *group, *job, task, index == 0 ? &chief : nullptr);
  progress.finished();
  if (!outcome)
    return exit_with_error("worker " + std::to_string(index) + ": " + outcome.error().message());
  if (index != 0) {
    if (!t.quiet)
      std::fprintf(stderr, "worker %u: training finished at step %lld\n", index,
                   static_cast<long long>(outcome->step));
    return 0;
  }
  return exit_with_outcome(finish(t, *job, *data, *outcome, static_cast<int>(servers.size()), hooks, started), t);
}

} // namespace

result<train_outcome> train_ps(const train_options& options, const train_controls& controls) {
  const auto started = clock_type::now();
  if (options.solver == solver_kind::newton_cg || options.solver == solver_kind::owlqn)
    return fail_invalid("--solver " + std::string{to_string(options.solver)} + " is a full-batch solver of --mode lbfgs; "
                "--mode ps trains with --optimizer");
  if (options.l1 > 0)
    return fail_invalid("--l1 is trained by OWL-QN, a full-batch solver: use --mode lbfgs (--mode ps "
                        "takes --lambda only)");
  if (options.no_bias)
    return fail_invalid("--no-bias is for the full-batch solvers: use --mode lbfgs (--mode ps always fits "
                        "biases)");
  if (!options.nodes.empty())
    return fail_invalid("--nodes: --mode ps runs its tasks in this process; run one `shardopt ps-task` per "
                "host for a multi-process job");
  auto data = read_data(options, controls.data);
  if (!data)
    return data.error();
  actors::runtime rt{actors::runtime_options::local(options.threads)};
  const int workers = options.ps.workers > 0 ? options.ps.workers : static_cast<int>(rt.worker_threads());
  if (options.ps.servers < 1)
    return fail_invalid("--ps must be at least 1");
  auto job = make_job(options.ps, data->shape, options.lambda, workers);
  if (!job)
    return job.error();
  auto slow = parse_slow_worker(options.ps.slow_worker);
  if (!slow)
    return slow.error();
  chief_hooks hooks;
  hooks.quiet = options.quiet;
  hooks.kind = data->shape.kind;
  hooks.keep_history = controls.keep_history;
  hooks.on_row = controls.on_row;
  hooks.interrupt = controls.interrupt;
  if (!options.metrics.empty()) {
    if (auto ok = hooks.metrics.open(options.metrics); !ok)
      return ok.error();
  }
  if (!options.quiet)
    std::fprintf(stderr, "data: %lld examples x %lld features from %s; %d workers, %d parameter servers, %s%s\n",
                 static_cast<long long>(data->train->rows()), static_cast<long long>(data->shape.features),
                 data->train_source.c_str(), workers, options.ps.servers,
                 job->sync ? "synchronous" : "asynchronous",
                 job->sync && job->replicas_to_aggregate < job->workers ? " with backup workers" : "");
  const auto chief = hooks.options(options, *data);
  if (controls.on_ready)
    controls.on_ready();
  auto outcome = actors::run_local_job(rt, *job, static_cast<std::uint32_t>(options.ps.servers), data->train,
                                       chief, slow->first, slow->second);
  if (!outcome)
    return failure{"training failed: " + outcome.error().message(), failure_kind::runtime};
  return finish(options, *job, *data, *outcome, options.ps.servers, hooks, started);
}

int run_ps_task(const ps_task_options& options) {
  auto servers = actors::parse_endpoints(options.ps_hosts, "--ps_hosts");
  if (!servers)
    return exit_with_error(servers.error().message());
  auto workers = actors::parse_endpoints(options.worker_hosts, "--worker_hosts");
  if (!workers)
    return exit_with_error(workers.error().message());
  const auto& list = options.job_name == "ps" ? *servers : *workers;
  if (options.job_name != "ps" && options.job_name != "worker")
    return exit_with_error("--job_name must be 'ps' or 'worker', got '" + options.job_name + "'");
  if (options.task_index < 0 || static_cast<std::size_t>(options.task_index) >= list.size())
    return exit_with_error("--task_index " + std::to_string(options.task_index) + " is not in 0.." +
                        std::to_string(list.size() - 1) + " for --job_name=" + options.job_name);
  if (options.job_name == "ps") {
    if (auto ok = io::check_tls_files(options.train.tls.certificate, options.train.tls.key, options.train.tls.ca); !ok)
      return exit_with_error(ok.error().message());
    return run_ps_server(options, list[static_cast<std::size_t>(options.task_index)]);
  }
  return run_ps_worker(options, *servers, static_cast<std::uint32_t>(workers->size()));
}

} // namespace shardopt::apps
