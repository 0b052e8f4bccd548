#pragma once

// Optimizer tests' sessions: one that keeps a copy of every state a run hands out.

#include "optimizer/run.hpp"

#include <vector>

namespace shardopt::test {

/// A session of any solver's `State` that copies every state the run hands out into `states`.
template <class State>
optimizer::solver_session<State> keep_states(std::vector<State>& states) {
  optimizer::solver_session<State> session;
  session.on_state = [&states](const State& state, bool) -> result<void> {
    states.push_back(state);
    return {};
  };
  return session;
}

} // namespace shardopt::test
