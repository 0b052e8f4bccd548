#include "actors/driver/sharded_objective.hpp"

#include "actors/driver/objective_state.hpp"
#include "actors/driver/peers.hpp"
#include "actors/wire/shard.hpp"
#include "base/parallel.hpp"
#include "model/restriction.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace shardopt::actors {

sharded_objective::sharded_objective(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
sharded_objective::sharded_objective(sharded_objective&&) noexcept = default;
sharded_objective& sharded_objective::operator=(sharded_objective&&) noexcept = default;
sharded_objective::~sharded_objective() = default;

sharded_objective sharded_objective::local(runtime& rt, model::model_shape shape, double lambda,
                                           std::shared_ptr<const model::dataset> data,
                                           const std::vector<model::row_range>& blocks,
                                           std::chrono::milliseconds timeout) {
  const auto token = access_token::random();
  std::int64_t total_rows = 0;
  for (const auto& range : blocks)
    total_rows += range.size();
  const auto block_rows = model::block_rows_for(total_rows);
  // Each shard's evaluator (its features numbered, their largest values found), built on as many
  // threads as this process may use: the setup's passes over the non-zeros run on every core, as
  // a pass does. Then their bounds, the maxima merged range by range on every core too (maxima
  // and counts: the same in any order), into the one dimension-sized vector of the run's bounds.
  // A batch of shards at a time, one a thread, so that no more of their maxima (4 bytes a
  // feature each) are held at once than threads build them.
  const auto threads = usable_cpus();
  std::vector<std::optional<model::block_evaluator>> evaluators(blocks.size());
  model::data_bounds bounds{{}, 0, block_rows, 0};
  for (std::size_t first = 0; first < blocks.size(); first += threads) {
    const auto count = std::min<std::size_t>(threads, blocks.size() - first);
    run_parallel(count, threads, [&](std::size_t i) {
      evaluators[first + i].emplace(shape, data, blocks[first + i], block_rows);
    });
    std::vector<model::block_evaluator*> built;
    for (std::size_t i = 0; i < count; ++i)
      built.push_back(&*evaluators[first + i]);
    model::block_evaluator::add_bounds_of(built, bounds, threads);
  }
  std::vector<shard_actor> shards;
  std::vector<peer_share> shares;
  std::int64_t first = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto count = model::block_count(blocks[i].size(), block_rows);
    shards.push_back(spawn_shard(rt.system(), std::move(*evaluators[i]), block_layout{first, block_rows}, token));
    shares.push_back(peer_share{{{first, count}}, blocks[i].size(), {}});
    first += count;
  }
  auto objective = make_sharded_objective(rt, std::move(shape), lambda, std::move(shards), std::move(shares),
                                          std::move(bounds), token, timeout);
  objective.restrict_through(data, [&rt, lambda, blocks, timeout](model::model_shape compact,
                                                                 const std::vector<std::int64_t>&,
                                                                 const columns_fn& columns) {
    return result<sharded_objective>{local(rt, std::move(compact), lambda, columns(), blocks, timeout)};
  });
  return objective;
}

void sharded_objective::restrict_through(std::shared_ptr<const model::dataset> data, rebuild_fn build) {
  source_ = std::make_shared<const restrict_source>(restrict_source{std::move(data), std::move(build)});
}

bool sharded_objective::can_restrict() const {
  return source_ && model::has_hessian(impl_->shape) && impl_->shape.hidden.empty();
}

