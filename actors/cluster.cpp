#include "actors/cluster.hpp"

#include "actors/fan_out.hpp"
#include "actors/node.hpp"
#include "actors/shard.hpp"

#include <algorithm>
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

  result<std::pair<shard_actor, std::int64_t>> spawn_part_on(std::size_t j,
                                                             const part_shard_spec& spec) {
    std::optional<std::pair<shard_actor, std::int64_t>> out;
    auto done = nodes.round(
      reply<shard_actor, std::int64_t>{}, j, j + 1, timeouts::control, "creating a shard",
      [&](std::size_t, std::uint64_t round) {
        self->send(nodes[j], spawnpart_atom::value, round, token, spec);
      },
      [&](std::size_t, shard_actor shard, std::int64_t rows) -> result<void> {
        out = std::make_pair(std::move(shard), rows);
        return {};
      });
    if (!done)
      return done.error();
    return std::move(*out);
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
  std::vector<std::size_t> home;  // node of each shard
};

cluster::cluster(std::shared_ptr<impl> state) : impl_(std::move(state)) {}
cluster::cluster(cluster&&) noexcept = default;
cluster& cluster::operator=(cluster&&) noexcept = default;
cluster::~cluster() = default;

const std::vector<connected_node>& cluster::nodes() const {
  return impl_->info;
}

namespace {

/// The shard factory of a cluster: a lost shard is made again, by `spawn(cluster, node, shard)`,
/// on the live node with the fewest shards. Its own node stays live only if it still answers.
shard_factory replacer(std::shared_ptr<cluster::impl> state,
                       std::function<void(const std::string&)> log,
                       std::function<result<shard_actor>(cluster::impl&, std::size_t, std::size_t)> spawn) {
  return [state = std::move(state), log = std::move(log),
          spawn = std::move(spawn)](std::size_t i) -> result<shard_actor> {
    auto& c = *state;
    const auto lost = c.home[i];
    --c.load[lost];
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
        return fail("no node left to recreate shard " + std::to_string(i) + " on (all "
                    + std::to_string(c.info.size()) + " nodes lost)");
      auto shard = spawn(c, best, i);
      if (shard) {
        c.home[i] = best;
        ++c.load[best];
        if (log)
          log("recreated shard " + std::to_string(i) + " on node " + c.info[best].endpoint.text());
        return shard;
      }
      c.alive[best] = false;
      if (log)
        log("node " + c.info[best].endpoint.text() + " lost: " + shard.error().message());
    }
  };
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
    if (i == 0 && !summary->summary.sparse)
      dense_features = summary->summary.cols;
    summaries.push_back(std::move(summary->summary));
  }
  auto fitted = io::fit_parts(architecture.kind, classes, summaries, mode, standardize, data.spec);
  if (!fitted)
    return fitted.error();
  const model::model_shape shape{architecture.kind, fitted->features, fitted->labels.outputs(),
                                 architecture.hidden, architecture.act};
  auto spec_of = [=](std::size_t i) {
    return part_shard_spec{part(i), shape, fitted->labels, fitted->scaling};
  };
  std::vector<shard_actor> shards;
  std::vector<std::int64_t> rows;
  s.home.assign(plan.size(), 0);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto shard = s.spawn_part_on(plan[i], spec_of(i));
    if (!shard)
      return shard.error().with_context("creating shard " + std::to_string(i));
    if (shard->second != summaries[i].rows)
      return fail("creating shard " + std::to_string(i) + ": node " + s.info[plan[i]].endpoint.text()
                  + " read " + std::to_string(shard->second) + " rows, it summarised "
                  + std::to_string(summaries[i].rows));
    shards.push_back(std::move(shard->first));
    rows.push_back(shard->second);
    s.home[i] = plan[i];
    ++s.load[plan[i]];
  }
  auto expected_rows = rows;
  auto replace = replacer(impl_, std::move(log), [spec_of, expected_rows](impl& c, std::size_t node,
                                                                          std::size_t i)
                                                   -> result<shard_actor> {
    auto shard = c.spawn_part_on(node, spec_of(i));
    if (!shard)
      return shard.error();
    if (shard->second != expected_rows[i])
      return fail("it read " + std::to_string(shard->second) + " rows of part " + std::to_string(i + 1)
                  + ", not " + std::to_string(expected_rows[i]));
    return std::move(shard->first);
  });
  return node_local_run{make_sharded_objective(s.rt, shape, lambda, std::move(shards),
                                               std::move(rows), s.token, timeout,
                                               std::move(replace)),
                        shape, fitted->labels, fitted->scaling, fitted->rows};
}

result<void> cluster::echo(std::size_t j, const Eigen::VectorXd& values) {
  auto& s = *impl_;
  auto back = s.ask<dense_vector>(j, "echo", [&](std::uint64_t round) {
    s.self->send(s.nodes[j], echo_atom::value, round, dense_vector{values});
  });
  if (!back)
    return back.error();
  if (back->size() != static_cast<std::size_t>(values.size()))
    return fail(s.info[j].endpoint.text() + ": the echo came back with another size");
  return {};
}

result<cluster> cluster::connect(runtime& rt, const std::vector<node_endpoint>& endpoints) {
  if (endpoints.empty())
    return fail("no nodes given");
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
        return fail("speaks shardopt protocol version " + std::to_string(answer.version)
                    + ", this driver speaks version " + std::to_string(protocol_version));
      if (answer.threads == 0 || answer.threads > max_node_threads)
        return fail("announced " + std::to_string(answer.threads) + " worker threads (expected 1.."
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
                                        const std::vector<model::row_range>& blocks,
                                        const std::vector<std::size_t>& plan,
                                        std::chrono::milliseconds timeout,
                                        std::function<void(const std::string&)> log) {
  auto& s = *impl_;
  if (plan.size() != blocks.size())
    return fail("placement plan does not cover every shard");
  std::vector<shard_actor> shards;
  std::vector<std::int64_t> rows;
  s.home.assign(blocks.size(), 0);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto shard = s.spawn_on(plan[i], shard_spec{shape, data_block{data, blocks[i]}});
    if (!shard)
      return shard.error().with_context("creating shard " + std::to_string(i));
    shards.push_back(std::move(*shard));
    rows.push_back(blocks[i].size());
    s.home[i] = plan[i];
    ++s.load[plan[i]];
  }
  auto replace = replacer(impl_, std::move(log), [shape, data, blocks](impl& c, std::size_t node,
                                                                          std::size_t i) {
    return c.spawn_on(node, shard_spec{shape, data_block{data, blocks[i]}});
  });
  return make_sharded_objective(s.rt, shape, lambda, std::move(shards), std::move(rows), s.token,
                                timeout, std::move(replace));
}

} // namespace shardopt::actors
