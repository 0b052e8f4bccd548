#include "apps/train.hpp"

#include "apps/architecture.hpp"
#include "apps/lbfgs_checkpoints.hpp"
#include "apps/progress.hpp"
#include "apps/ps_train.hpp"
#include "apps/shards.hpp"
#include "apps/summary.hpp"
#include "io/tls_files.hpp"
#include "optimizer/newton_cg.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

namespace shardopt::apps {

namespace {

/// Newton-CG's settings: the stopping tests are the ones L-BFGS takes, by the same options. Its
/// replayed products and its preconditioner's pairs each get a quarter of the bytes the training
/// features take in memory (`data_bytes`, wherever they are, so that the solver is the same for
/// every placement), at least 16 MiB and at most 256 MiB: a run holds a few dimension-sized
/// vectors beyond the data, as LIBLINEAR's TRON does.
optimizer::newton_options newton_options(const train_options& options, std::int64_t data_bytes) {
  optimizer::newton_options out;
  if (data_bytes > 0) {
    const auto budget = std::max(data_bytes / 4, std::int64_t{16} << 20);
    out.replay_bytes = std::min(out.replay_bytes, budget);
    out.preconditioner_bytes = std::min(out.preconditioner_bytes, budget);
  }
  out.epsilon = options.lbfgs.epsilon;
  out.epsilon_rel = options.lbfgs.epsilon_rel;
  out.past = options.lbfgs.past;
  out.delta = options.lbfgs.delta;
  out.max_iterations = options.lbfgs.max_iterations;
  out.cg_tolerance = options.cg_tolerance;
  out.preconditioner_pairs = options.cg_pairs;
  out.max_cg_iterations = options.max_cg;
  return out;
}

/// An objective that stops answering once `flag` is set, so an interrupted run ends at its next
/// pass over the data (as a failed evaluation, which leaves theta at the last accepted iterate).
/// `stopped()` tells whether the interrupt ended the run, as opposed to arriving after its end.
template <class F>
class interruptible {
public:
  interruptible(F& f, const std::atomic<bool>* flag) : f_(f), flag_(flag) {}

  std::int64_t dimension() const { return f_.dimension(); }

  result<double> evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    if (stop_now())
      return failure{"interrupted", failure_kind::failed};
    return f_.evaluate(theta, grad);
  }

  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if (stop_now())
      return failure{"interrupted", failure_kind::failed};
    return f_.hessian_vector(v, hv);
  }

  /// Whether the run must stop here; remembers that it did.
  bool stop_now() {
    stopped_ = stopped_ || (flag_ && flag_->load());
    return stopped_;
  }

  bool stopped() const { return stopped_; }

private:
  F& f_;
  const std::atomic<bool>* flag_;
  bool stopped_ = false;
};

/// The training data: read as `options` says, or the caller's in memory.
result<prepared_data> training_data(const train_options& options, const train_controls& controls,
                                    const model::model_shape& architecture) {
  if (!controls.data)
    return prepare_training_data(options.data, architecture, options.classes);
  return prepare_memory_data(std::move(*controls.data), options.data, architecture, options.classes);
}

