#pragma once

// Test and benchmark helpers on loopback sockets: the bytes this process has moved over its TCP
// connections to a port, as the kernel counts them (TCP_INFO), so traffic is measured on the socket
// rather than estimated from message sizes (other processes' traffic is not counted); and an
// address whose connections hang, as a host that drops packets does. Linux only.

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::test {

/// Payload bytes sent and received (TCP headers excluded) on a set of connections.
struct tcp_bytes {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t total() const { return sent + received; }
};

/// Calls f(inode, info) for each of this process's open TCP connections to 127.0.0.1:`port`.
template <class F>
void for_each_connection(std::uint16_t port, F f) {
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr)
    return;
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
    struct stat status {};
    if (::getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &size) != 0
        || ::fstat(static_cast<int>(fd), &status) != 0)
      continue;
    f(static_cast<std::uint64_t>(status.st_ino), info);
  }
  ::closedir(fds);
}

/// What this process's open TCP connections to 127.0.0.1:`port` have sent and received so far,
/// summed over them.
inline tcp_bytes connection_bytes(std::uint16_t port) {
  tcp_bytes out;
  for_each_connection(port, [&](std::uint64_t, const tcp_info& info) {
    out.sent += info.tcpi_bytes_sent;
    out.received += info.tcpi_bytes_received;
  });
  return out;
}

/// The bytes (sent and received) this process's connections to some ports move from `start` on,
/// counted socket by socket: a connection that closes meanwhile (an earlier client's, closed late
/// on a busy machine) takes nothing from the others' counts, and one that opens counts from 0.
class traffic_meter {
public:
  explicit traffic_meter(std::vector<std::uint16_t> ports) : ports_(std::move(ports)) {}

  void start() { at_start_ = totals(); }

  std::uint64_t moved() const {
    std::uint64_t sum = 0;
    for (const auto& [socket, total] : totals()) {
      const auto before = at_start_.find(socket);
      sum += total - (before == at_start_.end() ? 0 : before->second);
    }
    return sum;
  }

private:
  std::map<std::uint64_t, std::uint64_t> totals() const {
    std::map<std::uint64_t, std::uint64_t> out;
    for (const auto port : ports_)
      for_each_connection(port, [&](std::uint64_t socket, const tcp_info& info) {
        out[socket] = info.tcpi_bytes_sent + info.tcpi_bytes_received;
      });
    return out;
  }

  std::vector<std::uint16_t> ports_;
  std::map<std::uint64_t, std::uint64_t> at_start_;
};

/// 127.0.0.1:`port` (0: the OS picks one) answering no connection, as a host that drops packets:
/// a listener whose accept queue is full (filled by connections of its own, never accepted), so
/// the kernel drops every further SYN and a connect there waits until its own timeout. Closed when
/// destroyed: connects still waiting are then refused.
class dropping_address {
public:
  explicit dropping_address(std::uint16_t at = 0) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(at);
    socklen_t length = sizeof address;
    ok_ = listener_ >= 0 && ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) == 0
          && ::listen(listener_, 0) == 0
          && ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    port_ = ntohs(address.sin_port);
    for (int i = 0; ok_ && i < 3; ++i) {  // the queue's one place taken, two more SYNs pending
      const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      ::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof address);
      fillers_.push_back(filler);
    }
    ::usleep(100 * 1000);  // the first filler's handshake completes
  }
  dropping_address(const dropping_address&) = delete;
  dropping_address& operator=(const dropping_address&) = delete;
  ~dropping_address() {
    for (const int fd : fillers_)
      ::close(fd);
    if (listener_ >= 0)
      ::close(listener_);
  }
  bool ok() const { return ok_; }
  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

private:
  int listener_ = -1;
  std::vector<int> fillers_;
  std::uint16_t port_ = 0;
  bool ok_ = false;
};

/// Connects to 127.0.0.1:port, sends `bytes`, and closes; false when it could not connect.
inline bool send_raw(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return false;
  }
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;  // the node may close the connection on the first bad byte: that is fine
    sent += static_cast<std::size_t>(n);
  }
  // Wait until the node has read everything: it closes the connection, or says nothing more
  // once we close our side (bounded by a receive timeout, so a node that hangs fails the test
  // later, when a driver cannot use it).
  ::shutdown(fd, SHUT_WR);
  timeval limit{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  char sink[256];
  while (::recv(fd, sink, sizeof sink, 0) > 0) {
  }
  ::close(fd);
  return true;
}

} // namespace shardopt::test
