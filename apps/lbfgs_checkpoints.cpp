#include "apps/lbfgs_checkpoints.hpp"

#include <cstdio>

namespace shardopt::apps {

namespace {

std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

} // namespace

std::vector<std::pair<std::string, std::string>> lbfgs_run_settings(const train_options& o,
                                                                   const prepared_data& data, int shards) {
  const auto& l = o.lbfgs;
  return {{"--model", o.model},
          {"the number of shards", std::to_string(shards)},
          {"--format", o.data.format},
          {"--label-column", std::to_string(o.data.label_column)},
          {"--header", o.data.header},
          {"--features", std::to_string(o.data.features)},
          {"the model", model::describe(data.shape)},
          {"--seed", std::to_string(o.ps.seed)},
          {"--lambda", exact(o.lambda)},
          {"the training data", data.train_source},
          {"the number of examples", std::to_string(data.train_rows)},
          {"the number of features", std::to_string(data.shape.features)},
          {"the number of outputs", std::to_string(data.shape.outputs)},
          {"--scale", o.data.scale},
          {"--standardize", o.data.standardize ? "true" : "false"},
          {"--history", std::to_string(l.history)},
          {"--epsilon", exact(l.epsilon)},
          {"--epsilon-rel", exact(l.epsilon_rel)},
          {"--past", std::to_string(l.past)},
          {"--delta", exact(l.delta)},
          {"--max-linesearch", std::to_string(l.max_linesearch)}};
}

lbfgs_checkpointer::lbfgs_checkpointer(const checkpoint_options& options,
                                       std::vector<std::pair<std::string, std::string>> settings, bool quiet)
  : options_(options), settings_(std::move(settings)), quiet_(quiet), due_(options.steps, options.secs) {}

result<lbfgs_checkpointer> lbfgs_checkpointer::open(const checkpoint_options& options,
                                                    std::vector<std::pair<std::string, std::string>> settings,
                                                    bool quiet) {
  lbfgs_checkpointer out{options, std::move(settings), quiet};
  auto found = io::newest_readable_lbfgs_checkpoint(options.dir);
  if (!found)
    return found.error().with_context("--checkpoint-dir");
  if (!quiet)
    for (const auto& warning : found->warnings)
      std::fprintf(stderr, "shardopt: warning: %s\n", warning.c_str());
  if (!found->state)
    return out;
  if (auto same = io::check_same_run(*found->state, out.settings_, found->path); !same)
    return fail_invalid(same.error().message() +
                "; delete it or give another --checkpoint-dir to start afresh");
  out.due_.mark(found->state->state.iterations, found->state->state.seconds);
  out.found_ = std::move(found->state);
  out.resumed_from_ = found->path;
  return out;
}

optimizer::lbfgs_session lbfgs_checkpointer::session() {
  optimizer::lbfgs_session session;
  session.resume = resume();
  if (!due_.enabled())
    return session;
  session.on_state = [this](const optimizer::lbfgs_state& state, bool last) -> result<void> {
    if (!last && !due_.due(state.iterations, state.seconds))
      return {};
    due_.mark(state.iterations, state.seconds);
    io::lbfgs_checkpoint saved;
    saved.settings = settings_;
    saved.state = state;
    auto written = io::save_lbfgs_checkpoint(options_.dir, saved, options_.keep);
    if (!written)
      return written.error().with_context("checkpoint");
    last_written_ = *written;
    return {};
  };
  return session;
}

} // namespace shardopt::apps
