#pragma once

// The preconditioner of Newton-CG's inner conjugate gradients: the limited-memory BFGS inverse of
// pairs (d, H d) sampled from the previous iterate's CG path (J. L. Morales and J. Nocedal,
// "Automatic preconditioning by limited memory quasi-Newton updating", SIAM J. Optim. 10, 2000:
// successive Newton systems share their spectrum's ends, which the previous solve has explored).

#include "optimizer/lbfgspp.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <utility>
#include <vector>

namespace shardopt::optimizer {

/// CG's preconditioner at one iterate. It changes only when the iterate does, so every solve at an
/// iterate walks the same path (the replay of products relies on it). Until the first move it is
/// the identity. Costs no pass: the pairs are products CG asked for anyway.
class cg_preconditioner {
public:
  /// At most `pairs` pairs, fewer where they and the candidates they are sampled from (3 x pairs +
  /// 1 pairs of vectors at most) would take more than `bytes`.
  cg_preconditioner(Eigen::Index dimension, int pairs, std::int64_t bytes);

  /// z = P r, or z = r where P r is not finite or not a descent direction for the residual (P is
  /// positive definite, so only overflow or rounding can do that). A function of r alone while
  /// the iterate stays, as the replay needs.
  void apply(const Eigen::VectorXd& r, Eigen::VectorXd& z);

  /// The k-th CG direction of a solve at the current iterate and its product. Only directions
  /// past those already offered at this iterate count (a repeated solve walks the same path), and
  /// only those of positive curvature (the BFGS inverse then stays positive definite) with normal
  /// finite s'y, y'y and ratios. Candidates are thinned to every other one when they exceed twice
  /// the pairs, so they stay evenly spaced.
  void offer(int k, const Eigen::VectorXd& d, const Eigen::VectorXd& hd, double curvature);

  /// The iterate moved: the pairs offered at the last one make the preconditioner of the new one.
  void moved();

  /// The pairs it may keep (after the memory bound).
  int capacity() const { return pairs_; }

  /// Keeps a copy of the pairs in use (for a saved run's state; twice their memory) from now on.
  void keep_pairs() { keep_ = true; }
  /// The pairs in use, oldest first (empty unless kept, and before the first move).
  const std::vector<Eigen::VectorXd>& pairs_s() const { return chosen_s_; }
  const std::vector<Eigen::VectorXd>& pairs_y() const { return chosen_y_; }
  /// Puts a saved run's pairs in use, as `moved()` had made them.
  void restore(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y);

private:
  Eigen::Index n_;
  int pairs_;
  bfgs_matrix bfgs_;  // holds no pairs until built_
  bool built_ = false;
  std::vector<std::pair<Eigen::VectorXd, Eigen::VectorXd>> candidates_;
  int offered_ = 0;  // directions of this iterate's path seen so far
  int stride_ = 1;   // candidates are the directions k with k % stride_ == 0
  bool keep_ = false;
  std::vector<Eigen::VectorXd> chosen_s_, chosen_y_;  // the pairs in use, when kept
};

} // namespace shardopt::optimizer