result<sharded_objective::restriction> sharded_objective::restrict(const std::vector<Eigen::Index>& wanted) {
  if (!can_restrict())
    return fail_invalid(source_ ? "only the linear models can be restricted to some features, not "
                                    + model::describe(impl_->shape)
                                : std::string{"this objective's maker gave no way to restrict it to some features"});
  const auto& shape = impl_->shape;
  const auto features = model::features_of_entries(shape, wanted);
  // The compact objective this one replaces is released first (its shards end asynchronously, and
  // with them its copy of the data); the last one lives until this objective ends.
  // On nodes, ending it releases its shards there (its driver identity goes away).
  if (restricted_) {
    restricted_seconds_ += restricted_->round_seconds();
    restricted_recreated_ += restricted_->recreated_shards();
    restricted_.reset();
  }
  const auto& source = *source_;
  auto copy = std::make_shared<std::shared_ptr<const model::dataset>>();
  // A copy of `features`: a working set's objective keeps this to ship a recreated shard's rows.
  const columns_fn columns = [copy, data = source.data, features] {
    if (!*copy && data)
      *copy = std::make_shared<const model::dataset>(model::restrict_columns(*data, features));
    return *copy;
  };
  auto made = source.build(model::model_shape{shape.kind, static_cast<std::int64_t>(features.size()), shape.outputs},
                           features, columns);
  if (!made && !source.data)
    return through_this(model::entries_of_features(shape, features));
  if (!made)
    return made.error().with_context("restricting to " + std::to_string(features.size()) + " features");
  const auto nonzeros = *copy ? (*copy)->nonzeros() : std::int64_t{0};
  restricted_ = std::make_unique<sharded_objective>(std::move(*made));
  restricted_->use_threads(pool_);
  auto* compact = restricted_.get();
  return restriction{model::entries_of_features(shape, features), nonzeros,
                     [compact](const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
                       return compact->evaluate(theta, grad);
                     },
                     [compact](const Eigen::VectorXd& v, Eigen::VectorXd& hv) { return compact->hessian_vector(v, hv); },
                     [compact](const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
                       return compact->evaluate_diagonal(theta, grad, diagonal);
                     },
                     [compact](const std::vector<double>& alphas, std::vector<double>& values) {
                       return compact->line_values(alphas, values);
                     }};
}

sharded_objective::restriction sharded_objective::through_this(std::vector<Eigen::Index> entries) {
  struct buffers {
    Eigen::VectorXd theta, grad, diagonal, v, hv;
  };
  auto full = std::make_shared<buffers>();
  restriction out{std::move(entries), 0, {}, {}, {}, {}};
  // f at the compact point made full (its other entries 0), and its gradient (and diagonal) on
  // the entries; products and lines then run at those full evaluations.
  const auto evaluate = [state = impl_.get(), full, entries = out.entries](const Eigen::VectorXd& theta,
                                                                          Eigen::VectorXd& grad,
                                                                          Eigen::VectorXd* diagonal) -> result<double> {
    full->theta.setZero(state->shape.dimension());
    for (std::size_t k = 0; k < entries.size(); ++k)
      full->theta[entries[k]] = theta[static_cast<Eigen::Index>(k)];
    auto value = evaluate_at(*state, full->theta, full->grad, diagonal ? &full->diagonal : nullptr);
    if (!value)
      return value;
    grad.resize(static_cast<Eigen::Index>(entries.size()));
    for (std::size_t k = 0; k < entries.size(); ++k)
      grad[static_cast<Eigen::Index>(k)] = full->grad[entries[k]];
    if (diagonal) {
      diagonal->resize(static_cast<Eigen::Index>(entries.size()));
      for (std::size_t k = 0; k < entries.size(); ++k)
        (*diagonal)[static_cast<Eigen::Index>(k)] = full->diagonal.size() > 0 ? full->diagonal[entries[k]] : 0.0;
    }
    return value;
  };
  out.evaluate = [evaluate](const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    return evaluate(theta, grad, nullptr);
  };
  if (model::has_hessian(impl_->shape)) {
    out.diagonal = [evaluate](const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
      return evaluate(theta, grad, &diagonal);
    };
    out.hessian = [state = impl_.get(), full, entries = out.entries](const Eigen::VectorXd& v,
                                                                     Eigen::VectorXd& hv) -> result<void> {
      full->v.setZero(state->shape.dimension());
      for (std::size_t k = 0; k < entries.size(); ++k)
        full->v[entries[k]] = v[static_cast<Eigen::Index>(k)];
      if (auto done = hessian_at(*state, full->v, full->hv); !done)
        return done;
      hv.resize(static_cast<Eigen::Index>(entries.size()));
      for (std::size_t k = 0; k < entries.size(); ++k)
        hv[static_cast<Eigen::Index>(k)] = full->hv[entries[k]];
      return {};
    };
    out.line = [state = impl_.get()](const std::vector<double>& alphas, std::vector<double>& values) {
      return line_at(*state, alphas, values);
    };
  }
  return out;
}

std::int64_t sharded_objective::dimension() const {
  return impl_->shape.dimension();
}

std::size_t sharded_objective::shard_count() const {
  return impl_->peers.size();
}

