// `shardopt status`: one line per node, from its answer to a status request
// (actors/wire/node_protocol.hpp).

#include "actors/wire/network.hpp"
#include "actors/wire/node_protocol.hpp"
#include "actors/node/node_service.hpp"
#include "apps/commands/status.hpp"
#include "apps/run/summary.hpp"
#include "io/tls_files.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace shardopt::apps {

namespace {

/// "512 B", "1.5 MiB", "11.7 GiB".
std::string bytes_text(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

nlohmann::json json_of(const std::string& node, const actors::node_status& s) {
  return {{"node", node},
          {"state", s.draining ? "draining" : "serving"},
          {"protocol", s.info.version},
          {"host", s.info.host},
          {"threads", s.info.threads},
          {"drivers", s.drivers},
          {"shards", s.shards},
          {"bytes_held", s.bytes_held},
          {"evaluations", s.evaluations},
          {"restrictions", s.restrictions},
          {"node_local_data", s.node_local_data},
          {"limits",
           {{"shards", s.max_shards},
            {"shards_per_driver", s.max_shards_per_driver},
            {"bytes", s.max_bytes},
            {"bytes_per_driver", s.max_bytes_per_driver},
            {"dimension", s.max_dimension}}}};
}

void print_row(const std::string& node, const actors::node_status& s) {
  std::printf("%-22s %-9s %8u %7u %7lld %6lld %10s %11lld  shards %lld (%lld/driver), %s (%s/driver), "
              "dimension %lld%s\n",
              node.c_str(), s.draining ? "draining" : "serving", s.info.version, s.info.threads,
              static_cast<long long>(s.drivers), static_cast<long long>(s.shards),
              bytes_text(s.bytes_held).c_str(), static_cast<long long>(s.evaluations),
              static_cast<long long>(s.max_shards), static_cast<long long>(s.max_shards_per_driver),
              bytes_text(s.max_bytes).c_str(), bytes_text(s.max_bytes_per_driver).c_str(),
              static_cast<long long>(s.max_dimension), s.node_local_data ? ", node-local data" : "");
}

} // namespace

int run_status(const status_options& options) {
  auto nodes = actors::parse_endpoints(options.nodes, "--nodes");
  if (!nodes)
    return exit_with_error(nodes.error().message());
  if (auto ok = io::check_tls_files(options.tls.certificate, options.tls.key, options.tls.ca); !ok)
    return exit_with_error(ok.error().message());
  actors::runtime rt{actors::runtime_options{1, true, options.tls, true}};
  const auto timeout = std::chrono::milliseconds{static_cast<long long>(options.timeout * 1000)};
  if (!options.json)
    std::printf("%-22s %-9s %8s %7s %7s %6s %10s %11s  %s\n", "NODE", "STATE", "PROTOCOL", "THREADS",
                "DRIVERS", "SHARDS", "HELD", "EVALUATIONS", "LIMITS");
  int failed = 0;
  for (const auto& node : *nodes) {
    auto status = actors::ask_node_status(rt, node, timeout);
    if (!status) {
      ++failed;
      if (options.json)
        std::printf("%s\n", nlohmann::json{{"node", node.text()}, {"state", "unreachable"},
                                           {"error", status.error().message()}}.dump().c_str());
      else
        std::printf("%-22s unreachable: %s\n", node.text().c_str(), status.error().message().c_str());
    } else if (options.json) {
      std::printf("%s\n", json_of(node.text(), *status).dump().c_str());
    } else {
      print_row(node.text(), *status);
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}

} // namespace shardopt::apps
