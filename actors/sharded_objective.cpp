#include "actors/sharded_objective.hpp"

#include "actors/fan_out.hpp"
#include "actors/shard.hpp"

#include <cmath>
#include <string>

namespace shardopt::actors {

namespace {

std::vector<std::string> shard_names(std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i)
    names.push_back("shard " + std::to_string(i) + " of " + std::to_string(n));
  return names;
}

} // namespace

struct sharded_objective::impl {
  impl(runtime& rt, model::model_shape model_shape, double l2, std::vector<shard_actor> handles,
       std::vector<std::int64_t> shard_rows, access_token run_token,
       std::chrono::milliseconds limit, shard_factory make_shard)
    : system(rt.system()), self(system), shape(model_shape), lambda(l2),
      shards(self.ptr(), std::move(handles), shard_names(shard_rows.size())),
      rows(std::move(shard_rows)), token(run_token), timeout(limit),
      replace(std::move(make_shard)) {}

  ~impl() {
    for (const auto& shard : shards.handles())
      self->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  /// A shard that went down mid-round: recreated through the factory and asked again.
  result<down_action> recreate(std::size_t i) {
    if (!replace)
      return down_action::fail;
    auto fresh = replace(i);
    if (!fresh)
      return fresh.error().with_context("recreating it failed");
    shards.replace(i, std::move(*fresh));
    ++recreated;
    if (i < needs_theta.size())
      needs_theta[i] = true;  // it has served no evaluation: products must bring the theta
    return down_action::resend;
  }

  /// Checks what shard i says of itself: its example count.
  result<void> check_count(std::size_t i, std::int64_t count) const {
    if (count != rows[i])
      return fail("answered for " + std::to_string(count) + " examples, it holds "
                  + std::to_string(rows[i]));
    return {};
  }

  /// Sends (atom, token, round, theta) to every shard; `on_reply(i, values...)` takes each reply.
  template <class Atom, class... Ts, class OnReply>
  result<void> fan_out(reply<Ts...> shape_of_reply, Atom atom, const dense_vector& theta,
                       const std::string& what, OnReply on_reply) {
    return shards.round(
      shape_of_reply, timeout, what,
      [&](std::size_t i, std::uint64_t round) { self->send(shards[i], atom, token, round, theta); },
      std::move(on_reply), [this](std::size_t i) { return recreate(i); });
  }

  caf::actor_system& system;
  caf::scoped_actor self;
  model::model_shape shape;
  double lambda;
  peer_group<shard_actor> shards;
  std::vector<std::int64_t> rows;
  access_token token;
  std::chrono::milliseconds timeout;
  shard_factory replace;
  std::size_t recreated = 0;
  std::vector<double> losses;
  std::vector<dense_vector> grads;
  // The last successful evaluation, where products are taken, and which shards have not served it.
  dense_vector evaluated_theta;
  std::uint64_t evaluated_round = 0;
  std::vector<bool> needs_theta;
  bool products_asked = false;  // shards keep their curvature from their first product on
};

sharded_objective::sharded_objective(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
sharded_objective::sharded_objective(sharded_objective&&) noexcept = default;
sharded_objective& sharded_objective::operator=(sharded_objective&&) noexcept = default;
sharded_objective::~sharded_objective() = default;

sharded_objective sharded_objective::local(runtime& rt, model::model_shape shape, double lambda,
                                           std::shared_ptr<const model::dataset> data,
                                           const std::vector<model::row_range>& blocks,
                                           std::chrono::milliseconds timeout) {
  const auto token = access_token::random();
  std::vector<shard_actor> shards;
  std::vector<std::int64_t> rows;
  for (const auto& block : blocks) {
    shards.push_back(spawn_shard(rt.system(), shape, data, block, token));
    rows.push_back(block.size());
  }
  return make_sharded_objective(rt, shape, lambda, std::move(shards), std::move(rows), token,
                                timeout);
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
  const dense_vector shared_theta{theta};  // one copy, shared by every request in this process
  s.evaluated_theta = dense_vector{};
  s.needs_theta.assign(n, false);
  std::uint64_t this_round = 0;
  auto done = s.shards.round(
    reply<double, dense_vector, std::int64_t>{}, s.timeout, "evaluation",
    [&](std::size_t i, std::uint64_t round) {
      this_round = round;
      s.self->send(s.shards[i], eval_atom::value, s.token, round, shared_theta);
    },
    [&](std::size_t i, double loss, dense_vector g, std::int64_t count) -> result<void> {
      if (auto ok = s.check_count(i, count); !ok)
        return ok;
      if (static_cast<std::int64_t>(g.size()) != dimension)
        return fail("returned a gradient of " + std::to_string(g.size()) + " entries, expected "
                    + std::to_string(dimension));
      if (!std::isfinite(loss) || !g.map().allFinite())
        return fail("returned a non-finite loss or gradient");
      s.losses[i] = loss;
      s.grads[i] = std::move(g);
      // Shards keep the curvature once they were asked for a product: until then, products bring
      // the theta. A shard recreated mid-round was asked again, so it served this round too.
      s.needs_theta[i] = !s.products_asked;
      return {};
    },
    [&s](std::size_t i) { return s.recreate(i); });
  if (!done)
    return done.error();
  s.evaluated_theta = shared_theta;
  s.evaluated_round = this_round;
  // Add up in shard order: the same bits whatever order the replies arrived in.
  grad.setZero(dimension);
  double loss = 0;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    loss += s.losses[i];
    grad += s.grads[i].map();
    count += s.rows[i];
  }
  if (count <= 0)
    return fail("the shards hold no examples");
  return model::finish_objective(s.shape, s.lambda, count, loss, theta, grad);
}

result<void> sharded_objective::hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
  auto& s = *impl_;
  const auto dimension = s.shape.dimension();
  if (!model::has_hessian(s.shape))
    return fail("Hessian-vector products are defined for the linear models, not "
                + model::describe(s.shape));
  if (s.evaluated_theta.size() == 0)
    return fail("a Hessian-vector product needs a successful evaluation first");
  if (v.size() != dimension)
    return fail("v has " + std::to_string(v.size()) + " entries, the model expects "
                + std::to_string(dimension));
  const auto n = s.shards.size();
  s.grads.assign(n, dense_vector{});
  const dense_vector shared_v{v};
  const auto at = s.evaluated_round;
  auto done = s.shards.round(
    reply<dense_vector, std::int64_t>{}, s.timeout, "Hessian-vector product",
    [&](std::size_t i, std::uint64_t round) {
      s.self->send(s.shards[i], hessvec_atom::value, s.token, round, at,
                   s.needs_theta[i] ? s.evaluated_theta : dense_vector{}, shared_v);
    },
    [&](std::size_t i, dense_vector part, std::int64_t count) -> result<void> {
      if (auto ok = s.check_count(i, count); !ok)
        return ok;
      if (static_cast<std::int64_t>(part.size()) != dimension || !part.map().allFinite())
        return fail("returned a product of " + std::to_string(part.size())
                    + " entries or with non-finite values, expected " + std::to_string(dimension)
                    + " finite values");
      s.grads[i] = std::move(part);
      s.needs_theta[i] = false;
      return {};
    },
    [&s](std::size_t i) { return s.recreate(i); });
  if (!done)
    return done.error();
  s.products_asked = true;
  // Add up in shard order, as evaluate does.
  hv.setZero(dimension);
  std::int64_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    hv += s.grads[i].map();
    count += s.rows[i];
  }
  model::finish_hessian_vector(s.shape, s.lambda, count, v, hv);
  return {};
}

