#pragma once

// Internal to the cluster's sources (cluster.cpp: connecting and shipping; cluster_parts.cpp:
// node-local data): the driver's state over its nodes, and how a run's peers are made, placed and
// made again after a loss. Not part of the actors library's interface.

#include "actors/driver/cluster.hpp"
#include "actors/driver/part_bounds.hpp"
#include "actors/wire/fan_out.hpp"
#include "actors/wire/node_protocol.hpp"
#include "actors/wire/off_thread.hpp"
#include "actors/driver/peers.hpp"
#include "io/assembly.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::actors {

/// An address tried again while it does not answer, off the driver's thread (reach_tcp): a probe
/// when one is due, then a wait that doubles from 1 s to 60 s after each try that fails, so a host
/// that drops packets costs ever less and never holds an evaluation up.
struct address_retry {
  using clock = std::chrono::steady_clock;

  /// `to`, first tried at `first` (by default 1 s from now).
  explicit address_retry(endpoint to, clock::time_point first = clock::now() + std::chrono::seconds{1})
    : where(std::move(to)), next(first) {}

  endpoint where;
  clock::time_point next;
  clock::duration wait = std::chrono::seconds{1};
  off_thread<tcp_reach> probe;
  std::string last_why;  // why the last try failed (logged when it changes)

  /// The probe's result once it is in; starts one when due, none is running and `slots` (probes
  /// that may still start at this boundary) allows.
  std::optional<tcp_reach> poll(clock::time_point now, std::size_t& slots) {
    if (auto done = probe.take())
      return done;
    if (!probe.running() && now >= next && slots > 0) {
      --slots;
      probe.start([to = where] { return reach_tcp(to, timeouts::connect); },
                  tcp_reach{false, {}, "the probe failed"});
    }
    return std::nullopt;
  }

  /// After a try that failed: the next one waits longer.
  void failed(clock::time_point now) {
    next = now + wait;
    wait = std::min<clock::duration>(2 * wait, std::chrono::seconds{60});
  }
};

struct cluster::impl {
  impl(runtime& r, std::vector<node_actor> handles, std::vector<connected_node> connected)
    : rt(r), self(r.system()), token(access_token::random()),
      nodes(self.ptr(), std::move(handles), names_of(connected)), info(std::move(connected)),
      alive(info.size(), true), load(info.size(), 0) {}

  static std::vector<std::string> names_of(const std::vector<connected_node>& nodes) {
    std::vector<std::string> names;
    for (const auto& node : nodes)
      names.push_back(node.endpoint.text());
    return names;
  }

  /// Whether a node's hello answer is one this driver can work with.
  static result<void> check_info(const node_info& answer) {
    if (answer.version != protocol_version)
      return fail_runtime("speaks shardopt protocol version " + std::to_string(answer.version)
                          + ", this driver speaks version " + std::to_string(protocol_version));
    if (answer.threads == 0 || answer.threads > max_node_threads)
      return fail_runtime("announced " + std::to_string(answer.threads)
                          + " worker threads (expected 1.." + std::to_string(max_node_threads) + ")");
    return {};
  }

  /// Asks node j one request (`send(round)` sends it) and returns its reply, a value of type T.
  template <class T, class Send>
  result<T> ask(std::size_t j, const std::string& what, Send send) {
    std::optional<T> out;
    auto done = nodes.round(
      reply<T>{}, j, j + 1, timeouts::control, what,
      [&](std::size_t, std::uint64_t round) { send(round); },
      [&](std::size_t, T value) -> result<void> {
        out = std::move(value);
        return {};
      });
    if (!done)
      return done.error();
    return std::move(*out);
  }

  result<shard_actor> spawn_on(std::size_t j, const shard_spec& spec) {
    return ask<shard_actor>(j, "creating a shard", [&](std::uint64_t round) {
      self->send(nodes[j], spawn_atom::value, round, token, spec);
    });
  }

  /// Ships rows `range` of `data` to node j and creates a shard on them: in one message when they
  /// fit in a piece, else piece by piece (see the node protocol), then the shard on what arrived.
  result<shard_actor> ship_on(std::size_t j, const model::model_shape& shape,
                              const std::shared_ptr<const model::dataset>& data,
                              model::row_range range, const block_layout& layout) {
    const auto pieces = io::pieces_of(*data, range, piece_bytes);
    if (pieces.size() <= 1)
      return spawn_on(j, shard_spec{shape, data_block{data, range}, layout});
    const auto whole = io::extent_of(*data, range);
    for (const auto& piece : pieces) {
      auto received = ask<std::int64_t>(j, "shipping a shard's data", [&](std::uint64_t round) {
        self->send(nodes[j], append_atom::value, round, token, whole.rows, whole.nonzeros,
                   piece.begin - range.begin, data_block{data, piece});
      });
      if (!received)
        return received.error();
      if (*received != piece.end - range.begin)
        return fail_runtime("node " + nodes.name(j) + " reported " + std::to_string(*received)
                    + " rows received, " + std::to_string(piece.end - range.begin) + " were sent");
    }
    return spawn_on(j, shard_spec{shape, data_block{data, {range.end, range.end}}, layout});
  }

