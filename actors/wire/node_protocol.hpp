#pragma once

// # Node protocol
//
// A node process publishes one node actor (through CAF's middleman, optionally over TLS) and
// nothing else: the actor is guarded (guard.hpp), so a peer's exit or kill message cannot end it,
// and every handler checks sizes before it allocates, catches every exception and answers errors
// that never quote file contents. A driver connects and asks, in order (`round` is a uint64 that
// the reply echoes, so the driver can tell a late reply from the one it waits for):
//
//   (hello_atom, round, uint32 version, bytes probe) -> (round, node_info)
//       The driver's protocol version and the raw bytes of a probe double and float; the node
//       answers with its version, worker threads and host name, or refuses a different version or
//       floating-point format (vectors and data travel as raw bytes).
//   (append_atom, round, access_token, int64 rows, int64 nonzeros, int64 first_row, data_block piece)
//       -> (round, int64 rows_received)
//       Receives a shard's data in pieces of consecutive rows, so that no message is larger than a
//       piece (CAF keeps a connection's read buffer as large as the largest message it read). A
//       piece at row 0 announces the whole (rows, and non-zeros for sparse data; its features and
//       kind are the piece's), which must fit the limits and takes a shard's place; it is
//       allocated at once but counted as its pieces arrive, and replaces whatever this driver had
//       been sending. Each later piece must carry the same token, start where the last one ended
//       and fit what is left; a refused piece drops what arrived. One such data per driver at a
//       time, dropped when the driver goes away or, once no piece has come for the node's
//       staging_idle, by the next request that takes room.
//   (spawn_atom, round, access_token, shard_spec) -> (round, shard_actor)
//       Creates one shard from a shipped block of data, answering only requests that carry the
//       token; a block of no rows means the data received in pieces under that token, which must
//       be complete. The
//       data is checked first (shape, label values, block layout) and counted against the limits.
//   (group_atom, round, access_token, vector<shard_actor> members) -> (round, shard_actor)
//       Creates a group over shards this driver holds on this node (each named once): it answers
//       the shard protocol with the exact sum of its members' replies, so the driver sends theta
//       to the node once and gets one reply. Members that are not this driver's shards here are
//       refused. At most one group per shard the driver may hold.
//   (scan_atom, round, access_token, part_message) -> (round, summary_message)
//       Node-local data: reads part p of P of a dataset under the node's --data-root and
//       summarises it (rows, distinct labels, per-feature bounds), so the driver can fit label
//       encoding and scaling. Refused when the node has no data root or the path leaves it.
//   (moments_atom, round, access_token, moments_request) -> (round, moments_message)
//       Node-local data, when standardising: reads part p of P again and answers the exact sums of
//       its scaled values on the driver's grid (io/feature_moments.hpp), which the driver adds up:
//       the statistics of data read whole and read in parts are the same bits.
//   (spawnpart_atom, round, access_token, part_shard_spec)
//       -> (round, shard_actor, int64 rows, dense_vector feature_max, double max_label,
//           double max_row_norm)
//       Node-local data: reads part p of P again, encodes and scales it as the driver says (and,
//       for a sparse linear model, renumbers its columns to the used ones the driver found in the
//       summaries, refusing a part with a column outside them), and creates a shard on it, answering with the rows it holds, its largest |feature| per
//       feature, largest |label| and largest row norm (what the driver's grids need,
//       model/block_bounds.hpp).
//   (tree_atom, round, access_token, vector<shard_actor> own, vector<string> child_nodes,
//    vector<shard_actor> child_trees) -> (round, shard_actor)
//       Makes this node's part of a reduction tree (node/group.hpp, spawn_tree): the shard protocol
//       over the children's trees and `own`, peers this driver holds here. The node connects to
//       each child node ("host:port", over TLS with its own certificate when it has one) and
//       refuses a child tree that does not live on the node at that address, so sums travel
//       node to node, never through a third party. At most max_tree_children children.
//   (restrict_atom, round, access_token, shard_restriction spec)
//       -> (round, shard_actor, int64 rows, dense_vector feature_max, double max_label,
//           double max_row_norm)
//       OWL-QN's working set without shipping its columns: creates a shard, held by this driver
//       and answering its token, over some columns of the data of a shard on this node (any
//       driver's), renumbered in order (model::restrict_columns). The request must name the
//       source shard's token too: whoever may evaluate on a shard may restrict it, no one else.
//       Answers as spawnpart does, with the compact data's rows and bounds. Counted against this
//       driver's limits like any shard, before the copy is made; it ends when its source does.
//       No columns at all (a model of biases alone) is allowed.
//   (release_atom, round, access_token, shard_actor peer) -> (round, int64 ended)
//       Ends a shard or group this driver holds here (a group with its shards) and frees their
//       data: what stood in for a node that came back. Anything else is refused.
//   (status_atom, round) -> (round, node_status)
//       What the node holds and serves, and its limits (`shardopt status`). Any connected peer may
//       ask; the answer names no driver, token, path or data.
//
// A node that drains (its service shutting down gracefully, node_counters::draining) refuses every
// request that would give a new driver a hold here (hello, data, shards) and keeps serving the
// drivers it has.
//
// Shards belong to the driver actor that asked for them. The node monitors it and ends its shards
// when it goes away (it disconnects, is killed, or finishes), so one node serves many drivers one
// after another. Limits per driver and in total (node_limits) bound the shards and bytes a node
// holds; a request past them is refused with errc::refused and a message naming the limit.
//
//   states:  serving  --(driver down)-->  serving (that driver's shards ended)
//            serving  --(its service stops it, or it dies)-->  gone (every shard ended)

