#include "actors/sharded_objective.hpp"

#include "actors/shard.hpp"

#include <optional>
#include <string>
#include <type_traits>

namespace shardopt::actors {

struct sharded_objective::impl {
  impl(runtime& rt, model::model_shape model_shape, double l2, std::vector<shard_actor> handles,
       std::chrono::milliseconds limit, shard_factory make_shard)
    : system(rt.system()), self(system), shape(model_shape), lambda(l2),
      shards(std::move(handles)), timeout(limit), replace(std::move(make_shard)) {
    for (auto& shard : shards)
      self->monitor(shard);
  }

  ~impl() {
    for (auto& shard : shards)
      self->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  /// Index of the shard whose handle matches `who`, or -1 (a replaced or unknown actor).
  std::ptrdiff_t index_of(const caf::actor_addr& who) const {
    for (std::size_t i = 0; i < shards.size(); ++i)
      if (caf::actor_cast<caf::actor_addr>(shards[i]) == who)
        return static_cast<std::ptrdiff_t>(i);
    return -1;
  }

  std::string name(std::size_t i) const {
    return "shard " + std::to_string(i) + " of " + std::to_string(shards.size());
  }

  /// One round: sends (atom, round, theta) to every shard and collects one reply per shard with
  /// `on_reply(i, ...)`. A shard that goes down is replaced through the factory, if there is one,
  /// and asked again; without one, or when replacing fails, the round fails naming the shard. The
  /// whole round must finish within `timeout`.
  template <class Atom, class OnReply>
  std::optional<std::string> fan_out(Atom atom, const dense_vector& theta, OnReply on_reply) {
    const auto round = ++rounds;
    for (auto& shard : shards)
      self->send(shard, atom, round, theta);
    std::vector<bool> answered(shards.size(), false);
    std::size_t remaining = shards.size();
    std::optional<std::string> problem;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto accept = [&](std::uint64_t reply_round, auto&&... values) {
      const auto i = index_of(caf::actor_cast<caf::actor_addr>(self->current_sender()));
      if (reply_round != round || i < 0 || answered[static_cast<std::size_t>(i)])
        return;  // a late reply to an earlier round, or from a replaced shard
      if constexpr (std::is_invocable_v<OnReply&, std::size_t, decltype(values)...>) {
        on_reply(static_cast<std::size_t>(i), std::forward<decltype(values)>(values)...);
        answered[static_cast<std::size_t>(i)] = true;
        --remaining;
      }
    };
    while (remaining > 0 && !problem) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        std::string late;
        for (std::size_t i = 0; i < shards.size(); ++i)
          if (!answered[i])
            late += (late.empty() ? "" : ", ") + std::to_string(i);
        problem = "timeout: shard(s) " + late + " of " + std::to_string(shards.size())
                  + " did not answer within " + std::to_string(timeout.count()) + " ms";
        break;
      }
      self->receive(
        [&](std::uint64_t r, double loss, dense_vector& grad, std::int64_t count) {
          accept(r, loss, std::move(grad), count);
        },
        [&](std::uint64_t r, double correct, double squared_error, std::int64_t count) {
          accept(r, correct, squared_error, count);
        },
        [&](caf::error& err) {
          const auto i = index_of(caf::actor_cast<caf::actor_addr>(self->current_sender()));
          if (i >= 0)
            problem = name(static_cast<std::size_t>(i)) + ": " + describe(err, system);
        },
        [&](caf::down_msg& down) {
          const auto i = index_of(down.source);
          if (i < 0)
            return;
          const auto index = static_cast<std::size_t>(i);
          const auto why = "went down (" + describe(down.reason, system) + ")";
          if (!replace) {
            problem = name(index) + ": " + why;
            return;
          }
          auto fresh = replace(index);
          if (!fresh) {
            problem = name(index) + ": " + why + "; recreating it failed: "
                      + fresh.error().message();
            return;
          }
          shards[index] = std::move(*fresh);
          ++recreated;
          self->monitor(shards[index]);
          if (!answered[index])
            self->send(shards[index], atom, round, theta);
        },
        caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
          return caf::message{};  // anything else (stale exit messages...) is dropped
        },
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [] {});
    }
    return problem;
  }

  caf::actor_system& system;
  caf::scoped_actor self;
  model::model_shape shape;
  double lambda;
  std::vector<shard_actor> shards;
  std::chrono::milliseconds timeout;
  shard_factory replace;
  std::uint64_t rounds = 0;
  std::size_t recreated = 0;
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

std::size_t sharded_objective::recreated_shards() const {
  return impl_->recreated;
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
  const dense_vector shared_theta{theta};  // one copy, shared by every request in this process
  auto problem = s.fan_out(eval_atom::value, shared_theta,
                           [&](std::size_t i, double loss, dense_vector g, std::int64_t count) {
                             s.losses[i] = loss;
                             s.grads[i] = std::move(g);
                             s.counts[i] = count;
                           });
  if (problem)
    return fail(*problem);
  // Add up in shard order: the same bits whatever order the replies arrived in.
  grad.setZero(dimension);
  double loss = 0;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<std::int64_t>(s.grads[i].size()) != dimension)
      return fail(s.name(i) + ": returned a gradient of " + std::to_string(s.grads[i].size())
                  + " entries, expected " + std::to_string(dimension));
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
                           [&](std::size_t i, double correct, double squared_error,
                               std::int64_t count) {
                             parts[i] = model::quality_sums{correct, squared_error, count};
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
                                         std::chrono::milliseconds timeout, shard_factory replace) {
  return sharded_objective{std::make_unique<sharded_objective::impl>(
    rt, shape, lambda, std::move(shards), timeout, std::move(replace))};
}

const std::vector<shard_actor>& shards_of(const sharded_objective& objective) {
  return objective.state().shards;
}

} // namespace shardopt::actors
