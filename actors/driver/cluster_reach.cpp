// Nodes that come back and nodes that arrive (docs/cluster.md, "Nodes that come back"): at each
// evaluation boundary the driver takes what its background work found since the last one and starts
// what is due. Name resolution and probing addresses run off its thread (wire/off_thread.hpp), so a
// name server that does not answer, or a host that drops packets, never holds an evaluation up; only
// an address that just answered is connected to and greeted here.

#include "actors/driver/cluster_impl.hpp"
#include "io/nodes_file.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace shardopt::actors {

void cluster::watch_nodes(std::string name, std::function<result<std::string>()> list,
                          std::chrono::milliseconds every) {
  if (!list)
    return;
  // The first look compares with nothing: nodes listed since the start are admitted then (the
  // ones the cluster knows are skipped).
  impl::node_source source{std::move(name), std::move(list), every, {}, {}, {}, {}};
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

/// At most this many probes start per boundary, and at most this many run at once.
constexpr std::size_t max_probes = 64;

/// A source's look that finished: what it lists is kept (an error keeps the last good list).
void take_listing(cluster::impl::node_source& source, const result<std::string>& listed,
                  const log_fn& log) {
  const bool empty = listed && listed->find_first_not_of(" \t\r\n,") == std::string::npos;
  auto endpoints = empty    ? result<std::vector<endpoint>>{std::vector<endpoint>{}}
                   : listed ? parse_endpoints(*listed, source.name)
                            : result<std::vector<endpoint>>{listed.error()};
  const auto seen = listed ? *listed : "error: " + listed.error().message();
  const bool changed = seen != source.last;
  source.last = seen;
  if (endpoints)
    source.listed = std::move(*endpoints);
  else if (changed && log)
    log("nodes from " + source.name + " not used: " + endpoints.error().message());
}

/// The addresses some source lists that are not nodes yet, each once, tried from now on (those
/// already tried keep their waits); addresses no source lists any more are not tried.
void gather_arrivals(cluster::impl& c) {
  std::unordered_set<std::string> taken(c.aliases.begin(), c.aliases.end());
  for (const auto& node : c.info)
    taken.insert(node.endpoint.text());
  std::unordered_map<std::string, std::size_t> tried;
  for (std::size_t a = 0; a < c.arriving.size(); ++a)
    tried.emplace(c.arriving[a].where.text(), a);
  std::vector<address_retry> arriving;
  for (const auto& source : c.sources)
    for (const auto& where : source.listed) {
      const auto text = where.text();
      if (!taken.insert(text).second)
        continue;
      const auto before = tried.find(text);
      if (before != tried.end())
        arriving.push_back(std::move(c.arriving[before->second]));
      else
        arriving.push_back(address_retry{where, clock::now()});
    }
  c.arriving = std::move(arriving);
}

/// Connects to `where`, which `reached` found open; a short deadline, since this runs at an
/// evaluation boundary.
result<node_actor> connect_node(cluster::impl& c, const endpoint& where, const tcp_reach& reached) {
  return connect_reached_to<node_actor>(c.rt, where, reached, "a shardopt node", timeouts::probe);
}

/// Node j, just connected, greeted: alive if its hello passes, counted as joined if it was never
/// admitted before (a new node, or one whose first hello was refused), else as rejoined.
bool admit(cluster::impl& c, std::size_t j, const log_fn& log) {
  auto greeted = c.hello(j);
  auto ok = greeted ? cluster::impl::check_info(*greeted) : result<void>{greeted.error()};
  if (!ok) {
    const auto why = "answers but is not admitted: " + ok.error().message();
    if (why != c.retries[j].last_why && log)  // once per reason, not on every try
      log("node " + c.info[j].endpoint.text() + " " + why);
    c.retries[j].last_why = why;
    return false;
  }
  const bool first = c.info[j].threads == 0;
  c.info[j].threads = greeted->threads;
  c.info[j].host = greeted->host.substr(0, 255);
  c.alive[j] = true;
  ++(first ? c.joined : c.rejoined);
  if (log)
    log("node " + c.info[j].endpoint.text() + (first ? " joined" : " rejoined"));
  return true;
}

/// Logs why an address is not reached yet, when that changed since its last try.
void note_failure(address_retry& retry, const tcp_reach& reached, const log_fn& log) {
  if (reached.why != retry.last_why && log)
    log("node " + retry.where.text() + " not reached yet: " + reached.why);
  retry.last_why = reached.why;
}

} // namespace

