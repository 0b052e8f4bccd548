#include "actors/wire/network.hpp"

#include "actors/wire/messages.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <algorithm>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace shardopt::actors {

result<std::vector<endpoint>> parse_endpoints(const std::string& list, const std::string& option) {
  std::vector<endpoint> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto end = std::min(list.find(',', start), list.size());
    const auto item = list.substr(start, end - start);
    const auto colon = item.rfind(':');
    if (item.empty() || colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      return fail_invalid(option + ": '" + item + "' is not host:port");
    endpoint where;
    where.host = item.substr(0, colon);
    if (where.host.size() > 2 && where.host.front() == '[' && where.host.back() == ']')
      where.host = where.host.substr(1, where.host.size() - 2);
    const auto port_text = item.substr(colon + 1);
    char* rest = nullptr;
    const long port = std::strtol(port_text.c_str(), &rest, 10);
    if (*rest != '\0' || port <= 0 || port > 65535)
      return fail_invalid(option + ": '" + item + "': port must be 1..65535");
    where.port = static_cast<std::uint16_t>(port);
    out.push_back(where);
    start = end + 1;
  }
  return out;
}

bool is_loopback(const std::string& address) {
  if (address == "localhost")
    return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  const auto bare = address.size() > 2 && address.front() == '[' ? address.substr(1, address.size() - 2)
                                                                 : address;
  return ::inet_pton(AF_INET6, bare.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

namespace {

caf::io::middleman_actor middleman_of(runtime& rt) {
  auto& system = rt.system();
  return rt.options().tls.enabled() ? system.openssl_manager().actor_handle()
                                    : system.middleman().actor_handle();
}

} // namespace

tcp_reach reach_tcp(const endpoint& where, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = ::getaddrinfo(where.host.c_str(), std::to_string(where.port).c_str(),
                                      &hints, &found);
      error != 0)
    return {false, {}, where.host + " does not resolve: " + ::gai_strerror(error)};
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned{found, &::freeaddrinfo};
  std::string why = "no address";
  for (const auto* entry = found; entry != nullptr; entry = entry->ai_next) {
    const int fd = ::socket(entry->ai_family, entry->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            entry->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int error = ::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 ? 0 : errno;
    while (error == EINPROGRESS || error == EINTR) {  // a signal cuts a wait short: wait the rest
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      pollfd ready{fd, POLLOUT, 0};
      const int polled = left.count() > 0 ? ::poll(&ready, 1, static_cast<int>(left.count())) : 0;
      if (polled > 0) {
        socklen_t size = sizeof error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0)
          error = errno;
      } else {
        error = polled == 0 ? ETIMEDOUT : errno;
      }
    }
    ::close(fd);
    if (error == 0) {
      char numeric[NI_MAXHOST] = {};
      ::getnameinfo(entry->ai_addr, entry->ai_addrlen, numeric, sizeof numeric, nullptr, 0,
                    NI_NUMERICHOST);
      return {true, numeric, {}};
    }
    why = error == ETIMEDOUT ? "no answer within " + std::to_string(timeout.count() / 1000) + " s"
                             : std::string{std::strerror(error)};
  }
  return {false, {}, why};
}

namespace {

/// connect_reached, saying in `retry` whether trying again may help (CAF could not connect, as
/// opposed to a peer that is not what was expected).
result<caf::strong_actor_ptr> connect_via_middleman(runtime& rt, const endpoint& where,
                                                    const tcp_reach& reached,
                                                    const std::set<std::string>& interface,
                                                    const std::string& kind,
                                                    std::chrono::milliseconds deadline, bool& retry) {
  auto& system = rt.system();
  // Through the middleman actor, with a deadline: CAF's own remote_actor waits without one, so a
  // peer that accepts and then says nothing would hang us.
  const auto prefix = where.text() + ": cannot connect: ";
  result<caf::strong_actor_ptr> out = fail_runtime(
    prefix + "no answer within " + std::to_string(deadline.count() / 1000) + " s");
  retry = false;
  caf::scoped_actor self{system};
  const auto& host = reached.address.empty() ? where.host : reached.address;
  self->request(middleman_of(rt), deadline, caf::connect_atom::value, host, where.port)
    .receive(
      [&](const caf::node_id&, caf::strong_actor_ptr& published, const std::set<std::string>& ifs) {
        if (!published)
          out = fail_runtime(prefix + "nothing is published on that port");
        else if (ifs != interface)
          out = fail_runtime(prefix + "the actor there is not " + kind + " of this version");
        else
          out = std::move(published);
      },
      [&](caf::error& err) {
        // A TLS peer closes a plain connection before CAF's handshake ends: say so, not only
        // "disconnect_during_handshake".
        if (err == caf::sec::disconnect_during_handshake && !rt.options().tls.enabled())
          out = fail_runtime(prefix + "the peer closed the connection during the handshake; it probably "
                             "requires TLS (give --tls-cert, --tls-key and --tls-ca) (" + describe(err, system) + ")");
        else
          out = fail_runtime(prefix + describe(err, system));
        retry = err == caf::sec::cannot_connect_to_node;
      });
  return out;
}

} // namespace

result<caf::strong_actor_ptr> connect_reached(runtime& rt, const endpoint& where,
                                              const tcp_reach& reached,
                                              const std::set<std::string>& interface,
                                              const std::string& kind,
                                              std::chrono::milliseconds deadline) {
  bool retry = false;
  return connect_via_middleman(rt, where, reached, interface, kind, deadline, retry);
}

result<caf::strong_actor_ptr> connect_actor(runtime& rt, const endpoint& where,
                                            const std::set<std::string>& interface,
                                            const std::string& kind,
                                            std::chrono::milliseconds retry_for) {
  const auto give_up_at = std::chrono::steady_clock::now() + retry_for;
  for (;;) {
    const auto reached = reach_tcp(where, timeouts::connect);
    bool retry = true;
    auto out = reached.open
                 ? connect_via_middleman(rt, where, reached, interface, kind, timeouts::connect, retry)
                 : result<caf::strong_actor_ptr>{
                     fail_runtime(where.text() + ": cannot connect: " + reached.why)};
    if (out || !retry || std::chrono::steady_clock::now() >= give_up_at)
      return out;
    // Waiting for a peer that has not started listening yet: there is no event to wait for.
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
}

result<std::uint16_t> publish_actor(runtime& rt, const caf::strong_actor_ptr& actor,
                                    std::set<std::string> interface, const std::string& bind,
                                    std::uint16_t port) {
  // Through the middleman actor (the TLS one when configured), as connect_actor does.
  caf::scoped_actor self{rt.system()};
  result<std::uint16_t> out = fail_runtime("cannot listen on " + bind + ":" + std::to_string(port)
                                   + ": no answer from the middleman");
  self->request(middleman_of(rt), timeouts::connect, caf::publish_atom::value, port, actor,
                std::move(interface), bind, true)
    .receive([&](std::uint16_t bound) { out = bound; },
             [&](caf::error& err) {
               out = fail_runtime("cannot listen on " + bind + ":" + std::to_string(port) + ": "
                          + describe(err, rt.system()));
             });
  return out;
}

void unpublish_actor(runtime& rt, const caf::strong_actor_ptr& actor, std::uint16_t port) {
  caf::scoped_actor self{rt.system()};
  self->send(middleman_of(rt), caf::unpublish_atom::value, caf::actor_cast<caf::actor_addr>(actor),
             port);
}

result<void> check_exposure(const std::string& bind, bool tls, bool insecure,
                            const std::string& what) {
  if (tls || insecure || is_loopback(bind))
    return {};
  return fail_invalid(what + ": refusing to listen on " + bind
              + " without TLS: anyone who can reach this port could use it (give --tls-cert, "
                "--tls-key and --tls-ca, or --insecure on a network you trust)");
}

} // namespace shardopt::actors