#include "actors/wire/messages.hpp"
#include "io/splits.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace shardopt::actors {

using hello_atom = caf::atom_constant<caf::atom("hello")>;
using spawn_atom = caf::atom_constant<caf::atom("spawnshard")>;
using scan_atom = caf::atom_constant<caf::atom("scan")>;
using spawnpart_atom = caf::atom_constant<caf::atom("spawnpart")>;
using group_atom = caf::atom_constant<caf::atom("group")>;
using append_atom = caf::atom_constant<caf::atom("append")>;
using moments_atom = caf::atom_constant<caf::atom("moments")>;
using tree_atom = caf::atom_constant<caf::atom("tree")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using restrict_atom = caf::atom_constant<caf::atom("restrict")>;

/// The most children a node's part of a reduction tree may have.
constexpr std::size_t max_tree_children = 64;

/// A part of a dataset to read on a node (see io::read_part).
struct part_message {
  io::part_request request;
};

/// The summary of a part (see io::summarize).
struct summary_message {
  io::part_summary summary;
};

/// A part to take the moments of, and the grid to take them on.
struct moments_request {
  io::part_request request;
  io::moment_grid grid;
};

/// The moments of a part (see io::moments_of).
struct moments_message {
  io::feature_moments moments;
};

/// A node-local shard: which part to read and how to encode and scale it. With `used` (a
/// linear model over sparse data whose columns no part has are left out, io/column_map.hpp), the
/// part is read, encoded and scaled at `full_features` and its columns renumbered to `used`
/// (increasing; shape.features of them): every stored index must be among them.
struct part_shard_spec {
  io::part_request request;
  model::model_shape shape;
  io::label_encoding labels;
  io::feature_scaling scaling;
  block_layout layout;
  std::int64_t full_features = 0;  ///< the columns before the map (0: no map, the part as it is)
  std::vector<std::int32_t> used;  ///< with a map: the columns kept, at least one
};

// Field by field, vectors as raw blocks; checked against the bytes received when loading.
caf::error inspect(caf::serializer& f, part_message& x);
caf::error inspect(caf::deserializer& f, part_message& x);
caf::error inspect(caf::serializer& f, summary_message& x);
caf::error inspect(caf::deserializer& f, summary_message& x);
caf::error inspect(caf::serializer& f, part_shard_spec& x);
caf::error inspect(caf::deserializer& f, part_shard_spec& x);
caf::error inspect(caf::serializer& f, moments_request& x);
caf::error inspect(caf::deserializer& f, moments_request& x);
caf::error inspect(caf::serializer& f, moments_message& x);
caf::error inspect(caf::deserializer& f, moments_message& x);

template <class Inspector, class T>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>
                   && (std::is_same_v<T, part_message> || std::is_same_v<T, summary_message>
                       || std::is_same_v<T, part_shard_spec> || std::is_same_v<T, moments_request>
                       || std::is_same_v<T, moments_message>),
                 typename Inspector::result_type>
inspect(Inspector& f, T&) {
  return f(caf::meta::type_name("shardopt::node_local"));
}

/// A restrict request's refusal when the source is not a shard on the node that answers the token
/// given (gone, elsewhere, or another's): the driver reads the part itself then.
constexpr const char* not_a_source = "not a shard here that answers the token given";

/// A shard over some columns of another shard's data on the same node (see the protocol): the
/// source and the token it answers to, the compact model's shape, the columns kept (increasing,
/// each below the source's features; shape.features of them) and the compact shard's place among
/// the canonical blocks (the source's).
struct shard_restriction {
  shard_actor source;
  access_token source_token;
  model::model_shape shape;
  std::vector<std::int64_t> features;
  block_layout layout;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_restriction& x) {
  return f(caf::meta::type_name("shard_restriction"), x.source, x.source_token, x.shape.kind,
           x.shape.features, x.shape.outputs, x.shape.hidden, x.shape.act, x.features, x.layout);
}

