#pragma once

// # Shard protocol
//
// A shard actor owns consecutive canonical blocks of a dataset (model/exact_sum.hpp) and answers
// three questions about a flat parameter vector theta (layout: see model::model_shape), each
// carrying the token of the driver that created the shard (a capability: any other token is
// refused, so another driver can neither read this shard's gradients nor use it):
//
//   (eval_atom, access_token, uint64 round, exact_grid grid, dense_vector theta)
//       -> (uint64 round, block_sums)   losses per block, gradient sums on the grids
//   (quality_atom, access_token, uint64 round, dense_vector theta)
//       -> (uint64 round, block_sums)   squared errors per block, correct predictions
//   (hessvec_atom, access_token, uint64 round, uint64 at, exact_grid grid, dense_vector theta,
//    dense_vector v)
//       -> (uint64 round, block_sums)   Hessian-vector sums on the grids
//   (line_atom, access_token, uint64 round, uint64 from, uint64 to, dense_vector alphas,
//    dense_vector theta_from, dense_vector theta_to)
//       -> (uint64 round, block_sums)   per block and alpha, the loss sum at the scores
//                                       z_from + alpha (z_to - z_from) (Newton's line search)
//
// An evaluation whose grid has twice theta's entries also returns the Hessian's diagonal (linear
// models): its sums follow the gradient's, at entries dimension + i (Newton's preconditioner).
// Exact sums travel dense (one word per entry) or sparse (the entries answered for, increasing,
// and one word each): a shard of sparse rows answers for the features its rows touch, or densely
// when they touch most features (model/block_evaluator.hpp).
//
// A node's part of a reduction tree (node/group.hpp, spawn_tree) takes its requests in slices
// (protocol 10), from its parent in the tree or, at a root, from the driver, so that long vectors
// are pipelined down and up the tree instead of waiting at every hop for the whole:
//
//   (part_atom, access_token, uint64 round, tree_slice, exact_grid grid, dense_vector theta,
//    dense_vector v)
//       -> (uint64 round, uint32 index, block_sums)   the slice's entries of the exact sums, with
//                                       the blocks (and their scalars) every slice covers
//
// `grid`, `theta` and `v` are slice `index` of `count` of the request's (slice_bounds below). The
// three whole requests are refused there (a tree's answer is the sum of several nodes' peers).
//
// The product (linear models only) is the Hessian of the shard's loss sum at the theta of the
// evaluation of round `at`, times v, from the per-example curvature that evaluation kept: one pass,
// no exp or log. A shard of a linear model keeps its last two evaluations' scores and the last
// one's curvature. With an empty theta the shard must have served that evaluation last (else the
// request is refused, errc::bad_request); with a theta (to a shard recreated after its node went
// down) it first rebuilds the curvature at that theta. A line request names the rounds of the two
// evaluations it runs between (the driver's last two), and brings their thetas to a shard that did
// not serve them; it asks at most `max_line_alphas` alphas, costing a pass over the shard's
// examples (not its features) each.
//
// Replies carry *sums* over the shard's blocks: scalars per block, vectors as exact fixed-point
// sums (integers on per-entry grids the driver chose from the data and theta), so a node's *group* actor
// can add its shards' replies and answer once per node (the same protocol, the same bits), and the
// driver adds peers in any order and gets the bits of one shard holding everything. The driver
// divides by the total count and adds the regulariser once. `round` is echoed so the driver can
// drop a late reply to an evaluation it has already given up on. A request whose theta has the
// wrong dimension is answered with an error (errc::dimension_mismatch), never a crash.
// A shard has a single state: it serves requests until it is told to exit or its node goes away.

#include "actors/wire/node_counters.hpp"
#include "model/exact_sum.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <caf/all.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardopt::actors {

using eval_atom = caf::atom_constant<caf::atom("eval")>;
using quality_atom = caf::atom_constant<caf::atom("quality")>;
using hessvec_atom = caf::atom_constant<caf::atom("hessvec")>;
using part_atom = caf::atom_constant<caf::atom("part")>;
using line_atom = caf::atom_constant<caf::atom("line")>;

/// The most step lengths one line request may ask (each costs a pass over a shard's examples).
constexpr std::size_t max_line_alphas = 64;

/// The project's error category for caf::error.
constexpr caf::atom_value error_category = caf::atom("shardopt");