result<train_report> train_sharded(const train_options& options, const train_controls& controls) {
  const auto architecture = model_architecture(options);
  if (!architecture)
    return architecture.error();
  const auto kind = architecture->kind;
  const bool newton = options.solver == "newton-cg";
  if (newton) {
    if (architecture->is_network())
      return fail("--solver newton-cg takes the linear models (linear, logistic, softmax, svm); "
                  "train --model mlp with --solver lbfgs or --mode ps");
    if (options.lower || options.upper)
      return fail("--solver newton-cg does not take --lower/--upper: bounded problems need "
                  "L-BFGS-B (--solver lbfgs)");
    if (!options.checkpoints.dir.empty())
      return fail("--checkpoint-dir: --solver newton-cg runs cannot be checkpointed yet "
                  "(L-BFGS runs can: --solver lbfgs)");
  }
  const auto started = std::chrono::steady_clock::now();
  // Node-local training data is read by the nodes; otherwise the driver reads and prepares it.
  const bool node_local = options.data_placement == "node-local";
  if (node_local && controls.data)
    return fail("--data-placement node-local: the nodes read --data themselves; data in memory "
                "can only be shipped");
  prepared_data data;
  if (!node_local) {
    auto prepared = training_data(options, controls, *architecture);
    if (!prepared)
      return prepared.error();
    data = std::move(*prepared);
  }
  const auto loaded = std::chrono::steady_clock::now();
  if (auto ok = io::check_tls_files(options.tls.certificate, options.tls.key, options.tls.ca); !ok)
    return ok.error();
  actors::runtime rt{actors::runtime_options{options.threads, !options.nodes.empty(), options.tls, false}};
  const shard_options placement{
    options.shards, options.nodes, options.data_placement,
    std::chrono::milliseconds{static_cast<long long>(options.eval_timeout * 1000)}, options.quiet};
  auto setup = setup_shards(rt, placement, data, options.data, *architecture, options.classes, options.lambda);
  if (!setup)
    return setup.error();
  if (node_local) {
    auto test = prepare_test_data(options.data, data.labels, data.scaling, data.shape.features,
                                  data.train_source);
    if (!test)
      return test.error();
    data.test = std::move(*test);
  }
  auto& sharded = *setup->objective;
  const auto shards = setup->shards;
  const auto set_up = std::chrono::steady_clock::now();
  const auto n = data.train_rows;
  if (!options.quiet)
    std::fprintf(stderr, "data: %lld examples x %lld features from %s%s; model %s, %lld parameters\n",
                 static_cast<long long>(n), static_cast<long long>(data.shape.features),
                 data.train_source.c_str(), data.test ? ", with a test set" : "",
                 model::describe(data.shape).c_str(), static_cast<long long>(data.shape.dimension()));

  auto lbfgs = options.lbfgs;
  if (auto fits = check_model_size(data.shape); !fits)
    return fits.error();
  const auto dimension = data.shape.dimension();
  if (options.lower)
    lbfgs.lower = Eigen::VectorXd::Constant(dimension, *options.lower);
  if (options.upper)
    lbfgs.upper = Eigen::VectorXd::Constant(dimension, *options.upper);
  std::optional<lbfgs_checkpointer> checkpoints;
  if (!options.checkpoints.dir.empty()) {
    if (lbfgs.lower || lbfgs.upper)
      return fail("--checkpoint-dir: a run with --lower/--upper (L-BFGS-B) cannot be checkpointed "
                  "(LBFGS++ keeps its bounded solver's state private)");
    auto opened = lbfgs_checkpointer::open(options.checkpoints, lbfgs_run_settings(options, data, shards), options.quiet);
    if (!opened)
      return opened.error();
    checkpoints.emplace(std::move(*opened));
    if (checkpoints->resume() && !options.quiet)
      std::fprintf(stderr, "resuming from %s (iteration %d)\n", checkpoints->resumed_from().c_str(),
                   checkpoints->resume()->iterations);
  }
  const int resumed_at = checkpoints && checkpoints->resume() ? checkpoints->resume()->iterations : 0;
  progress_reporter progress{options.quiet, options.progress_interval};
  if (!options.metrics.empty())
    if (auto ok = progress.open_metrics(options.metrics, resumed_at); !ok)
      return ok.error();
  const auto newton_settings = newton_options(options, data.feature_bytes);
  if (auto problem = newton ? optimizer::check_options(newton_settings) : optimizer::check_options(lbfgs, dimension);
      !problem.empty())
    return fail(std::string{newton ? "invalid Newton-CG options: " : "invalid L-BFGS options: "} + problem);
  interruptible objective{sharded, controls.interrupt};
  train_report report;
  progress.follow([&](const nlohmann::json& row) {
    // The row's iteration was accepted whatever happens next: the history keeps it, so that it
    // ends at the run's theta and objective also when an interrupt arrives just before the hook.
    if (controls.keep_history)
      report.history.push_back(row);
    if (objective.stop_now())
      return false;
    const bool go_on = !controls.on_row || controls.on_row(row);
    return !objective.stop_now() && go_on;  // an interrupt during the hook is still an interrupt
  });

  // A network starts at its seeded initialisation (zero is a saddle), the linear models at zero.
  Eigen::VectorXd theta = model::initial_theta(data.shape, options.ps.seed);
  const auto session = checkpoints ? checkpoints->session() : optimizer::lbfgs_session{};
  const auto run = newton ? optimizer::minimize_newton(objective, theta, newton_settings, std::ref(progress))
                         : optimizer::minimize(objective, theta, lbfgs, std::ref(progress), session);
  progress.flush();
  const bool interrupted = objective.stopped();
  if (interrupted && run.iterations == 0)
    return failure{"interrupted before the first iteration", failure_kind::failed};
  const std::string stop = interrupted ? "interrupted" : std::string(optimizer::to_string(run.reason));
  if (!options.quiet)
    std::fprintf(stderr, "stopped: %s after %d iterations, %d evaluations%s, %.2fs%s%s\n", stop.c_str(),
                 run.iterations, run.evaluations,
                 newton ? (", " + std::to_string(run.products) + " Hessian-vector products").c_str() : "",
                 run.seconds, run.message.empty() || interrupted ? "" : ": ", interrupted ? "" : run.message.c_str());
  report.model = io::saved_model{data.shape, theta, data.labels, data.scaling, options.lambda};
  if (run.reason == optimizer::stop_reason::evaluation_failed && !interrupted) {
    if (!options.save.empty() && run.iterations > 0 && io::save_model(options.save, report.model).ok())
      std::fprintf(stderr, "shardopt: the last theta (iteration %d) was saved to %s\n",
                   run.iterations, options.save.c_str());
    return failure{"training failed: " + run.message, failure_kind::failed};
  }

  auto& summary = report.summary;
  summary = nlohmann::json{{"model", options.model},
                           {"objective", run.f},
                           {"grad_norm", run.grad_norm},
                           {"grad_norm_inf", run.grad_norm_inf},
                           {"iterations", run.iterations},
                           {"solver", options.solver},
                           {"evaluations", run.evaluations},
                           {"hessian_products", run.products},
                           {"passes", run.evaluations + run.products},
                           {"seconds", run.seconds},
                           {"load_seconds", std::chrono::duration<double>(loaded - started).count()},
                           {"setup_seconds", std::chrono::duration<double>(set_up - loaded).count()},
                           {"stop_reason", stop},
                           {"shards", shards},
                           {"nodes", setup->cluster ? setup->cluster->nodes().size() : 0},
                           {"recreated_shards", sharded.recreated_shards()},
                           {"lambda", options.lambda},
                           {"examples", n},
                           {"features", data.shape.features},
                           {"outputs", data.shape.outputs},
                           {"dimension", dimension},
                           {"architecture", model::describe(data.shape)}};
  if (!run.message.empty() && !interrupted)
    summary["stop_message"] = run.message;
  if (checkpoints) {
    summary["resumed_from"] = checkpoints->resumed_from().empty() ? nlohmann::json() : nlohmann::json(checkpoints->resumed_from());
    summary["checkpoint"] = checkpoints->last_written().empty() ? nlohmann::json() : nlohmann::json(checkpoints->last_written());
  }
  auto train_quality = sharded.quality(theta);
  if (!train_quality)
    return failure{"computing training accuracy: " + train_quality.error().message(), failure_kind::failed};
  add_quality(summary, "train", kind, *train_quality);
  if (data.test) {
    add_quality(summary, "test", kind,
                model::quality(data.shape, *data.test, {0, data.test->rows()}, theta));
    summary["test_examples"] = data.test->rows();
  } else {
    summary[model::is_classifier(kind) ? "test_accuracy" : "test_rmse"] = nullptr;
  }
  summary["total_seconds"] =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (!options.save.empty())
    if (auto ok = io::save_model(options.save, report.model); !ok)
      return ok.error().as(failure_kind::failed);
  if (auto written = progress.metrics_written(); !written)
    report.metrics_error = written.error().as(failure_kind::failed);
  return report;
}

} // namespace

result<train_report> train(const train_options& options, const train_controls& controls) {
  return options.mode == "ps" ? train_ps(options, controls) : train_sharded(options, controls);
}

int run_train(const train_options& options) {
  auto report = train(options);
  if (!report)
    return report_error(report.error().message());
  print_summary(options.quiet, options.json, report->summary);
  if (report->metrics_error)
    return report_error(report->metrics_error->message());
  return 0;
}

} // namespace shardopt::apps
