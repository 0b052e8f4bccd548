#include "apps/run/modes.hpp"

namespace shardopt::apps {

std::string_view to_string(train_mode mode) {
  return mode == train_mode::ps ? "ps" : "lbfgs";
}

std::string_view to_string(solver_kind solver) {
  switch (solver) {
    case solver_kind::automatic:
      return "auto";
    case solver_kind::newton_cg:
      return "newton-cg";
    case solver_kind::owlqn:
      return "owlqn";
    default:
      return "lbfgs";
  }
}

std::string_view to_string(step_kind step) {
  switch (step) {
    case step_kind::line_search:
      return "line-search";
    case step_kind::trust_region:
      return "trust-region";
    default:
      return "auto";
  }
}

std::string_view to_string(data_placement placement) {
  return placement == data_placement::node_local ? "node-local" : "shipped";
}

} // namespace shardopt::apps
