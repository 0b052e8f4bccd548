#include "actors/cluster.hpp"

#include "actors/fan_out.hpp"
#include "actors/node.hpp"
#include "actors/shard.hpp"
#include "io/assembly.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace shardopt::actors {

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
  };

  result<part_reply> spawn_part_on(std::size_t j, const part_shard_spec& spec) {
    std::optional<part_reply> out;
    auto done = nodes.round(
      reply<shard_actor, std::int64_t, dense_vector, double>{}, j, j + 1, timeouts::control,
      "creating a shard",
      [&](std::size_t, std::uint64_t round) {
        self->send(nodes[j], spawnpart_atom::value, round, token, spec);
      },
      [&](std::size_t, shard_actor shard, std::int64_t rows, dense_vector feature_max,
          double max_label) -> result<void> {
        if (static_cast<std::int64_t>(feature_max.size()) != spec.shape.features
            || !feature_max.map().allFinite() || feature_max.map().minCoeff() < 0
            || !std::isfinite(max_label) || max_label < 0)
          return fail_runtime("reported impossible data bounds");
        out = part_reply{std::move(shard), rows, std::move(feature_max), max_label};
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

  /// Whether node j still answers a hello within timeouts::probe (after one of its shards went
  /// down: a lost shard alone does not make a node dead).
  bool answers(std::size_t j) {
    auto done = nodes.round(
      reply<node_info>{}, j, j + 1, timeouts::probe, "hello",
      [&](std::size_t, std::uint64_t round) {
        self->send(nodes[j], hello_atom::value, round, protocol_version, wire_probe());
      },
      [](std::size_t, const node_info&) -> result<void> { return {}; });
    return done.ok();
  }

  runtime& rt;
  caf::scoped_actor self;  // the driver: nodes end its shards when it ends
  access_token token;      // the capability every shard of this run answers to
  peer_group<node_actor> nodes;
  std::vector<connected_node> info;
  std::vector<bool> alive;
  std::vector<std::size_t> load;  // shards per node
  std::vector<std::size_t> home;  // node of each peer
  bool per_node = true;           // one peer per node (its shards grouped), else one per shard
  std::int64_t piece_bytes = std::int64_t{8} << 20;  // the most data one message ships
};

cluster::cluster(std::shared_ptr<impl> state) : impl_(std::move(state)) {}
cluster::cluster(cluster&&) noexcept = default;
cluster& cluster::operator=(cluster&&) noexcept = default;
cluster::~cluster() = default;

const std::vector<connected_node>& cluster::nodes() const {
  return impl_->info;
}

void cluster::group_per_node(bool on) {
  impl_->per_node = on;
}

void cluster::ship_in_pieces_of(std::int64_t bytes) {
  impl_->piece_bytes = std::max<std::int64_t>(bytes, 1);
}

namespace {

/// "shards 4-7" or "shard 4".
std::string shard_range(const std::vector<std::size_t>& members) {
  return members.size() == 1 ? "shard " + std::to_string(members.front())
                             : "shards " + std::to_string(members.front()) + "-"
                                 + std::to_string(members.back());
}

/// The shards of each node in `plan`, one peer per node that has any, in node order; or, when not
/// `per_node`, one peer per shard.
std::vector<std::vector<std::size_t>> peers_of(const std::vector<std::size_t>& plan,
                                               std::size_t nodes, bool per_node) {
  if (!per_node) {
    std::vector<std::vector<std::size_t>> peers;
    for (std::size_t i = 0; i < plan.size(); ++i)
      peers.push_back({i});
    return peers;
  }
  std::vector<std::vector<std::size_t>> by_node(nodes);
  for (std::size_t i = 0; i < plan.size(); ++i)
    by_node[plan[i]].push_back(i);
  std::vector<std::vector<std::size_t>> peers;
  for (auto& members : by_node)
    if (!members.empty())
      peers.push_back(std::move(members));
  return peers;
}

/// What the objective expects of each peer: the blocks of its shards, in runs.
std::vector<peer_share> shares_of(const std::vector<std::vector<std::size_t>>& peers,
                                  const std::vector<block_layout>& layouts,
                                  const std::vector<std::int64_t>& blocks,
                                  const std::vector<std::int64_t>& rows) {
  std::vector<peer_share> shares;
  for (const auto& members : peers) {
    peer_share share;
    for (const auto i : members) {
      const auto first = layouts[i].first_block;
      if (!share.runs.empty() && share.runs.back().first + share.runs.back().second == first)
        share.runs.back().second += blocks[i];
      else
        share.runs.emplace_back(first, blocks[i]);
      share.rows += rows[i];
    }
    share.name = shard_range(members);
    shares.push_back(std::move(share));
  }
  return shares;
}

/// The peer factory of a cluster: a lost peer's shards are made again, by `spawn(cluster, node,
/// shard)`, and grouped on the live node with the fewest shards. Its own node stays live only if
/// it still answers.
using spawn_fn = std::function<result<shard_actor>(cluster::impl&, std::size_t, std::size_t)>;

shard_factory replacer(std::shared_ptr<cluster::impl> state,
                       std::function<void(const std::string&)> log,
                       std::vector<std::vector<std::size_t>> peers, spawn_fn spawn) {
  return [state = std::move(state), log = std::move(log), peers = std::move(peers),
          spawn = std::move(spawn)](std::size_t g) -> result<shard_actor> {
    auto& c = *state;
    const auto& members = peers[g];
    const auto lost = c.home[g];
    c.load[lost] -= members.size();
    if (c.alive[lost] && !c.answers(lost)) {
      c.alive[lost] = false;
      if (log)
        log("node " + c.info[lost].endpoint.text() + " lost");
    }
    for (;;) {
      std::size_t best = c.info.size();
      for (std::size_t j = 0; j < c.info.size(); ++j)
        if (c.alive[j] && (best == c.info.size() || c.load[j] < c.load[best]))
          best = j;
      if (best == c.info.size())
        return fail_runtime("no node left to recreate " + shard_range(members) + " on (all "
                    + std::to_string(c.info.size()) + " nodes lost)");
      auto peer = c.peer_on(best, members,
                            [&](std::size_t j, std::size_t i) { return spawn(c, j, i); });
      if (peer) {
        c.home[g] = best;
        c.load[best] += members.size();
        if (log)
          log("recreated " + shard_range(members) + " on node " + c.info[best].endpoint.text());
        return peer;
      }
      c.alive[best] = false;
      if (log)
        log("node " + c.info[best].endpoint.text() + " lost: " + peer.error().message());
    }
  };
}

/// Each shard's place among the canonical blocks: block numbers follow the shards' order.
std::vector<block_layout> layouts_of(const std::vector<std::int64_t>& rows, std::int64_t block_rows,
                                     std::vector<std::int64_t>& blocks) {
  std::vector<block_layout> layouts;
  std::int64_t first = 0;
  blocks.clear();
  for (const auto count : rows) {
    layouts.push_back(block_layout{first, block_rows});
    blocks.push_back(model::block_count(count, block_rows));
    first += blocks.back();
  }
  return layouts;
}

/// Creates every peer of a run (a node's shards, grouped) and the objective over them, with the
/// data bounds as they are once every shard exists.
result<sharded_objective> cluster_objective(std::shared_ptr<cluster::impl> state,
                                            model::model_shape shape, double lambda,
                                            const std::vector<std::size_t>& plan,
                                            const std::vector<block_layout>& layouts,
                                            const std::vector<std::int64_t>& blocks,
                                            const std::vector<std::int64_t>& rows,
                                            std::shared_ptr<const model::data_bounds> bounds,
                                            std::chrono::milliseconds timeout,
                                            std::function<void(const std::string&)> log,
                                            spawn_fn spawn) {
  auto& s = *state;
  auto peers = peers_of(plan, s.info.size(), s.per_node);
  std::vector<shard_actor> handles;
  s.home.clear();
  for (const auto& members : peers) {
    const auto j = plan[members.front()];
    auto peer = s.peer_on(j, members, [&](std::size_t node, std::size_t i) {
      return spawn(s, node, i);
    });
    if (!peer)
      return peer.error();
    handles.push_back(std::move(*peer));
    s.home.push_back(j);
    s.load[j] += members.size();
  }
  auto shares = shares_of(peers, layouts, blocks, rows);
  auto replace = replacer(state, std::move(log), std::move(peers), std::move(spawn));
  return make_sharded_objective(s.rt, std::move(shape), lambda, std::move(handles),
                                std::move(shares), *bounds, s.token, timeout, std::move(replace));
}

} // namespace

result<cluster::node_local_run>
cluster::read_on_nodes(const model::model_shape& architecture, std::int64_t classes, double lambda,
                       const io::part_request& data, io::scale_mode mode, bool standardize,
                       const std::vector<std::size_t>& plan, std::chrono::milliseconds timeout,
                       std::function<void(const std::string&)> log) {
  auto& s = *impl_;
  const auto parts = static_cast<std::int64_t>(plan.size());
  // Copies, not references: the shard factory below outlives this call.
  auto part = [data, parts](std::size_t i) {
    auto request = data;
    request.part = static_cast<std::int64_t>(i);
    request.parts = parts;
    return request;
  };
  // Summaries first: encoding and scaling must come from the whole dataset. Part 1 goes first: for
  // dense text it fixes the field count that the other parts are checked against.
  std::vector<io::part_summary> summaries;
  std::int64_t dense_features = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto request = part(i);
    if (dense_features > 0)
      request.options.features = dense_features;
    auto summary = s.ask<summary_message>(plan[i], "reading a part", [&](std::uint64_t round) {
      s.self->send(s.nodes[plan[i]], scan_atom::value, round, s.token, part_message{request});
    });
    if (!summary)
      return summary.error().with_context("reading part " + std::to_string(i + 1));
    if (i == 0 && !summary->summary.bounds.sparse)
      dense_features = summary->summary.cols;
    summaries.push_back(std::move(summary->summary));
  }
  // Standardising: every part's exact moments on the grid of the merged bounds, asked of its node.
  auto moments = [&](std::size_t i, const io::moment_grid& grid) -> result<io::feature_moments> {
    auto request = part(i);
    if (dense_features > 0)
      request.options.features = dense_features;
    auto answer = s.ask<moments_message>(plan[i], "taking a part's moments", [&](std::uint64_t round) {
      s.self->send(s.nodes[plan[i]], moments_atom::value, round, s.token, moments_request{request, grid});
    });
    if (!answer)
      return answer.error();
    return std::move(answer->moments);
  };
  auto fitted = io::fit_parts(architecture.kind, classes, summaries, mode, standardize, data.spec, moments);
  if (!fitted)
    return fitted.error();
  const model::model_shape shape{architecture.kind, fitted->features, fitted->labels.outputs(),
                                 architecture.hidden, architecture.act};
  std::vector<std::int64_t> rows;
  for (const auto& summary : summaries)
    rows.push_back(summary.rows);
  std::vector<std::int64_t> blocks;
  const auto layouts = layouts_of(rows, model::block_rows_for(fitted->rows), blocks);
  auto spec_of = [=](std::size_t i) {
    return part_shard_spec{part(i), shape, fitted->labels, fitted->scaling, layouts[i]};
  };
  // Every part's bounds, from the nodes' replies (and again from a recreated shard's).
  auto bounds = std::make_shared<model::data_bounds>(
    model::data_bounds{{}, 0, layouts.empty() ? 1 : layouts.front().block_rows, 0});
  for (const auto count : blocks)
    bounds->blocks += count;
  // Sparse parts are summed term by term, on grids with room for the packed words (exact_sum.hpp).
  for (const auto& summary : summaries)
    if (summary.bounds.sparse)
      bounds->bits = model::packed_bits;
  spawn_fn spawn = [spec_of, rows, bounds](impl& c, std::size_t node,
                                           std::size_t i) -> result<shard_actor> {
    auto shard = c.spawn_part_on(node, spec_of(i));
    if (!shard)
      return shard.error();
    if (shard->rows != rows[i])
      return fail_runtime("node " + c.info[node].endpoint.text() + " read " + std::to_string(shard->rows)
                  + " rows of part " + std::to_string(i + 1) + ", it summarised "
                  + std::to_string(rows[i]));
    *bounds += model::data_bounds{shard->feature_max.map(), shard->max_label, bounds->block_rows, 0};
    return std::move(shard->shard);
  };
  auto objective = cluster_objective(impl_, shape, lambda, plan, layouts, blocks, rows, bounds,
                                     timeout, std::move(log), spawn);
  if (!objective)
    return objective.error();
  std::int64_t feature_bytes = 0;
  for (const auto& summary : summaries)
    feature_bytes += static_cast<std::int64_t>(summary.bounds.stored.sum()) * (summary.bounds.sparse ? 8 : 4);
  return node_local_run{std::move(*objective), shape, fitted->labels, fitted->scaling,
                        fitted->rows, feature_bytes};
}

result<cluster> cluster::connect(runtime& rt, const std::vector<node_endpoint>& endpoints) {
  if (endpoints.empty())
    return fail_invalid("no nodes given");
  std::vector<node_actor> handles;
  std::vector<connected_node> connected;
  for (const auto& where : endpoints) {
    auto handle = connect_to<node_actor>(rt, where, "a shardopt node");
    if (!handle)
      return handle.error();
    handles.push_back(*handle);
    connected.push_back(connected_node{where, 0, {}});
  }
  auto state = std::make_shared<impl>(rt, std::move(handles), std::move(connected));
  auto& s = *state;
  auto hello = s.nodes.round(
    reply<node_info>{}, timeouts::control, "hello",
    [&](std::size_t j, std::uint64_t round) {
      s.self->send(s.nodes[j], hello_atom::value, round, protocol_version, wire_probe());
    },
    [&](std::size_t j, node_info answer) -> result<void> {
      if (answer.version != protocol_version)
        return fail_runtime("speaks shardopt protocol version " + std::to_string(answer.version)
                    + ", this driver speaks version " + std::to_string(protocol_version));
      if (answer.threads == 0 || answer.threads > max_node_threads)
        return fail_runtime("announced " + std::to_string(answer.threads) + " worker threads (expected 1.."
                    + std::to_string(max_node_threads) + ")");
      s.info[j].threads = answer.threads;
      s.info[j].host = answer.host.substr(0, 255);
      return {};
    });
  if (!hello)
    return hello.error();
  return cluster{std::move(state)};
}

result<sharded_objective> cluster::ship(model::model_shape shape, double lambda,
                                        std::shared_ptr<const model::dataset> data,
                                        const std::vector<model::row_range>& ranges,
                                        const std::vector<std::size_t>& plan,
                                        std::chrono::milliseconds timeout,
                                        std::function<void(const std::string&)> log) {
  if (plan.size() != ranges.size())
    return fail_invalid("placement plan does not cover every shard");
  std::vector<std::int64_t> rows;
  std::int64_t total = 0;
  for (const auto& range : ranges) {
    rows.push_back(range.size());
    total += range.size();
  }
  std::vector<std::int64_t> blocks;
  const auto block_rows = model::block_rows_for(total);
  const auto layouts = layouts_of(rows, block_rows, blocks);
  auto bounds = std::make_shared<model::data_bounds>(model::data_bounds{{}, 0, block_rows, 0});
  for (const auto& range : ranges)
    *bounds += model::bounds_of(*data, range, block_rows);
  spawn_fn spawn = [shape, data, ranges, layouts](impl& c, std::size_t node, std::size_t i) {
    return c.ship_on(node, shape, data, ranges[i], layouts[i]);
  };
  return cluster_objective(impl_, std::move(shape), lambda, plan, layouts, blocks, rows, bounds,
                           timeout, std::move(log), std::move(spawn));
}

} // namespace shardopt::actors
