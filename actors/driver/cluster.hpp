#pragma once

#include "actors/wire/network.hpp"
#include "actors/wire/runtime.hpp"
#include "actors/driver/sharded_objective.hpp"
#include "actors/driver/topology.hpp"
#include "io/column_map.hpp"
#include "io/splits.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace shardopt::actors {

/// Where a node listens.
using node_endpoint = endpoint;

/// A node the driver is connected to.
struct connected_node {
  node_endpoint endpoint;
  std::uint32_t threads = 0;
  std::string host;
};

/// The driver's view of a set of node processes: connected and checked (protocol version, wire
/// format, thread count) at `connect`, used to create shards on them. Every shard it creates
/// answers only this cluster's random token. Blocks the calling thread; use from the driver thread
/// only.
class cluster {
public:
  /// Connects to every node (over TLS when the runtime has TLS options), exchanges protocol
  /// versions and checks that its floating-point format matches. Errors name the node.
  static result<cluster> connect(runtime& rt, const std::vector<node_endpoint>& endpoints);

  cluster(cluster&&) noexcept;
  cluster& operator=(cluster&&) noexcept;
  ~cluster();

  const std::vector<connected_node>& nodes() const;

  /// How the objectives made after this call reach their shards: one peer per node, the node's
  /// shards grouped there so theta goes out and one sum comes back once per node (the default), or
  /// one peer per shard (`false`: theta and a reply per shard; kept to measure the difference).
  /// The sums are the same bits either way.
  void group_per_node(bool on);

  /// How the objectives made after this call reach their nodes (topology.hpp); `fan_in`
  /// children per tree node, 0: automatic_fan_in.
  void use_topology(topology kind, std::size_t fan_in);

  /// Nodes given up for lost during the run, and lost nodes re-admitted after they answered again
  /// at their address (their shards moved back to them).
  std::size_t lost_nodes() const;
  std::size_t rejoined_nodes() const;

  /// Watches a source of node addresses for nodes that arrive: at most once every `every`, `list`
  /// is asked for a `--nodes` list on a thread of its own (a name server may be slow), and the
  /// addresses it names that this cluster does not know are probed, off the driver's thread too;
  /// one that answers is connected, checked and admitted at the next evaluation boundary (`name`
  /// says where it came from in messages), one that does not is tried again, waiting 1 s doubling
  /// to 60 s, while it is listed. A node that joins holds no shards at first; it takes over the
  /// shards of nodes that are lost (the live node with the fewest shards does) and joins the tree
  /// when it holds some. Nodes that leave the list are not dropped. `list` runs on threads of its
  /// own, after this cluster may be gone: it must own what it uses (capture by value).
  void watch_nodes(std::string name, std::function<result<std::string>()> list,
                   std::chrono::milliseconds every);

  /// watch_nodes over a nodes file (io::read_nodes_file), looked at once a second.
  void watch_nodes_file(std::string path);

  /// watch_nodes over a DNS name's addresses (io::resolve_nodes: "NAME:PORT"), every 5 seconds.
  void watch_nodes_dns(std::string name_port);

  std::size_t joined_nodes() const;

  /// "tree" when the latest evaluations went through a reduction tree among the nodes, else
  /// "star" (the driver asks every node).
  std::string topology_in_use() const;

  /// The most bytes of data one message carries when `ship` sends a shard's rows (default 8 MiB):
  /// a larger shard goes in pieces. A node's connection keeps a read buffer as large as the
  /// largest message it received, so this bounds what shipping costs a node beyond the data.
  void ship_in_pieces_of(std::int64_t bytes);

  /// Creates shard i on node plan[i] with rows blocks[i] of `data`, shipped once as raw blocks, in
  /// pieces of at most `ship_in_pieces_of` bytes.
  /// The objective recreates a lost shard: on its own node if that node still answers, else on the
  /// surviving node with the fewest shards (shipping its block again), and reports it through
  /// `log`; when no node is left, the evaluation fails with a message saying so.
  /// The objective can restrict itself (shrinking): its compact objective's shards, over
  /// the kept features' columns, are shipped to the nodes that hold its peers then, under a driver
  /// identity (and token) of their own, which ends, and releases them there, with that objective.
  result<sharded_objective> ship(model::model_shape shape, double lambda,
                                 std::shared_ptr<const model::dataset> data,
                                 const std::vector<model::row_range>& blocks,
                                 const std::vector<std::size_t>& plan,
                                 std::chrono::milliseconds timeout,
                                 std::function<void(const std::string&)> log);

  /// What `read_on_nodes` learned of the dataset from the nodes.
  struct node_local_run {
    sharded_objective objective;
    model::model_shape shape;
    io::label_encoding labels;
    io::feature_scaling scaling;
    std::int64_t rows = 0;
    std::int64_t feature_bytes = 0;  ///< what the parts' features take in memory, in all
    bool sparse = false;             ///< the parts are CSR rows
    io::hashing_options hashing;     ///< how the parts' features were hashed (none: numbers)
    std::optional<io::column_map> columns;  ///< set when `shape` covers only the used columns
  };

  /// Node-local data: shard i is part i of `plan.size()` of `data` (a path every node can see),
  /// read by node plan[i] itself (io::read_part). The nodes first summarise their parts; label
  /// encoding and scaling are fitted from the summaries (io::fit_parts) and sent with the shard
  /// requests, so every part is encoded and scaled alike. Lost shards are recreated as in `ship`,
  /// by a surviving node reading the same part. Text parts (byte ranges) are moved by a few
  /// examples at their edges to start canonical blocks (io::block_aligned_shifts), so node-local
  /// text gives the same bits for any part count.
  ///
  /// With `leave_out_unused`, a linear model over sparse parts leaves out the columns that no part
  /// stores (by the summaries' counts, under io::used_columns's rule), as the driver does with data
  /// it holds: the nodes renumber their parts' columns, and `shape` and `columns` say so.
  result<node_local_run> read_on_nodes(const model::model_shape& architecture, std::int64_t classes,
                                       double lambda,
                                       const io::part_request& data, io::scale_mode mode,
                                       bool standardize, const std::vector<std::size_t>& plan,
                                       std::chrono::milliseconds timeout,
                                       std::function<void(const std::string&)> log,
                                       bool leave_out_unused = false);

  struct impl;

private:
  explicit cluster(std::shared_ptr<impl> state);
  std::shared_ptr<impl> impl_;
};

} // namespace shardopt::actors
