#include "io/nodes_file.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <memory>
#include <set>

namespace shardopt::io {

result<std::string> read_nodes_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return fail_not_found(path + ": cannot open the nodes file");
  std::string list;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (line.find_first_of(" \t,") != std::string::npos)
      return fail_invalid(path + ":" + std::to_string(number) + ": expected one host:port per line");
    list += (list.empty() ? "" : ",") + line;
  }
  if (in.bad())
    return fail_runtime(path + ": could not be read");
  return list;
}

result<std::string> resolve_nodes(const std::string& name_port) {
  const auto colon = name_port.rfind(':');
  const auto name = colon == std::string::npos ? std::string{} : name_port.substr(0, colon);
  const auto port = colon == std::string::npos ? std::string{} : name_port.substr(colon + 1);
  if (name.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos
      || port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535)
    return fail_invalid("--nodes-dns: expected NAME:PORT, got '" + name_port + "'");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = ::getaddrinfo(name.c_str(), nullptr, &hints, &found); error != 0)
    return fail_not_found("--nodes-dns: " + name + " does not resolve: " + ::gai_strerror(error));
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned{found, &::freeaddrinfo};
  std::set<std::string> addresses;
  for (const auto* entry = found; entry != nullptr; entry = entry->ai_next) {
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ai_addr);
    if (::inet_ntop(AF_INET, &address->sin_addr, text, sizeof text) != nullptr)
      addresses.insert(text);
  }
  std::string list;
  for (const auto& address : addresses)
    list += (list.empty() ? "" : ",") + address + ":" + port;
  if (list.empty())
    return fail_not_found("--nodes-dns: " + name + " has no IPv4 address");
  return list;
}

} // namespace shardopt::io