/// What a node tells a driver about itself.
struct node_info {
  std::uint32_t version = 0;  ///< the node's protocol_version
  std::uint32_t threads = 0;  ///< worker threads: placement gives nodes shards in proportion
  std::string host;           ///< the node's host name, for the placement plan
};

/// The most worker threads a driver believes a node has (placement sizes vectors by them).
constexpr std::uint32_t max_node_threads = 4096;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.version, x.threads, x.host);
}

/// What a node tells anyone who asks about its state (`shardopt status`).
struct node_status {
  node_info info;
  std::int64_t drivers = 0;        ///< drivers holding anything here
  std::int64_t shards = 0;         ///< shards held (data arriving in pieces included)
  std::int64_t bytes_held = 0;     ///< their data and buffers, in bytes (node_holdings.hpp)
  std::int64_t evaluations = 0;    ///< evaluations its shards served since it started
  std::int64_t restrictions = 0;   ///< shards it made by restricting another, since it started
  bool draining = false;           ///< shutting down: it takes no new drivers
  bool node_local_data = false;    ///< it serves node-local data (has a --data-root)
  std::int64_t max_shards = 0;     ///< its limits (node_limits, defaults filled in)
  std::int64_t max_shards_per_driver = 0;
  std::int64_t max_bytes = 0;
  std::int64_t max_bytes_per_driver = 0;
  std::int64_t max_dimension = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_status& x) {
  return f(caf::meta::type_name("node_status"), x.info, x.drivers, x.shards, x.bytes_held,
           x.evaluations, x.restrictions, x.draining, x.node_local_data, x.max_shards, x.max_shards_per_driver,
           x.max_bytes, x.max_bytes_per_driver, x.max_dimension);
}

/// Rows [rows.begin, rows.end) of a dataset, for shipping to a node. Inside a process the dataset is
/// shared; on the wire only the selected rows travel, as raw blocks (labels, then dense floats or
/// the CSR arrays), and arrive as a dataset of their own.
struct data_block {
  std::shared_ptr<const model::dataset> data;
  model::row_range rows;
};

/// Serialises the selected rows as raw blocks.
caf::error inspect(caf::serializer& f, data_block& x);

/// Deserialises and checks a block: sizes must fit the bytes received (nothing is allocated for a
/// lying header), sparse indices must be in range.
caf::error inspect(caf::deserializer& f, data_block& x);

template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, data_block& x) {
  auto rows = x.rows.size();
  return f(caf::meta::type_name("data_block"), rows);
}

/// A request to create one shard: the model's shape and the shard's data.
struct shard_spec {
  model::model_shape shape;
  data_block block;
  block_layout layout;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_spec& x) {
  return f(caf::meta::type_name("shard_spec"), x.shape.kind, x.shape.features, x.shape.outputs,
           x.shape.hidden, x.shape.act, x.block, x.layout);
}

/// The typed interface of a node actor (see the protocol above).
using node_actor = caf::typed_actor<
  caf::replies_to<hello_atom, std::uint64_t, std::uint32_t, std::vector<char>>::with<std::uint64_t,
                                                                                      node_info>,
  caf::replies_to<append_atom, std::uint64_t, access_token, std::int64_t, std::int64_t,
                  std::int64_t, data_block>::with<std::uint64_t, std::int64_t>,
  caf::replies_to<spawn_atom, std::uint64_t, access_token, shard_spec>::with<std::uint64_t,
                                                                             shard_actor>,
  caf::replies_to<scan_atom, std::uint64_t, access_token, part_message>::with<std::uint64_t,
                                                                              summary_message>,
  caf::replies_to<moments_atom, std::uint64_t, access_token, moments_request>::with<std::uint64_t,
                                                                                   moments_message>,
  caf::replies_to<spawnpart_atom, std::uint64_t, access_token, part_shard_spec>::with<
    std::uint64_t, shard_actor, std::int64_t, dense_vector, double, double>,
  caf::replies_to<group_atom, std::uint64_t, access_token, std::vector<shard_actor>>::with<
    std::uint64_t, shard_actor>,
  caf::replies_to<tree_atom, std::uint64_t, access_token, std::vector<shard_actor>,
                  std::vector<std::string>, std::vector<shard_actor>>::with<std::uint64_t,
                                                                            shard_actor>,
  caf::replies_to<restrict_atom, std::uint64_t, access_token, shard_restriction>::with<
    std::uint64_t, shard_actor, std::int64_t, dense_vector, double, double>,
  caf::replies_to<release_atom, std::uint64_t, access_token, shard_actor>::with<std::uint64_t,
                                                                                std::int64_t>,
  caf::replies_to<status_atom, std::uint64_t>::with<std::uint64_t, node_status>>;

} // namespace shardopt::actors
