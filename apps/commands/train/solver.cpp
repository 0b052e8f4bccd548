#include "apps/commands/train/solver.hpp"

#include <algorithm>

namespace shardopt::apps {

result<solver_plan> plan_solver(const train_options& options, const model::model_shape& architecture) {
  solver_plan plan;
  plan.kind = options.solver;
  plan.lbfgs = options.lbfgs;
  plan.shrinking.enabled = !options.no_shrinking;
  const bool bounded = options.lower || options.upper;
  const bool l1 = options.l1 > 0;
  // --l1: OWL-QN (auto, lbfgs), or orthant-wise Newton-CG by name. OWL-QN stays the default: it
  // reaches LIBLINEAR -s 6's objective sooner on the real sets of docs/benchmarks.md.
  if (l1 && (plan.kind == solver_kind::automatic || plan.kind == solver_kind::lbfgs))
    plan.kind = solver_kind::owlqn;
  if (plan.kind == solver_kind::automatic)
    plan.kind = architecture.is_network() || bounded ? solver_kind::lbfgs : solver_kind::newton_cg;
  if (plan.kind == solver_kind::owlqn && !l1)
    return fail_invalid("--solver owlqn trains an L1 penalty: give --l1 (without it, --solver lbfgs)");
  if (l1 && bounded)
    return fail_invalid("--l1 does not take --lower/--upper");
  if (l1 && plan.kind == solver_kind::newton_cg) {
    if (options.newton_step == step_kind::trust_region)
      return fail_invalid("--l1 with --solver newton-cg takes --newton-step line-search (or auto), not "
                          "trust-region: the projected step needs a line search");
    if (options.preconditioner_pairs > 0)
      return fail_invalid("--l1 with --solver newton-cg takes no --cg-pairs (its free set changes between steps)");
  }
  if (options.no_bias && architecture.is_network())
    return fail_invalid("--no-bias takes the linear models (linear, logistic, softmax, svm): a network's "
                        "hidden layers keep their biases");
  if (options.no_bias && ((options.lower && *options.lower > 0) || (options.upper && *options.upper < 0)))
    return fail_invalid("--no-bias holds the biases at 0, outside --lower/--upper (the bounds apply to every "
                        "entry of theta)");
  if (plan.kind == solver_kind::newton_cg) {
    if (architecture.is_network())
      return fail_invalid("--solver newton-cg takes the linear models (linear, logistic, softmax, svm); "
                          "train --model mlp with --solver lbfgs or --mode ps");
    if (bounded)
      return fail_invalid("--solver newton-cg does not take --lower/--upper: bounded problems need "
                          "L-BFGS-B (--solver lbfgs)");
  } else if (!options.checkpoints.dir.empty() && bounded) {
    return fail_invalid("--checkpoint-dir: a run with --lower/--upper (L-BFGS-B) cannot be checkpointed "
                        "(LBFGS++ keeps its bounded solver's state private)");
  }
  auto& newton = plan.newton;
  newton.epsilon = options.lbfgs.epsilon;
  newton.epsilon_rel = options.lbfgs.epsilon_rel;
  newton.past = options.lbfgs.past;
  newton.delta = options.lbfgs.delta;
  newton.max_iterations = options.lbfgs.max_iterations;
  newton.cg_tolerance = options.cg_tolerance;
  newton.lambda = options.lambda;
  if (options.newton_step != step_kind::automatic)
    newton.step = options.newton_step == step_kind::trust_region ? optimizer::newton_step::trust_region
                                                                 : optimizer::newton_step::line_search;
  newton.preconditioner_pairs = options.preconditioner_pairs;
  newton.max_cg_iterations = options.max_cg;
  return plan;
}

result<void> size_plan(solver_plan& plan, const train_options& options, const model::model_shape& shape,
                       std::int64_t feature_bytes, bool sparse) {
  const auto dimension = shape.dimension();
  if (options.l1 > 0 && (plan.kind == solver_kind::owlqn || plan.kind == solver_kind::newton_cg))
    plan.l1 = options.l1 * model::weight_mask(shape);
  if (options.lower)
    plan.lbfgs.lower = Eigen::VectorXd::Constant(dimension, *options.lower);
  if (options.upper)
    plan.lbfgs.upper = Eigen::VectorXd::Constant(dimension, *options.upper);
  // auto: the line search for sparse data (its diagonal preconditioner suits their Hessians, and a
  // pair would cost four passes over the dimension per CG step); the trust region with 20 pairs for
  // dense data (whose early CG solves the region truncates: docs/benchmarks.md).
  if (options.newton_step == step_kind::automatic)
    plan.newton.step = sparse ? optimizer::newton_step::line_search : optimizer::newton_step::trust_region;
  if (plan.kind == solver_kind::newton_cg && options.l1 > 0) {
    plan.newton.l1 = plan.l1;  // orthant-wise: the line search, no pairs (plan_solver refused others)
    plan.newton.step = optimizer::newton_step::line_search;
    plan.newton.preconditioner_pairs = 0;
  }
  if (plan.newton.preconditioner_pairs < 0)
    plan.newton.preconditioner_pairs = plan.newton.step == optimizer::newton_step::trust_region ? 20 : 0;
  if (feature_bytes > 0) {
    const auto budget = std::max(feature_bytes / 4, std::int64_t{16} << 20);
    plan.newton.replay_bytes = std::min(plan.newton.replay_bytes, budget);
    plan.newton.preconditioner_bytes = std::min(plan.newton.preconditioner_bytes, budget);
  }
  if (plan.kind == solver_kind::newton_cg) {
    if (auto ok = optimizer::check_options(plan.newton); !ok)
      return ok.error().with_context("invalid Newton-CG options");
    return {};
  }
  if (auto ok = optimizer::check_options(plan.lbfgs, dimension); !ok)
    return ok.error().with_context("invalid L-BFGS options");
  return {};
}

} // namespace shardopt::apps
