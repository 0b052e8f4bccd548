#pragma once

#include "model/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace shardopt::optimizer {

/// # The objective concept
///
/// Every optimizer in this layer minimises an *objective*: any type F with
///
/// - `std::int64_t dimension() const` — the length of theta;
/// - `R evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad)` — the objective at theta,
///   writing its gradient into `grad` (resized to `dimension()`), in one fused pass. R is `double`
///   for objectives that cannot fail (a model over local data) or `shardopt::result<double>` for
///   those that can (shards behind actors: a timeout, a dead peer).
///
/// A local model, a sum of local shards and the sharded objective over (remote) actors all satisfy
/// it; the optimizers cannot tell them apart. `check_objective<F>()` names what a type lacks.
template <class F, class = void>
struct has_dimension : std::false_type {};

template <class F>
struct has_dimension<F, std::void_t<decltype(std::declval<const F&>().dimension())>>
  : std::is_convertible<decltype(std::declval<const F&>().dimension()), std::int64_t> {};

template <class F, class = void>
struct has_evaluate : std::false_type {};

template <class F>
struct has_evaluate<F, std::void_t<decltype(std::declval<F&>().evaluate(
                         std::declval<const Eigen::VectorXd&>(), std::declval<Eigen::VectorXd&>()))>>
  : std::bool_constant<
      std::is_convertible_v<decltype(std::declval<F&>().evaluate(std::declval<const Eigen::VectorXd&>(),
                                                                  std::declval<Eigen::VectorXd&>())),
                            double>
      || std::is_same_v<decltype(std::declval<F&>().evaluate(std::declval<const Eigen::VectorXd&>(),
                                                              std::declval<Eigen::VectorXd&>())),
                        result<double>>> {};

/// Compile-time check that F is an objective, with a message naming what is missing.
template <class F>
constexpr void check_objective() {
  static_assert(has_dimension<F>::value,
                "not an objective: missing `std::int64_t dimension() const`");
  static_assert(has_evaluate<F>::value,
                "not an objective: missing `double evaluate(const Eigen::VectorXd& theta, "
                "Eigen::VectorXd& grad)` (or one returning shardopt::result<double>)");
}

/// A type-erased objective evaluation, so that algorithm bodies compile once (in a .cpp) whatever
/// the objective. Borrows the objective: it must outlive the function.
using evaluate_function = std::function<result<double>(const Eigen::VectorXd&, Eigen::VectorXd&)>;

/// Wraps any objective as an `evaluate_function`.
template <class F>
evaluate_function erase_objective(F& f) {
  check_objective<F>();
  return [&f](const Eigen::VectorXd& theta, Eigen::VectorXd& grad) -> result<double> {
    return f.evaluate(theta, grad);
  };
}

} // namespace shardopt::optimizer
