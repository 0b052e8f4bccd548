#include "actors/wire/shard.hpp"

#include "actors/wire/guard.hpp"
#include "model/block_evaluator.hpp"

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

/// Checks a request's grid against the shard's model: the gradient's entries (`pairs` 1), or with
/// the Hessian's diagonal twice them (`pairs` 2, linear models), and a base a double allows.
caf::error grid_error(const exact_grid& grid, const model::model_shape& shape, bool diagonal_allowed) {
  const auto dimension = static_cast<std::uint64_t>(shape.dimension());
  const bool diagonal = diagonal_allowed && model::has_hessian(shape) && grid.entries == 2 * dimension;
  if (grid.entries != dimension && !diagonal)
    return make_error(errc::dimension_mismatch, "the grid has " + std::to_string(grid.entries)
                                                  + " entries, the shard's model expects "
                                                  + std::to_string(dimension)
                                                  + (diagonal_allowed && model::has_hessian(shape)
                                                       ? " (or twice that, with the diagonal)" : ""));
  if (auto ok = check_grid(grid); !ok)
    return make_error(errc::bad_request, ok.error().message());
  return {};
}

using sums_result = caf::result<std::uint64_t, block_sums>;

/// A shard: consecutive canonical blocks of a shared dataset, served to the holder of one token,
/// through a model::block_evaluator (which keeps what products and lines need of its
/// evaluations). Guarded (guard.hpp): a peer's exit message cannot end it; its node or its
/// driver's objective (or its group) ends it.
class shard_impl : public guarded<shard_actor::base> {
public:
  shard_impl(caf::actor_config& config, model::block_evaluator evaluator, block_layout layout,
             access_token token, std::shared_ptr<node_counters> counters)
    : guarded<shard_actor::base>(config), evaluator_(std::move(evaluator)), rows_(evaluator_.range()),
      first_(layout.first_block), token_(token), counters_(std::move(counters)) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    const auto& shape = evaluator_.shape();
    const auto dimension = shape.dimension();
    return {
      [this, &shape, dimension](eval_atom, const access_token& token, std::uint64_t round,
                                const exact_grid& grid, const dense_vector& theta) -> sums_result {
        return counted(&node_counters::evaluations, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (static_cast<std::int64_t>(theta.size()) != dimension)
            return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
          if (auto err = grid_error(grid, shape, true))
            return err;
          block_sums out = sums();
          auto exact = evaluator_.loss_grad(theta.map(), grid.model(), out.values, round);
          put_sums(out, std::move(exact), grid.entries);
          return {round, std::move(out)};
        });
      },
      [this, &shape, dimension](hessvec_atom, const access_token& token, std::uint64_t round,
                                std::uint64_t at, const exact_grid& grid, const dense_vector& theta,
                                const dense_vector& v) -> sums_result {
        return counted(&node_counters::products, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (!model::has_hessian(shape))
            return make_error(errc::bad_request, "Hessian-vector products are defined for the linear "
                                                 "models, not " + model::describe(shape));
          if (static_cast<std::int64_t>(v.size()) != dimension)
            return make_error(errc::dimension_mismatch, "the product's v has " + std::to_string(v.size())
                                                          + " entries, the shard's model expects "
                                                          + std::to_string(dimension));
          if (auto err = grid_error(grid, shape, false))
            return err;
          if (auto err = have(at, theta, "a product at the evaluation of round "))
            return err;
          block_sums out = sums();
          put_sums(out, evaluator_.hessian_vector(v.map(), grid.model()), grid.entries);
          return {round, std::move(out)};
        });
      },
      [this, &shape, dimension](line_atom, const access_token& token, std::uint64_t round,
                                std::uint64_t from, std::uint64_t to, const dense_vector& alphas,
                                const dense_vector& theta_from, const dense_vector& theta_to) -> sums_result {
        return counted(&node_counters::lines, [&]() -> sums_result {
          if (token != token_)
            return refused("this shard belongs to another driver");
          if (!model::has_hessian(shape))
            return make_error(errc::bad_request, "line requests are defined for the linear models, not "
                                                   + model::describe(shape));
          if (alphas.size() == 0 || alphas.size() > max_line_alphas || !alphas.map().allFinite())
            return make_error(errc::bad_request, "a line request asks 1 to " + std::to_string(max_line_alphas)
                                                   + " finite step lengths, not "
                                                   + std::to_string(alphas.size()));
          if (from == to)
            return make_error(errc::bad_request, "a line runs between two evaluations");
          // A shard that did not serve both evaluations rebuilds their scores from the thetas.
          if (evaluator_.previous() != from || evaluator_.latest() != to) {
            if (theta_from.size() == 0 || theta_to.size() == 0)
              return make_error(errc::bad_request,
                                "a line between the evaluations of rounds " + std::to_string(from) + " and "
                                  + std::to_string(to) + ", but this shard did not serve both");
            for (const auto* theta : {&theta_from, &theta_to})
              if (static_cast<std::int64_t>(theta->size()) != dimension)
                return make_error(errc::dimension_mismatch, dimension_message(theta->size(), dimension));
            evaluator_.recall(theta_from.map(), from);
            evaluator_.recall(theta_to.map(), to);
          }
          block_sums out = sums();
          const std::vector<double> steps(alphas.data(), alphas.data() + alphas.size());
          evaluator_.line_losses(steps, out.values);
          return {round, std::move(out)};
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
          for (const auto& part : evaluator_.quality(theta.map())) {
            out.values.push_back(part.squared_error);
            out.correct += part.correct;
          }
          return {round, std::move(out)};
        });
      },
    };
  }

private:
  /// Whether the evaluator holds the evaluation of round `at` as its latest, rebuilding it from
  /// `theta` when one is given; the error to answer with otherwise.
  caf::error have(std::uint64_t at, const dense_vector& theta, const char* what) {
    const auto dimension = evaluator_.shape().dimension();
    if (theta.size() != 0) {
      if (static_cast<std::int64_t>(theta.size()) != dimension)
        return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
      if (evaluator_.latest() != at)
        evaluator_.recall(theta.map(), at);
    }
    if (evaluator_.latest() != at)
      return make_error(errc::bad_request,
                        what + std::to_string(at) + ", but this shard's last evaluation "
                          + (evaluator_.latest() ? "was round " + std::to_string(*evaluator_.latest())
                                                 : std::string{"kept nothing"}));
    return {};
  }

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
    out.runs = {first_, static_cast<std::int64_t>(evaluator_.blocks().size())};
    out.count = rows_.size();
    return out;
  }

  model::block_evaluator evaluator_;
  model::row_range rows_;
  std::int64_t first_;
  access_token token_;
  std::shared_ptr<node_counters> counters_;  // its node's, or null
};

} // namespace

shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        block_layout layout, const access_token& token,
                        std::shared_ptr<node_counters> counters) {
  return spawn_shard(system, model::block_evaluator{std::move(shape), std::move(data), rows, layout.block_rows},
                     layout, token, std::move(counters));
}

shard_actor spawn_shard(caf::actor_system& system, model::block_evaluator evaluator, block_layout layout,
                        const access_token& token, std::shared_ptr<node_counters> counters) {
  return system.spawn<shard_impl, caf::detached>(std::move(evaluator), layout, token, std::move(counters));
}

} // namespace shardopt::actors