/// Error codes of the actors layer.
enum class errc : std::uint8_t {
  dimension_mismatch = 1,  ///< theta does not fit the shard's model
  shard_failed,            ///< a shard died or answered with an error
  timeout,                 ///< a shard did not answer in time
  bad_request,             ///< a malformed or out-of-order request (parameter servers)
  training_failed,         ///< parameter-server training stopped with an error
  refused,                 ///< wrong token, protocol version, role or limit: the request is not allowed
};

/// The version of shardopt's wire protocols (node, shard, parameter server). Every hello carries
/// it; a peer of another version is refused with a message naming both.
constexpr std::uint32_t protocol_version = 17;  // 17: working sets restricted on the nodes, node-local parts' used columns; 16: the rows' largest norm in part replies; 15: block-aligned text parts; 14: TSV in part requests; 13: feature hashing there; 12: sparse sums

/// A capability: 128 random bits that a request must carry to be served. A driver makes one per
/// run, and its shards answer only requests that carry it; a parameter-server job has one too.
struct access_token {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  /// A fresh token from the operating system's random source.
  static access_token random();

  /// A token derived from a text (a job's shared secret): the first 128 bits of its SHA-256.
  static access_token from_text(const std::string& text);

  friend bool operator==(const access_token& a, const access_token& b) {
    return a.high == b.high && a.low == b.low;
  }
  friend bool operator!=(const access_token& a, const access_token& b) { return !(a == b); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, access_token& x) {
  return f(caf::meta::type_name("access_token"), x.high, x.low);
}

/// The bytes of a fixed double and float in this process: vectors and data travel as raw bytes, so
/// both ends of a connection must agree on the floating-point format. Sent with every hello.
std::vector<char> wire_probe();

/// Checks a peer's hello: its protocol version and floating-point probe. The error names both
/// versions, or the format problem; `peer` says who sent it ("the driver", "worker 3").
result<void> check_hello(std::uint32_t version, const std::vector<char>& probe,
                         const std::string& peer);

/// The reason a node counts a request answered with `error` under (node_counters.hpp).
refusal_reason reason_of(const caf::error& error);

/// Makes a caf::error in the project's category whose context is a human-readable message.
caf::error make_error(errc code, std::string message);

/// A request refused by policy (a wrong token, a limit, a peer not in the job): errc::refused.
caf::error refused(std::string why);

/// Renders our errors and CAF's own as one line of text.
std::string describe(const caf::error& error, const caf::actor_system& system);

/// An immutable vector of doubles. Inside a process it is shared, never copied, between sender and
/// receivers; on the wire it travels as a length and one raw block of bytes (see the `inspect`
/// overloads), not element by element.
class dense_vector {
public:
  dense_vector() = default;

  /// Copies `values` once into shared storage.
  explicit dense_vector(const Eigen::VectorXd& values)
    : data_(std::make_shared<const Eigen::VectorXd>(values)) {}

  /// Takes shared ownership of `values` without copying.
  explicit dense_vector(std::shared_ptr<const Eigen::VectorXd> values) : data_(std::move(values)) {}

  std::size_t size() const { return data_ ? static_cast<std::size_t>(data_->size()) : 0; }
  const double* data() const { return data_ ? data_->data() : nullptr; }

  /// A read-only Eigen view of the values.
  Eigen::Map<const Eigen::VectorXd> map() const {
    return {data(), static_cast<Eigen::Index>(size())};
  }

