#include "apps/modes.hpp"

namespace shardopt::apps {

std::string_view to_string(train_mode mode) {
  return mode == train_mode::ps ? "ps" : "lbfgs";
}

std::string_view to_string(solver_kind solver) {
  return solver == solver_kind::newton_cg ? "newton-cg" : "lbfgs";
}

std::string_view to_string(data_placement placement) {
  return placement == data_placement::node_local ? "node-local" : "shipped";
}

} // namespace shardopt::apps
