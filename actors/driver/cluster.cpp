#include "actors/driver/cluster.hpp"

#include "actors/driver/cluster_impl.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace shardopt::actors {

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

namespace {

/// "shards 4-7" or "shard 4".
std::string shard_range(const std::vector<std::size_t>& members) {
  return members.size() == 1 ? "shard " + std::to_string(members.front())
                             : "shards " + std::to_string(members.front()) + "-"
                                 + std::to_string(members.back());
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
      ++c.lost;
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
        c.current[g] = *peer;
        c.home[g] = best;
        c.load[best] += members.size();
        if (log)
          log("recreated " + shard_range(members) + " on node " + c.info[best].endpoint.text());
        return peer;
      }
      c.alive[best] = false;
      ++c.lost;
      if (log)
        log("node " + c.info[best].endpoint.text() + " lost: " + peer.error().message());
    }
  };
}

/// The boundary hook of a cluster: lost nodes that answer again and pass the hello are re-admitted
/// (reach_nodes: their addresses are tried off the driver's thread, 1 s after the loss and then ever
/// less often), and the peers first placed on them are made there again (shipped rows shipped
/// again, node-local parts read again) and handed to the objective, so the placement is what it
/// was; what stood in for them is released on its node.
boundary_hook returner(std::shared_ptr<cluster::impl> state,
                       std::function<void(const std::string&)> log,
                       std::vector<std::vector<std::size_t>> peers, spawn_fn spawn) {
  return [state = std::move(state), log = std::move(log), peers = std::move(peers),
          spawn = std::move(spawn)]() {
    std::vector<std::pair<std::size_t, shard_actor>> moved;
    auto& c = *state;
    for (const auto j : reach_nodes(c, log)) {
      for (std::size_t g = 0; g < peers.size(); ++g) {
        if (c.placed[g] != j || c.home[g] == j)
          continue;
        auto peer = c.peer_on(j, peers[g], [&](std::size_t node, std::size_t i) {
          return spawn(c, node, i);
        });
        if (!peer) {
          c.alive[j] = false;
          ++c.lost;
          if (log)
            log("node " + c.info[j].endpoint.text() + " lost again: " + peer.error().message());
          break;
        }
        const auto stand_in = c.home[g];
        const auto old = c.current[g];
        c.load[stand_in] -= peers[g].size();
        c.home[g] = j;
        c.load[j] += peers[g].size();
        c.current[g] = *peer;
        moved.emplace_back(g, std::move(*peer));
        if (log)
          log("moved " + shard_range(peers[g]) + " back to node " + c.info[j].endpoint.text());
        // What stood in for them is ended, and its data freed.
        auto ended = c.ask<std::int64_t>(stand_in, "releasing what stood in", [&](std::uint64_t round) {
          c.self->send(c.nodes[stand_in], release_atom::value, round, c.token, old);
        });
        if (log)
          log(ended ? "released " + shard_range(peers[g]) + " on node " + c.info[stand_in].endpoint.text()
                    : "could not release " + shard_range(peers[g]) + " on node "
                        + c.info[stand_in].endpoint.text() + ": " + ended.error().message());
      }
    }
    return moved;
  };
}

} // namespace

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
  s.placed = s.home;
  s.current = handles;
  auto replace = replacer(state, log, peers, spawn);
  auto tree = tree_of(state, shape.dimension(), log);
  auto comeback = returner(state, std::move(log), std::move(peers), std::move(spawn));
  return make_sharded_objective(s.rt, std::move(shape), lambda, std::move(handles),
                                std::move(shares), *bounds, s.token, timeout, std::move(replace),
                                std::move(tree), std::move(comeback));
}



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

