#pragma once

// The one place where shardopt's actors meet the network: where peers listen, the timeouts every
// protocol uses, connecting to a published actor with a deadline, and publishing one (plain TCP or
// mutual TLS, as the runtime is configured). Include only in translation units that use CAF.

#include "actors/wire/messages.hpp"
#include "actors/wire/runtime.hpp"
#include "base/result.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shardopt::actors {

/// The timeouts of every protocol, in one place.
namespace timeouts {
/// Connecting to a peer (TCP and TLS handshake, and CAF's own handshake).
constexpr std::chrono::milliseconds connect{std::chrono::seconds{30}};
/// A control request to a peer that is up: hello, spawn, state, stats, stop.
constexpr std::chrono::milliseconds control{std::chrono::seconds{60}};
/// Checking whether a node is still alive after one of its shards went down.
constexpr std::chrono::milliseconds probe{std::chrono::seconds{5}};
/// How long a parameter server waits, after the chief is done, for the other workers' goodbyes.
constexpr std::chrono::milliseconds goodbye_grace{std::chrono::seconds{10}};
} // namespace timeouts

/// Where a peer listens.
struct endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

/// Parses "hostA:4242,hostB:4242" (IPv6 literals in brackets: "[::1]:4242"); errors name `option`.
result<std::vector<endpoint>> parse_endpoints(const std::string& list,
                                             const std::string& option = "--nodes");

/// True for addresses that only this machine can reach (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& address);

/// Whether a TCP connection to `where` opens: the name resolved, each of its addresses tried
/// without blocking past `timeout` in all, the connection closed again at once.
struct tcp_reach {
  bool open = false;
  std::string address;  ///< when open: the numeric address that answered (connect there)
  std::string why;      ///< when not open: why not
};
tcp_reach reach_tcp(const endpoint& where, std::chrono::milliseconds timeout);

/// Connects to the actor published at `where` (over TLS when the runtime has TLS options) and
/// checks that it speaks `interface` (the message types of its typed handle). The address is
/// reached with reach_tcp first (within timeouts::connect), and CAF connects to the numeric address
/// that answered: CAF 0.17's middleman connects with a blocking connect() on its one thread, so an
/// address that drops packets would stall every other connection of the process and its exit for
/// about two minutes. A connection that fails is tried again until `retry_for` has passed (peers,
/// or their DNS names, may appear after us); a peer that accepts and then says nothing fails after
/// timeouts::connect. Blocks the calling thread. Errors start with "<where>: cannot connect: " and
/// say why; `kind` names what was expected ("a shardopt node").
result<caf::strong_actor_ptr> connect_actor(runtime& rt, const endpoint& where,
                                            const std::set<std::string>& interface,
                                            const std::string& kind,
                                            std::chrono::milliseconds retry_for = {});

/// The CAF half of connect_actor, once reach_tcp found `where` open at `reached.address`: no
/// probe, no retry, at most `deadline` for CAF's handshake (for a driver that probed off its
/// thread and must not wait long on a peer that accepts and says nothing).
result<caf::strong_actor_ptr> connect_reached(runtime& rt, const endpoint& where,
                                              const tcp_reach& reached,
                                              const std::set<std::string>& interface,
                                              const std::string& kind,
                                              std::chrono::milliseconds deadline);

/// Typed form of connect_reached.
template <class Handle>
result<Handle> connect_reached_to(runtime& rt, const endpoint& where, const tcp_reach& reached,
                                  const std::string& kind, std::chrono::milliseconds deadline) {
  auto ptr = connect_reached(rt, where, reached,
                             rt.system().message_types(caf::detail::type_list<Handle>{}), kind,
                             deadline);
  if (!ptr)
    return ptr.error();
  return caf::actor_cast<Handle>(std::move(*ptr));
}

/// Typed form of connect_actor.
template <class Handle>
result<Handle> connect_to(runtime& rt, const endpoint& where, const std::string& kind,
                          std::chrono::milliseconds retry_for = {}) {
  auto ptr = connect_actor(rt, where, rt.system().message_types(caf::detail::type_list<Handle>{}),
                           kind, retry_for);
  if (!ptr)
    return ptr.error();
  return caf::actor_cast<Handle>(std::move(*ptr));
}

/// Publishes `actor`, announcing `interface`, on bind:port (port 0: the OS picks one), over TLS
/// when the runtime has TLS options, and returns the port. Errors say why listening failed.
result<std::uint16_t> publish_actor(runtime& rt, const caf::strong_actor_ptr& actor,
                                    std::set<std::string> interface, const std::string& bind,
                                    std::uint16_t port);

/// Typed form of publish_actor.
template <class Handle>
result<std::uint16_t> publish(runtime& rt, const Handle& actor, const std::string& bind,
                              std::uint16_t port) {
  return publish_actor(rt, caf::actor_cast<caf::strong_actor_ptr>(actor),
                       rt.system().message_types(caf::detail::type_list<Handle>{}), bind, port);
}

/// Stops listening on `port` for `actor` (the io middleman also reaches TLS publications; CAF
/// 0.17.6's caf::openssl::unpublish does not compile).
void unpublish_actor(runtime& rt, const caf::strong_actor_ptr& actor, std::uint16_t port);

/// One request to `to` whose reply is (round, T), from a fresh blocking actor of `rt`, waiting up
/// to `timeout`: the T, or why there is none. Blocks the calling thread (an endpoint's, a CLI's).
template <class T, class Handle, class... Ts>
result<T> ask_once(runtime& rt, const Handle& to, std::chrono::milliseconds timeout, Ts&&... xs) {
  caf::scoped_actor self{rt.system()};
  std::optional<result<T>> out;
  self->request(to, timeout, std::forward<Ts>(xs)...)
    .receive([&](std::uint64_t, T& value) { out = std::move(value); },
             [&](caf::error& err) { out = result<T>{fail_runtime(describe(err, rt.system()))}; });
  return std::move(*out);
}

/// Refuses to serve a network port off loopback without TLS unless the user said --insecure.
result<void> check_exposure(const std::string& bind, bool tls, bool insecure, const std::string& what);

} // namespace shardopt::actors
