#include "actors/cluster.hpp"

#include "actors/node.hpp"
#include "actors/shard.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <algorithm>
#include <limits>

namespace shardopt::actors {

namespace {

constexpr auto control_timeout = std::chrono::seconds{60};

constexpr auto connect_timeout = std::chrono::seconds{30};

/// Connects to a node through the middleman (the TLS one when configured) with a deadline: CAF's
/// own remote_actor waits without one, so a peer that accepts and then says nothing would hang us.
result<node_actor> connect_node(runtime& rt, caf::scoped_actor& self, const node_endpoint& endpoint) {
  auto& system = rt.system();
  const auto middleman = rt.options().tls.enabled() ? system.openssl_manager().actor_handle()
                                                    : system.middleman().actor_handle();
  const auto prefix = endpoint.text() + ": cannot connect: ";
  result<node_actor> out = fail(prefix + "no answer within "
                                + std::to_string(connect_timeout.count()) + " s");
  self->request(middleman, connect_timeout, caf::connect_atom::value, endpoint.host, endpoint.port)
    .receive(
      [&](const caf::node_id&, caf::strong_actor_ptr& published, const std::set<std::string>& ifs) {
        if (!published)
          out = fail(prefix + "nothing is published on that port");
        else if (ifs != system.message_types(caf::detail::type_list<node_actor>{}))
          out = fail(prefix + "the actor there is not a shardopt node of this version");
        else
          out = caf::actor_cast<node_actor>(std::move(published));
      },
      [&](caf::error& err) { out = fail(prefix + describe(err, system)); });
  return out;
}

} // namespace

result<std::vector<node_endpoint>> parse_endpoints(const std::string& list, const std::string& option) {
  std::vector<node_endpoint> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto end = std::min(list.find(',', start), list.size());
    const auto item = list.substr(start, end - start);
    const auto colon = item.rfind(':');
    if (item.empty() || colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      return fail(option + ": '" + item + "' is not host:port");
    node_endpoint endpoint;
    endpoint.host = item.substr(0, colon);
    if (endpoint.host.size() > 2 && endpoint.host.front() == '[' && endpoint.host.back() == ']')
      endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);
    const auto port_text = item.substr(colon + 1);
    char* rest = nullptr;
    const long port = std::strtol(port_text.c_str(), &rest, 10);
    if (*rest != '\0' || port <= 0 || port > 65535)
      return fail(option + ": '" + item + "': port must be 1..65535");
    endpoint.port = static_cast<std::uint16_t>(port);
    out.push_back(endpoint);
    start = end + 1;
  }
  return out;
}

struct cluster::impl {
  explicit impl(runtime& r) : rt(r), self(r.system()) {}

  /// Asks node `j` (atom, request) and waits for a reply of type Reply; errors name the node.
  template <class Reply, class Atom, class Request>
  result<Reply> ask(std::size_t j, Atom atom, const Request& request) {
    result<Reply> out = fail(nodes[j].endpoint.text() + ": no reply");
    self->request(handles[j], control_timeout, atom, request)
      .receive([&](Reply& reply) { out = std::move(reply); },
               [&](caf::error& err) {
                 out = fail(nodes[j].endpoint.text() + ": " + describe(err, rt.system()));
               });
    return out;
  }

  result<shard_actor> spawn_on(std::size_t j, const shard_spec& spec) {
    return ask<shard_actor>(j, spawn_atom::value, spec);
  }

  runtime& rt;
  caf::scoped_actor self;  // nodes monitor this actor: when it ends, they free the run's shards
  std::vector<node_actor> handles;
  std::vector<connected_node> nodes;
  std::vector<bool> alive;
  std::vector<std::size_t> load;  // shards per node
  std::vector<std::size_t> home;  // node of each shard
};

cluster::cluster(std::shared_ptr<impl> state) : impl_(std::move(state)) {}
cluster::cluster(cluster&&) noexcept = default;
cluster& cluster::operator=(cluster&&) noexcept = default;
cluster::~cluster() = default;

const std::vector<connected_node>& cluster::nodes() const {
  return impl_->nodes;
}

namespace {

/// The shard factory of a cluster: a lost shard's node is taken as dead and the shard moves to the
/// live node with the fewest shards, made there by `spawn(cluster, node, shard)`.
shard_factory replacer(std::shared_ptr<cluster::impl> state,
                       std::function<void(const std::string&)> log,
                       std::function<result<shard_actor>(cluster::impl&, std::size_t, std::size_t)> spawn) {
  return [state = std::move(state), log = std::move(log),
          spawn = std::move(spawn)](std::size_t i) -> result<shard_actor> {
    auto& c = *state;
    const auto lost = c.home[i];
    --c.load[lost];
    if (c.alive[lost]) {
      c.alive[lost] = false;
      if (log)
        log("node " + c.nodes[lost].endpoint.text() + " lost");
    }
    for (;;) {
      std::size_t best = c.nodes.size();
      for (std::size_t j = 0; j < c.nodes.size(); ++j)
        if (c.alive[j] && (best == c.nodes.size() || c.load[j] < c.load[best]))
          best = j;
      if (best == c.nodes.size())
        return fail("no node left to recreate shard " + std::to_string(i) + " on (all "
                    + std::to_string(c.nodes.size()) + " nodes lost)");
      auto shard = spawn(c, best, i);
      if (shard) {
        c.home[i] = best;
        ++c.load[best];
        if (log)
          log("recreated shard " + std::to_string(i) + " on node " + c.nodes[best].endpoint.text());
        return shard;
      }
      c.alive[best] = false;
      if (log)
        log("node " + c.nodes[best].endpoint.text() + " lost: " + shard.error().message());
    }
  };
}

} // namespace

