#include "actors/shard.hpp"

namespace shardopt::actors {

namespace {

std::string dimension_message(std::size_t got, std::int64_t expected) {
  return "theta has " + std::to_string(got) + " entries, the shard's model expects "
         + std::to_string(expected);
}

shard_actor::behavior_type shard_behavior(shard_actor::pointer, model::model_shape shape,
                                          std::shared_ptr<const model::dataset> data,
                                          model::row_range rows) {
  const auto dimension = shape.dimension();
  return {
    [=](eval_atom, std::uint64_t round, const dense_vector& theta)
      -> caf::result<std::uint64_t, double, dense_vector, std::int64_t> {
      if (static_cast<std::int64_t>(theta.size()) != dimension)
        return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
      auto grad = std::make_shared<Eigen::VectorXd>(dimension);
      const double loss = model::loss_grad_sum(shape, *data, rows, theta.map(), *grad);
      return {round, loss, dense_vector{std::shared_ptr<const Eigen::VectorXd>{std::move(grad)}},
              rows.size()};
    },
    [=](quality_atom, std::uint64_t round, const dense_vector& theta)
      -> caf::result<std::uint64_t, double, double, std::int64_t> {
      if (static_cast<std::int64_t>(theta.size()) != dimension)
        return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
      const auto sums = model::quality(shape, *data, rows, theta.map());
      return {round, sums.correct, sums.squared_error, sums.count};
    },
  };
}

} // namespace

shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows) {
  return system.spawn<caf::detached>(shard_behavior, shape, std::move(data), rows);
}

} // namespace shardopt::actors
