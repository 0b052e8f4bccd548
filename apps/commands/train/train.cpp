#include "apps/commands/train/train.hpp"

#include "apps/commands/train/architecture.hpp"
#include "apps/commands/train/solver_checkpoints.hpp"
#include "apps/run/output_paths.hpp"
#include "apps/run/progress.hpp"
#include "apps/commands/train/ps_train.hpp"
#include "apps/serving/service_metrics.hpp"
#include "apps/commands/train/shards.hpp"
#include "apps/commands/train/solver.hpp"
#include "apps/run/summary.hpp"
#include "io/nodes_file.hpp"
#include "model/model_shape.hpp"
#include "optimizer/held_at_zero.hpp"
#include "io/tls_files.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>

namespace shardopt::apps {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The training data: read as `options` says, or the caller's in memory. Node-local data is read
/// by the nodes (setup_shards fills the shape, encoding and counts in).
result<prepared_data> training_data(const train_options& options, const train_controls& controls,
                                    const model::model_shape& architecture) {
  if (options.placement == data_placement::node_local) {
    if (controls.data)
      return fail_invalid("--data-placement node-local: the nodes read --data themselves; data in "
                          "memory can only be shipped");
    return prepared_data{};
  }
  if (!controls.data)
    return prepare_training_data(options.data, architecture, options.classes);
  return prepare_memory_data(std::move(*controls.data), options.data, architecture, options.classes);
}

/// The shard actors (local or on nodes) over the training data; with node-local data, also the
/// test set, prepared with the nodes' fit.
result<shard_setup> shards_for(const train_options& options, actors::runtime& rt, prepared_data& data,
                               const model::model_shape& architecture) {
  const shard_options placement{
    options.shards, options.nodes, options.placement,
    std::chrono::milliseconds{static_cast<long long>(options.eval_timeout * 1000)}, options.quiet,
    options.topology, options.fan_in, options.nodes_file, options.nodes_dns};
  auto setup = setup_shards(rt, placement, data, options.data, architecture, options.classes, options.lambda);
  if (!setup)
    return setup.error();
  if (options.placement == data_placement::node_local) {
    const auto features = data.columns ? data.columns->features : data.shape.features;
    auto test = prepare_test_data(options.data, data.labels, data.scaling, features, data.train_source);
    if (!test)
      return test.error();
    data.test = std::move(*test);
  }
  if (!options.quiet)
    std::fprintf(stderr, "data: %lld examples x %lld features%s from %s%s; model %s, %lld parameters\n",
                 static_cast<long long>(data.train_rows),
                 static_cast<long long>(data.columns ? data.columns->features : data.shape.features),
                 data.columns ? (" (" + std::to_string(data.shape.features) + " used)").c_str() : "",
                 data.train_source.c_str(), data.test ? ", with a test set" : "",
                 model::describe(data.shape).c_str(), static_cast<long long>(data.shape.dimension()));
  return setup;
}

/// Checkpoints of a run of `solver`, when asked for: opened (and resumed from) before it starts.
result<std::optional<solver_checkpointer>> checkpoints_for(const train_options& options, solver_kind solver,
                                                           const prepared_data& data, int shards) {
  if (options.checkpoints.dir.empty())
    return std::optional<solver_checkpointer>{};
  // What this run's checkpoints may hold of the dimension: theta, its gradient, a diagonal and
  // the pairs, with room to spare; and the --past ring.
  const std::int64_t pairs = std::max<std::int64_t>({options.lbfgs.history, options.preconditioner_pairs, 64});
  const std::int64_t vectors = 2 * std::min<std::int64_t>(pairs, 1 << 20) + 8;
  const auto dimension = data.shape.dimension();
  const auto sparse_entries = dimension > (std::int64_t{1} << 40) / vectors
                                ? std::int64_t{1} << 40
                                : vectors * dimension + std::max<std::int64_t>(options.lbfgs.past, 0) + 1024;
  auto opened = solver_checkpointer::open(options.checkpoints, solver,
                                          run_settings(options, solver, data, shards), options.quiet,
                                          sparse_entries);
  if (!opened)
    return opened.error();
  if (opened->resumed_iteration() > 0 && !options.quiet)
    std::fprintf(stderr, "resuming from %s (iteration %d)\n", opened->resumed_from().c_str(),
                 opened->resumed_iteration());
  return std::optional<solver_checkpointer>{std::move(*opened)};
}

/// The summary of a finished sharded run (whose stop was not a failure).
nlohmann::json sharded_summary(const train_options& options, solver_kind solver, const prepared_data& data,
                               const shard_setup& setup, const optimizer::run_result& run,
                               const std::string& stop) {
  auto summary = data_summary(options.model, data, options.lambda);
  summary.update(nlohmann::json{{"objective", run.f},
                                {"grad_norm", run.grad_norm},
                                {"grad_norm_inf", run.grad_norm_inf},
                                {"iterations", run.iterations},
                                {"solver", to_string(solver)},
                                {"l1", options.l1},
                                {"biases", !options.no_bias},
                                {"evaluations", run.evaluations},
                                {"hessian_products", run.products},
                                {"passes", run.evaluations + run.products},
                                {"seconds", run.seconds},
                                {"stop_reason", stop},
                                {"shards", setup.shards},
                                {"nodes", setup.cluster ? setup.cluster->nodes().size() : 0},
                                {"topology", setup.cluster ? setup.cluster->topology_in_use() : std::string{"local"}},
                                {"recreated_shards", setup.objective->recreated_shards()},
                                {"round_seconds", setup.objective->round_seconds()},
                                {"lost_nodes", setup.cluster ? setup.cluster->lost_nodes() : 0},
                                {"rejoined_nodes", setup.cluster ? setup.cluster->rejoined_nodes() : 0},
                                {"joined_nodes", setup.cluster ? setup.cluster->joined_nodes() : 0}});
  if (!run.message.empty() && stop != "interrupted")
    summary["stop_message"] = run.message;
  return summary;
}

/// `given` with the nodes its --nodes-file lists and its --nodes-dns name resolves to added to
/// --nodes.
result<train_options> with_listed_nodes(const train_options& given) {
  auto options = given;
  for (const auto& [source, list] :
       {std::pair{given.nodes_file, &io::read_nodes_file}, std::pair{given.nodes_dns, &io::resolve_nodes}}) {
    if (source.empty())
      continue;
    auto listed = list(source);
    if (!listed)
      return listed.error();
    if (!listed->empty())
      options.nodes += (options.nodes.empty() ? "" : ",") + *listed;
  }
  if (options.nodes.empty() && !(given.nodes_file + given.nodes_dns).empty())
    return fail_invalid((given.nodes_file.empty() ? given.nodes_dns : given.nodes_file)
                        + ": lists no nodes, and --nodes gives none");
  return options;
}

result<train_outcome> train_sharded(const train_options& given, const train_controls& controls) {
  auto resolved = with_listed_nodes(given);
  if (!resolved)
    return resolved.error();
  const auto& options = *resolved;
  const auto architecture = model_architecture(options);
  if (!architecture)
    return architecture.error();
  auto plan = plan_solver(options, *architecture);
  if (!plan)
    return plan.error();
  const auto started = clock_type::now();
  auto data = training_data(options, controls, *architecture);
  if (!data)
    return data.error();
  // Columns no training row has (hashed text) are left out of the solve and put back as zeros:
  // their weights are 0 at every L2 and L1 optimum, and so under bounds only when 0 is within them.
  const bool bounded = (options.lower && *options.lower > 0) || (options.upper && *options.upper < 0);
  if (!bounded)
    leave_out_unused_columns(*data);
  const auto loaded = clock_type::now();
  if (auto ok = io::check_tls_files(options.tls.certificate, options.tls.key, options.tls.ca); !ok)
    return ok.error();
  actors::runtime rt{actors::runtime_options{options.threads, !options.nodes.empty(), options.tls, false}};
  auto setup = shards_for(options, rt, *data, *architecture);
  if (!setup)
    return setup.error();
  if (controls.on_ready)
    controls.on_ready();
  const auto set_up = clock_type::now();
  if (auto fits = check_model_size(data->shape); !fits)
    return fits.error();
  if (auto ok = size_plan(*plan, options, data->shape, data->feature_bytes, data->sparse); !ok)
    return ok.error();
  auto checkpoints = checkpoints_for(options, plan->kind, *data, setup->shards);
  if (!checkpoints)
    return checkpoints.error();
  progress_log progress{options.quiet, options.progress_interval};
  const int resumed_at = *checkpoints ? (*checkpoints)->resumed_iteration() : 0;
  if (!options.metrics.empty())
    if (auto ok = progress.open_metrics(options.metrics, resumed_at); !ok)
      return ok.error();

  // The driver's work over the dimension (adding the shards' sums, CG's vector updates, OWL-QN's
  // passes) on as many threads as the actors get: the same bits on any number.
  optimizer::vector_pool pool{static_cast<int>(rt.worker_threads())};
  setup->objective->use_threads(&pool);
  plan->newton.pool = &pool;
  plan->lbfgs.pool = &pool;

  // The run: each accepted iteration's row is kept (with keep_history) whatever happens next, so
  // the history ends at the run's theta also when an interrupt arrives just before the hook.
  interruptible interruptible_objective{*setup->objective, controls.interrupt};
  // --no-bias: the biases' gradient entries are 0, so every solver leaves them at their start, 0.
  optimizer::held_at_zero objective{interruptible_objective,
                                    options.no_bias ? model::bias_entries(data->shape) : std::vector<Eigen::Index>{}};
  train_outcome trained;
  progress.follow([&](const nlohmann::json& row) {
    if (controls.keep_history)
      trained.history.push_back(row);
    if (interruptible_objective.stop_now())
      return false;
    const bool go_on = !controls.on_row || controls.on_row(row);
    return !interruptible_objective.stop_now() && go_on;  // an interrupt during the hook is still an interrupt
  });
  // A network starts at its seeded initialisation (zero is a saddle), the linear models at zero.
  Eigen::VectorXd theta = model::initial_theta(data->shape, options.ps.seed);
  objective.clear(theta);
  auto run = *checkpoints ? run_solver(*plan, objective, theta, std::ref(progress),
                                       (*checkpoints)->lbfgs_session(), (*checkpoints)->newton_session())
                          : run_solver(*plan, objective, theta, std::ref(progress), {}, {});
  progress.flush();
  if (!run)
    return run.error();
  const bool interrupted = interruptible_objective.stopped();
  if (interrupted && run->iterations == 0)
    return fail_runtime("interrupted before the first iteration");
  const std::string stop = interrupted ? "interrupted" : std::string(optimizer::to_string(run->reason));
  if (!options.quiet)
    std::fprintf(stderr, "stopped: %s after %d iterations, %d evaluations%s, %.2fs%s%s\n", stop.c_str(),
                 run->iterations, run->evaluations,
                 plan->kind == solver_kind::newton_cg
                   ? (", " + std::to_string(run->products) + " Hessian-vector products").c_str() : "",
                 run->seconds, run->message.empty() || interrupted ? "" : ": ", interrupted ? "" : run->message.c_str());
  // The left-out columns' weights back, as zeros (training quality is taken on the solve's own).
  const Eigen::VectorXd solved = theta;
  theta = theta_for_model(*data, solved);
  trained.model = io::saved_model{data->shape, theta, data->labels, data->scaling, options.lambda, options.l1,
                                  data->hashing};
  if (run->reason == optimizer::stop_reason::evaluation_failed && !interrupted) {
    if (!options.save.empty() && run->iterations > 0 && io::save_model(options.save, trained.model).ok())
      std::fprintf(stderr, "shardopt: the last theta (iteration %d) was saved to %s\n", run->iterations,
                   options.save.c_str());
    return fail_runtime("training failed: " + run->message);
  }

  trained.summary = sharded_summary(options, plan->kind, *data, *setup, *run, stop);
  auto& summary = trained.summary;
  if (plan->kind == solver_kind::newton_cg)
    summary["newton_step"] = plan->newton.step == optimizer::newton_step::trust_region ? "trust-region" : "line-search";
  summary["load_seconds"] = seconds_between(started, loaded);
  summary["setup_seconds"] = seconds_between(loaded, set_up);
  if (*checkpoints) {
    const auto& c = **checkpoints;
    summary["resumed_from"] = c.resumed_from().empty() ? nlohmann::json() : nlohmann::json(c.resumed_from());
    summary["checkpoint"] = c.last_written().empty() ? nlohmann::json() : nlohmann::json(c.last_written());
  }
  auto train_quality = setup->objective->quality(solved);
  if (!train_quality)
    return train_quality.error().with_context("computing training accuracy");
  add_qualities(summary, *data, *train_quality, theta);
  summary["total_seconds"] = seconds_between(started, clock_type::now());
  if (!options.save.empty())
    if (auto ok = io::save_model(options.save, trained.model); !ok)
      return ok.error();
  if (auto written = progress.metrics_written(); !written)
    trained.metrics_error = written.error();
  return trained;
}

} // namespace

