#pragma once

// The L-BFGS inverse-Hessian approximation with each correction pair stored on its support: the
// entries where s or y is not zero. OWL-QN's pairs are sparse when its model is: a weight held at 0
// on both sides of a step has s = 0 and no y (owlqn.cpp), so with an L1 penalty a pair touches the
// weights that are or were just non-zero, a few thousand of millions on hashed text. LBFGS++'s
// BFGSMat (lbfgspp.hpp) keeps dense columns and spends 4m passes over the dimension on every
// direction, and the dimension's memory for every pair; here a direction costs two passes over
// the dimension and 4m passes over the supports. The recursion is LBFGS++'s (Nocedal and Wright,
// Algorithm 7.4, H0 = (s'y / y'y) I from the newest pair).

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::optimizer {

class sparse_bfgs {
public:
  /// Forgets every pair; the matrix is for vectors of `dimension`, keeping at most `pairs`.
  void reset(Eigen::Index dimension, int pairs);
  /// Stages the pair (s, y) for `commit` and returns its s'y: the support (the entries where s or
  /// y is not zero) is found among `candidates` (lists of increasing indices, each list's after
  /// the one before, that hold every such entry; null: the whole dimension), and s'y is summed over
  /// it in increasing order, on one thread. The same pair gives the same bits whichever candidates
  /// held it, so a run and its resume (which replays dense pairs) agree. A pair over more than
  /// half the dimension is stored dense.
  double stage(const Eigen::VectorXd& s, const Eigen::VectorXd& y,
               const std::vector<std::vector<Eigen::Index>>* candidates = nullptr);
  /// Adds the pair last staged (its s'y must be positive), the oldest dropped beyond `pairs`.
  void commit();
  /// s'y as `stage` sums it, without staging (for checking a saved pair).
  static double curvature(const Eigen::VectorXd& s, const Eigen::VectorXd& y);
  /// out = a H v, H the inverse Hessian approximation (a v without pairs).
  void apply(const Eigen::VectorXd& v, double a, Eigen::VectorXd& out);
  int pairs() const { return count_; }
  /// The newest pair on its support (the entries where s or y is not zero, increasing) into
  /// `index`, `s`, `y`; all three empty without pairs.
  void newest(std::vector<Eigen::Index>& index, std::vector<double>& s, std::vector<double>& y) const;
  /// Entries the pairs store, over all of them (for the tests; dense pairs count the dimension).
  std::int64_t stored() const;

private:
  struct pair {
    bool dense = false;
    std::vector<Eigen::Index> index;  // the support, increasing (none when dense)
    std::vector<double> s, y;         // s and y on the support (or everywhere)
    double ys = 0;                    // s'y
    double alpha = 0;                 // the recursion's first-loop coefficient
  };

  /// p's vector `values` (p.s or p.y) dotted with out.
  static double dot(const pair& p, const std::vector<double>& values, const Eigen::VectorXd& out);
  /// out += a * p's vector `values`.
  static void axpy(const pair& p, const std::vector<double>& values, double a, Eigen::VectorXd& out);

  Eigen::Index dimension_ = 0;
  std::vector<pair> ring_;  // capacity `pairs`; the newest at (next_ - 1) mod size
  pair staged_;             // the pair `stage` built, until `commit`
  bool staged_ready_ = false;
  int next_ = 0;
  int count_ = 0;
  double theta_ = 1;  // y'y / s'y of the newest pair
};

} // namespace shardopt::optimizer
