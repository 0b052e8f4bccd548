// shardopt: the command-line entry point. Parses options with CLI11 and hands them to the commands.

#include "apps/eval.hpp"
#include "apps/node_command.hpp"
#include "apps/ps_train.hpp"
#include "apps/train.hpp"

#include <CLI/CLI.hpp>

namespace {

using shardopt::apps::data_options;

void add_data_options(CLI::App& command, data_options& data, bool training) {
  command.add_option("--data", data.data,
                     "Dataset: a CSV or LIBSVM file, a MNIST-layout directory, or 'fashion-mnist'")
    ->capture_default_str();
  command.add_option("--format", data.format, "Input format: auto, csv, libsvm, idx")
    ->capture_default_str();
  command.add_option("--label-column", data.label_column,
                     "CSV: 0-based label column; negative counts from the end (-1 = last)")
    ->capture_default_str();
  command.add_option("--header", data.header, "CSV header row: auto, yes, no")->capture_default_str();
  command.add_option("--features", data.features, "LIBSVM: number of features (0 = largest index)");
  command.add_option("--limit", data.limit, "Use only the first N examples (0 = all)");
  if (training) {
    command.add_option("--test", data.test,
                       "Test set file (default: the dataset's own test split, if it has one)");
    command.add_option("--test-limit", data.test_limit, "Use only the first N test examples");
    command.add_option("--scale", data.scale,
                       "Feature scaling: auto (IDX pixels / 255) or none")->capture_default_str();
    command.add_flag("--standardize", data.standardize,
                     "Standardise features with training-set mean and deviation");
  }
}

void add_tls_options(CLI::App& command, shardopt::actors::tls_options& tls) {
  command.add_option("--tls-cert", tls.certificate, "Mutual TLS: this process's PEM certificate");
  command.add_option("--tls-key", tls.key, "Mutual TLS: its PEM private key");
  command.add_option("--tls-ca", tls.ca, "Mutual TLS: PEM certificate of the CA peers must be signed by");
}

void add_node_command(CLI::App& app, shardopt::apps::node_options& o) {
  auto* node = app.add_subcommand("node", "Serve shard actors to drivers on this host");
  node->add_option("--bind", o.bind, "Address to listen on")->capture_default_str();
  node->add_option("--port", o.port, "Port to listen on (0: any free port)")->capture_default_str();
  node->add_option("--threads", o.threads,
                   "Worker threads announced to drivers (default: hardware threads)");
  add_tls_options(*node, o.tls);
}

void add_model_options(CLI::App& command, shardopt::apps::train_options& o) {
  command.add_option("--model", o.model, "linear, logistic, softmax or svm")->capture_default_str();
  command.add_option("--lambda", o.lambda, "L2 regularisation of the weights")->capture_default_str();
  command.add_option("--classes", o.classes, "Number of classes (default: from the labels)");
}

void add_output_options(CLI::App& command, shardopt::apps::train_options& o) {
  command.add_option("--metrics", o.metrics, "Write one JSON line per iteration (L-BFGS) or log step (PS)");
  command.add_option("--save", o.save, "Save the trained model to this file");
  command.add_flag("--json", o.json, "Print a final JSON summary on stdout");
  command.add_flag("--quiet", o.quiet, "No progress lines on stderr");
}

/// The parameter-server options, shared by `train --mode ps` and `ps-task`.
void add_ps_options(CLI::App& command, shardopt::apps::ps_options& o) {
  const char* group = "Parameter-server mode";
  command.add_option("--optimizer", o.rule, "Update rule: sgd, momentum, nesterov, adagrad, adam")
    ->capture_default_str()->group(group);
  command.add_option("--lr", o.learning_rate, "Learning rate")->capture_default_str()->group(group);
  command.add_option("--lr-schedule", o.schedule, "constant, step (lr * rate^floor(t/steps)) or "
                     "inverse-time (lr / (1 + rate * t/steps))")->capture_default_str()->group(group);
  command.add_option("--lr-decay-rate", o.decay_rate, "Decay rate of the schedule")->capture_default_str()->group(group);
  command.add_option("--lr-decay-steps", o.decay_steps, "Decay period of the schedule, in steps")
    ->capture_default_str()->group(group);
  command.add_option("--momentum", o.momentum, "momentum and nesterov: momentum")->capture_default_str()->group(group);
  command.add_option("--beta1", o.beta1, "adam: beta1")->capture_default_str()->group(group);
  command.add_option("--beta2", o.beta2, "adam: beta2")->capture_default_str()->group(group);
  command.add_option("--adam-epsilon", o.adam_epsilon, "adam: epsilon")->capture_default_str()->group(group);
  command.add_option("--adagrad-initial", o.adagrad_initial, "adagrad: initial accumulator")
    ->capture_default_str()->group(group);
  command.add_option("--batch-size", o.batch_size, "Examples per minibatch and worker")->capture_default_str()->group(group);
  command.add_flag("--sync", o.sync, "Synchronous training: average replicas-to-aggregate gradients per step")
    ->group(group);
  command.add_option("--replicas-to-aggregate", o.replicas_to_aggregate,
                     "--sync: gradients per step (default: workers - backup workers)")->group(group);
  command.add_option("--backup-workers", o.backup_workers,
                     "--sync: workers beyond replicas-to-aggregate; the slowest gradients are dropped")
    ->capture_default_str()->group(group);
  command.add_option("--staleness", o.staleness,
                     "Asynchronous: how many steps the fastest worker may run ahead of the slowest "
                     "(-1 = unbounded, 0 = lockstep)")->capture_default_str()->group(group);
  command.add_option("--last-step", o.last_step, "Stop at this global step")->capture_default_str()->group(group);
  command.add_option("--seed", o.seed, "Seed of the minibatch order")->capture_default_str()->group(group);
  command.add_option("--checkpoint-dir", o.checkpoint_dir,
                     "Checkpoint here, and restore the newest checkpoint found here at start")->group(group);
  command.add_option("--checkpoint-steps", o.checkpoint_steps, "Checkpoint every N steps (0 = off)")
    ->capture_default_str()->group(group);
  command.add_option("--checkpoint-secs", o.checkpoint_secs, "Checkpoint every S seconds (0 = off)")
    ->capture_default_str()->group(group);
  command.add_option("--keep-checkpoints", o.keep_checkpoints, "Keep the newest K checkpoints (0 = all)")
    ->capture_default_str()->group(group);
  command.add_option("--log-steps", o.log_steps, "Log every N steps (0 = off)")->capture_default_str()->group(group);
  command.add_option("--eval-steps", o.eval_steps, "Evaluate on the test set every N steps (0 = at the end)")
    ->capture_default_str()->group(group);
  command.add_option("--step-timeout", o.step_timeout, "Seconds a worker waits for one step")
    ->capture_default_str()->group(group);
  command.add_option("--startup-timeout", o.startup_timeout,
                     "Seconds to wait for parameter servers and the chief at start")->capture_default_str()->group(group);
  command.add_option("--slow-worker", o.slow_worker,
                     "Testing: make worker INDEX's gradients take FACTOR times as long (INDEX:FACTOR)")->group(group);
}

void add_ps_task_command(CLI::App& app, shardopt::apps::ps_task_options& o) {
  auto* task = app.add_subcommand("ps-task", "Run one task of a multi-process parameter-server job");
  task->add_option("--ps_hosts", o.ps_hosts, "Parameter-server tasks: host:port,host:port")->required();
  task->add_option("--worker_hosts", o.worker_hosts,
                   "Worker tasks: host:port,... (their count is the number of workers; worker 0 is the chief)")
    ->required();
  task->add_option("--job_name", o.job_name, "ps or worker")->required();
  task->add_option("--task_index", o.task_index, "This task's index in its host list")->required();
  task->add_option("--bind", o.bind, "ps: address to listen on (default: its host in --ps_hosts)");
  add_data_options(*task, o.train.data, true);
  add_model_options(*task, o.train);
  add_ps_options(*task, o.train.ps);
  add_tls_options(*task, o.train.tls);
  task->add_option("--threads", o.train.threads, "Actor scheduler threads (default: hardware threads)");
  add_output_options(*task, o.train);
}

void add_train_command(CLI::App& app, shardopt::apps::train_options& o) {
  auto* train = app.add_subcommand("train", "Train a model: L-BFGS over shard actors, or parameter-server SGD");
  add_data_options(*train, o.data, true);
  add_model_options(*train, o);
  train->add_option("--mode", o.mode, "lbfgs (sharded L-BFGS) or ps (parameter servers and workers)")
    ->capture_default_str()->check(CLI::IsMember({"lbfgs", "ps"}));
  train->add_option("--workers", o.ps.workers, "--mode ps: worker actors (default: hardware threads)")
    ->group("Parameter-server mode");
  train->add_option("--ps", o.ps.servers, "--mode ps: parameter-server actors")->capture_default_str()
    ->group("Parameter-server mode");
  add_ps_options(*train, o.ps);
  train->add_option("--shards", o.shards,
                    "Shard actors (default: one per hardware thread, or the nodes' threads)");
  train->add_option("--nodes", o.nodes,
                    "Run the shards on node processes: host:port,host:port (see `shardopt node`)");
  train->add_option("--data-placement", o.data_placement,
                    "With --nodes: 'shipped' (the driver sends each shard's rows) or 'node-local' "
                    "(each node reads its own part of --data, a path every node can see)")
    ->capture_default_str();
  add_tls_options(*train, o.tls);
  train->add_option("--threads", o.threads, "Actor scheduler threads (default: hardware threads)");
  train->add_option("--max-iter", o.lbfgs.max_iterations, "Iteration limit (0 = none)")
    ->capture_default_str();
  train->add_option("--epsilon", o.lbfgs.epsilon, "Stop when ||grad||_2 <= epsilon")
    ->capture_default_str();
  train->add_option("--epsilon-rel", o.lbfgs.epsilon_rel,
                    "Stop when ||grad||_2 <= epsilon_rel * ||theta||_2 (0 = off)")
    ->capture_default_str();
  train->add_option("--history", o.lbfgs.history, "L-BFGS history size m")->capture_default_str();
  train->add_option("--past", o.lbfgs.past, "Objective-change test window (0 = off)");
  train->add_option("--delta", o.lbfgs.delta, "Objective-change tolerance for --past");
  train->add_option("--max-linesearch", o.lbfgs.max_linesearch, "Evaluations per line search")
    ->capture_default_str();
  train->add_option("--lower", o.lower, "Lower bound on every coordinate of theta (L-BFGS-B)");
  train->add_option("--upper", o.upper, "Upper bound on every coordinate of theta (L-BFGS-B)");
  train->add_option("--eval-timeout", o.eval_timeout, "Seconds one evaluation may take")
    ->capture_default_str();
  add_output_options(*train, o);
  train->add_option("--progress-interval", o.progress_interval, "Seconds between progress lines")
    ->capture_default_str();
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"shardopt: distributed L-BFGS over sharded data on the actor model"};
  app.require_subcommand(1);
  shardopt::apps::train_options train;
  add_train_command(app, train);
  shardopt::apps::eval_options eval;
  auto* eval_command = app.add_subcommand("eval", "Evaluate a saved model on a dataset");
  eval_command->add_option("--model-file", eval.model_file, "Model written by train --save")
    ->required();
  add_data_options(*eval_command, eval.data, false);
  eval_command->add_flag("--json", eval.json, "Print the result as JSON");
  shardopt::apps::node_options node;
  add_node_command(app, node);
  shardopt::apps::ps_task_options task;
  add_ps_task_command(app, task);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("train"))
    return train.mode == "ps" ? shardopt::apps::run_ps_train(train) : shardopt::apps::run_train(train);
  if (app.got_subcommand("ps-task"))
    return shardopt::apps::run_ps_task(task);
  if (app.got_subcommand("node"))
    return shardopt::apps::run_node(node);
  return shardopt::apps::run_eval(eval);
}