std::size_t sharded_objective::recreated_shards() const {
  return impl_->recreated + restricted_recreated_ + (restricted_ ? restricted_->recreated_shards() : 0);
}

double sharded_objective::round_seconds() const {
  return impl_->round_seconds + restricted_seconds_ + (restricted_ ? restricted_->round_seconds() : 0.0);
}

result<double> sharded_objective::evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
  return evaluate_at(*impl_, theta, grad, nullptr);
}

result<double> sharded_objective::evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                                    Eigen::VectorXd& diagonal) {
  return evaluate_at(*impl_, theta, grad, &diagonal);
}

result<double> sharded_objective::evaluate_at(impl& s, const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                              Eigen::VectorXd* diagonal) {
  const auto dimension = s.shape.dimension();
  if (theta.size() != dimension)
    return fail_invalid("theta has " + std::to_string(theta.size()) + " entries, the model expects "
                + std::to_string(dimension));
  if (s.rows <= 0)
    return fail_invalid("the shards hold no examples");
  const bool with_diagonal = diagonal && model::has_hessian(s.shape);
  // Shared by every request in this process.
  const dense_vector shared_theta = s.buffers.copy(theta, s.pool());
  // The last evaluation becomes the one before it (a line runs between the two).
  s.line.start_evaluation(s.peers.size());
  s.cross_boundary();
  std::uint64_t this_round = 0;
  auto done = s.exact_round("evaluation", s.plan.gradient(theta, with_diagonal), true,
                            [&](std::uint64_t round, const exact_grid& on, const std::vector<std::size_t>&) {
                              this_round = round;
                              return request_spec{tree_kind::eval, 0, &on, shared_theta, {}, 0, {}};
                            });
  if (!done) {
    s.line.failed();  // no line runs across a failed evaluation
    return done.error();
  }
  // Products are taken at it and lines run to it (line_state says who needs its theta).
  s.line.evaluated(shared_theta, this_round, s.fell_back, s.peers.size());
  grad.resize(dimension);
  if (diagonal) {
    diagonal->resize(dimension);
    if (with_diagonal)
      s.total_to(*diagonal, dimension, nullptr);
    else
      diagonal->setConstant(std::numeric_limits<double>::quiet_NaN());
  }
  if (s.shape.is_network()) {
    s.totals.total.to_doubles(grad);
    return model::finish_objective(s.shape, s.lambda, s.rows, s.totals.value_sum(), theta, grad);
  }
  const double squared_weights = s.total_to(grad, 0, &theta);
  return s.totals.value_sum() * (1.0 / static_cast<double>(s.rows)) + 0.5 * s.lambda * squared_weights;
}

result<void> sharded_objective::hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
  return hessian_at(*impl_, v, hv);
}

result<void> sharded_objective::hessian_at(impl& s, const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
  const auto dimension = s.shape.dimension();
  if (!model::has_hessian(s.shape))
    return fail_invalid("Hessian-vector products are defined for the linear models, not "
                + model::describe(s.shape));
  if (s.line.evaluated_theta.size() == 0)
    return fail_invalid("a Hessian-vector product needs a successful evaluation first");
  if (v.size() != dimension)
    return fail_invalid("v has " + std::to_string(v.size()) + " entries, the model expects "
                + std::to_string(dimension));
  const dense_vector shared_v = s.buffers.copy(v, s.pool());
  const auto at = s.line.evaluated_round;
  auto done = s.exact_round("Hessian-vector product", s.plan.hessian_vector(v), false,
                            [&](std::uint64_t, const exact_grid& on,
                                const std::vector<std::size_t>& under) {
                              const bool theta = std::any_of(under.begin(), under.end(),
                                                             [&](auto i) { return s.line.needs_theta[i]; });
                              return request_spec{tree_kind::hessvec, at, &on,
                                                  theta ? s.line.evaluated_theta : dense_vector{},
                                                  shared_v, 0, {}};
                            });
  if (!done)
    return done.error();
  s.line.products_served(s.peers.size());  // every peer now keeps the curvature
  hv.resize(dimension);
  s.total_to(hv, 0, &v);
  return {};
}

result<void> sharded_objective::line_values(const std::vector<double>& alphas, std::vector<double>& values) {
  return line_at(*impl_, alphas, values);
}