result<cluster> cluster::connect(runtime& rt, const std::vector<node_endpoint>& endpoints) {
  if (endpoints.empty())
    return fail_invalid("no nodes given");
  std::vector<node_actor> handles;
  std::vector<connected_node> connected;
  for (const auto& where : endpoints) {
    auto handle = connect_to<node_actor>(rt, where, "a shardopt node");
    if (!handle)
      return handle.error();
    // A node listed twice, or under two names (a host name and its address): CAF hands out one
    // proxy per remote actor, so it is one node, greeted once (as arrivals mid-run are).
    if (std::find(handles.begin(), handles.end(), *handle) != handles.end())
      continue;
    handles.push_back(*handle);
    connected.push_back(connected_node{where, 0, {}});
  }
  auto state = std::make_shared<impl>(rt, std::move(handles), std::move(connected));
  auto& s = *state;
  auto hello = s.nodes.round(
    reply<node_info>{}, timeouts::control, "hello",
    [&](std::size_t j, std::uint64_t round) {
      s.send_hello(j, round);
    },
    [&](std::size_t j, node_info answer) -> result<void> {
      if (auto ok = impl::check_info(answer); !ok)
        return ok;
      s.info[j].threads = answer.threads;
      s.info[j].host = answer.host.substr(0, 255);
      return {};
    });
  if (!hello)
    return hello.error();
  return cluster{std::move(state)};
}

std::shared_ptr<cluster::impl> sibling_of(const cluster::impl& c) {
  auto s = std::make_shared<cluster::impl>(c.rt, c.nodes.handles(), c.info);
  s->alive = c.alive;
  s->per_node = c.per_node;
  s->routing = c.routing;
  s->fan_in = c.fan_in;
  s->piece_bytes = c.piece_bytes;
  return s;
}

std::vector<std::size_t> placement_now(const cluster::impl& c, const std::vector<std::size_t>& plan,
                                       const std::vector<std::vector<std::size_t>>& peers, std::size_t live) {
  std::vector<std::size_t> now(plan);
  for (std::size_t g = 0; g < peers.size() && g < c.home.size(); ++g)
    for (const auto i : peers[g])
      now[i] = c.home[g];
  for (auto& node : now)
    if (node >= c.alive.size() || !c.alive[node])
      node = live;
  return now;
}

std::size_t first_live(const cluster::impl& c) {
  std::size_t live = 0;
  while (live < c.alive.size() && !c.alive[live])
    ++live;
  return live;
}

std::function<void(const std::string&)> without_trees(std::function<void(const std::string&)> log) {
  if (!log)
    return {};
  return [log = std::move(log)](const std::string& event) {
    if (event.rfind("reduction tree", 0) != 0)
      log(event);
  };
}

namespace {

/// Shards of `ranges` among the canonical blocks: their rows, blocks and layouts.
struct shard_blocks {
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> blocks;
  std::int64_t block_rows = 1;
  std::vector<block_layout> layouts;

  explicit shard_blocks(const std::vector<model::row_range>& ranges) {
    std::int64_t total = 0;
    for (const auto& range : ranges) {
      rows.push_back(range.size());
      total += range.size();
    }
    block_rows = model::block_rows_for(total);
    layouts = layouts_of(rows, block_rows, blocks);
  }
};

/// How a shipped objective makes each round's working-set objective: its shards made through a
/// sibling of the cluster on the nodes that hold the peers now (a lost node's shards on the node
/// that took them, a given-up node's on the first live one), each node restricting the run's
/// shard it holds (the protocol's restrict request; its bounds are the node's, the same doubles
/// as the driver's) or, where it holds none (a node lost mid-round), shipped the shard's rows of
/// the working set's columns, which the driver makes then; when that fails (a node lost since the
/// last full evaluation, one draining, its limits reached; a working set of biases alone, which
/// this path does not send to the nodes), made on
/// the driver from those columns, with the same bits. Reduction trees rebuilt each round are not
/// logged again; a reason for keeping the set on the driver is logged once while it stays.
struct working_sets {
  std::shared_ptr<cluster::impl> state;
  std::shared_ptr<const held_parts> held;
  bool sparse = false;  // the run's data
  std::vector<std::vector<std::size_t>> peers;  // each peer's shards, as shipped
  std::vector<model::row_range> ranges;
  std::vector<std::size_t> plan;
  double lambda;
  std::chrono::milliseconds timeout;
  std::function<void(const std::string&)> log;
  std::shared_ptr<std::string> last_why = std::make_shared<std::string>();

