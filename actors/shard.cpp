#include "actors/shard.hpp"

#include "actors/guard.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

namespace shardopt::actors {

namespace {

std::string dimension_message(std::size_t got, std::int64_t expected) {
  return "theta has " + std::to_string(got) + " entries, the shard's model expects "
         + std::to_string(expected);
}

/// An exact sum on a request's grids, or the error to answer with.
caf::expected<model::exact_sum> sum_on(const exact_grid& grid, std::int64_t dimension) {
  if (static_cast<std::int64_t>(grid.below.size()) != dimension)
    return make_error(errc::dimension_mismatch, "the grid has " + std::to_string(grid.below.size())
                                                  + " entries, the shard's model expects "
                                                  + std::to_string(dimension));
  auto exponents = decode_grid(grid);
  if (!exponents)
    return make_error(errc::bad_request, exponents.error().message());
  return model::exact_sum{std::move(*exponents)};
}

using sums_result = caf::result<std::uint64_t, block_sums>;

/// A shard: consecutive canonical blocks of a shared dataset, served to the holder of one token.
/// Guarded (guard.hpp): a peer's exit message cannot end it; its node or its driver's objective
/// (or its group) ends it.
class shard_impl : public guarded<shard_actor::base> {
public:
  shard_impl(caf::actor_config& config, model::model_shape shape,
             std::shared_ptr<const model::dataset> data, model::row_range rows,
             block_layout layout, access_token token, std::shared_ptr<node_counters> counters)
    : guarded<shard_actor::base>(config), shape_(std::move(shape)), data_(std::move(data)),
      rows_(rows), blocks_(model::blocks_of(rows, layout.block_rows)), block_rows_(layout.block_rows),
      first_(layout.first_block),
      token_(token), counters_(std::move(counters)) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    const auto dimension = shape_.dimension();
    return {
      [this, dimension](eval_atom, const access_token& token, std::uint64_t round,
                        const exact_grid& grid, const dense_vector& theta) -> sums_result {
        return counted(&node_counters::evaluations, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (static_cast<std::int64_t>(theta.size()) != dimension)
            return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
          auto grad = sum_on(grid, dimension);
          if (!grad)
            return std::move(grad.error());
          const bool keep = keep_curvature_;
          block_sums out = sums();
          model::block_loss_grad(shape_, *data_, blocks_, block_rows_, theta.map(), out.values,
                                 *grad, keep ? &curvature_ : nullptr);
          cached_ = keep;
          cached_round_ = round;
          return {round, finish(std::move(out), *grad)};
        });
      },
      [this, dimension](hessvec_atom, const access_token& token, std::uint64_t round,
                        std::uint64_t at, const exact_grid& grid, const dense_vector& theta,
                        const dense_vector& v) -> sums_result {
        return counted(&node_counters::products, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (!model::has_hessian(shape_))
            return make_error(errc::bad_request, "Hessian-vector products are defined for the linear "
                                                 "models, not " + model::describe(shape_));
          if (static_cast<std::int64_t>(v.size()) != dimension)
            return make_error(errc::dimension_mismatch, "the product's v has " + std::to_string(v.size())
                                                          + " entries, the shard's model expects "
                                                          + std::to_string(dimension));
          auto hv = sum_on(grid, dimension);
          if (!hv)
            return std::move(hv.error());
          // From the first product on, evaluations keep the curvature (L-BFGS never pays for it).
          keep_curvature_ = true;
          if (theta.size() != 0) {
            if (static_cast<std::int64_t>(theta.size()) != dimension)
              return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
            curvature_ = model::block_curvature(shape_, *data_, blocks_, theta.map());
            cached_ = true;
            cached_round_ = at;
          }
          if (!cached_ || cached_round_ != at)
            return make_error(errc::bad_request,
                              "a product at the evaluation of round " + std::to_string(at)
                                + ", but this shard's last evaluation "
                                + (cached_ ? "was round " + std::to_string(cached_round_) : "kept nothing"));
          model::block_hessian_vector(shape_, *data_, blocks_, block_rows_, curvature_, v.map(), *hv);
          return {round, finish(sums(), *hv)};
        });
      },
      [this, dimension](quality_atom, const access_token& token, std::uint64_t round,
                        const dense_vector& theta) -> sums_result {
        return counted(&node_counters::qualities, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (static_cast<std::int64_t>(theta.size()) != dimension)
            return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
          block_sums out = sums();
          for (const auto& block : blocks_) {
            const auto part = model::quality(shape_, *data_, block, theta.map());
            out.values.push_back(part.squared_error);
            out.correct += part.correct;
          }
          return {round, std::move(out)};
        });
      },
    };
  }

private:
  /// Serves a request with `body`, counting it in the node's counters (if any): the request and
  /// its computing time when answered, its reason when refused.
  template <class Body>
  sums_result counted(std::atomic<std::int64_t> node_counters::*served, Body body) {
    const auto started = std::chrono::steady_clock::now();
    auto answer = body();
    if (!counters_)
      return answer;
    if (answer.flag == caf::rt_error) {
      counters_->refuse(node_request::evaluate, reason_of(answer.err));
      return answer;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count();
    (*counters_.*served).fetch_add(1, std::memory_order_relaxed);
    counters_->busy_nanoseconds.fetch_add(busy, std::memory_order_relaxed);
    if (served == &node_counters::evaluations) {
      counters_->last_evaluation_nanoseconds.store(busy, std::memory_order_relaxed);
      counters_->last_evaluation_unix_ms.store(
        std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch()).count(),
        std::memory_order_relaxed);
    }
    return answer;
  }

  /// The shard's blocks and count, with no sums yet.
  block_sums sums() const {
    block_sums out;
    out.runs = {first_, static_cast<std::int64_t>(blocks_.size())};
    out.count = rows_.size();
    return out;
  }

  static block_sums finish(block_sums out, model::exact_sum& exact) {
    out.max_units = exact.max_units();
    out.words = exact.take_words();
    return out;
  }

  model::model_shape shape_;
  std::shared_ptr<const model::dataset> data_;
  model::row_range rows_;
  std::vector<model::row_range> blocks_;
  std::int64_t block_rows_;
  std::int64_t first_;
  access_token token_;
  std::vector<model::curvature> curvature_;  // of the last evaluation, per block, for products
  bool keep_curvature_ = false;              // set by the first product request
  bool cached_ = false;
  std::uint64_t cached_round_ = 0;           // the round of that evaluation
  std::shared_ptr<node_counters> counters_;  // its node's, or null
};

} // namespace

shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        block_layout layout, const access_token& token,
                        std::shared_ptr<node_counters> counters) {
  return system.spawn<shard_impl, caf::detached>(std::move(shape), std::move(data), rows, layout,
                                                 token, std::move(counters));
}

} // namespace shardopt::actors
