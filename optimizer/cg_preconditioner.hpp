#pragma once

// The preconditioner of Newton-CG's inner conjugate gradients: a diagonal M (LIBLINEAR's mix of the
// regulariser and the Hessian's diagonal), optionally refined by the limited-memory BFGS inverse of
// pairs (d, H d) sampled from the previous iterate's CG path, taken in the variables M^(1/2) x
// (J. L. Morales and J. Nocedal, "Automatic preconditioning by limited memory quasi-Newton
// updating", SIAM J. Optim. 10, 2000: successive Newton systems share their spectrum's ends, which
// the previous solve has explored).

#include "optimizer/lbfgspp.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <utility>
#include <vector>

namespace shardopt::optimizer {

/// CG's preconditioner at one iterate: P = M^(-1/2) B M^(-1/2), M the iterate's diagonal (the
/// identity without one) and B the BFGS inverse of the previous solve's pairs in the scaled
/// variables (the identity until the first move, or without pairs). It changes only when the
/// iterate does. Costs no pass: the diagonal comes with the iterate's evaluation, and the pairs
/// are products CG asked for anyway.
class cg_preconditioner {
public:
  /// At most `pairs` pairs, fewer where they and the candidates they are sampled from (3 x pairs +
  /// 1 pairs of vectors at most) would take more than `bytes`.
  cg_preconditioner(Eigen::Index dimension, int pairs, std::int64_t bytes);

  /// z = P r, or z = M^-1 r where P r is not finite or not a descent direction for the residual (P
  /// is positive definite, so only overflow or rounding can do that).
  void apply(const Eigen::VectorXd& r, Eigen::VectorXd& z);

  /// The k-th CG direction of a solve at the current iterate and its product. Only directions
  /// past those already offered at this iterate count (a repeated solve walks the same path), and
  /// only those of positive curvature (the BFGS inverse then stays positive definite) with normal
  /// finite s'y, y'y and ratios. Candidates are thinned to every other one when they exceed twice
  /// the pairs, so they stay evenly spaced.
  void offer(int k, const Eigen::VectorXd& d, const Eigen::VectorXd& hd, double curvature);

  /// The iterate moved, with the diagonal `m` (positive entries; empty: none): the pairs offered
  /// at the last one make the preconditioner of the new one.
  void moved(const Eigen::VectorXd& m);

  /// As `moved(m)`, taking m's memory instead of copying it: m is left with the previous
  /// diagonal's (contents unspecified), for the next evaluation's diagonal to overwrite. A Newton
  /// run keeps two diagonals of the dimension this way, not three.
  void moved_swapping(Eigen::VectorXd& m);

  /// The diagonal in use (empty: none), and whether pairs refine it.
  const Eigen::VectorXd& diagonal() const { return m_; }
  bool has_pairs() const { return built_; }

  /// The pairs it may keep (after the memory bound).
  int capacity() const { return pairs_; }

  /// Keeps a copy of the pairs in use (for a saved run's state; twice their memory) from now on.
  void keep_pairs() { keep_ = true; }
  /// The pairs in use, oldest first (empty unless kept, and before the first move).
  const std::vector<Eigen::VectorXd>& pairs_s() const { return chosen_s_; }
  const std::vector<Eigen::VectorXd>& pairs_y() const { return chosen_y_; }
  /// Puts a saved run's pairs in use with the iterate's diagonal `m`, as `moved(m)` had made them.
  void restore(const std::vector<Eigen::VectorXd>& s, const std::vector<Eigen::VectorXd>& y,
               const Eigen::VectorXd& m);

private:
  /// `moved`'s work once m_ holds the new diagonal.
  void move_to_diagonal();

  /// Builds the BFGS matrix from raw pairs (d, H d), in the variables M^(1/2) x.
  void build(const std::vector<const Eigen::VectorXd*>& s, const std::vector<const Eigen::VectorXd*>& y);

  Eigen::Index n_;
  Eigen::VectorXd m_, root_;  // the diagonal and its square root (empty: none)
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