  friend bool operator==(const dense_vector& a, const dense_vector& b) {
    return a.size() == b.size() && (a.size() == 0 || a.map() == b.map());
  }

private:
  std::shared_ptr<const Eigen::VectorXd> data_;
};

/// Largest vector a peer may announce (2^28 doubles = 2 GiB): larger headers are rejected before
/// anything is allocated.
constexpr std::size_t max_wire_elements = std::size_t{1} << 28;

/// Fails when `f` knows how many bytes it has left (a binary deserializer) and that is fewer than
/// `bytes`: lets deserialisers refuse a header that promises more than arrived before allocating.
caf::error expect_bytes(caf::deserializer& f, std::uint64_t bytes, const char* what);

/// Writes (reads) `bytes` raw bytes through `f`: every vector and block of data on the wire goes
/// through these, which count what binary (network) processors move in this process's traffic.
caf::error apply_raw_block(caf::serializer& f, const void* data, std::size_t bytes);
caf::error apply_raw_block(caf::deserializer& f, void* data, std::size_t bytes);

/// The raw bytes (vectors, sums, shard data: the payload, not CAF's framing and small fields) this
/// process has sent and received over the network since it started.
struct wire_traffic {
  std::int64_t sent = 0;
  std::int64_t received = 0;
};
wire_traffic wire_bytes();

/// Serialises as a sequence length and one raw copy of the bytes.
caf::error inspect(caf::serializer& f, dense_vector& x);

/// Deserialises a length (checked against `max_wire_elements`) and one raw block, into a kept
/// vector of that length when there is one: on a node with drivers (keep_received_vectors), which
/// receives theta every pass, a received vector's memory is kept for the next once its last reader
/// drops it.
caf::error inspect(caf::deserializer& f, dense_vector& x);

/// A vector of `length` doubles for a writer that sets every one: a kept one of that length
/// (holding old values) when there is one, else a new one. Its memory goes back to the kept
/// vectors when its last owner drops it, if keeping is on and it has 2^17 doubles or more (more
/// than a tree slice). (A received vector's, and a tree node's joined theta.)
std::shared_ptr<Eigen::VectorXd> kept_vector(std::size_t length);

/// Whether received vectors' memory is kept (off unless turned on; for tests). A driver, a
/// parameter-server client or Python never keeps any.
void keep_received_vectors(bool on);

/// Holds the received vectors' store while a node has drivers: keeping is on while any node in
/// the process holds it; when the last lets go, it turns off and the kept memory is freed.
void hold_received_vectors();
void let_go_received_vectors();

/// Frees the received vectors' kept memory.
void release_spare_vectors();

/// The received vectors' memory kept now, and how many vectors of 2^17 doubles or more this
/// process has made to receive into since it started (for tests).
struct spare_vector_counts {
  std::size_t kept = 0;
  std::int64_t made = 0;
};
spare_vector_counts spare_vectors();

/// Any other inspector (e.g. to_string) sees the type name and the length.
template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, dense_vector& x) {
  auto length = x.size();
  return f(caf::meta::type_name("dense_vector"), length);
}

/// Where a shard's canonical blocks are: its first block's number and the rows per block.
struct block_layout {
  std::int64_t first_block = 0;
  std::int64_t block_rows = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, block_layout& x) {
  return f(caf::meta::type_name("block_layout"), x.first_block, x.block_rows);
}

/// The grids of an evaluation's exact sums (model::grid, model/exact_sum.hpp) on the wire: entry i
/// on multiples of 2^(base - below[i]), one byte per entry (a grid more than 255 binades under the
/// coarsest is sent as that one: coarser, still exact). Inside a process the table is shared,
/// never copied: every request of a run refers to the one table its driver planned, of which a
/// grid is the first `entries` entries.
struct exact_grid {
  std::int32_t base = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> table;
  std::uint64_t entries = 0;

  std::size_t size() const { return static_cast<std::size_t>(entries); }
  const std::uint8_t* below() const { return table ? table->data() : nullptr; }

  /// The grid as the model layer takes it, and back.
  model::grid model() const { return model::grid{base, table, static_cast<std::size_t>(entries)}; }
  static exact_grid of(const model::grid& grid) { return {grid.base, grid.below, grid.entries}; }
};

/// Encodes per-entry grid exponents (model::make_grid).
exact_grid encode_grid(const std::vector<int>& exponents);

/// Checks a grid from a peer: its base among the grids a double allows and its table as long as
/// it says; the failure names what is wrong.
result<void> check_grid(const exact_grid& grid);

caf::error inspect(caf::serializer& f, exact_grid& x);
caf::error inspect(caf::deserializer& f, exact_grid& x);

template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, exact_grid& x) {
  auto entries = x.entries;
  return f(caf::meta::type_name("exact_grid"), x.base, entries);
}

/// Sums over some canonical blocks, as a shard or a group answers them (see the protocol above and
/// model/exact_sum.hpp). Vectors travel as raw blocks.
struct block_sums {
  std::vector<std::int64_t> runs;   ///< (first block, block count) pairs, flattened
  std::vector<double> values;       ///< scalars per block (loss sums, squared errors), runs' order
  std::vector<std::int64_t> words;  ///< exact sums on the request's grids; empty for quality
  /// Sparse sums: the entries `words` are for (increasing); null: dense, words[i] entry i's.
  /// Shared inside a process (a shard's list serves every pass), a raw block on the wire.
  std::shared_ptr<const std::vector<std::int32_t>> entries;
  std::uint64_t length = 0;         ///< entries of the whole vector (dense: words.size())
  double max_units = 0;             ///< largest |block sum entry| in grid units; NaN: not finite
  double correct = 0;               ///< quality: correctly predicted examples
  std::int64_t count = 0;           ///< examples covered
  /// Not sent: set on a node's reply, whose words are kept for the next pass's sums
  /// (base/spare_words.hpp) once the reply has been serialised and dropped.
  bool keep_words_when_dropped = false;

