// The parameter-server configuration message: update-rule fields and their validation.

#include "actors/ps/parameter_server.hpp"

#include <cmath>

namespace shardopt::actors {

optimizer::update_rule rule_of(const ps_config& config) {
  optimizer::update_rule rule;
  rule.kind = static_cast<optimizer::update_kind>(config.rule);
  rule.rate.kind = static_cast<optimizer::schedule_kind>(config.schedule);
  rule.rate.initial = config.learning_rate;
  rule.rate.decay_rate = config.decay_rate;
  rule.rate.decay_steps = config.decay_steps;
  rule.momentum = config.momentum;
  rule.beta1 = config.beta1;
  rule.beta2 = config.beta2;
  rule.epsilon = config.epsilon;
  rule.initial_accumulator = config.initial_accumulator;
  return rule;
}

void set_rule(ps_config& config, const optimizer::update_rule& rule) {
  config.rule = static_cast<std::uint8_t>(rule.kind);
  config.schedule = static_cast<std::uint8_t>(rule.rate.kind);
  config.learning_rate = rule.rate.initial;
  config.decay_rate = rule.rate.decay_rate;
  config.decay_steps = rule.rate.decay_steps;
  config.momentum = rule.momentum;
  config.beta1 = rule.beta1;
  config.beta2 = rule.beta2;
  config.epsilon = rule.epsilon;
  config.initial_accumulator = rule.initial_accumulator;
}

result<void> check_config(const ps_config& c) {
  if (c.count == 0 || c.index >= c.count)
    return fail_invalid("PS index " + std::to_string(c.index) + " is not below the PS count " + std::to_string(c.count));
  if (c.begin < 0 || c.end < c.begin || c.end - c.begin > static_cast<std::int64_t>(max_wire_elements))
    return fail_invalid("invalid theta slice [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")");
  if (c.rule > static_cast<std::uint8_t>(optimizer::update_kind::adam))
    return fail_invalid("unknown update rule code " + std::to_string(c.rule));
  if (c.schedule > static_cast<std::uint8_t>(optimizer::schedule_kind::inverse_time))
    return fail_invalid("unknown learning-rate schedule code " + std::to_string(c.schedule));
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate))
    return fail_invalid("the learning rate must be positive");
  if (c.total_replicas == 0 || c.replicas_to_aggregate == 0 || c.replicas_to_aggregate > c.total_replicas)
    return fail_invalid("replicas_to_aggregate must be 1.." + std::to_string(c.total_replicas) + ", got " +
           std::to_string(c.replicas_to_aggregate));
  if (c.total_replicas > 65536)
    return fail_invalid("more than 65536 workers");
  if (c.last_step < 0 || c.staleness < -1)
    return fail_invalid("negative last step or staleness");
  return {};
}

} // namespace shardopt::actors
