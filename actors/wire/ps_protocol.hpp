#pragma once

// # Parameter-server protocol
//
// A parameter server (PS) owns one contiguous slice [begin, end) of theta, the update rule's state
// for it, and a global step. Workers talk to every PS. Every request carries a `round` the reply
// echoes, so a worker can tell a late reply from the one it waits for, and the job's token (a
// capability, see messages.hpp) that the PS was started with: a request with another token is
// refused, from the first hello on. The PS is guarded (guard.hpp): a peer's exit or kill message
// cannot end it.
//
//   (pshello_atom, round, ps_hello) -> (round)
//       A worker announces itself: protocol version, floating-point probe, token, worker index,
//       and the model it trains. The first hello fixes the job's model; a worker that trains
//       another (another architecture, activation or lambda) is refused, naming both.
//       The index is bound to the actor that first claimed it (while that actor is up); a claim
//       of a bound index by another actor, or of a second index by the same actor, is refused.
//       The PS monitors its workers.
//   (psinit_atom, round, token, ps_config, ps_snapshot) -> (round)
//       The chief (worker 0, who must have said hello) sets the slice, the rule, the mode and the
//       starting state (fresh or restored from a checkpoint). Accepted once; a PS is `waiting`
//       until then. Claims of indices beyond the job's workers are dropped.
//   (pull_atom, round, token) -> (round, ps_view)
//       The current step, status and theta slice (the slice only for the job's token).
//   (push_atom, round, token, worker, stamp, loss, examples, grad_slice) -> (round, step, accepted)
//       A minibatch gradient (mean over `examples` rows, regulariser included) computed at step
//       `stamp`, from the actor bound to `worker`; refused when not finite.
//       - synchronous: kept if `stamp` is the current step, else dropped and counted. When
//         `replicas_to_aggregate` distinct workers have pushed for the step, their average (added
//         in worker order: the same bits whatever the arrival order) is applied and the step
//         advances; only then do those workers get their replies. Later gradients for that step
//         (backup workers) are dropped.
//       - asynchronous: applied at once; staleness = step - stamp is recorded.
//   (clock_atom, round, token, worker, clock) -> (round, step)
//       Stale synchronous parallel (asynchronous mode with staleness s >= 0; sent to PS 0 only):
//       the reply waits until clock - (slowest live worker's clock) <= s. Clocks never go back;
//       one request per worker is held at a time.
//   (psstate_atom, round, token) -> (round, ps_snapshot)   theta slice and rule state (checkpoints)
//   (psstats_atom, round, token) -> (round, ps_stats)      counters since the start
//   (psfail_atom, round, token, reason) -> (round)         stop training with an error (NaN loss)
//   (bye_atom, round, token, worker) -> (round)            a worker is done
//   (psstop_atom, round, token) -> (round)                 the chief is done (final checkpoint taken)
//
// States:
//   waiting --psinit--> running --(last step reached)--> finished --+
//                           |                                       +--(psstop or chief down, and
//                           +--(psfail, chief down, too few         |   every worker gone or
//                               workers left for a sync step)--> failed --+   10 s grace)--> exit
//
// In `finished` and `failed` pushes are refused (accepted = false) and pending replies are released,
// so no worker waits forever. A PS exits by itself at the end: a process hosting one ends with it.

#include "actors/wire/messages.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shardopt::actors {

using psinit_atom = caf::atom_constant<caf::atom("psinit")>;
using pshello_atom = caf::atom_constant<caf::atom("pshello")>;
using pull_atom = caf::atom_constant<caf::atom("pull")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using clock_atom = caf::atom_constant<caf::atom("clock")>;
using psstate_atom = caf::atom_constant<caf::atom("psstate")>;
using psstats_atom = caf::atom_constant<caf::atom("psstats")>;
using psfail_atom = caf::atom_constant<caf::atom("psfail")>;
using bye_atom = caf::atom_constant<caf::atom("bye")>;
using psstop_atom = caf::atom_constant<caf::atom("psstop")>;

/// Where a PS is in its life (see the state diagram above).
enum class ps_status : std::uint8_t { waiting, running, finished, failed };

