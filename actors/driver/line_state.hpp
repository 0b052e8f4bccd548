#pragma once

// Internal to the sharded objective's source (objective_state.hpp): the last two successful
// evaluations, at which products are taken and between which lines run, and which peers have not
// served them (those get the thetas with their request). Not part of the actors library's
// interface.

#include "actors/wire/messages.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardopt::actors {

/// The last two successful evaluations (products are taken at the last, lines run between the
/// two), and which peers have not served them.
struct line_state {
  /// Peer i was put in place since the last evaluations: it has served neither, so products and
  /// lines bring their thetas.
  void mark_fresh(std::size_t i) {
    if (i < needs_theta.size())
      needs_theta[i] = true;
    if (i < needs_previous.size())
      needs_previous[i] = true;
  }

  /// An evaluation over `peers` peers starts: the last one becomes the one before it (a line runs
  /// between the two), and the new one is served by none yet.
  void start_evaluation(std::size_t peers) {
    previous_theta = std::exchange(evaluated_theta, dense_vector{});
    previous_round = evaluated_round;
    needs_previous = needs_theta;
    if (needs_previous.size() != peers)
      needs_previous.assign(peers, true);
    needs_theta.assign(peers, false);
  }

  /// The evaluation failed: no line runs across it.
  void failed() { previous_theta = dense_vector{}; }

  /// The evaluation at `theta` succeeded in round `round`. When some of the `peers` were asked
  /// directly (`fell_back`), they answered another round's number: products bring the theta.
  void evaluated(dense_vector theta, std::uint64_t round, bool fell_back, std::size_t peers) {
    if (fell_back)
      needs_theta.assign(peers, true);
    evaluated_theta = std::move(theta);
    evaluated_round = round;
  }

  /// Every one of the `peers` served a product: each keeps the curvature.
  void products_served(std::size_t peers) { needs_theta.assign(peers, false); }

  /// Every one of the `peers` served a line: each holds both evaluations.
  void lines_served(std::size_t peers) {
    needs_theta.assign(peers, false);
    needs_previous.assign(peers, false);
  }

  dense_vector evaluated_theta, previous_theta;
  std::uint64_t evaluated_round = 0, previous_round = 0;
  std::vector<bool> needs_theta, needs_previous;
};

} // namespace shardopt::actors
