#pragma once

// An objective with some entries of theta held at zero: a linear model fitted without biases
// (LIBLINEAR's -s 0 without -B, scikit-learn's fit_intercept=False).

#include "base/result.hpp"
#include "optimizer/objective.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardopt::optimizer {

/// Any objective (objective.hpp), restricted to the entries of theta that are not `held`: its
/// gradient, Hessian-vector products and Hessian's diagonal are 0 at the held entries (a diagonal
/// of 0 is left out of the preconditioner's mean and given its identity part). Every solver of
/// this layer then moves theta only in the other entries (its steps, CG's vectors and L-BFGS's
/// pairs are all 0 at the held ones), so entries that start at 0 stay 0, and the run minimises f
/// over the subspace where they are 0. The optional members (diagonal, line values) are there when
/// `F` has them. With no entry held it changes nothing.
template <class F>
class held_at_zero {
public:
  /// `held`: indices into theta, each in [0, f.dimension()).
  held_at_zero(F& f, std::vector<Eigen::Index> held) : f_(f), held_(std::move(held)) {}

  std::int64_t dimension() const { return f_.dimension(); }

  /// Sets the held entries of `theta` to 0 (the start of a run).
  void clear(Eigen::VectorXd& theta) const { zero(theta); }

  auto evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    auto f = f_.evaluate(theta, grad);
    zero(grad);
    return f;
  }

  template <class G = F, std::enable_if_t<has_hessian_vector<G>::value, int> = 0>
  auto hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
    if constexpr (std::is_void_v<decltype(f_.hessian_vector(v, hv))>) {
      f_.hessian_vector(v, hv);
      zero(hv);
    } else {
      auto done = f_.hessian_vector(v, hv);
      zero(hv);
      return done;
    }
  }

  template <class G = F, std::enable_if_t<has_diagonal<G>::value, int> = 0>
  auto evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad, Eigen::VectorXd& diagonal) {
    auto f = f_.evaluate_diagonal(theta, grad, diagonal);
    zero(grad);
    zero(diagonal);
    return f;
  }

  template <class G = F, std::enable_if_t<has_line_values<G>::value, int> = 0>
  auto line_values(const std::vector<double>& alphas, std::vector<double>& values) {
    return f_.line_values(alphas, values);
  }

  /// Whether the objective can restrict itself (shrinking, owlqn.hpp).
  template <class G = F, std::enable_if_t<has_restrict<G>::value, int> = 0>
  bool can_restrict() const {
    return f_.can_restrict();
  }

  /// The objective's restriction, with the held entries among its `entries` zeroed in the compact
  /// gradient, products and diagonal too.
  template <class G = F, std::enable_if_t<has_restrict<G>::value, int> = 0>
  auto restrict(const std::vector<Eigen::Index>& wanted) {
    auto made = f_.restrict(wanted);
    if (made) {
      std::vector<Eigen::Index> positions;
      for (const auto i : held_) {
        const auto at = std::lower_bound(made->entries.begin(), made->entries.end(), i);
        if (at != made->entries.end() && *at == i)
          positions.push_back(at - made->entries.begin());
      }
      made->evaluate = [inner = std::move(made->evaluate), positions](const Eigen::VectorXd& theta,
                                                                        Eigen::VectorXd& grad) {
        auto f = inner(theta, grad);
        if (grad.size() == theta.size())
          for (const auto p : positions)
            grad[p] = 0;
        return f;
      };
      if constexpr (has_restricted_hessian<std::decay_t<decltype(*made)>>::value) {
        if (made->hessian)
          made->hessian = [inner = std::move(made->hessian), positions](const Eigen::VectorXd& v, Eigen::VectorXd& hv) {
            auto done = inner(v, hv);
            if (hv.size() == v.size())
              for (const auto p : positions)
                hv[p] = 0;
            return done;
          };
        if (made->diagonal)
          made->diagonal = [inner = std::move(made->diagonal), positions](const Eigen::VectorXd& theta,
                                                                          Eigen::VectorXd& grad, Eigen::VectorXd& d) {
            auto f = inner(theta, grad, d);
            if (grad.size() == theta.size() && d.size() == theta.size())
              for (const auto p : positions)
                grad[p] = d[p] = 0;
            return f;
          };
      }
    }
    return made;
  }

private:
  /// Zeroes the held entries of a vector of the dimension (a failed evaluation may leave `v`
  /// unsized: it is then left alone).
  void zero(Eigen::VectorXd& v) const {
    if (v.size() != f_.dimension())
      return;
    for (const auto i : held_)
      v[i] = 0;
  }

  F& f_;
  std::vector<Eigen::Index> held_;
};

} // namespace shardopt::optimizer
