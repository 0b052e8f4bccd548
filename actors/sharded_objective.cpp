#include "actors/sharded_objective.hpp"

#include "actors/shard.hpp"

#include <optional>
#include <string>

namespace shardopt::actors {

struct sharded_objective::impl {
  impl(runtime& rt, model::model_shape model_shape, double l2, std::vector<shard_actor> handles,
       std::chrono::milliseconds limit)
    : system(rt.system()), self(system), shape(model_shape), lambda(l2),
      shards(std::move(handles)), timeout(limit) {}

  ~impl() {
    for (auto& shard : shards)
      self->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  /// Sends (atom, theta) to every shard, then collects the replies in shard order; `reply_to(i)`
  /// returns the (explicitly typed) handler for shard i's reply. Returns the first failure, naming
  /// the shard.
  template <class Atom, class ReplyTo>
  std::optional<std::string> fan_out(Atom atom, const dense_vector& theta, ReplyTo reply_to) {
    // Send everything first so that the shards work in parallel.
    using handle_type = decltype(self->request(shards.front(), timeout, atom, theta));
    std::vector<handle_type> handles;
    handles.reserve(shards.size());
    for (auto& shard : shards)
      handles.push_back(self->request(shard, timeout, atom, theta));
    std::optional<std::string> problem;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      handles[i].receive(
        reply_to(i),
        [&](caf::error& err) {
          if (!problem)
            problem = "shard " + std::to_string(i) + " of " + std::to_string(shards.size()) + ": "
                      + describe(err, system);
        });
    }
    return problem;
  }

  caf::actor_system& system;
  caf::scoped_actor self;
  model::model_shape shape;
  double lambda;
  std::vector<shard_actor> shards;
  std::chrono::milliseconds timeout;
  std::vector<double> losses;
  std::vector<dense_vector> grads;
  std::vector<std::int64_t> counts;
};

sharded_objective::sharded_objective(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
sharded_objective::sharded_objective(sharded_objective&&) noexcept = default;
sharded_objective& sharded_objective::operator=(sharded_objective&&) noexcept = default;
sharded_objective::~sharded_objective() = default;

sharded_objective sharded_objective::local(runtime& rt, model::model_shape shape, double lambda,
                                           std::shared_ptr<const model::dataset> data,
                                           const std::vector<model::row_range>& blocks,
                                           std::chrono::milliseconds timeout) {
  std::vector<shard_actor> shards;
  shards.reserve(blocks.size());
  for (const auto& block : blocks)
    shards.push_back(spawn_shard(rt.system(), shape, data, block));
  return make_sharded_objective(rt, shape, lambda, std::move(shards), timeout);
}

std::int64_t sharded_objective::dimension() const {
  return impl_->shape.dimension();
}

std::size_t sharded_objective::shard_count() const {
  return impl_->shards.size();
}

result<double> sharded_objective::evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
  auto& s = *impl_;
  const auto dimension = s.shape.dimension();
  if (theta.size() != dimension)
    return fail("theta has " + std::to_string(theta.size()) + " entries, the model expects "
                + std::to_string(dimension));
  const auto n = s.shards.size();
  s.losses.assign(n, 0.0);
  s.grads.assign(n, dense_vector{});
  s.counts.assign(n, 0);
  const dense_vector shared_theta{theta};  // one copy, shared by every request
  auto problem = s.fan_out(eval_atom::value, shared_theta,
                           [&](std::size_t i) {
                             return [&s, i](double loss, dense_vector g, std::int64_t count) {
                               s.losses[i] = loss;
                               s.grads[i] = std::move(g);
                               s.counts[i] = count;
                             };
                           });
  if (problem)
    return fail(*problem);
  // Add up in shard order: the same bits whatever order the replies arrived in.
  grad.setZero(dimension);
  double loss = 0;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<std::int64_t>(s.grads[i].size()) != dimension)
      return fail("shard " + std::to_string(i) + " returned a gradient of "
                  + std::to_string(s.grads[i].size()) + " entries, expected "
                  + std::to_string(dimension));
    loss += s.losses[i];
    grad += s.grads[i].map();
    count += s.counts[i];
  }
  if (count <= 0)
    return fail("the shards hold no examples");
  return model::finish_objective(s.shape, s.lambda, count, loss, theta, grad);
}

result<model::quality_sums> sharded_objective::quality(const Eigen::VectorXd& theta) {
  auto& s = *impl_;
  std::vector<model::quality_sums> parts(s.shards.size());
  auto problem = s.fan_out(quality_atom::value, dense_vector{theta},
                           [&](std::size_t i) {
                             return [&parts, i](double correct, double squared_error,
                                                std::int64_t count) {
                               parts[i] = model::quality_sums{correct, squared_error, count};
                             };
                           });
  if (problem)
    return fail(*problem);
  model::quality_sums total;
  for (const auto& part : parts)
    total += part;
  return total;
}

sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> shards,
                                         std::chrono::milliseconds timeout) {
  return sharded_objective{
    std::make_unique<sharded_objective::impl>(rt, shape, lambda, std::move(shards), timeout)};
}

const std::vector<shard_actor>& shards_of(const sharded_objective& objective) {
  return objective.state().shards;
}

} // namespace shardopt::actors
