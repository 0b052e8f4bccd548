#pragma once

// The parameter server: spawning one, and what its config means for the update rule (the protocol,
// its message types and its state diagram are in wire/ps_protocol.hpp; its state and transitions in
// ps_state.hpp).

#include "actors/wire/ps_protocol.hpp"
#include "base/result.hpp"
#include "optimizer/sgd.hpp"

namespace shardopt::actors {

/// The update rule a config names (its fields are not validated here; see `check_config`).
optimizer::update_rule rule_of(const ps_config& config);
/// Copies a rule into a config's rule fields.
void set_rule(ps_config& config, const optimizer::update_rule& rule);

/// Checks a config before a PS accepts it: slice bounds, rule and schedule codes, replica counts,
/// positive rates. The failure says what is wrong.
result<void> check_config(const ps_config& config);

/// Spawns a parameter server of the job whose capability is `token`, in state `waiting`. It exits
/// by itself at the end of training; its exit reason is normal after a finished run and carries
/// the failure message otherwise.
ps_actor spawn_parameter_server(caf::actor_system& system, const access_token& token);

} // namespace shardopt::actors