result<model::quality_sums> sharded_objective::quality(const Eigen::VectorXd& theta) {
  auto& s = *impl_;
  std::vector<model::quality_sums> parts(s.shards.size());
  auto done = s.fan_out(
    reply<double, double, std::int64_t>{}, quality_atom::value, dense_vector{theta}, "quality",
    [&](std::size_t i, double correct, double squared_error, std::int64_t count) -> result<void> {
      if (auto ok = s.check_count(i, count); !ok)
        return ok;
      if (!std::isfinite(correct) || !std::isfinite(squared_error) || correct < 0
          || correct > static_cast<double>(count))
        return fail("returned impossible accuracy counts");
      parts[i] = model::quality_sums{correct, squared_error, count};
      return {};
    });
  if (!done)
    return done.error();
  model::quality_sums total;
  for (const auto& part : parts)
    total += part;
  return total;
}

sharded_objective make_sharded_objective(runtime& rt, model::model_shape shape, double lambda,
                                         std::vector<shard_actor> shards,
                                         std::vector<std::int64_t> rows, access_token token,
                                         std::chrono::milliseconds timeout, shard_factory replace) {
  return sharded_objective{std::make_unique<sharded_objective::impl>(
    rt, shape, lambda, std::move(shards), std::move(rows), token, timeout, std::move(replace))};
}

const std::vector<shard_actor>& shards_of(const sharded_objective& objective) {
  return objective.state().shards.handles();
}

access_token token_of(const sharded_objective& objective) {
  return objective.state().token;
}

} // namespace shardopt::actors