  block_sums() = default;
  block_sums(const block_sums&) = default;
  block_sums(block_sums&&) noexcept = default;
  block_sums& operator=(const block_sums&) = default;
  block_sums& operator=(block_sums&&) noexcept = default;
  ~block_sums();
};

/// A reply's sums from a shard's exact sums over a vector of `length` entries.
void put_sums(block_sums& out, model::entry_sums sums, std::uint64_t length);

/// Whether a reply's exact sums are well formed: `length` within the wire's limit, dense with
/// `length` words or sparse with as many increasing entries below `length` as words.
bool sums_fit(const block_sums& sums);

/// Adds `part` to `total`: runs and values appended, exact sums added (on the same grids; sparse
/// and dense alike, the result dense once it would be more than half full), counts added. Fails
/// when their lengths differ or `part`'s sums are malformed.
result<void> merge(block_sums& total, block_sums&& part);

/// Serialises the vectors as lengths and raw blocks.
caf::error inspect(caf::serializer& f, block_sums& x);

/// Deserialises, checking every length against `max_wire_elements` and the bytes received.
caf::error inspect(caf::deserializer& f, block_sums& x);

template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, block_sums& x) {
  auto blocks = x.values.size();
  return f(caf::meta::type_name("block_sums"), blocks, x.count);
}

/// Which request a tree slice is a part of, and the shape of the whole (see the protocol above).
struct tree_slice {
  std::uint8_t kind = 0;         ///< tree_kind
  std::uint64_t at = 0;          ///< products: the evaluation's round
  std::uint32_t index = 0;       ///< this slice
  std::uint32_t count = 1;       ///< slices of the request
  std::uint64_t theta_size = 0;  ///< entries of the whole theta (products: 0 when none is sent)
  std::uint64_t v_size = 0;      ///< entries of the whole v (products only)
  std::uint64_t grid_size = 0;   ///< entries of the whole grid (quality: 0)
  std::int32_t grid_base = 0;    ///< the grid's coarsest exponent
};

/// The kinds of request; lines never travel in slices (a tree refuses them: they carry no long
/// vector to pipeline, only the thetas a fresh shard needs, and go to every peer directly).
enum class tree_kind : std::uint8_t { eval = 0, quality = 1, hessvec = 2, line = 3 };

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tree_slice& x) {
  return f(caf::meta::type_name("tree_slice"), x.kind, x.at, x.index, x.count, x.theta_size,
           x.v_size, x.grid_size, x.grid_base);
}

/// Entries per slice of a tree's vectors (512 KiB of doubles): at 1 Gbit/s a slice takes about
/// 4 ms a hop, which is what a level of the tree adds to an evaluation.
constexpr std::uint64_t tree_slice_entries = std::uint64_t{1} << 16;

/// The most slices a request may be cut into (max_wire_elements / tree_slice_entries).
constexpr std::uint32_t max_tree_slices = 4096;

/// Entries [first, second) of a vector of `size` entries form slice `index` of `count`.
std::pair<std::uint64_t, std::uint64_t> slice_bounds(std::uint64_t size, std::uint32_t index,
                                                     std::uint32_t count);

/// The typed interface of a shard actor, and of a group of shards (see the protocol above).
using shard_actor = caf::typed_actor<
  caf::replies_to<eval_atom, access_token, std::uint64_t, exact_grid, dense_vector>::with<
    std::uint64_t, block_sums>,
  caf::replies_to<quality_atom, access_token, std::uint64_t, dense_vector>::with<std::uint64_t,
                                                                                 block_sums>,
  caf::replies_to<hessvec_atom, access_token, std::uint64_t, std::uint64_t, exact_grid,
                  dense_vector, dense_vector>::with<std::uint64_t, block_sums>,
  caf::replies_to<line_atom, access_token, std::uint64_t, std::uint64_t, std::uint64_t, dense_vector,
                  dense_vector, dense_vector>::with<std::uint64_t, block_sums>>;

/// A node's part of a reduction tree: the shard protocol's handle, taking slices (see above).
using tree_actor = shard_actor::extend<
  caf::replies_to<part_atom, access_token, std::uint64_t, tree_slice, exact_grid, dense_vector,
                  dense_vector>::with<std::uint64_t, std::uint32_t, block_sums>>;

/// Announces the project's message types and error category. Call on every config before the
/// actor system is created, in drivers and nodes alike.
void add_message_types(caf::actor_system_config& config);

} // namespace shardopt::actors
