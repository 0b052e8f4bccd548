#include "actors/sharded_objective.hpp"

#include "actors/objective_state.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

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
  std::vector<shard_actor> shards;
  std::vector<peer_share> shares;
  model::data_bounds bounds{{}, 0, block_rows, 0};
  for (const auto& range : blocks) {
    const auto count = model::block_count(range.size(), block_rows);
    shards.push_back(
      spawn_shard(rt.system(), shape, data, range, block_layout{bounds.blocks, block_rows}, token));
    shares.push_back(peer_share{{{bounds.blocks, count}}, range.size(), {}});
    bounds += model::bounds_of(*data, range, block_rows);
  }
  return make_sharded_objective(rt, std::move(shape), lambda, std::move(shards), std::move(shares),
                                bounds, token, timeout);
}

std::int64_t sharded_objective::dimension() const {
  return impl_->shape.dimension();
}

std::size_t sharded_objective::shard_count() const {
  return impl_->peers.size();
}

std::size_t sharded_objective::recreated_shards() const {
  return impl_->recreated;
}

result<double> sharded_objective::evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
  auto& s = *impl_;
  const auto dimension = s.shape.dimension();
  if (theta.size() != dimension)
    return fail_invalid("theta has " + std::to_string(theta.size()) + " entries, the model expects "
                + std::to_string(dimension));
  if (s.rows <= 0)
    return fail_invalid("the shards hold no examples");
  const dense_vector shared_theta{theta};  // one copy, shared by every request in this process
  s.evaluated_theta = dense_vector{};
  s.needs_theta.assign(s.peers.size(), false);
  s.cross_boundary();
  std::uint64_t this_round = 0;
  auto done = s.exact_round("evaluation", model::gradient_grid(s.shape, s.bounds, theta), true,
                            [&](std::uint64_t round, const exact_grid& on,
                                const std::vector<std::size_t>& under) {
                              this_round = round;
                              // Shards keep the curvature once they were asked for a product:
                              // until then, products bring the theta, as they do to a peer
                              // recreated in this round (`recreate` marks it).
                              for (const auto i : under)
                                s.needs_theta[i] = s.needs_theta[i] || !s.products_asked;
                              return request_spec{tree_kind::eval, 0, &on, shared_theta, {}};
                            });
  if (!done)
    return done.error();
  if (s.fell_back)  // some peers answered another round's number: products bring the theta
    s.needs_theta.assign(s.peers.size(), true);
  s.evaluated_theta = shared_theta;
  s.evaluated_round = this_round;
  grad.resize(dimension);
  s.total.to_doubles(grad);
  return model::finish_objective(s.shape, s.lambda, s.rows, s.value_sum(), theta, grad);
}

result<void> sharded_objective::hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
  auto& s = *impl_;
  const auto dimension = s.shape.dimension();
  if (!model::has_hessian(s.shape))
    return fail_invalid("Hessian-vector products are defined for the linear models, not "
                + model::describe(s.shape));
  if (s.evaluated_theta.size() == 0)
    return fail_invalid("a Hessian-vector product needs a successful evaluation first");
  if (v.size() != dimension)
    return fail_invalid("v has " + std::to_string(v.size()) + " entries, the model expects "
                + std::to_string(dimension));
  const dense_vector shared_v{v};
  const auto at = s.evaluated_round;
  auto done = s.exact_round("Hessian-vector product", model::hessian_vector_grid(s.shape, s.bounds, v),
                            false, [&](std::uint64_t, const exact_grid& on,
                                       const std::vector<std::size_t>& under) {
                              const bool theta = std::any_of(under.begin(), under.end(),
                                                             [&](auto i) { return s.needs_theta[i]; });
                              return request_spec{tree_kind::hessvec, at, &on,
                                                  theta ? s.evaluated_theta : dense_vector{},
                                                  shared_v};
                            });
  if (!done)
    return done.error();
  s.needs_theta.assign(s.peers.size(), false);  // every peer now keeps the curvature
  s.products_asked = true;
  hv.resize(dimension);
  s.total.to_doubles(hv);
  model::finish_hessian_vector(s.shape, s.lambda, s.rows, v, hv);
  return {};
}

result<model::quality_sums> sharded_objective::quality(const Eigen::VectorXd& theta) {
  auto& s = *impl_;
  const dense_vector shared_theta{theta};
  s.begin({});
  auto done = s.gather("quality", true, [&](std::uint64_t, const std::vector<std::size_t>&) {
    return request_spec{tree_kind::quality, 0, nullptr, shared_theta, {}};
  });
  if (!done)
    return done.error();
  if (auto all = s.covered(); !all)
    return all.error();
  return model::quality_sums{s.correct, s.value_sum(), s.rows};
}

sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> peers,
                                         std::vector<peer_share> shares, model::data_bounds bounds,
                                         access_token token, std::chrono::milliseconds timeout,
                                         shard_factory replace, tree_builder tree,
                                         boundary_hook boundary) {
  auto state = std::make_unique<sharded_objective::impl>(
    rt, std::move(shape), lambda, std::move(peers), std::move(shares), bounds, token, timeout,
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
