#pragma once

#include "base/result.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

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
///
/// Optional, for second-order methods (Newton-CG):
///
/// - `R hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv)` — the Hessian of the
///   objective at the theta of the most recent `evaluate`, times v, into `hv`. R is `void` or
///   `shardopt::result<void>`. `check_hessian_objective<F>()` names what a type lacks.
///
/// Optional, and used by Newton's method where present:
///
/// - `R evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
///   Eigen::VectorXd& diagonal)` — `evaluate`, and the Hessian's diagonal at theta (its CG
///   preconditioner, as LIBLINEAR's). R as for `evaluate`.
/// - `R line_values(const std::vector<double>& alphas, std::vector<double>& values)` — the
///   objective at theta_a + alpha (theta_b - theta_a) for each alpha, where theta_b and theta_a are
///   the points of the last two evaluations, without a pass over the data (a linear model's scores
///   are affine in theta): a backtracking line search costs no passes. R as for
///   `hessian_vector`.
///
/// Optional, and used by OWL-QN's and orthant-wise Newton-CG's shrinking where present (owlqn.hpp):
///
/// - `bool can_restrict() const` and `result<T> restrict(const std::vector<Eigen::Index>& wanted)`
///   — the objective on (at least) the entries `wanted` of theta, the others held at 0: T has
///   `entries` (theta's entries the compact problem holds, increasing) and `evaluate(theta, grad)`
///   over vectors of entries.size(), returning double or `shardopt::result<double>`; for
///   Newton-CG also `hessian`, `diagonal` and `line` functions, the compact problem's
///   `hessian_vector`, `evaluate_diagonal` and `line_values`.
template <class F, class = void>
struct has_restrict : std::false_type {};

template <class F>
struct has_restrict<F, std::void_t<decltype(std::declval<F&>().restrict(std::declval<const std::vector<Eigen::Index>&>())),
                                   decltype(std::declval<const F&>().can_restrict())>> : std::true_type {};

/// Whether a restriction `R` carries the compact problem's `hessian`, `diagonal` and `line`.
template <class R, class = void>
struct has_restricted_hessian : std::false_type {};

template <class R>
struct has_restricted_hessian<R, std::void_t<decltype(std::declval<R&>().hessian), decltype(std::declval<R&>().diagonal),
                                             decltype(std::declval<R&>().line)>> : std::true_type {};

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

template <class F, class = void>
struct has_hessian_vector : std::false_type {};

template <class F>
struct has_hessian_vector<F, std::void_t<decltype(std::declval<F&>().hessian_vector(
                               std::declval<const Eigen::VectorXd&>(), std::declval<Eigen::VectorXd&>()))>>
  : std::bool_constant<
      std::is_void_v<decltype(std::declval<F&>().hessian_vector(std::declval<const Eigen::VectorXd&>(),
                                                                 std::declval<Eigen::VectorXd&>()))>
      || std::is_same_v<decltype(std::declval<F&>().hessian_vector(std::declval<const Eigen::VectorXd&>(),
                                                                    std::declval<Eigen::VectorXd&>())),
                        result<void>>> {};

/// Compile-time check that F is an objective with Hessian-vector products.
template <class F>
constexpr void check_hessian_objective() {
  check_objective<F>();
  static_assert(has_hessian_vector<F>::value,
                "not a second-order objective: missing `void hessian_vector(const Eigen::VectorXd& v, "
                "Eigen::VectorXd& hv)` (or one returning shardopt::result<void>)");
}

template <class F, class = void>
struct has_diagonal : std::false_type {};

template <class F>
struct has_diagonal<F, std::void_t<decltype(std::declval<F&>().evaluate_diagonal(
                         std::declval<const Eigen::VectorXd&>(), std::declval<Eigen::VectorXd&>(),
                         std::declval<Eigen::VectorXd&>()))>> : std::true_type {};

template <class F, class = void>
struct has_line_values : std::false_type {};

template <class F>
struct has_line_values<F, std::void_t<decltype(std::declval<F&>().line_values(
                            std::declval<const std::vector<double>&>(), std::declval<std::vector<double>&>()))>>
  : std::true_type {};

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

/// A type-erased Hessian-vector product (see the optional part of the concept).
using hessian_function = std::function<result<void>(const Eigen::VectorXd&, Eigen::VectorXd&)>;

/// Wraps a second-order objective's product as a `hessian_function`. Borrows the objective.
template <class F>
hessian_function erase_hessian(F& f) {
  check_hessian_objective<F>();
  return [&f](const Eigen::VectorXd& v, Eigen::VectorXd& hv) -> result<void> {
    if constexpr (std::is_void_v<decltype(f.hessian_vector(v, hv))>) {
      f.hessian_vector(v, hv);
      return {};
    } else {
      return f.hessian_vector(v, hv);
    }
  };
}

/// A type-erased evaluation with the Hessian's diagonal (see the optional part of the concept).
using diagonal_function =
  std::function<result<double>(const Eigen::VectorXd&, Eigen::VectorXd&, Eigen::VectorXd&)>;

/// Wraps an objective's `evaluate_diagonal`, or gives an empty function for one without it.
template <class F>
diagonal_function erase_diagonal(F& f) {
  if constexpr (has_diagonal<F>::value) {
    return [&f](const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) -> result<double> {
      return f.evaluate_diagonal(theta, grad, diagonal);
    };
  } else {
    return {};
  }
}

/// Type-erased line values (see the optional part of the concept).
using line_function = std::function<result<void>(const std::vector<double>&, std::vector<double>&)>;

/// Wraps an objective's `line_values`, or gives an empty function for one without them.
template <class F>
line_function erase_line(F& f) {
  if constexpr (has_line_values<F>::value) {
    return [&f](const std::vector<double>& alphas, std::vector<double>& values) -> result<void> {
      if constexpr (std::is_void_v<decltype(f.line_values(alphas, values))>) {
        f.line_values(alphas, values);
        return {};
      } else {
        return f.line_values(alphas, values);
      }
    };
  } else {
    return {};
  }
}

} // namespace shardopt::optimizer
