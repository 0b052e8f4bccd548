#pragma once

#include "actors/wire/runtime.hpp"
#include "model/dataset.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace shardopt::optimizer {
class vector_pool;
}

namespace shardopt::actors {

/// The full objective of a model over data split across shard actors:
/// f(theta) = (1/n) sum over shards of loss_sum + (lambda/2) ||W||^2.
///
/// Each evaluation sends one request per shard (theta shared, not copied, within the process), waits
/// for every reply within a timeout, and adds the replies in shard order, so the result is bit for
/// bit the same whatever order they arrive in. Shards are monitored: one that dies is noticed at
/// once (not at the timeout). A shard that dies (without a way to recreate it), errs or times out
/// makes the evaluation fail with a message naming the shard; it never hangs. Satisfies the
/// optimizer's objective concept, with Hessian-vector products for the linear models. Blocks the calling thread (a driver thread, never an actor).
class sharded_objective {
public:
  /// Spawns one local shard actor per block of `data` (shared, never copied).
  static sharded_objective local(runtime& rt, model::model_shape shape, double lambda,
                                 std::shared_ptr<const model::dataset> data,
                                 const std::vector<model::row_range>& blocks,
                                 std::chrono::milliseconds timeout);

  sharded_objective(sharded_objective&&) noexcept;
  sharded_objective& operator=(sharded_objective&&) noexcept;
  ~sharded_objective();

  std::int64_t dimension() const;
  std::size_t shard_count() const;

  /// How many shards were recreated after going down (remote shards with a factory only).
  std::size_t recreated_shards() const;

  /// Seconds spent in rounds, waiting for the peers' answers (adding those that arrived while
  /// others computed): the rest of a solve's time is the driver's alone, its serial share.
  double round_seconds() const;

  /// The objective at theta; overwrites grad.
  result<double> evaluate(const Eigen::VectorXd& theta, Eigen::VectorXd& grad);

  /// `evaluate`, and the Hessian's diagonal at theta (linear models; lambda at the weights
  /// included): the shards sum it in the same pass, on grids of its own after the gradient's.
  result<double> evaluate_diagonal(const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                   Eigen::VectorXd& diagonal);

  /// The Hessian of the objective at the theta of the last successful `evaluate`, times v, into hv
  /// (linear models only): one request per shard, summed in shard order, so the same bits whatever
  /// order replies arrive in. A shard recreated since that evaluation is sent its theta with the
  /// request and rebuilds what it needs first, so a lost shard costs a resend, not the run.
  result<void> hessian_vector(const Eigen::VectorXd& v, Eigen::VectorXd& hv);

  /// The objective at theta_a + alpha (theta_b - theta_a) for each alpha, theta_b and theta_a being
  /// the last two successful evaluations' points (linear models): each shard sums its losses at
  /// the scores it kept of both, a pass over its examples, not its features. One request per peer
  /// (directly, also in a tree), summed in block order.
  result<void> line_values(const std::vector<double>& alphas, std::vector<double>& values);

  /// Work over the dimension (adding the shards' sums, turning them into doubles) on `pool`'s
  /// threads (null: the calling thread's alone); the results are the same bits.
  void use_threads(optimizer::vector_pool* pool);

  /// Whether `restrict` works: a linear model whose maker said how to restrict it (`local`,
  /// cluster::ship, cluster::read_on_nodes).
  bool can_restrict() const;

  /// The objective on some entries of theta, the others held at 0 (OWL-QN's and orthant-wise
  /// Newton-CG's shrinking, optimizer/owlqn.hpp): `entries` (theta's, in the compact problem's
  /// order) and `evaluate`, `hessian`, `diagonal` and `line`, over vectors of entries.size().
  struct restriction {
    std::vector<Eigen::Index> entries;
    std::int64_t nonzeros = 0;  ///< the compact data's, when the driver made a copy (else 0)
    std::function<result<double>(const Eigen::VectorXd&, Eigen::VectorXd&)> evaluate;
    /// The compact objective's products, evaluation with the diagonal and line values
    /// (orthant-wise Newton-CG's shrinking).
    std::function<result<void>(const Eigen::VectorXd&, Eigen::VectorXd&)> hessian;
    std::function<result<double>(const Eigen::VectorXd&, Eigen::VectorXd&, Eigen::VectorXd&)> diagonal;
    std::function<result<void>(const std::vector<double>&, std::vector<double>&)> line;
  };