  /// A node-local shard and what its node read.
  struct part_reply {
    shard_actor shard;
    std::int64_t rows = 0;
    dense_vector feature_max;
    double max_label = 0;
    double max_row_norm = 0;
  };

  result<part_reply> spawn_part_on(std::size_t j, const part_shard_spec& spec) {
    return part_on(j, spec.shape.features, "creating a shard", [&](std::uint64_t round) {
      self->send(nodes[j], spawnpart_atom::value, round, token, spec);
    });
  }

  /// A shard on node j over some columns of a shard there (the protocol's restrict request).
  result<part_reply> restrict_on(std::size_t j, const shard_restriction& spec) {
    return part_on(j, spec.shape.features, "restricting a shard", [&](std::uint64_t round) {
      self->send(nodes[j], restrict_atom::value, round, token, spec);
    });
  }

  /// Node j's answer to a request for a shard of `features` whose reply is a part's.
  template <class Send>
  result<part_reply> part_on(std::size_t j, std::int64_t features, const std::string& what, Send send) {
    std::optional<part_reply> out;
    auto done = nodes.round(
      reply<shard_actor, std::int64_t, dense_vector, double, double>{}, j, j + 1, timeouts::control,
      what, [&](std::size_t, std::uint64_t round) { send(round); },
      [&](std::size_t, shard_actor shard, std::int64_t rows, dense_vector feature_max,
          double max_label, double max_row_norm) -> result<void> {
        if (auto possible = check_part_bounds(features, feature_max.map(), max_label, max_row_norm);
            !possible)
          return possible.error();
        out = part_reply{std::move(shard), rows, std::move(feature_max), max_label, max_row_norm};
        return {};
      });
    if (!done)
      return done.error();
    return std::move(*out);
  }

  /// Makes the peer of shards `members` on node j: each made by `spawn(j, shard)`, then grouped
  /// on the node (a single shard is its own peer).
  template <class Spawn>
  result<shard_actor> peer_on(std::size_t j, const std::vector<std::size_t>& members, Spawn spawn) {
    std::vector<shard_actor> shards;
    for (const auto i : members) {
      auto shard = spawn(j, i);
      if (!shard)
        return shard.error().with_context("creating shard " + std::to_string(i));
      shards.push_back(std::move(*shard));
    }
    if (shards.size() == 1)
      return shards.front();
    return ask<shard_actor>(j, "grouping shards", [&](std::uint64_t round) {
      self->send(nodes[j], group_atom::value, round, token, shards);
    });
  }

  /// Sends node j a hello under `round`.
  void send_hello(std::size_t j, std::uint64_t round) {
    self->send(nodes[j], hello_atom::value, round, protocol_version, wire_probe());
  }

  /// Node j's answer to a hello within timeouts::probe, or why there is none.
  result<node_info> hello(std::size_t j) {
    std::optional<node_info> out;
    auto done = nodes.round(
      reply<node_info>{}, j, j + 1, timeouts::probe, "hello",
      [&](std::size_t, std::uint64_t round) { send_hello(j, round); },
      [&](std::size_t, node_info answer) -> result<void> {
        out = std::move(answer);
        return {};
      });
    if (!done)
      return done.error();
    return std::move(*out);
  }

  /// Whether node j still answers a hello (after one of its shards went down: a lost shard alone
  /// does not make a node dead).
  bool answers(std::size_t j) { return hello(j).ok(); }

  runtime& rt;
  caf::scoped_actor self;  // the driver: nodes end its shards when it ends
  access_token token;      // the capability every shard of this run answers to
  peer_group<node_actor> nodes;
  std::vector<connected_node> info;
  std::vector<bool> alive;
  std::vector<std::size_t> load;  // shards per node
  std::vector<std::size_t> home;  // node of each peer
  std::vector<std::size_t> placed;  // node each peer was first placed on
  std::vector<shard_actor> current;  // each peer's handle now
  std::size_t rejoined = 0;       // lost nodes that came back and were re-admitted
  std::size_t joined = 0;         // nodes admitted from the nodes file during the run
  struct node_source {            // watched for new nodes (cluster::watch_nodes)
    std::string name;
    std::function<result<std::string>()> list;
    std::chrono::milliseconds every{};
    std::chrono::steady_clock::time_point next{};
    std::string last;             // the list, or the error, seen last
    off_thread<result<std::string>> listing;  // a look in progress
    std::vector<endpoint> listed;  // what the last good look listed
  };
  std::vector<node_source> sources;
  std::vector<address_retry> retries;  // per node: its address while it is lost
  std::vector<address_retry> arriving;  // addresses the sources list that are not nodes yet
  std::vector<std::string> aliases;     // listed addresses found to be other names of nodes
  bool per_node = true;           // one peer per node (its shards grouped), else one per shard
  topology routing = topology::automatic;
  std::size_t fan_in = 0;         // children per tree node; 0: automatic
  bool in_tree = false;           // the latest evaluations went through a reduction tree
  std::size_t lost = 0;           // nodes given up during the run
  std::int64_t piece_bytes = std::int64_t{8} << 20;  // the most data one message ships
};