  result<sharded_objective> operator()(model::model_shape compact, const std::vector<std::int64_t>& features,
                                       const sharded_objective::columns_fn& columns) const {
    const auto& c = *state;
    const auto live = first_live(c);
    std::string why = compact.features == 0 ? "a working set of biases alone" : "no node left";
    if (live < c.alive.size() && compact.features > 0) {
      auto shipped = make(compact, features, columns, placement_now(c, plan, peers, live));
      if (shipped) {
        last_why->clear();
        return shipped;
      }
      why = shipped.error().message();
    }
    if (log && why != *last_why)
      log("working set of " + std::to_string(compact.features) + " features kept on the driver (" + why + ")");
    *last_why = why;
    return sharded_objective::local(c.rt, std::move(compact), lambda, columns(), ranges, timeout);
  }

  /// The working set's objective on the sibling, its shards placed as `now`.
  result<sharded_objective> make(const model::model_shape& compact, const std::vector<std::int64_t>& features,
                                 const sharded_objective::columns_fn& columns,
                                 const std::vector<std::size_t>& now) const {
    const shard_blocks cut{ranges};
    const auto& layouts = cut.layouts;
    const auto block_rows = cut.block_rows;
    // The blocks and bits up front; each shard's bounds as it is made (maxima: any order).
    auto bounds = std::make_shared<model::data_bounds>(model::data_bounds{{}, 0, block_rows, 0});
    for (const auto count : cut.blocks)
      bounds->blocks += count;
    bounds->bits = sparse ? model::packed_bits : model::fixed_bits;
    spawn_fn spawn = [held = held, parent = state->token, compact, features, columns, ranges = ranges, layouts,
                      bounds](cluster::impl& c, std::size_t node, std::size_t i) -> result<shard_actor> {
      auto made = restrict_held(c, node, (*held)[i], parent, compact, features, layouts[i]);
      if (made)
        return take_restricted(c, node, std::move(*made), ranges[i].size(), "shard " + std::to_string(i), *bounds);
      if (made.error().message().find(not_a_source) == std::string::npos)
        return made.error();
      const auto data = columns();
      auto shard = c.ship_on(node, compact, data, ranges[i], layouts[i]);
      if (shard) {
        auto shipped = model::bounds_of(*data, ranges[i], bounds->block_rows);
        shipped.blocks = 0;  // counted up front
        *bounds += shipped;
      }
      return shard;
    };
    return cluster_objective(sibling_of(*state), compact, lambda, now, layouts, cut.blocks, cut.rows, bounds,
                             timeout, without_trees(log), std::move(spawn));
  }
};

} // namespace

result<sharded_objective> cluster::ship(model::model_shape shape, double lambda,
                                        std::shared_ptr<const model::dataset> data,
                                        const std::vector<model::row_range>& ranges,
                                        const std::vector<std::size_t>& plan,
                                        std::chrono::milliseconds timeout,
                                        std::function<void(const std::string&)> log) {
  const auto& state = impl_;
  if (plan.size() != ranges.size())
    return fail_invalid("placement plan does not cover every shard");
  const shard_blocks cut{ranges};
  const auto& layouts = cut.layouts;
  const auto block_rows = cut.block_rows;
  auto bounds = std::make_shared<model::data_bounds>(model::data_bounds{{}, 0, block_rows, 0});
  for (const auto& range : ranges)
    *bounds += model::bounds_of(*data, range, block_rows);
  // The run's shards, kept for its working sets (restricted on the nodes).
  auto held = std::make_shared<held_parts>(ranges.size());
  spawn_fn spawn = [shape, data, ranges, layouts, held](cluster::impl& c, std::size_t node,
                                                        std::size_t i) -> result<shard_actor> {
    auto shard = c.ship_on(node, shape, data, ranges[i], layouts[i]);
    if (shard)
      (*held)[i].push_back(held_part{node, *shard});
    return shard;
  };
  auto peers = peers_of(plan, state->info.size(), state->per_node);
  auto objective = cluster_objective(state, shape, lambda, plan, layouts, cut.blocks, cut.rows, bounds, timeout,
                                     log, std::move(spawn));
  if (!objective)
    return objective;
  objective->restrict_through(data, working_sets{state, held, data->is_sparse(), std::move(peers), ranges, plan,
                                                 lambda, timeout, log});
  return objective;
}

} // namespace shardopt::actors
