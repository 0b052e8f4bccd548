// Nodes that come back and nodes that arrive (docs/cluster.md, "Nodes that come back"): at each
// evaluation boundary the driver takes what its background work found since the last one and starts
// what is due. Name resolution and probing addresses run off its thread (off_thread.hpp), so a name
// server that does not answer, or a host that drops packets, never holds an evaluation up; only an
// address that just answered is connected to and greeted here.

#include "actors/cluster_impl.hpp"
#include "io/nodes_file.hpp"

#include <algorithm>

namespace shardopt::actors {

void cluster::watch_nodes(std::string name, std::function<result<std::string>()> list,
                          std::chrono::milliseconds every) {
  // The first look compares with nothing: nodes listed since the start are admitted then (the
  // ones the cluster knows are skipped).
  impl::node_source source{std::move(name), std::move(list), every, {}, {}, {}};
  source.next = std::chrono::steady_clock::now() + every;
  impl_->sources.push_back(std::move(source));
}

void cluster::watch_nodes_file(std::string path) {
  watch_nodes(path, [path] { return io::read_nodes_file(path); }, std::chrono::seconds{1});
}

void cluster::watch_nodes_dns(std::string name_port) {
  watch_nodes(name_port, [name_port] { return io::resolve_nodes(name_port); },
              std::chrono::seconds{5});
}

namespace {

using log_fn = std::function<void(const std::string&)>;
using clock = std::chrono::steady_clock;

bool known(const cluster::impl& c, const endpoint& where) {
  return std::any_of(c.info.begin(), c.info.end(), [&](const connected_node& node) {
    return node.endpoint.text() == where.text();
  });
}

/// A source's look that finished: the addresses it lists that are not nodes yet are tried from now
/// on (those already tried keep their waits); addresses no longer listed are not.
void take_listing(cluster::impl& c, cluster::impl::node_source& source,
                  const result<std::string>& listed, const log_fn& log) {
  auto endpoints = listed ? parse_endpoints(*listed, source.name)
                          : result<std::vector<endpoint>>{listed.error()};
  const auto seen = listed ? *listed : "error: " + listed.error().message();
  const bool changed = seen != source.last;
  source.last = seen;
  if (!endpoints) {
    if (changed && log)
      log("nodes from " + source.name + " not used: " + endpoints.error().message());
    return;
  }
  std::vector<address_retry> arriving;
  for (const auto& where : *endpoints) {
    if (known(c, where))
      continue;
    auto tried = std::find_if(c.arriving.begin(), c.arriving.end(), [&](const address_retry& r) {
      return r.where.text() == where.text();
    });
    if (tried != c.arriving.end())
      arriving.push_back(std::move(*tried));
    else
      arriving.push_back(address_retry{where, clock::now()});
  }
  c.arriving = std::move(arriving);
}

/// Connects to an address that just answered a probe and asks it hello: the handle and its answer,
/// checked, or why not.
result<std::pair<node_actor, node_info>> greet(cluster::impl& c, std::size_t j) {
  auto hello = c.ask<node_info>(j, "hello", [&](std::uint64_t round) {
    c.self->send(c.nodes[j], hello_atom::value, round, protocol_version, wire_probe());
  });
  if (!hello)
    return hello.error();
  if (auto ok = cluster::impl::check_info(*hello); !ok)
    return ok.error();
  return std::make_pair(c.nodes[j], std::move(*hello));
}

/// A listed address that answered: connected, added as node j, and admitted if its hello passes
/// (else it stays as a lost node, tried again like any). False when it could not be connected to.
bool join(cluster::impl& c, const endpoint& where, const log_fn& log) {
  auto handle = connect_to<node_actor>(c.rt, where, "a shardopt node");
  if (!handle) {
    if (log)
      log("node " + where.text() + " not joined: " + handle.error().message());
    return false;
  }
  c.nodes.add(*handle, where.text());
  c.info.push_back(connected_node{where, 0, {}});
  c.alive.push_back(false);
  c.load.push_back(0);
  const auto j = c.info.size() - 1;
  auto greeted = greet(c, j);
  if (!greeted) {
    if (log)
      log("node " + where.text() + " not joined: " + greeted.error().message());
    return true;
  }
  c.info[j].threads = greeted->second.threads;
  c.info[j].host = greeted->second.host.substr(0, 255);
  c.alive[j] = true;
  ++c.joined;
  if (log)
    log("node " + where.text() + " joined");
  return true;
}

/// A lost node whose address answered: connected again and alive if its hello passes.
bool rejoin(cluster::impl& c, std::size_t j, const log_fn& log) {
  auto handle = connect_to<node_actor>(c.rt, c.info[j].endpoint, "a shardopt node");
  if (!handle)
    return false;
  c.nodes.replace(j, *handle);
  auto greeted = greet(c, j);
  if (!greeted) {
    if (log)
      log("node " + c.info[j].endpoint.text() + " answers again but is refused: "
          + greeted.error().message());
    return false;
  }
  c.alive[j] = true;
  ++c.rejoined;
  if (log)
    log("node " + c.info[j].endpoint.text() + " rejoined");
  return true;
}

} // namespace

std::vector<std::size_t> reach_nodes(cluster::impl& c, const log_fn& log) {
  const auto now = clock::now();
  for (auto& source : c.sources) {
    if (auto listed = source.listing.take())
      take_listing(c, source, *listed, log);
    if (!source.listing.running() && now >= source.next) {
      source.next = now + source.every;
      source.listing.start(source.list);
    }
  }
  for (std::size_t a = 0; a < c.arriving.size();) {
    auto& arrival = c.arriving[a];
    const auto reached = arrival.poll(now);
    if (reached && reached->open && join(c, arrival.where, log)) {
      c.arriving.erase(c.arriving.begin() + static_cast<std::ptrdiff_t>(a));
      continue;
    }
    if (reached)
      arrival.failed(now);  // not listening yet (a pod starting): tried again
    ++a;
  }
  std::vector<std::size_t> back;
  for (std::size_t j = 0; j < c.info.size(); ++j) {
    if (j >= c.retries.size())
      c.retries.push_back(address_retry{c.info[j].endpoint});
    auto& retry = c.retries[j];
    if (c.alive[j]) {  // a fresh loss waits 1 s
      retry = address_retry{c.info[j].endpoint};
      continue;
    }
    const auto reached = retry.poll(now);
    if (!reached)
      continue;
    if (reached->open && rejoin(c, j, log))
      back.push_back(j);
    else
      retry.failed(now);
  }
  return back;
}

} // namespace shardopt::actors
