#include "apps/options/cli.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace shardopt::apps {

namespace {

/// The name of `value` among `choices` (the first name when none has it): what --help shows as a
/// choice option's default, the value its target holds before parsing.
template <class E>
std::string name_of(const E& value, const std::vector<std::pair<std::string, E>>& choices) {
  for (const auto& [text, candidate] : choices)
    if (candidate == value)
      return text;
  return choices.front().first;
}

/// A number of 0 or more, said in those words (CLI::NonNegativeNumber names its range's bound,
/// a number of 309 digits).
const CLI::Validator non_negative{[](std::string& text) {
                                    double value = 0;
                                    if (!CLI::detail::lexical_cast(text, value))
                                      return std::string{"must be a number"};
                                    return value >= 0 ? std::string{} : std::string{"must be 0 or more"};
                                  },
                                  "NUMBER >= 0"};

/// An option that takes one of `choices` by name (shown as the default: the name of the value
/// `target` holds before parsing) and sets `target` to its value; the given name stays the
/// option's result (configuration files round-trip it).
template <class E>
void add_choice(CLI::App& command, const std::string& name, E& target, const std::string& description,
                std::vector<std::pair<std::string, E>> choices) {
  std::vector<std::string> names;
  for (const auto& [text, value] : choices)
    names.push_back(text);
  command
    .add_option_function<std::string>(
      name,
      [&target, choices](const std::string& text) {
        for (const auto& [known, value] : choices)
          if (known == text)
            target = value;
      },
      description)
    ->check(CLI::IsMember(names))
    ->default_str(name_of(target, choices));
}

/// An option whose value is a number or `auto`, which sets `target` to `automatic` (a value no
/// number in `range` takes); its results keep what was given, as every option's do.
template <class T>
void add_number_or_auto(CLI::App& command, const std::string& name, T& target, T automatic,
                        const std::string& description, CLI::Range range) {
  command
    .add_option_function<std::string>(
      name,
      [&target, automatic](const std::string& text) {
        if (text == "auto") {
          target = automatic;
          return;
        }
        T value{};
        CLI::detail::lexical_cast(text, value);
        target = value;
      },
      description)
    ->check(CLI::IsMember({"auto"}) | (CLI::TypeValidator<T>() & range))
    ->type_name(std::is_integral_v<T> ? "N|auto" : "X|auto")
    ->default_str("auto");
}

void add_data_options(CLI::App& command, data_options& data, bool training) {
  command.add_option("--data", data.data,
                     "Dataset: a CSV, TSV, LIBSVM or VW file, a binary dataset, a MNIST-layout directory, or "
                     "'fashion-mnist'")
    ->capture_default_str();
  command.add_option("--format", data.format,
                     "Input format: auto, csv, tsv (tab-separated), libsvm, idx, vw (Vowpal Wabbit text)")
    ->capture_default_str();
  command.add_option("--label-column", data.label_column,
                     "CSV: 0-based label column; negative counts from the end (-1 = last)")
    ->capture_default_str();
  command.add_option("--header", data.header, "CSV header row: auto, yes, no")->capture_default_str();
  command.add_option("--features", data.features, "LIBSVM: number of features (0 = largest index)");
  command.add_option("--limit", data.limit, "Use only the first N examples (0 = all)");
  const char* hashing = "Feature hashing (VW and CSV with string columns)";
  command.add_option("--hash-bits", data.hash_bits,
                     "Hash raw features into 2^B columns (default 18 for VW input and --categorical/--text)")
    ->check(CLI::Range(1, io::max_hash_bits))->group(hashing);
  command.add_option("--pairs", data.pairs,
                     "VW: cross namespaces by their first letters, as VW's -q (ab,cc)")
    ->delimiter(',')->group(hashing);
  command.add_option("--categorical", data.categorical,
                     "CSV: columns (header names or 0-based indices) hashed as column=value categories")
    ->delimiter(',')->group(hashing);
  command.add_option("--text", data.text, "CSV: columns of free text whose words are hashed")
    ->delimiter(',')->group(hashing);
  command.add_flag("--word-pairs", data.word_pairs, "CSV --text: hash adjacent word pairs too")->group(hashing);
  command.add_option("--max-decompressed-gib", data.max_decompressed_gib,
                     "gzip input: refuse a file that decompresses to more than this many GiB (0: no limit)")
    ->capture_default_str();
  if (training) {
    command.add_option("--test", data.test,
                       "Test set file (default: the dataset's own test split, if it has one)");
    command.add_option("--test-limit", data.test_limit, "Use only the first N test examples");
    command.add_option("--scale", data.scale,
                       "Feature scaling: auto (IDX pixels / 255) or none")->capture_default_str();
    command.add_flag("--standardize", data.standardize,
                     "Standardise features with training-set mean and deviation");
    command.add_flag("--cache", data.cache,
                     "Read CSV and LIBSVM files through a binary cache, made on first use next to the "
                     "file (or under --cache-dir) and again when the file changes");
    command.add_option("--cache-dir", data.cache_dir, "--cache: the directory caches go to");
  }
}

void add_tls_options(CLI::App& command, actors::tls_options& tls) {
  command.add_option("--tls-cert", tls.certificate, "Mutual TLS: this process's PEM certificate");
  command.add_option("--tls-key", tls.key, "Mutual TLS: its PEM private key");
  command.add_option("--tls-ca", tls.ca,
                     "Mutual TLS: PEM certificate(s) of the CA(s) that sign the peers this process "
                     "accepts (one CA per role: see scripts/make-certs)");
}

void add_metrics_options(CLI::App& command, metrics_options& metrics) {
  const char* group = "Monitoring";
  command.add_option("--metrics-port", metrics.port,
                     "Serve Prometheus metrics at /metrics and the probes /healthz and /readyz on "
                     "this port (0: any free port; default: no endpoint)")
    ->check(CLI::Range(0, 65535))->group(group);
  command.add_option("--metrics-bind", metrics.bind, "IP address the metrics endpoint listens on")
    ->capture_default_str()->group(group);
}

void add_status_command(CLI::App& app, status_options& o) {
  auto* status = app.add_subcommand("status", "Ask running nodes what they hold, serve and allow");
  status->add_option("--nodes", o.nodes, "Nodes to ask: host:port,host:port")->required();
  add_tls_options(*status, o.tls);
  status->add_flag("--json", o.json, "One JSON object per node, one per line");
  status->add_option("--timeout", o.timeout, "Seconds to wait for each node's answer")
    ->capture_default_str()->check(CLI::PositiveNumber);
}

void add_node_command(CLI::App& app, node_options& o) {
  auto* node = app.add_subcommand("node", "Serve shard actors to drivers on this host");
  node->add_option("--bind", o.bind, "Address to listen on")->capture_default_str();
  node->add_option("--port", o.port, "Port to listen on (0: any free port)")->capture_default_str();
  node->add_option("--threads", o.threads,
                   "Worker threads announced to drivers (default: hardware threads)");
  add_tls_options(*node, o.tls);
  node->add_flag("--insecure", o.insecure, "Allow listening off loopback without TLS");
  const char* limits = "Limits";
  node->add_option("--data-root", o.limits.data_root,
                   "Node-local data: the directory drivers may read from (default: none, node-local "
                   "requests are refused)")->group(limits);
  node->add_option("--max-shards", o.limits.shards, "Shards this node holds at most")
    ->capture_default_str()->group(limits);
  node->add_option("--max-shards-per-driver", o.limits.shards_per_driver,
                   "Shards one driver may hold here")->capture_default_str()->group(limits);
  node->add_option("--max-gib", o.max_gib,
                   "GiB of shard data, with the buffers its shards' passes and requests need, this node holds at most "
                   "(0: half of its memory)")
    ->capture_default_str()->group(limits);
  node->add_option("--max-gib-per-driver", o.max_gib_per_driver,
                   "GiB of shard data and buffers one driver may hold here (0: as --max-gib)")
    ->capture_default_str()->group(limits);
  node->add_option("--max-dimension", o.limits.dimension, "Largest model, in parameters")
    ->capture_default_str()->group(limits);
  node->add_option("--staging-timeout", o.staging_timeout,
                   "Seconds a shard's data arriving in pieces may go without a piece before it is "
                   "dropped")->capture_default_str()->group(limits);
  add_metrics_options(*node, o.metrics);
  node->add_option("--drain-seconds", o.drain_seconds,
                   "On SIGTERM, drain for up to this long first: refuse new drivers, fail /readyz, "
                   "and serve the drivers it holds until they finish (0: stop at once)")
    ->capture_default_str()->check(CLI::Range(0.0, 86400.0))->group("Monitoring");
}

void add_model_options(CLI::App& command, train_options& o) {
  command.add_option("--model", o.model, "linear, logistic, softmax, svm, or mlp (a multilayer perceptron)")
    ->capture_default_str();
  command.add_option("--hidden", o.hidden, "mlp: hidden layer widths, e.g. 100 or 256,128 (default 100)");
  command.add_option("--activation", o.activation, "mlp: activation of the hidden layers, relu or tanh")
    ->capture_default_str();
  command.add_option("--loss", o.loss,
                     "mlp: cross-entropy (softmax output, class labels) or squared (one linear output, "
                     "real targets); default cross-entropy")->capture_default_str();
  command.add_option("--seed", o.ps.seed,
                     "Seed of a network's initial weights and of the PS mode's minibatch order")
    ->capture_default_str();
  command.add_option("--lambda", o.lambda, "L2 regularisation of the weights")->capture_default_str();
  command.add_option("--classes", o.classes, "Number of classes (default: from the labels)");
}

void add_output_options(CLI::App& command, train_options& o) {
  command.add_option("--metrics", o.metrics, "Write one JSON line per iteration (L-BFGS) or log step (PS)");
  command.add_option("--save", o.save, "Save the trained model to this file");
  command.add_flag("--json", o.json, "Print a final JSON summary on stdout");
  command.add_flag("--quiet", o.quiet, "No progress lines on stderr");
}

/// Checkpoints, shared by both modes of `train` and by `ps-task`.
void add_checkpoint_options(CLI::App& command, checkpoint_options& o) {
  const char* group = "Checkpoints";
  command.add_option("--checkpoint-dir", o.dir,
                     "Checkpoint here, and resume from the newest readable checkpoint found here at "
                     "start (L-BFGS: theta and its memory; PS: theta and the update rule's state)")
    ->group(group);
  command.add_option("--checkpoint-steps", o.steps,
                     "Checkpoint every N steps (PS) or iterations (L-BFGS) (0 = off)")
    ->capture_default_str()->group(group);
  command.add_option("--checkpoint-secs", o.secs, "Checkpoint every S seconds (0 = off)")
    ->capture_default_str()->group(group);
  command.add_option("--keep-checkpoints", o.keep, "Keep the newest K checkpoints (0 = all)")
    ->capture_default_str()->group(group);
}

/// The parameter-server options, shared by `train --mode ps` and `ps-task`.
void add_ps_options(CLI::App& command, ps_options& o) {
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

void add_ps_task_command(CLI::App& app, ps_task_options& o) {
  auto* task = app.add_subcommand("ps-task", "Run one task of a multi-process parameter-server job");
  task->add_option("--ps_hosts", o.ps_hosts, "Parameter-server tasks: host:port,host:port")->required();
  task->add_option("--worker_hosts", o.worker_hosts,
                   "Worker tasks: host:port,... (their count is the number of workers; worker 0 is the chief)")
    ->required();
  task->add_option("--job_name", o.job_name, "ps or worker")->required();
  task->add_option("--task_index", o.task_index, "This task's index in its host list")->required();
  task->add_option("--bind", o.bind, "ps: address to listen on (default: its host in --ps_hosts)");
  task->add_option("--job-token", o.job_token,
                   "A secret shared by every task of this job (e.g. `openssl rand -hex 16`): a PS "
                   "serves only requests that carry it (default: derived from --ps_hosts and "
                   "--worker_hosts)");
  task->add_flag("--insecure", o.insecure, "ps: allow listening off loopback without TLS");
  add_data_options(*task, o.train.data, true);
  add_model_options(*task, o.train);
  add_ps_options(*task, o.train.ps);
  add_checkpoint_options(*task, o.train.checkpoints);
  add_tls_options(*task, o.train.tls);
  task->add_option("--threads", o.train.threads, "Actor scheduler threads (default: hardware threads)");
  add_output_options(*task, o.train);
  add_metrics_options(*task, o.train.serve_metrics);
}

void add_train_command(CLI::App& app, train_options& o) {
  auto* train = app.add_subcommand("train", "Train a model: L-BFGS over shard actors, or parameter-server SGD");
  add_data_options(*train, o.data, true);
  add_model_options(*train, o);
  add_choice(*train, "--mode", o.mode, "lbfgs (sharded L-BFGS) or ps (parameter servers and workers)",
             {{"lbfgs", train_mode::lbfgs}, {"ps", train_mode::ps}});
  train->add_option("--workers", o.ps.workers, "--mode ps: worker actors (default: hardware threads)")
    ->group("Parameter-server mode");
  train->add_option("--ps", o.ps.servers, "--mode ps: parameter-server actors")->capture_default_str()
    ->group("Parameter-server mode");
  add_ps_options(*train, o.ps);
  add_checkpoint_options(*train, o.checkpoints);
  train->add_option("--shards", o.shards,
                    "Shard actors, each of whole blocks of rows (default: one per hardware "
                    "thread, or the nodes' threads)");
  train->add_option("--nodes", o.nodes,
                    "Run the shards on node processes: host:port,host:port (see `shardopt node`)");
  add_choice(*train, "--data-placement", o.placement,
             "With --nodes: 'shipped' (the driver sends each shard's rows) or 'node-local' (each node "
             "reads its own part of --data, a path every node can see)",
             {{"shipped", data_placement::shipped}, {"node-local", data_placement::node_local}});
  train->add_option("--nodes-file", o.nodes_file,
                    "Nodes listed in a file, one host:port per line (with --nodes or alone); read "
                    "again when it changes; nodes new to it join the run once they answer");
  train->add_option("--nodes-dns", o.nodes_dns,
                    "Nodes at every IPv4 address a DNS name has, as NAME:PORT (a Kubernetes headless "
                    "service; with --nodes or alone); resolved again every 5 s, and new addresses join "
                    "the run once they answer");
  add_choice(*train, "--topology", o.topology,
             "With --nodes: 'star' (the driver asks every node), 'tree' (a reduction tree among the "
             "nodes; the driver asks the root) or 'auto' (a tree from 3 nodes up; with TLS a star)",
             {{"star", actors::topology::star},
              {"tree", actors::topology::tree},
              {"auto", actors::topology::automatic}});
  train->add_option("--fan-in", o.fan_in,
                    "With --topology tree: children per tree node (default 0: 2 for models whose "
                    "17 x dimension bytes reach 1 MiB, else the fewest that keep the tree 2 levels deep)")
    ->check(CLI::Range(0, 64));
  add_tls_options(*train, o.tls);
  train->add_option("--threads", o.threads, "Actor scheduler threads (default: hardware threads)");
  // Not a model option: ps-task has no full-batch solver to train it.
  train->add_option("--l1", o.l1,
                    "L1 regularisation of the weights (--mode lbfgs), trained by OWL-QN, or by orthant-wise "
                    "Newton-CG with --solver newton-cg; with --lambda, the elastic net")->capture_default_str()->check(non_negative);
  train->add_flag("--no-bias", o.no_bias,
                  "--mode lbfgs, linear models: fit no biases (they stay 0), as LIBLINEAR without -B "
                  "and scikit-learn's fit_intercept=False");
  train->add_flag("--no-shrinking", o.no_shrinking,
                  "--l1 with OWL-QN or Newton-CG: every evaluation and product over every column (plain "
                  "OWL-QN, plain orthant-wise Newton-CG). By default both run in rounds on the working "
                  "set's columns (the free weights, as LIBLINEAR shrinks) with linear models, local or on "
                  "nodes (each round the nodes restrict the shards they hold to its columns)");
  add_choice(*train, "--solver", o.solver,
             "--mode lbfgs: auto (default: owlqn with --l1, else newton-cg for the linear models "
             "without bounds, lbfgs for networks and bounds), lbfgs (L-BFGS, L-BFGS-B with bounds; "
             "OWL-QN with --l1), newton-cg (Newton-CG with a line search, LIBLINEAR "
             "2.50's method, with Hessian-vector products on the shards; orthant-wise with --l1; linear "
             "models) or owlqn (orthant-wise L-BFGS for --l1)",
             {{"auto", solver_kind::automatic}, {"lbfgs", solver_kind::lbfgs},
              {"newton-cg", solver_kind::newton_cg}, {"owlqn", solver_kind::owlqn}});
  add_choice(*train, "--newton-step", o.newton_step,
             "newton-cg: auto (line-search for sparse data, trust-region for dense), line-search "
             "(LIBLINEAR 2.50's: backtracking on the shards' line values, CG preconditioned by the "
             "Hessian's diagonal) or trust-region (TRON's)",
             {{"auto", step_kind::automatic}, {"line-search", step_kind::line_search},
              {"trust-region", step_kind::trust_region}});
  add_number_or_auto(*train, "--cg-tolerance", o.cg_tolerance, 0.0,
                     "newton-cg: inner CG's tolerance in (0, 1): with the line search the forcing term's "
                     "bound (LIBLINEAR's eps_cg; auto 0.5), with the trust region the residual's fraction "
                     "of ||grad|| (auto 0.1)",
                     CLI::Range(1e-12, 0.999999));
  add_number_or_auto(*train, "--cg-pairs", o.preconditioner_pairs, -1,
                     "newton-cg: pairs of the previous CG solve preconditioning its CG (L-BFGS; 0 = none "
                     "beyond the line search's diagonal; auto = 20 with the trust region, 0 with the line search)",
                     CLI::Range(0, 1000));
  train->add_option("--max-cg", o.max_cg, "newton-cg: Hessian-vector products per step (0 = the dimension)")
    ->capture_default_str()->check(non_negative);
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
  add_metrics_options(*train, o.serve_metrics);
}


void add_experiment_commands(CLI::App& app, command_line& o) {
  auto* run = app.add_subcommand("run", "Run `train` (or `ps-task`) with the options of a TOML file; "
                                        "flags after the file override it");
  run->add_option("config", o.run_file, "TOML file: one key per option, e.g. lambda = 1e-4")->required();
  run->allow_extras();
  auto* sweep = app.add_subcommand("sweep", "Run the variations of a base TOML config listed in its [sweep] table");
  sweep->add_option("config", o.sweep.file, "TOML file with a [sweep] table (grid and/or list)")->required();
  sweep->add_option("--out", o.sweep.out, "Results folder (default: results/<config name>)");
  sweep->add_option("--repeat", o.sweep.repeat, "Runs per variation, with seeds seed, seed+1, ... (default: the file's)");
  sweep->add_option("--parallel", o.sweep.parallel, "Runs at a time")->capture_default_str();
  sweep->add_flag("--dry-run", o.sweep.dry_run, "Print the planned runs and exit");
  auto* report = app.add_subcommand("report", "Write a self-contained HTML report of sweep results");
  report->add_option("results", o.report.results, "Folder with results.jsonl files (searched recursively)")->required();
  report->add_option("-o,--output", o.report.output, "HTML file to write")->capture_default_str();
}

void add_generate_command(CLI::App& app, generate_options& o) {
  auto* generate = app.add_subcommand("generate", "Write a synthetic LIBSVM dataset with a planted model (seeded)");
  generate->add_option("-o,--output", o.output, "LIBSVM file to write")->required();
  generate->add_option("--model", o.model, "Labels: logistic (+1/-1), softmax (classes) or linear (real)")
    ->capture_default_str()->check(CLI::IsMember({"linear", "logistic", "softmax"}));
  generate->add_option("--rows", o.spec.rows, "Examples")->capture_default_str();
  generate->add_option("--features", o.spec.features, "Features (indices 1..features)")->capture_default_str();
  generate->add_option("--nonzeros", o.spec.nonzeros, "Non-zero features per row (at most --features)")
    ->capture_default_str()->each([&o](const std::string&) { o.nonzeros_given = true; });
  generate->add_option("--classes", o.spec.classes, "softmax: classes")->capture_default_str();
  generate->add_option("--signal", o.spec.signal, "Scale of the planted weights")->capture_default_str();
  generate->add_option("--noise", o.spec.noise, "linear: standard deviation of the label noise")
    ->capture_default_str();
  generate->add_option("--seed", o.spec.seed, "Seed: the same seed writes the same file")->capture_default_str();
  generate->add_flag("-q,--quiet", o.quiet, "No summary line");
}

void add_convert_command(CLI::App& app, convert_options& o) {
  auto* convert = app.add_subcommand("convert", "Write a dataset as a binary file that --data maps instead of parsing");
  add_data_options(*convert, o.data, false);
  convert->add_option("-o,--output", o.output, "Binary dataset to write")->required();
  convert->add_flag("-q,--quiet", o.quiet, "No summary line");
}

} // namespace

void define_commands(CLI::App& app, command_line& o) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_train_command(app, o.train);
  auto* eval_command = app.add_subcommand("eval", "Evaluate a saved model on a dataset");
  eval_command->add_option("--model-file", o.eval.model_file, "Model written by train --save")->required();
  add_data_options(*eval_command, o.eval.data, false);
  eval_command->add_flag("--json", o.eval.json, "Print the result as JSON");
  eval_command->add_option("--predictions", o.eval.predictions,
                           "Write each row's prediction and class probabilities (SVM: scores) to this CSV file");
  add_node_command(app, o.node);
  add_status_command(app, o.status);
  add_ps_task_command(app, o.task);
  add_experiment_commands(app, o);
  add_generate_command(app, o.generate);
  add_convert_command(app, o.convert);
}

reusable_parser::reusable_parser() {
  define_commands(app_, values_);
  defaults_ = values_;
}

void reusable_parser::parse(const std::vector<std::string>& args) {
  values_ = defaults_;  // CLI::App::parse clears its own state (counts, subcommands) first
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app_.parse(reversed);
}

reusable_parser& thread_parser() {
  thread_local reusable_parser parser;
  return parser;
}

} // namespace shardopt::apps