std::vector<std::size_t> reach_nodes(cluster::impl& c, const log_fn& log) {
  const auto now = clock::now();
  for (auto& source : c.sources) {
    if (auto listed = source.listing.take())
      take_listing(source, *listed, log);
    if (!source.listing.running() && now >= source.next) {
      source.next = now + source.every;
      source.listing.start(source.list, fail_runtime(source.name + ": the look failed"));
    }
  }
  if (!c.sources.empty())
    gather_arrivals(c);
  while (c.retries.size() < c.info.size())
    c.retries.emplace_back(c.info[c.retries.size()].endpoint);
  std::size_t running = 0;
  for (const auto* list : {&c.arriving, &c.retries})
    for (const auto& retry : *list)
      running += retry.probe.running() ? 1 : 0;
  std::size_t slots = max_probes - std::min(running, max_probes);
  // Connecting and greeting what answered runs here, on the driver's thread, within 5 s each: at
  // most this long in all per boundary (the rest is taken at the next one).
  const auto budget_end = now + timeouts::probe;
  const auto within_budget = [&] { return clock::now() < budget_end; };
  // Lost nodes first: listed addresses that never answer must not take every probe.
  std::vector<std::size_t> back;
  for (std::size_t j = 0; j < c.info.size() && within_budget(); ++j) {
    auto& retry = c.retries[j];
    if (c.alive[j]) {  // a fresh loss waits 1 s
      retry = address_retry{c.info[j].endpoint};
      continue;
    }
    const auto reached = retry.poll(now, slots);
    if (!reached)
      continue;
    const bool came_back = c.info[j].threads != 0;
    if (reached->open) {
      auto handle = connect_node(c, c.info[j].endpoint, *reached);
      if (handle) {
        c.nodes.replace(j, *handle);
        if (admit(c, j, log)) {
          if (came_back)
            back.push_back(j);
          continue;
        }
      }
    }
    retry.failed(now);
  }
  for (std::size_t a = 0; a < c.arriving.size() && within_budget();) {
    auto& arrival = c.arriving[a];
    auto reached = arrival.poll(now, slots);
    if (reached && reached->open) {
      auto handle = connect_node(c, arrival.where, *reached);
      const auto& handles = c.nodes.handles();
      if (handle && std::find(handles.begin(), handles.end(), *handle) != handles.end()) {
        if (log)  // another name of a node the run has (a host name and its address)
          log("node " + arrival.where.text() + " is a node this run has under another name");
        c.aliases.push_back(arrival.where.text());  // not tried again
        c.arriving.erase(c.arriving.begin() + static_cast<std::ptrdiff_t>(a));
        continue;
      }
      if (handle) {  // a node from now on: admitted now, or tried again like a lost one
        c.nodes.add(*handle, arrival.where.text());
        c.info.push_back(connected_node{arrival.where, 0, {}});
        c.alive.push_back(false);
        c.load.push_back(0);
        c.retries.emplace_back(arrival.where);
        admit(c, c.info.size() - 1, log);
        c.arriving.erase(c.arriving.begin() + static_cast<std::ptrdiff_t>(a));
        continue;
      }
      reached = tcp_reach{false, {}, handle.error().message()};
    }
    if (reached) {  // not listening yet (a pod starting): tried again
      note_failure(arrival, *reached, log);
      arrival.failed(now);
    }
    ++a;
  }
  return back;
}

} // namespace shardopt::actors
