// shardopt: the command-line entry point. Parses options with CLI11 and hands them to the commands.

#include "apps/eval.hpp"
#include "apps/node_command.hpp"
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

void add_train_command(CLI::App& app, shardopt::apps::train_options& o) {
  auto* train = app.add_subcommand("train", "Train a model with L-BFGS over local shard actors");
  add_data_options(*train, o.data, true);
  train->add_option("--model", o.model, "linear, logistic, softmax or svm")->capture_default_str();
  train->add_option("--lambda", o.lambda, "L2 regularisation of the weights")->capture_default_str();
  train->add_option("--classes", o.classes, "Number of classes (default: from the labels)");
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
  train->add_option("--metrics", o.metrics, "Write one JSON line per iteration to this file");
  train->add_option("--save", o.save, "Save the trained model to this file");
  train->add_flag("--json", o.json, "Print a final JSON summary on stdout");
  train->add_flag("--quiet", o.quiet, "No progress lines on stderr");
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
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("train"))
    return shardopt::apps::run_train(train);
  if (app.got_subcommand("node"))
    return shardopt::apps::run_node(node);
  return shardopt::apps::run_eval(eval);
}