/// Makes shard `shard` on node `node` of a cluster (shipping its rows, or having the node read them).
using spawn_fn = std::function<result<shard_actor>(cluster::impl&, std::size_t node, std::size_t shard)>;

/// Builds reduction trees over a run's peers (one per node after placement; more on a node that took
/// over a lost node's shards) among the live nodes that hold them, as the cluster's topology says.
/// `log` hears of each tree built ("reduction tree: ...") and of a tree that could not be built.
tree_builder tree_of(std::shared_ptr<cluster::impl> state, std::int64_t dimension,
                     std::function<void(const std::string&)> log);

/// At an evaluation boundary, without waiting on the network (cluster_reach.cpp): starts what is
/// due off the driver's thread (looks at the watched sources, probes of lost nodes' addresses and
/// of listed addresses that are not nodes yet) and takes what finished since the last boundary.
/// An address that answered is connected and greeted here: a lost node that passes the hello is
/// alive again and returned (its peers are the caller's to move back); a new one is admitted
/// (cluster::watch_nodes). `log` hears of each.
std::vector<std::size_t> reach_nodes(cluster::impl& c,
                                     const std::function<void(const std::string&)>& log);

/// A shard the run made on a node: its node and handle.
struct held_part {
  std::size_t node = 0;
  shard_actor shard;
};

/// Each of a run's shards as the run made them, newest last (a comeback that fails halfway leaves
/// the stand-in's shard the one in use, so the older ones are kept).
using held_parts = std::vector<std::vector<held_part>>;

/// A working set's shard on `node` over `features` of the run's newest shard `made` there, under
/// the run's token `parent` (the protocol's restrict request, made by `s`, a sibling). Fails
/// with `not_a_source` in its message when there is none there (or the node says it is gone).
result<cluster::impl::part_reply> restrict_held(cluster::impl& s, std::size_t node, const std::vector<held_part>& made,
                                                const access_token& parent, const model::model_shape& compact,
                                                const std::vector<std::int64_t>& features, const block_layout& layout);

/// A working-set shard node `node` made (`made`), once its rows are the `rows` expected of shard
/// `what` ("shard 3", "part 4"); its bounds added to `bounds`.
result<shard_actor> take_restricted(const cluster::impl& s, std::size_t node, cluster::impl::part_reply made,
                                    std::int64_t rows, const std::string& what, model::data_bounds& bounds);

/// A cluster over `c`'s nodes for an objective of its own (a working set's): the same nodes, their
/// liveness and routing, under a new driver identity and token (the nodes hold what it makes
/// apart from `c`'s, and release it when it ends). It watches no sources.
std::shared_ptr<cluster::impl> sibling_of(const cluster::impl& c);

/// Each shard's node now, for shards `plan` placed as `peers` (each peer's shards): its peer's
/// node, or `live` where that node is given up.
std::vector<std::size_t> placement_now(const cluster::impl& c, const std::vector<std::size_t>& plan,
                                       const std::vector<std::vector<std::size_t>>& peers, std::size_t live);

/// The first node of `c` alive (c.alive.size(): none).
std::size_t first_live(const cluster::impl& c);

/// `log` without the reduction trees' lines (a working set's objective builds one each round).
std::function<void(const std::string&)> without_trees(std::function<void(const std::string&)> log);

/// The shards of each node in `plan`, one peer per node that has any, in node order; or, when not
/// `per_node`, one peer per shard.
std::vector<std::vector<std::size_t>> peers_of(const std::vector<std::size_t>& plan, std::size_t nodes,
                                               bool per_node);

/// Each shard's place among the canonical blocks: block numbers follow the shards' order; `blocks`
/// gets each shard's block count.
std::vector<block_layout> layouts_of(const std::vector<std::int64_t>& rows, std::int64_t block_rows,
                                     std::vector<std::int64_t>& blocks);

/// Creates every peer of a run (a node's shards, grouped) and the objective over them, with the
/// data bounds as they are once every shard exists. A lost peer's shards are made again by
/// `spawn` on the live node with the fewest shards.
result<sharded_objective> cluster_objective(std::shared_ptr<cluster::impl> state, model::model_shape shape,
                                            double lambda, const std::vector<std::size_t>& plan,
                                            const std::vector<block_layout>& layouts,
                                            const std::vector<std::int64_t>& blocks,
                                            const std::vector<std::int64_t>& rows,
                                            std::shared_ptr<const model::data_bounds> bounds,
                                            std::chrono::milliseconds timeout,
                                            std::function<void(const std::string&)> log, spawn_fn spawn);

} // namespace shardopt::actors
