#pragma once

// What the shrinking rounds of OWL-QN (owlqn_shrinking.cpp) and orthant-wise Newton-CG
// (orthant_shrinking.cpp) share, private to the optimizer layer: the full evaluations that decide
// the stops, the working set and its restriction, the hook that counts a round's iterations as
// the run's, and the end of a round.

#include "optimizer/owlqn.hpp"
#include "optimizer/run.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace shardopt::optimizer::detail {

/// The stopping tests of a run with shrinking rounds (its solver's options).
struct l1_stops {
  double epsilon = 0;
  double epsilon_rel = 0;
  int max_iterations = 0;
  int past = 0;
  double delta = 0;
};

class l1_rounds {
protected:
  l1_rounds(const evaluate_function& f, const restrict_function& restrict, const Eigen::VectorXd& c,
            const iteration_hook& hook, l1_stops stops)
    : f_(f), restrict_(restrict), c_(c), hook_(hook), stops_(stops) {}

  double seconds() const {
    return earlier_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  /// Continues a saved run's counts, clock and objective history at x, with its F and gradient.
  void resume(const Eigen::VectorXd& x, double f, const Eigen::VectorXd& grad, int iterations, int evaluations,
              int products, double seconds, std::vector<double> history);

  /// F and f's gradient at x in full, with the figures the result reports.
  std::optional<run_stop> evaluate_full(const Eigen::VectorXd& x);

  /// A saved state's fields that both solvers' rounds hold at x (its counts, clock, F, gradient and
  /// the objective-change test's ring), for a state handed out at a round's start.
  template <class State>
  void fill_state(State& state, const Eigen::VectorXd& x) const {
    state.iterations = info_.iteration;
    state.evaluations = info_.evaluations;
    state.seconds = seconds();
    state.f = fx_;
    state.theta = x;
    state.grad = g_;
    state.f_history = ring_;
  }

  /// The pseudo-gradient's figures at x from the kept g_ and fx_.
  void figures(const Eigen::VectorXd& x);

  /// The gradient tests on the full pseudo-gradient, and the iteration limit.
  std::optional<run_stop> finished(const Eigen::VectorXd& x) const;

  /// max(epsilon, epsilon_rel ||x||): where a round stops at the latest, and the run with it.
  double stop_threshold(const Eigen::VectorXd& x) const;

  /// The restriction to the working set at x (the entries unpenalised, not 0, or whose
  /// pseudo-gradient is not 0), its entries checked against x's size; else the stop. With
  /// `entering` > 0, of the entries at 0 those of the `entering` largest |pseudo-gradient| enter
  /// the set (ties at the last all enter), and `capped_` says whether any was left out.
  std::optional<run_stop> restrict_working_set(const Eigen::VectorXd& x, restricted_objective& out,
                                               std::int64_t entering = 0);

  /// A round starts at the run's current iterations and products, and at `evaluations` (the run's
  /// count less those the round counts again: OWL-QN's round counts the full evaluation it starts
  /// from).
  void begin_round(int evaluations);

  /// Evaluations a round that is run again spent before (counted on top of the round's own).
  void spent(int evaluations) { base_evaluations_ += evaluations; }

  /// The iteration hook of a round: it counts the round's iterations, evaluations and products on
  /// top of the run's at `begin_round`, asks the run's hook and the objective-change test, and
  /// sets `outer_stop` where either ends the run.
  iteration_hook forward(std::optional<run_stop>& outer_stop);

  /// The run's counts after a round that made `evaluations` and `products`.
  void count_round(int evaluations, int products);

  /// After a round that took steps: the full evaluation at x, and where it did not lower F below
  /// `round_start` (the compact problem's sums and the full one's differ in the last bits), x and
  /// the figures back at the round's start (`start` on `entries`) and the run's end.
  std::optional<run_stop> close_round(Eigen::VectorXd& x, const std::vector<Eigen::Index>& entries,
                                      const Eigen::VectorXd& start, double round_start);

  const evaluate_function& f_;
  const restrict_function& restrict_;
  const Eigen::VectorXd& c_;
  const iteration_hook& hook_;
  const l1_stops stops_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double earlier_ = 0;
  iteration_info info_;
  std::vector<double> ring_;
  double fx_ = 0;
  Eigen::VectorXd g_, pg_, g_start_;
  std::vector<Eigen::Index> wanted_;
  std::vector<double> magnitudes_;
  bool capped_ = false;  ///< the last working set left out entries that could enter

private:
  int base_iterations_ = 0;
  int base_evaluations_ = 0;
  int base_products_ = 0;
};

} // namespace shardopt::optimizer::detail
