#include "apps/solver_checkpoints.hpp"

#include <cstdio>

namespace shardopt::apps {

namespace {

std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

} // namespace

std::vector<std::pair<std::string, std::string>> run_settings(const train_options& o,
                                                                   const prepared_data& data, int shards) {
  const auto& l = o.lbfgs;
  return {{"--model", o.model},
          {"--solver", std::string{to_string(o.solver)}},
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

namespace {

constexpr const char* lbfgs_name = "lbfgs";

} // namespace

io::solver_checkpoint to_checkpoint(const optimizer::lbfgs_state& state) {
  io::solver_checkpoint out;
  out.solver = lbfgs_name;
  out.iteration = state.iterations;
  out.numbers = {{"iterations", state.iterations},
                 {"evaluations", state.evaluations},
                 {"seconds", state.seconds},
                 {"f", state.f}};
  out.vectors = {{"theta", {state.theta}},
                 {"grad", {state.grad}},
                 {"s", state.s},
                 {"y", state.y},
                 {"f_history", {Eigen::Map<const Eigen::VectorXd>(state.f_history.data(),
                                                                  static_cast<Eigen::Index>(state.f_history.size()))}}};
  return out;
}

result<optimizer::lbfgs_state> lbfgs_state_of(const io::solver_checkpoint& saved) {
  optimizer::lbfgs_state state;
  const auto number = [&](const char* name) -> result<double> {
    if (auto value = saved.number(name))
      return *value;
    return fail_invalid(std::string{"it records no "} + name);
  };
  const auto one = [&](const char* name) -> result<Eigen::VectorXd> {
    const auto* list = saved.list(name);
    if (!list || list->size() != 1)
      return fail_invalid(std::string{"it records no single vector "} + name);
    return list->front();
  };
  auto iterations = number("iterations");
  auto evaluations = number("evaluations");
  auto seconds = number("seconds");
  auto f = number("f");
  auto theta = one("theta");
  auto grad = one("grad");
  auto history = one("f_history");
  for (const auto* missing : {&iterations, &evaluations, &seconds, &f})
    if (!*missing)
      return missing->error();
  for (const auto* missing : {&theta, &grad, &history})
    if (!*missing)
      return missing->error();
  const auto* s = saved.list("s");
  const auto* y = saved.list("y");
  if (!s || !y)
    return fail_invalid("it records no correction pairs");
  state.iterations = static_cast<int>(*iterations);
  state.evaluations = static_cast<int>(*evaluations);
  state.seconds = *seconds;
  state.f = *f;
  state.theta = std::move(*theta);
  state.grad = std::move(*grad);
  state.s = *s;
  state.y = *y;
  state.f_history.assign(history->data(), history->data() + history->size());
  return state;
}

lbfgs_checkpointer::lbfgs_checkpointer(const checkpoint_options& options,
                                       std::vector<std::pair<std::string, std::string>> settings)
  : options_(options), settings_(std::move(settings)), due_(options.steps, options.secs) {}

result<lbfgs_checkpointer> lbfgs_checkpointer::open(const checkpoint_options& options,
                                                    std::vector<std::pair<std::string, std::string>> settings,
                                                    bool quiet) {
  lbfgs_checkpointer out{options, std::move(settings)};
  auto found = io::newest_readable_solver_checkpoint(options.dir, lbfgs_name);
  if (!found)
    return found.error().with_context("--checkpoint-dir");
  if (!quiet)
    for (const auto& warning : found->warnings)
      std::fprintf(stderr, "shardopt: warning: %s\n", warning.c_str());
  if (!found->state)
    return out;
  if (auto same = io::check_same_run(*found->state, out.settings_, found->path); !same)
    return fail_invalid(same.error().message() + "; delete it or give another --checkpoint-dir to start afresh");
  auto state = lbfgs_state_of(*found->state);
  if (!state)
    return state.error().with_context(found->path + ": not an L-BFGS checkpoint");
  out.due_.mark(state->iterations, state->seconds);
  out.found_ = std::move(*state);
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
    auto saved = to_checkpoint(state);
    saved.settings = settings_;
    auto written = io::save_solver_checkpoint(options_.dir, saved, options_.keep);
    if (!written)
      return written.error().with_context("checkpoint");
    last_written_ = *written;
    return {};
  };
  return session;
}

} // namespace shardopt::apps
