#pragma once

// Internal to the optimizer: what the two resumable L-BFGS loops (lbfgs.cpp, and OWL-QN's in
// owlqn.cpp) share about their saved states, and OWL-QN's checks (owlqn_shrinking.cpp's too). Not
// part of the interface.

#include "optimizer/lbfgs.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <functional>
#include <optional>
#include <vector>

namespace shardopt::optimizer::detail {

/// OWL-QN's options and penalty checked for a problem of n entries (owlqn.cpp): the failure names
/// the first misfit.
result<void> check_owlqn(const lbfgs_options& options, const Eigen::VectorXd& l1, Eigen::Index n);

/// A correction pair on its support: the entries where s or y is not zero, increasing.
struct sparse_pair {
  std::vector<Eigen::Index> index;
  std::vector<double> s, y;
};

/// minimize_owlqn_erased, with the newest pair of the run's memory at its end into `newest` when
/// given (empty without pairs): OWL-QN's shrinking starts its next round from it.
result<run_result> minimize_owlqn_keeping_newest(const evaluate_function& f, Eigen::VectorXd& theta,
                                                 const lbfgs_options& options, const Eigen::VectorXd& l1,
                                                 const iteration_hook& hook, const lbfgs_session& session,
                                                 sparse_pair* newest);

/// Continues a saved run: its iterate, objective and gradient into x, f, grad, its pairs replayed
/// through `add_pair`, oldest first, into the loop's matrix (the same bits of direction as the run
/// it continues), its counts, clock and `--past` ring into `log`, and its pairs into `kept` (the
/// copy the session's states hold) when the session saves states.
void resume_memory(const lbfgs_state& saved, Eigen::VectorXd& x, double& f, Eigen::VectorXd& grad,
                   const std::function<void(const Eigen::VectorXd&, const Eigen::VectorXd&)>& add_pair, run_log& log,
                   lbfgs_state& kept, const lbfgs_session& session);

/// Hands the session the state after an iteration (nothing without `on_state`): `state` gains the
/// pair (s, y) when `s` is given (the oldest dropped beyond `history`) and x, grad, f with the
/// log's counts, unless the state is not `last` and the session's `due` says it is not wanted now.
/// A failed save is the run's stop.
std::optional<run_stop> hand_out(const lbfgs_session& session, lbfgs_state& state, const Eigen::VectorXd* s,
                                 const Eigen::VectorXd* y, int history, const Eigen::VectorXd& x,
                                 const Eigen::VectorXd& grad, double f, const run_log& log, bool last);

} // namespace shardopt::optimizer::detail
