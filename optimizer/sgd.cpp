#include "optimizer/sgd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace shardopt::optimizer {

double learning_rate::at(std::int64_t step) const {
  const auto t = static_cast<double>(std::max<std::int64_t>(step, 0));
  const auto period = static_cast<double>(std::max<std::int64_t>(decay_steps, 1));
  switch (kind) {
    case schedule_kind::constant:
      return initial;
    case schedule_kind::step:
      return initial * std::pow(decay_rate, std::floor(t / period));
    case schedule_kind::inverse_time:
      return initial / (1.0 + decay_rate * t / period);
  }
  return initial;
}

std::size_t update_rule::slot_count() const {
  switch (kind) {
    case update_kind::sgd:
      return 0;
    case update_kind::momentum:
    case update_kind::nesterov:
    case update_kind::adagrad:
      return 1;
    case update_kind::adam:
      return 2;
  }
  return 0;
}

update_state initial_state(const update_rule& rule, Eigen::Index size) {
  update_state state;
  const double fill = rule.kind == update_kind::adagrad ? rule.initial_accumulator : 0.0;
  state.slots.assign(rule.slot_count(), Eigen::VectorXd::Constant(size, fill));
  return state;
}

void apply_update(const update_rule& rule, std::int64_t step, Eigen::Ref<Eigen::VectorXd> theta,
                  Eigen::Ref<const Eigen::VectorXd> grad, update_state& state) {
  const double lr = rule.rate.at(step);
  switch (rule.kind) {
    case update_kind::sgd:
      theta -= lr * grad;
      break;
    case update_kind::momentum: {
      auto& velocity = state.slots[0];
      velocity = rule.momentum * velocity + grad;
      theta -= lr * velocity;
      break;
    }
    case update_kind::nesterov: {
      auto& velocity = state.slots[0];
      velocity = rule.momentum * velocity + grad;
      theta -= lr * (grad + rule.momentum * velocity);
      break;
    }
    case update_kind::adagrad: {
      auto& accumulator = state.slots[0];
      accumulator.array() += grad.array().square();
      theta.array() -= lr * grad.array() / accumulator.array().sqrt();
      break;
    }
    case update_kind::adam: {
      auto& m = state.slots[0];
      auto& v = state.slots[1];
      const auto t = static_cast<double>(state.updates + 1);
      const double lr_t = lr * std::sqrt(1.0 - std::pow(rule.beta2, t)) / (1.0 - std::pow(rule.beta1, t));
      m = rule.beta1 * m + (1.0 - rule.beta1) * grad;
      v.array() = rule.beta2 * v.array() + (1.0 - rule.beta2) * grad.array().square();
      theta.array() -= lr_t * m.array() / (v.array().sqrt() + rule.epsilon);
      break;
    }
  }
  ++state.updates;
}

namespace {

constexpr std::array<std::string_view, 5> update_names{"sgd", "momentum", "nesterov", "adagrad", "adam"};
constexpr std::array<std::string_view, 3> schedule_names{"constant", "step", "inverse-time"};

template <class Kind, std::size_t N>
std::optional<Kind> parse_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name)
      return static_cast<Kind>(i);
  return std::nullopt;
}

} // namespace

std::string_view to_string(update_kind kind) {
  return update_names.at(static_cast<std::size_t>(kind));
}

std::optional<update_kind> parse_update_kind(std::string_view name) {
  return parse_name<update_kind>(update_names, name);
}

std::string_view to_string(schedule_kind kind) {
  return schedule_names.at(static_cast<std::size_t>(kind));
}

std::optional<schedule_kind> parse_schedule_kind(std::string_view name) {
  return parse_name<schedule_kind>(schedule_names, name);
}

batch_sampler::batch_sampler(std::int64_t rows, std::int64_t batch_size, std::uint64_t seed)
  : order_(static_cast<std::size_t>(std::max<std::int64_t>(rows, 0))),
    position_(order_.size()),
    batch_size_(std::max<std::int64_t>(batch_size, 1)),
    generator_(seed) {
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
}

const std::vector<std::int64_t>& batch_sampler::next() {
  if (position_ >= order_.size()) {
    std::shuffle(order_.begin(), order_.end(), generator_);
    position_ = 0;
    ++epoch_;
  }
  const auto take = std::min(order_.size() - position_, static_cast<std::size_t>(batch_size_));
  batch_.assign(order_.begin() + static_cast<std::ptrdiff_t>(position_),
                order_.begin() + static_cast<std::ptrdiff_t>(position_ + take));
  position_ += take;
  return batch_;
}

std::uint64_t worker_seed(std::uint64_t seed, std::uint32_t worker, std::int64_t step) {
  std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                         worker, static_cast<std::uint32_t>(step),
                         static_cast<std::uint32_t>(static_cast<std::uint64_t>(step) >> 32)};
  std::array<std::uint32_t, 2> out{};
  sequence.generate(out.begin(), out.end());
  return (static_cast<std::uint64_t>(out[0]) << 32) | out[1];
}

bool periodic_trigger::due(std::int64_t step, double seconds) const {
  return (every_steps_ > 0 && step - last_step_ >= every_steps_)
         || (every_seconds_ > 0 && seconds - last_seconds_ >= every_seconds_);
}

} // namespace shardopt::optimizer
