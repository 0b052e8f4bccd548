#pragma once

// Test and benchmark helper: the bytes this process has moved over its TCP connections to a port,
// as the kernel counts them (TCP_INFO), so traffic is measured on the socket rather than estimated
// from message sizes. Linux only; other processes' traffic (tests running alongside) is not counted.

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace shardopt::test {

/// Payload bytes sent and received (TCP headers excluded) on a set of connections.
struct tcp_bytes {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t total() const { return sent + received; }
};

/// What this process's open TCP connections to 127.0.0.1:`port` have sent and received so far,
/// summed over them.
inline tcp_bytes connection_bytes(std::uint16_t port) {
  tcp_bytes out;
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr)
    return out;
  while (const dirent* entry = ::readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(fds))
      continue;
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &length) != 0
        || peer.sin_family != AF_INET || ntohs(peer.sin_port) != port
        || peer.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
      continue;
    tcp_info info{};
    socklen_t size = sizeof info;
    if (::getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &size) != 0)
      continue;
    out.sent += info.tcpi_bytes_sent;
    out.received += info.tcpi_bytes_received;
  }
  ::closedir(fds);
  return out;
}

} // namespace shardopt::test
