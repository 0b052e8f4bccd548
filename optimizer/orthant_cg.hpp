#pragma once

// The inner solve of orthant-wise Newton-CG (orthant_newton.cpp), private to the optimizer layer:
// an iterate's L1 figures (F's pseudo-gradient, the free entries and a working set of them, the
// orthant) and Newton's model minimised on the orthant's face by conjugate gradients.

#include "optimizer/pcg.hpp"
#include "optimizer/run.hpp"
#include "optimizer/vector_pool.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <vector>

namespace shardopt::optimizer::detail {

/// A step lets at most as many weights enter from 0 as are non-zero, and at least this many.
constexpr std::int64_t min_entering = 1024;

/// An iterate x of F = f + sum_i c_i |x_i|, seen from its orthant. Every loop over the dimension
/// runs on the pool in its fixed chunks and every sum adds the chunks in order: the same bits on
/// any number of threads.
class orthant {
public:
  /// `c`, the L1 weights, and `pool` outlive this.
  orthant(const Eigen::VectorXd& c, vector_pool& pool) : c_(c), pool_(pool) {}

  /// Takes the iterate x with f's gradient g there: F's pseudo-gradient v (owlqn.hpp's), the free
  /// entries (unpenalised, non-zero, or at 0 with a one-sided derivative that points downhill; the
  /// rest are held at 0 and cost CG no work), the orthant (sign(x_i), or -sign(v_i) at 0), the L1
  /// term and the non-zero count.
  void update(const Eigen::VectorXd& x, const Eigen::VectorXd& g);

  const Eigen::VectorXd& v() const { return v_; }
  double l1() const { return l1_; }
  std::int64_t nonzeros() const { return nonzeros_; }

  /// sum_i c_i |y_i|.
  double l1_of(const Eigen::VectorXd& y);

  /// The norm of F's pseudo-gradient at y for f's gradient g there (this iterate's stays).
  double pseudo_norm(const Eigen::VectorXd& y, const Eigen::VectorXd& g);

  /// Minimises Newton's model of F on the orthant's face, Q(d) = v'd + d'Hd/2 over the free
  /// entries (d = 0 elsewhere), by CG preconditioned by the diagonal m (empty: none), one product
  /// `hessian(p, hp)` per step (counted in `log`), stopped as solve_newton_system stops (LIBLINEAR
  /// 2.50's test on Q's decrease, no positive curvature, the step limit). Leaves d and vd = v'd;
  /// returns the stop a failed product causes. The caller projects x + d onto the orthant.
  std::optional<run_stop> solve(const hessian_function& hessian, run_log& log, const Eigen::VectorXd& m,
                                const pcg_settings& settings, Eigen::VectorXd& d, double& vd);

  /// F's directional derivative from x towards y (both in the orthant): v'(y - x).
  double gain(const Eigen::VectorXd& x, const Eigen::VectorXd& y);

  /// y = the projection of x + scale s onto x's orthant: a penalised entry whose sign would differ
  /// from its orthant's becomes 0.
  void project(const Eigen::VectorXd& x, const Eigen::VectorXd& s, Eigen::VectorXd& y, double scale = 1);

  /// Zeroes the entries of s that do not descend on their own (s_i v_i >= 0; OWL-QN's alignment).
  void align(Eigen::VectorXd& s);

  /// Whether a penalised non-zero entry of x + scale s leaves x's orthant.
  bool crosses(const Eigen::VectorXd& x, const Eigen::VectorXd& s, double scale);

private:
  double side(const Eigen::VectorXd& x, Eigen::Index i) const;

  const Eigen::VectorXd& c_;
  vector_pool& pool_;
  Eigen::VectorXd v_;
  std::vector<unsigned char> free_;  ///< the iterate's free entries
  Eigen::VectorXd r_, z_, p_, hp_;    ///< the solve's residual -v - H d, M^-1 r, direction, H p
  std::vector<double> entering_;      ///< |v| of the weights at 0 that could enter
  double l1_ = 0;
  std::int64_t nonzeros_ = 0;
};

} // namespace shardopt::optimizer::detail