/// What the chief tells a PS at initialisation. Plain fields: it crosses the network.
struct ps_config {
  std::uint32_t index = 0;         ///< this PS's index, 0..count-1 (PS 0 keeps the SSP clocks)
  std::uint32_t count = 1;
  std::int64_t begin = 0;          ///< slice of theta [begin, end)
  std::int64_t end = 0;
  std::uint8_t rule = 0;           ///< optimizer::update_kind
  std::uint8_t schedule = 0;       ///< optimizer::schedule_kind
  double learning_rate = 0.01;
  double decay_rate = 0.5;
  std::int64_t decay_steps = 1000;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double initial_accumulator = 0.1;
  bool sync = true;
  std::uint32_t replicas_to_aggregate = 1;
  std::uint32_t total_replicas = 1;  ///< number of workers
  std::int32_t staleness = -1;       ///< asynchronous: SSP bound; -1 = unbounded
  std::int64_t last_step = 0;        ///< 0 = no limit
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_config& x) {
  return f(caf::meta::type_name("ps_config"), x.index, x.count, x.begin, x.end, x.rule, x.schedule,
           x.learning_rate, x.decay_rate, x.decay_steps, x.momentum, x.beta1, x.beta2, x.epsilon,
           x.initial_accumulator, x.sync, x.replicas_to_aggregate, x.total_replicas, x.staleness,
           x.last_step);
}

/// A worker's hello: who it is and what it speaks.
struct ps_hello {
  std::uint32_t version = 0;  ///< protocol_version
  std::vector<char> probe;    ///< wire_probe()
  access_token token;         ///< the job's token
  std::uint32_t worker = 0;   ///< the worker index it claims
  std::string model;          ///< what it trains: model::describe(shape) and lambda (at most 4 KiB)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_hello& x) {
  return f(caf::meta::type_name("ps_hello"), x.version, x.probe, x.token, x.worker, x.model);
}

/// The state of one slice: step, theta slice, the rule's slots packed one after another (slot k
/// is [k * n, (k+1) * n) for a slice of n), and the number of updates applied.
struct ps_snapshot {
  std::int64_t step = 0;
  std::int64_t updates = 0;
  dense_vector theta;
  dense_vector slots;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_snapshot& x) {
  return f(caf::meta::type_name("ps_snapshot"), x.step, x.updates, x.theta, x.slots);
}

/// A pull reply.
struct ps_view {
  std::int64_t step = 0;
  std::uint8_t status = 0;  ///< ps_status
  dense_vector theta;       ///< the slice (empty unless running or finished)
  std::string note;         ///< why it failed, when it did
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_view& x) {
  return f(caf::meta::type_name("ps_view"), x.step, x.status, x.theta, x.note);
}

/// Counters of one PS since it was initialised.
struct ps_stats {
  std::int64_t step = 0;
  std::int64_t applied = 0;          ///< gradients applied
  std::int64_t dropped = 0;          ///< stale gradients dropped (synchronous mode)
  std::int64_t staleness_max = 0;    ///< largest step - stamp of an applied gradient
  double staleness_sum = 0;          ///< sum of step - stamp over applied gradients
  double loss_sum = 0;               ///< sum of the minibatch losses that came with them
  std::int64_t examples = 0;         ///< examples behind the applied gradients
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_stats& x) {
  return f(caf::meta::type_name("ps_stats"), x.step, x.applied, x.dropped, x.staleness_max,
           x.staleness_sum, x.loss_sum, x.examples);
}

/// The typed interface of a parameter server.
using ps_actor = caf::typed_actor<
  caf::replies_to<pshello_atom, std::uint64_t, ps_hello>::with<std::uint64_t>,
  caf::replies_to<psinit_atom, std::uint64_t, access_token, ps_config, ps_snapshot>::with<
    std::uint64_t>,
  caf::replies_to<pull_atom, std::uint64_t, access_token>::with<std::uint64_t, ps_view>,
  caf::replies_to<push_atom, std::uint64_t, access_token, std::uint32_t, std::int64_t, double,
                  std::int64_t, dense_vector>::with<std::uint64_t, std::int64_t, bool>,
  caf::replies_to<clock_atom, std::uint64_t, access_token, std::uint32_t, std::int64_t>::with<
    std::uint64_t, std::int64_t>,
  caf::replies_to<psstate_atom, std::uint64_t, access_token>::with<std::uint64_t, ps_snapshot>,
  caf::replies_to<psstats_atom, std::uint64_t, access_token>::with<std::uint64_t, ps_stats>,
  caf::replies_to<psfail_atom, std::uint64_t, access_token, std::string>::with<std::uint64_t>,
  caf::replies_to<bye_atom, std::uint64_t, access_token, std::uint32_t>::with<std::uint64_t>,
  caf::replies_to<psstop_atom, std::uint64_t, access_token>::with<std::uint64_t>>;

} // namespace shardopt::actors