result<void> sharded_objective::line_at(impl& s, const std::vector<double>& alphas, std::vector<double>& values) {
  if (!model::has_hessian(s.shape))
    return fail_invalid("line values are defined for the linear models, not " + model::describe(s.shape));
  if (s.line.evaluated_theta.size() == 0 || s.line.previous_theta.size() == 0)
    return fail_invalid("line values need two successful evaluations first");
  if (alphas.empty() || alphas.size() > max_line_alphas)
    return fail_invalid("a line asks 1 to " + std::to_string(max_line_alphas) + " steps, not "
                        + std::to_string(alphas.size()));
  const dense_vector steps{Eigen::Map<const Eigen::VectorXd>(alphas.data(), static_cast<Eigen::Index>(alphas.size()))};
  s.totals.begin(model::grid{}, alphas.size(), s.pool());
  std::vector<std::size_t> every(s.peers.size());
  for (std::size_t i = 0; i < every.size(); ++i)
    every[i] = i;
  // Every peer directly (a line carries no long vector for a tree to pipeline); a peer that has
  // not served both evaluations gets their thetas to rebuild them.
  const round_clock clock{s.round_seconds};
  auto done = s.peers.round(
    reply<block_sums>{}, every, s.timeout, "line search",
    [&](std::size_t i, std::uint64_t round) {
      const bool fresh = s.line.needs_theta[i] || s.line.needs_previous[i];
      request_spec spec{tree_kind::line, s.line.previous_round, nullptr,
                        fresh ? s.line.previous_theta : dense_vector{}, steps, s.line.evaluated_round,
                        fresh ? s.line.evaluated_theta : dense_vector{}};
      s.send_whole(s.peers[i], round, spec);
    },
    [&](std::size_t i, block_sums sums) { return s.take(i, std::move(sums), true); },
    [&](std::size_t i) { return s.recreate(i); });
  if (!done)
    return done.error();
  if (auto all = s.totals.covered(); !all)
    return all.error();
  s.line.lines_served(s.peers.size());  // every peer now holds both evaluations
  const auto along = model::line_terms(s.shape, s.line.previous_theta.map(), s.line.evaluated_theta.map());
  values.resize(alphas.size());
  for (std::size_t a = 0; a < alphas.size(); ++a)
    values[a] = s.totals.value_sum(a) / static_cast<double>(s.rows) + along.penalty(s.lambda, alphas[a]);
  return {};
}

void sharded_objective::use_threads(optimizer::vector_pool* pool) {
  impl_->threads = pool;
  pool_ = pool;
  if (restricted_)
    restricted_->use_threads(pool);
}

result<model::quality_sums> sharded_objective::quality(const Eigen::VectorXd& theta) {
  auto& s = *impl_;
  const dense_vector shared_theta{theta};
  s.totals.begin(model::grid{}, 1, s.pool());
  auto done = s.gather("quality", true, [&](std::uint64_t, const std::vector<std::size_t>&) {
    return request_spec{tree_kind::quality, 0, nullptr, shared_theta, {}, 0, {}};
  });
  if (!done)
    return done.error();
  if (auto all = s.totals.covered(); !all)
    return all.error();
  return model::quality_sums{s.totals.correct, s.totals.value_sum(), s.rows};
}

sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> peers,
                                         std::vector<peer_share> shares, model::data_bounds bounds,
                                         access_token token, std::chrono::milliseconds timeout,
                                         shard_factory replace, tree_builder tree,
                                         boundary_hook boundary) {
  auto state = std::make_unique<sharded_objective::impl>(
    rt, std::move(shape), lambda, std::move(peers), std::move(shares), std::move(bounds), token, timeout,
    std::move(replace));
  state->build_tree = std::move(tree);
  state->boundary = std::move(boundary);
  return sharded_objective{std::move(state)};
}

const std::vector<shard_actor>& shards_of(const sharded_objective& objective) {
  return objective.state().peers.handles();
}

std::vector<tree_actor> tree_roots_of(const sharded_objective& objective) {
  const auto& roots = objective.state().roots;
  return roots ? roots->handles() : std::vector<tree_actor>{};
}

bool asked_directly(const sharded_objective& objective) {
  const auto& state = objective.state();
  return !state.roots || state.fell_back;
}

access_token token_of(const sharded_objective& objective) {
  return objective.state().token;
}

} // namespace shardopt::actors
