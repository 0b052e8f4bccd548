#include "apps/commands/train/solver_checkpoints.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace shardopt::apps {

namespace {

std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

} // namespace

std::vector<std::pair<std::string, std::string>> run_settings(const train_options& o, solver_kind solver,
                                                                   const prepared_data& data, int shards) {
  const auto& l = o.lbfgs;
  std::vector<std::pair<std::string, std::string>> settings{
          {"--model", o.model},
          {"--solver", std::string{to_string(solver)}},
          {"the number of shards", std::to_string(shards)},
          {"--format", o.data.format},
          {"--label-column", std::to_string(o.data.label_column)},
          {"--header", o.data.header},
          {"--features", std::to_string(o.data.features)},
          {"the feature hashing", io::summary_of(data.hashing)},
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
  if (solver == solver_kind::owlqn || solver == solver_kind::newton_cg)  // Newton-CG: orthant-wise with --l1
    settings.emplace_back("--l1", exact(o.l1));
  if (o.no_bias)  // only when given: a checkpoint from before the option resumes as it did
    settings.emplace_back("--no-bias", "true");
  // Only when given too: a checkpoint from before the option (plain OWL-QN's) is continued with
  // shrinking, another path to the same optimum (the CHANGELOG says so).
  if ((solver == solver_kind::owlqn || (solver == solver_kind::newton_cg && o.l1 > 0)) && o.no_shrinking)
    settings.emplace_back("--no-shrinking", "true");
  if (solver == solver_kind::newton_cg) {
    settings.emplace_back("--newton-step", std::string{to_string(o.newton_step)});
    settings.emplace_back("--cg-tolerance", o.cg_tolerance == 0 ? std::string{"auto"} : exact(o.cg_tolerance));
    settings.emplace_back("--cg-pairs", o.preconditioner_pairs < 0 ? std::string{"auto"} : std::to_string(o.preconditioner_pairs));
    settings.emplace_back("--max-cg", std::to_string(o.max_cg));
  }
  return settings;
}

namespace {

constexpr const char* lbfgs_name = "lbfgs";
constexpr const char* newton_name = "newton-cg";

Eigen::VectorXd vector_of(const std::vector<double>& values) {
  return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
}

/// Reads a saved state's named numbers and single vectors; errors name the first missing one.
struct reader {
  const io::solver_checkpoint& saved;

  result<double> number(const char* name) const {
    if (auto value = saved.number(name))
      return *value;
    return fail_invalid(std::string{"it records no "} + name);
  }
  result<Eigen::VectorXd> one(const char* name) const {
    const auto* list = saved.list(name);
    if (!list || list->size() != 1)
      return fail_invalid(std::string{"it records no single vector "} + name);
    return list->front();
  }
  result<std::vector<Eigen::VectorXd>> pairs(const char* name) const {
    if (const auto* list = saved.list(name))
      return *list;
    return fail_invalid("it records no correction pairs");
  }
};

/// Whether a saved count is a whole number an int holds (checked before any cast).
bool count_fits(double value) {
  return value >= 0 && value <= std::numeric_limits<int>::max() && value == std::floor(value);
}

/// The fields both solvers' states share, read into `state`.
template <class State>
result<void> read_common(const reader& in, State& state) {
  auto iterations = in.number("iterations");
  auto evaluations = in.number("evaluations");
  auto seconds = in.number("seconds");
  auto f = in.number("f");
  auto theta = in.one("theta");
  auto grad = in.one("grad");
  auto history = in.one("f_history");
  auto s = in.pairs("s");
  auto y = in.pairs("y");
  for (const auto* missing : {&iterations, &evaluations, &seconds, &f})
    if (!*missing)
      return missing->error();
  if (!count_fits(*iterations) || !count_fits(*evaluations))
    return fail_invalid("it records impossible counts");
  for (const auto* missing : {&theta, &grad, &history})
    if (!*missing)
      return missing->error();
  if (!s || !y)
    return s ? y.error() : s.error();
  state.iterations = static_cast<int>(*iterations);
  state.evaluations = static_cast<int>(*evaluations);
  state.seconds = *seconds;
  state.f = *f;
  state.theta = std::move(*theta);
  state.grad = std::move(*grad);
  state.s = std::move(*s);
  state.y = std::move(*y);
  state.f_history.assign(history->data(), history->data() + history->size());
  return {};
}

template <class State>
io::solver_checkpoint common_checkpoint(const State& state, const char* solver) {
  io::solver_checkpoint out;
  out.solver = solver;
  out.iteration = state.iterations;
  out.numbers = {{"iterations", state.iterations},
                 {"evaluations", state.evaluations},
                 {"seconds", state.seconds},
                 {"f", state.f}};
  out.vectors = {{"theta", {state.theta}},
                 {"grad", {state.grad}},
                 {"s", state.s},
                 {"y", state.y},
                 {"f_history", {vector_of(state.f_history)}}};
  return out;
}

} // namespace

io::solver_checkpoint to_checkpoint(const optimizer::lbfgs_state& state) {
  return common_checkpoint(state, lbfgs_name);
}

io::solver_checkpoint to_checkpoint(const optimizer::newton_state& state) {
  auto out = common_checkpoint(state, newton_name);
  out.numbers.emplace_back("products", state.products);
  out.numbers.emplace_back("radius", state.radius);  // the trust region's; 0 for the line search
  return out;
}

result<optimizer::lbfgs_state> lbfgs_state_of(const io::solver_checkpoint& saved) {
  optimizer::lbfgs_state state;
  if (auto ok = read_common(reader{saved}, state); !ok)
    return ok.error();
  return state;
}

result<optimizer::newton_state> newton_state_of(const io::solver_checkpoint& saved) {
  optimizer::newton_state state;
  const reader in{saved};
  if (auto ok = read_common(in, state); !ok)
    return ok.error();
  auto products = in.number("products");
  auto radius = in.number("radius");
  if (!products)
    return products.error();
  if (!radius)
    return radius.error();
  if (!count_fits(*products))
    return fail_invalid("it records an impossible count of products");
  state.products = static_cast<int>(*products);
  state.radius = *radius;
  return state;
}

solver_checkpointer::solver_checkpointer(const checkpoint_options& options, solver_kind solver,
                                         std::vector<std::pair<std::string, std::string>> settings)
  : options_(options), solver_(solver), settings_(std::move(settings)), due_(options.steps, options.secs) {}

result<solver_checkpointer> solver_checkpointer::open(const checkpoint_options& options, solver_kind solver,
                                                      std::vector<std::pair<std::string, std::string>> settings,
                                                      bool quiet, std::int64_t sparse_entries) {
  solver_checkpointer out{options, solver, std::move(settings)};
  const bool newton = solver == solver_kind::newton_cg;
  const io::checkpoint_limits limits{out.settings_, sparse_entries};
  auto found = io::newest_readable_solver_checkpoint(options.dir, newton ? newton_name : lbfgs_name, limits);
  if (!found)
    return found.error().with_context("--checkpoint-dir");
  if (!quiet)
    for (const auto& warning : found->warnings)
      std::fprintf(stderr, "shardopt: warning: %s\n", warning.c_str());
  if (!found->state) {
    // The same command may have saved the other solver's states before `--solver auto` chose
    // this one: starting afresh beside them would silently throw that run away.
    auto other = io::newest_readable_solver_checkpoint(options.dir, newton ? lbfgs_name : newton_name, limits);
    if (other && other->state) {
      // OWL-QN's states are L-BFGS's: the run's settings name which of the two saved it.
      std::string theirs = newton ? lbfgs_name : newton_name;
      for (const auto& [name, value] : other->state->settings)
        if (name == "--solver")
          theirs = value;
      return fail_invalid("--checkpoint-dir: " + other->path + " is a checkpoint of --solver " + theirs
                          + ", this run uses --solver " + std::string{to_string(solver)} + "; give --solver "
                          + theirs + " to resume it, or another --checkpoint-dir to start afresh");
    }
    return out;
  }
  if (auto same = io::check_same_run(*found->state, out.settings_, found->path); !same)
    return fail_invalid(same.error().message() + "; delete it or give another --checkpoint-dir to start afresh");
  if (newton) {
    auto state = newton_state_of(*found->state);
    if (!state)
      return state.error().with_context(found->path + ": not a Newton-CG checkpoint");
    out.newton_found_ = std::move(*state);
  } else {
    auto state = lbfgs_state_of(*found->state);
    if (!state)
      return state.error().with_context(found->path + ": not an L-BFGS checkpoint");
    out.lbfgs_found_ = std::move(*state);
  }
  out.due_.mark(out.resumed_iteration(), found->state->number("seconds").value_or(0));
  out.resumed_from_ = found->path;
  return out;
}

int solver_checkpointer::resumed_iteration() const {
  return lbfgs_found_ ? lbfgs_found_->iterations : newton_found_ ? newton_found_->iterations : 0;
}

result<void> solver_checkpointer::offer(io::solver_checkpoint saved, int iterations, double seconds) {
  due_.mark(iterations, seconds);
  saved.settings = settings_;
  auto written = io::save_solver_checkpoint(options_.dir, saved, options_.keep);
  if (!written)
    return written.error().with_context("checkpoint");
  last_written_ = *written;
  return {};
}

template <class State>
optimizer::solver_session<State> solver_checkpointer::session_of(const std::optional<State>& found) {
  optimizer::solver_session<State> session;
  session.resume = found ? &*found : nullptr;
  if (!due_.enabled())
    return session;
  session.due = [this](int iterations, double seconds) { return due_.due(iterations, seconds); };
  session.on_state = [this](const State& state, bool last) -> result<void> {
    if (!last && !due_.due(state.iterations, state.seconds))
      return {};  // converted only when saved
    return offer(to_checkpoint(state), state.iterations, state.seconds);
  };
  return session;
}

optimizer::lbfgs_session solver_checkpointer::lbfgs_session() {
  return session_of(lbfgs_found_);
}

optimizer::newton_session solver_checkpointer::newton_session() {
  return session_of(newton_found_);
}

} // namespace shardopt::apps