namespace {

/// Every path a run writes, checked before any work (a run that trains for an hour must not fail
/// at the end for a typo in --save).
result<void> check_outputs(const train_options& o) {
  for (const auto& [option, path] : {std::pair{"--save", o.save}, std::pair{"--metrics", o.metrics}})
    if (!path.empty())
      if (auto ok = check_output_file(option, path); !ok)
        return ok;
  if (!o.checkpoints.dir.empty())
    return check_output_folder("--checkpoint-dir", o.checkpoints.dir);
  return {};
}

} // namespace

result<train_outcome> train(const train_options& options, const train_controls& controls) {
  if (auto ok = check_outputs(options); !ok)
    return ok.error();
  return options.mode == train_mode::ps ? train_ps(options, controls) : train_sharded(options, controls);
}

int exit_with_outcome(const result<train_outcome>& trained, const train_options& options) {
  if (!trained)
    return exit_with_error(trained.error().message());
  print_summary(options.quiet, options.json, trained->summary);
  if (trained->metrics_error)
    return exit_with_error(trained->metrics_error->message());
  return 0;
}

result<train_outcome> train_watched(const train_options& options, train_controls controls) {
  driver_progress progress;
  auto endpoint = start_metrics(options.serve_metrics, driver_sources(progress, "driver"), "shardopt train");
  if (!endpoint)
    return endpoint.error();
  if (*endpoint) {
    controls.on_ready = [&progress, then = controls.on_ready] {
      progress.connected();
      if (then)
        then();
    };
    controls.on_row = recording(progress, std::move(controls.on_row));
  }
  auto trained = train(options, controls);
  progress.finished();
  return trained;
}

int run_train(const train_options& options) {
  return exit_with_outcome(train_watched(options), options);
}

} // namespace shardopt::apps