result<cluster::node_local_run>
cluster::read_on_nodes(model::model_kind kind, std::int64_t classes, double lambda,
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
    auto summary = s.ask<summary_message>(plan[i], scan_atom::value, part_message{request});
    if (!summary)
      return summary.error().with_context("reading part " + std::to_string(i + 1));
    if (i == 0 && !summary->summary.sparse)
      dense_features = summary->summary.cols;
    summaries.push_back(std::move(summary->summary));
  }
  auto fitted = io::fit_parts(kind, classes, summaries, mode, standardize, data.spec);
  if (!fitted)
    return fitted.error();
  const model::model_shape shape{kind, fitted->features, fitted->labels.outputs()};
  auto spec_of = [=](std::size_t i) {
    return part_shard_spec{part(i), shape, fitted->labels, fitted->scaling};
  };
  std::vector<shard_actor> shards;
  s.home.assign(plan.size(), 0);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto shard = s.ask<shard_actor>(plan[i], spawnpart_atom::value, spec_of(i));
    if (!shard)
      return shard.error().with_context("creating shard " + std::to_string(i));
    shards.push_back(std::move(*shard));
    s.home[i] = plan[i];
    ++s.load[plan[i]];
  }
  auto replace = replacer(impl_, std::move(log), [spec_of](impl& c, std::size_t node, std::size_t i) {
    return c.ask<shard_actor>(node, spawnpart_atom::value, spec_of(i));
  });
  return node_local_run{
    make_sharded_objective(s.rt, shape, lambda, std::move(shards), timeout, std::move(replace)),
    shape, fitted->labels, fitted->scaling, fitted->rows};
}

result<void> cluster::echo(std::size_t j, const Eigen::VectorXd& values) {
  auto& s = *impl_;
  result<void> out = fail(s.nodes[j].endpoint.text() + ": no echo");
  s.self->request(s.handles[j], control_timeout, echo_atom::value, dense_vector{values})
    .receive(
      [&](const dense_vector& back) {
        if (back.size() == static_cast<std::size_t>(values.size()))
          out = result<void>{};
      },
      [&](caf::error& err) { out = fail(s.nodes[j].endpoint.text() + ": " + describe(err, s.rt.system())); });
  return out;
}

result<cluster> cluster::connect(runtime& rt, const std::vector<node_endpoint>& endpoints) {
  if (endpoints.empty())
    return fail("no nodes given");
  auto state = std::make_shared<impl>(rt);
  for (const auto& endpoint : endpoints) {
    auto handle = connect_node(rt, state->self, endpoint);
    if (!handle)
      return handle.error();
    result<node_info> info = fail(endpoint.text() + ": no answer to hello");
    state->self->request(*handle, control_timeout, hello_atom::value, wire_probe())
      .receive([&](node_info& answer) { info = std::move(answer); },
               [&](caf::error& err) {
                 info = fail(endpoint.text() + ": " + describe(err, rt.system()));
               });
    if (!info)
      return info.error();
    state->handles.push_back(*handle);
    state->nodes.push_back(connected_node{endpoint, info->threads, info->host});
    state->alive.push_back(true);
    state->load.push_back(0);
  }
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
  s.home.assign(blocks.size(), 0);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto shard = s.spawn_on(plan[i], shard_spec{shape, data_block{data, blocks[i]}});
    if (!shard)
      return shard.error().with_context("creating shard " + std::to_string(i));
    shards.push_back(std::move(*shard));
    s.home[i] = plan[i];
    ++s.load[plan[i]];
  }
  auto replace = replacer(impl_, std::move(log), [shape, data, blocks](impl& c, std::size_t node,
                                                                          std::size_t i) {
    return c.spawn_on(node, shard_spec{shape, data_block{data, blocks[i]}});
  });
  return make_sharded_objective(s.rt, shape, lambda, std::move(shards), timeout, std::move(replace));
}

struct node_service::impl {
  runtime& rt;
  node_actor node;
  std::uint16_t port;
};

node_service::node_service(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
node_service::node_service(node_service&&) noexcept = default;
node_service& node_service::operator=(node_service&&) noexcept = default;

node_service::~node_service() {
  if (!impl_)
    return;
  // Unpublish first: the middleman holds the node until then, and the actor system waits for the
  // node's (detached) thread when it shuts down. (The io middleman also reaches TLS publications;
  // CAF 0.17.6's caf::openssl::unpublish does not compile.)
  impl_->rt.system().middleman().unpublish(impl_->node, impl_->port);
  caf::anon_send_exit(impl_->node, caf::exit_reason::user_shutdown);
}

std::uint16_t node_service::port() const {
  return impl_->port;
}

result<node_service> node_service::start(runtime& rt, const std::string& bind, std::uint16_t port) {
  auto node = spawn_node(rt.system(), static_cast<std::uint32_t>(rt.worker_threads()));
  auto bound = rt.options().tls.enabled()
                 ? caf::openssl::publish(node, port, bind.c_str(), true)
                 : rt.system().middleman().publish(node, port, bind.c_str(), true);
  if (!bound) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return fail("cannot listen on " + bind + ":" + std::to_string(port) + ": "
                + describe(bound.error(), rt.system()));
  }
  return node_service{std::make_unique<impl>(impl{rt, node, *bound})};
}

} // namespace shardopt::actors
