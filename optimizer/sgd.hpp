#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

namespace shardopt::optimizer {

/// # Stochastic-gradient update rules
///
/// Pure functions of (theta, grad, state): a parameter server applies them to its slice of theta,
/// and a plain in-process loop applies them to the whole of it, with identical results. The rules
/// follow TensorFlow 1.x's optimizers (tf.train.GradientDescentOptimizer, MomentumOptimizer with
/// and without use_nesterov, AdagradOptimizer, AdamOptimizer; Kingma & Ba 2015, Algorithm 1 with the
/// bias correction folded into the step size), so settings carry over.

/// How the learning rate changes with the global step t (tf.train.*_decay):
/// - constant:     lr
/// - step:         lr * decay_rate^floor(t / decay_steps)
/// - inverse_time: lr / (1 + decay_rate * t / decay_steps)
enum class schedule_kind : std::uint8_t { constant, step, inverse_time };

struct learning_rate {
  schedule_kind kind = schedule_kind::constant;
  double initial = 0.01;
  double decay_rate = 0.5;
  std::int64_t decay_steps = 1000;

  /// The rate at global step `step` (>= 0).
  double at(std::int64_t step) const;
};

enum class update_kind : std::uint8_t { sgd, momentum, nesterov, adagrad, adam };

/// An update rule and its settings. Which fields matter depends on `kind`.
struct update_rule {
  update_kind kind = update_kind::sgd;
  learning_rate rate;
  double momentum = 0.9;              ///< momentum, nesterov
  double beta1 = 0.9;                 ///< adam
  double beta2 = 0.999;               ///< adam
  double epsilon = 1e-8;              ///< adam
  double initial_accumulator = 0.1;   ///< adagrad

  /// Per-coordinate state vectors the rule keeps: 0 (sgd), 1 (momentum, nesterov: velocity;
  /// adagrad: squared-gradient sum) or 2 (adam: first and second moments).
  std::size_t slot_count() const;
};

/// The optimizer state of (a slice of) theta: `slot_count()` vectors of the slice's length, and
/// how many updates were applied (Adam's t).
struct update_state {
  std::vector<Eigen::VectorXd> slots;
  std::int64_t updates = 0;
};

/// Fresh state for `size` coordinates (zeros; AdaGrad's accumulator starts at `initial_accumulator`).
update_state initial_state(const update_rule& rule, Eigen::Index size);

/// Applies one update in place: theta -= step computed from `grad`, the rule, the learning rate at
/// global step `step`, and `state` (updated too). theta, grad and every slot have the same length.
void apply_update(const update_rule& rule, std::int64_t step, Eigen::Ref<Eigen::VectorXd> theta,
                  Eigen::Ref<const Eigen::VectorXd> grad, update_state& state);

/// Names as the command line spells them: "sgd", "momentum", "nesterov", "adagrad", "adam" and
/// "constant", "step", "inverse-time"; nullopt for anything else.
std::string_view to_string(update_kind kind);
std::optional<update_kind> parse_update_kind(std::string_view name);
std::string_view to_string(schedule_kind kind);
std::optional<schedule_kind> parse_schedule_kind(std::string_view name);

/// Draws minibatches of row indices 0..rows-1 without replacement within each epoch: every epoch is
/// a fresh permutation from a seeded generator, cut into consecutive batches (the last batch of an
/// epoch may be smaller). The same (rows, batch, seed) always give the same sequence.
class batch_sampler {
public:
  batch_sampler(std::int64_t rows, std::int64_t batch_size, std::uint64_t seed);

  /// The next batch (never empty when rows > 0).
  const std::vector<std::int64_t>& next();

  /// Completed epochs so far.
  std::int64_t epoch() const { return epoch_; }

private:
  std::vector<std::int64_t> order_;
  std::vector<std::int64_t> batch_;
  std::size_t position_ = 0;
  std::int64_t batch_size_;
  std::int64_t epoch_ = -1;
  std::mt19937_64 generator_;
};

/// A seed for worker `worker` of a job with seed `seed`, starting at global step `step`: distinct
/// workers and restarts draw distinct batch sequences, and the same inputs the same one.
std::uint64_t worker_seed(std::uint64_t seed, std::uint32_t worker, std::int64_t step);

/// Fires every `every_steps` global steps and/or every `every_seconds` seconds, whichever comes
/// first (like TensorFlow's SecondOrStepTimer); 0 disables that trigger.
class periodic_trigger {
public:
  periodic_trigger(std::int64_t every_steps, double every_seconds)
    : every_steps_(every_steps), every_seconds_(every_seconds) {}

  bool enabled() const { return every_steps_ > 0 || every_seconds_ > 0; }
  /// True when, at `step` and time `seconds`, the trigger is due. Call `mark` when acted on.
  bool due(std::int64_t step, double seconds) const;
  void mark(std::int64_t step, double seconds) {
    last_step_ = step;
    last_seconds_ = seconds;
  }

private:
  std::int64_t every_steps_;
  double every_seconds_;
  std::int64_t last_step_ = 0;
  double last_seconds_ = 0;
};

} // namespace shardopt::optimizer
