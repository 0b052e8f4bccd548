#include "actors/shard.hpp"

#include "actors/guard.hpp"

namespace shardopt::actors {

namespace {

std::string dimension_message(std::size_t got, std::int64_t expected) {
  return "theta has " + std::to_string(got) + " entries, the shard's model expects "
         + std::to_string(expected);
}

caf::error refused_token() {
  return make_error(errc::refused, "this shard belongs to another driver");
}

/// A shard: rows of a shared dataset, served to the holder of one token. Guarded (guard.hpp): a
/// peer's exit message cannot end it; its node or its driver's objective ends it.
class shard_impl : public guarded<shard_actor::base> {
public:
  shard_impl(caf::actor_config& config, model::model_shape shape,
             std::shared_ptr<const model::dataset> data, model::row_range rows, access_token token)
    : guarded<shard_actor::base>(config), shape_(shape), data_(std::move(data)), rows_(rows),
      token_(token) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    const auto dimension = shape_.dimension();
    return {
      [this, dimension](eval_atom, const access_token& token, std::uint64_t round,
                        const dense_vector& theta)
        -> caf::result<std::uint64_t, double, dense_vector, std::int64_t> {
        if (token != token_)
          return refused_token();
        if (static_cast<std::int64_t>(theta.size()) != dimension)
          return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
        auto grad = std::make_shared<Eigen::VectorXd>(dimension);
        const bool keep = keep_curvature_;
        const double loss = model::loss_grad_sum(shape_, *data_, rows_, theta.map(), *grad,
                                                 keep ? &curvature_ : nullptr);
        cached_ = keep;
        cached_round_ = round;
        return {round, loss, dense_vector{std::shared_ptr<const Eigen::VectorXd>{std::move(grad)}},
                rows_.size()};
      },
      [this, dimension](hessvec_atom, const access_token& token, std::uint64_t round,
                        std::uint64_t at, const dense_vector& theta, const dense_vector& v)
        -> caf::result<std::uint64_t, dense_vector, std::int64_t> {
        if (token != token_)
          return refused_token();
        if (!model::has_hessian(shape_))
          return make_error(errc::bad_request, "Hessian-vector products are defined for the linear "
                                               "models, not " + model::describe(shape_));
        if (static_cast<std::int64_t>(v.size()) != dimension)
          return make_error(errc::dimension_mismatch, "the product's v has " + std::to_string(v.size())
                                                        + " entries, the shard's model expects "
                                                        + std::to_string(dimension));
        // From the first product on, evaluations keep the curvature (L-BFGS never pays for it).
        keep_curvature_ = true;
        if (theta.size() != 0) {
          if (static_cast<std::int64_t>(theta.size()) != dimension)
            return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
          curvature_ = model::curvature_at(shape_, *data_, rows_, theta.map());
          cached_ = true;
          cached_round_ = at;
        }
        if (!cached_ || cached_round_ != at)
          return make_error(errc::bad_request,
                            "a product at the evaluation of round " + std::to_string(at)
                              + ", but this shard's last evaluation "
                              + (cached_ ? "was round " + std::to_string(cached_round_) : "kept nothing"));
        auto hv = std::make_shared<Eigen::VectorXd>(dimension);
        model::hessian_vector_sum(shape_, *data_, rows_, curvature_, v.map(), *hv);
        return {round, dense_vector{std::shared_ptr<const Eigen::VectorXd>{std::move(hv)}}, rows_.size()};
      },
      [this, dimension](quality_atom, const access_token& token, std::uint64_t round,
                        const dense_vector& theta)
        -> caf::result<std::uint64_t, double, double, std::int64_t> {
        if (token != token_)
          return refused_token();
        if (static_cast<std::int64_t>(theta.size()) != dimension)
          return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
        const auto sums = model::quality(shape_, *data_, rows_, theta.map());
        return {round, sums.correct, sums.squared_error, sums.count};
      },
    };
  }

private:
  model::model_shape shape_;
  std::shared_ptr<const model::dataset> data_;
  model::row_range rows_;
  access_token token_;
  model::curvature curvature_;       // of the last evaluation, for products
  bool keep_curvature_ = false;      // set by the first product request
  bool cached_ = false;
  std::uint64_t cached_round_ = 0;   // the round of that evaluation
};

} // namespace

shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        const access_token& token) {
  return system.spawn<shard_impl, caf::detached>(shape, std::move(data), rows, token);
}

} // namespace shardopt::actors