  /// Restricts to the features of the entries `wanted` (increasing): every output's weights on
  /// them and the biases. An objective of the same blocks over those columns of the data
  /// (model::restrict_columns), made as this one was (local shard actors, shards shipped to the
  /// nodes that hold this objective's, or made there from the shards they hold), that lives until
  /// the next restriction (or this objective's end): the same bits for any number of shards and
  /// any placement, as this objective's. When nodes holding their own data cannot make it (a
  /// node draining, its limits), the restriction evaluates through this objective, its other
  /// entries at 0 (and says so through the maker's log): what a plain run costs, for that round;
  /// its products and lines then run at those full evaluations.
  result<restriction> restrict(const std::vector<Eigen::Index>& wanted);

  /// The compact columns of a restriction, made on the driver when first asked for (the same
  /// dataset after that); null when the driver holds no data.
  using columns_fn = std::function<std::shared_ptr<const model::dataset>()>;

  /// How a restriction's objective is made: over `shape` (the kept features, `features` of this
  /// objective's) and `columns` (their columns, renumbered; the same rows), or from what the
  /// shards hold (on nodes, which restrict them; the driver's copy is then not made).
  using rebuild_fn = std::function<result<sharded_objective>(model::model_shape shape,
                                                             const std::vector<std::int64_t>& features,
                                                             const columns_fn& columns)>;

  /// Lets `restrict` work, over `data` (this objective's, all of it; null: the shards hold it) and
  /// `build`. For the makers of objectives (`local`, cluster::ship, cluster::read_on_nodes).
  void restrict_through(std::shared_ptr<const model::dataset> data, rebuild_fn build);

  /// Accuracy counts / squared errors over all shards' examples at theta.
  result<model::quality_sums> quality(const Eigen::VectorXd& theta);

  /// The CAF side of the objective; defined in sharded_objective.cpp (see peers.hpp for builders).
  struct impl;
  explicit sharded_objective(std::unique_ptr<impl> state);
  impl& state() { return *impl_; }
  const impl& state() const { return *impl_; }

private:
  /// An evaluation over the shards of `s` alone (static: a restriction through this objective
  /// points to its state, which stays where it is when the objective moves; the restriction must
  /// not outlive the objective).
  static result<double> evaluate_at(impl& s, const Eigen::VectorXd& theta, Eigen::VectorXd& grad,
                                    Eigen::VectorXd* diagonal);
  /// A Hessian-vector product and line values over the shards of `s` alone (static, as above).
  static result<void> hessian_at(impl& s, const Eigen::VectorXd& v, Eigen::VectorXd& hv);
  static result<void> line_at(impl& s, const std::vector<double>& alphas, std::vector<double>& values);

  /// A restriction to `entries` that evaluates this objective with its other entries at 0.
  restriction through_this(std::vector<Eigen::Index> entries);

  /// The data a restriction copies columns of, and how it makes its compact objective.
  struct restrict_source {
    std::shared_ptr<const model::dataset> data;
    rebuild_fn build;
  };

  std::unique_ptr<impl> impl_;
  std::shared_ptr<const restrict_source> source_;  // objectives over data the driver holds
  std::size_t restricted_recreated_ = 0;           // shards recreated by compact objectives ended
  std::unique_ptr<sharded_objective> restricted_;  // the last restriction's compact objective
  double restricted_seconds_ = 0;                  // round seconds of compact objectives ended
  optimizer::vector_pool* pool_ = nullptr;
};

} // namespace shardopt::actors
