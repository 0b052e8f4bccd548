#pragma once

// # Node protocol
//
// A node process publishes one node actor (through CAF's middleman, optionally over TLS). A driver
// connects to it and asks, in order:
//
//   (hello_atom, bytes probe) -> (node_info)
//       The driver sends the raw bytes of a probe double and float; the node answers with its worker
//       threads and host name, or an error if its floating-point format differs (vectors and data
//       travel as raw bytes, so both ends must agree).
//   (echo_atom, dense_vector v) -> (dense_vector v)
//       Sends the vector back: measures the link (latency, bandwidth) without any computation.
//   (spawn_atom, shard_spec)  -> (shard_actor)
//       Creates one shard on this node from a shipped block of data and returns its handle. The
//       data is checked first (shape, label values); a bad block is refused with an error.
//   (scan_atom, part_message) -> (summary_message)
//       Node-local data: reads part p of P of a dataset this node can see and summarises it (rows,
//       distinct labels, feature sums), so the driver can fit label encoding and scaling.
//   (spawnpart_atom, part_shard_spec) -> (shard_actor)
//       Node-local data: reads part p of P again, encodes and scales it as the driver says, and
//       creates a shard on it. Errors name the file and line, as when reading locally.
//
// The node monitors every driver that created shards and ends those shards when the driver goes
// away (it disconnects, is killed, or finishes), so one node serves many drivers one after another.
//
//   states:  serving  --(driver down)-->  serving (that driver's shards ended)

#include "actors/messages.hpp"
#include "io/splits.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardopt::actors {

using hello_atom = caf::atom_constant<caf::atom("hello")>;
using spawn_atom = caf::atom_constant<caf::atom("spawnshard")>;
using echo_atom = caf::atom_constant<caf::atom("echo")>;
using scan_atom = caf::atom_constant<caf::atom("scan")>;
using spawnpart_atom = caf::atom_constant<caf::atom("spawnpart")>;

/// A part of a dataset to read on a node (see io::read_part).
struct part_message {
  io::part_request request;
};

/// The summary of a part (see io::summarize).
struct summary_message {
  io::part_summary summary;
};

/// A node-local shard: which part to read and how to encode and scale it.
struct part_shard_spec {
  io::part_request request;
  model::model_shape shape;
  io::label_encoding labels;
  io::feature_scaling scaling;
};

// Field by field, vectors as raw blocks; checked against the bytes received when loading.
caf::error inspect(caf::serializer& f, part_message& x);
caf::error inspect(caf::deserializer& f, part_message& x);
caf::error inspect(caf::serializer& f, summary_message& x);
caf::error inspect(caf::deserializer& f, summary_message& x);
caf::error inspect(caf::serializer& f, part_shard_spec& x);
caf::error inspect(caf::deserializer& f, part_shard_spec& x);

template <class Inspector, class T>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>
                   && (std::is_same_v<T, part_message> || std::is_same_v<T, summary_message>
                       || std::is_same_v<T, part_shard_spec>),
                 typename Inspector::result_type>
inspect(Inspector& f, T&) {
  return f(caf::meta::type_name("shardopt::node_local"));
}

/// What a node tells a driver about itself.
struct node_info {
  std::uint32_t threads = 0;  ///< worker threads: placement gives nodes shards in proportion
  std::string host;           ///< the node's host name, for the placement plan
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.threads, x.host);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_spec& x) {
  return f(caf::meta::type_name("shard_spec"), x.shape.kind, x.shape.features, x.shape.outputs,
           x.block);
}

/// The typed interface of a node actor (see the protocol above).
using node_actor =
  caf::typed_actor<caf::replies_to<hello_atom, std::vector<char>>::with<node_info>,
                   caf::replies_to<echo_atom, dense_vector>::with<dense_vector>,
                   caf::replies_to<spawn_atom, shard_spec>::with<shard_actor>,
                   caf::replies_to<scan_atom, part_message>::with<summary_message>,
                   caf::replies_to<spawnpart_atom, part_shard_spec>::with<shard_actor>>;

/// The probe a driver sends with hello: the bytes of a fixed double and float in this process.
std::vector<char> wire_probe();

/// Spawns a node actor whose shards run on `system`.
node_actor spawn_node(caf::actor_system& system, std::uint32_t threads);

} // namespace shardopt::actors
