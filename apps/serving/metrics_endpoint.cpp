#include "apps/serving/metrics_endpoint.hpp"

#include <CivetServer.h>
#include <prometheus/text_serializer.h>

#include <arpa/inet.h>

#include <cstdio>
#include <string>
#include <exception>
#include <sstream>

namespace shardopt::apps {

namespace {

/// One write of the head and body together: civetweb abandons a write once the server is
/// stopping, so a reply sent in two writes could leave a scraper with the head alone (a
/// Content-Length and no body) when a task ends during a scrape; one write is sent whole or not.
void reply(mg_connection* connection, int status, const char* reason, const char* type,
           const std::string& body) {
  std::string message = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                        "\r\nContent-Type: " + type +
                        "\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  message += body;
  mg_write(connection, message.data(), message.size());
}

constexpr const char* text_type = "text/plain; charset=utf-8";

/// The three paths, exactly: anything below them, or any other method, is not found.
class probe_handler : public CivetHandler {
public:
  explicit probe_handler(const endpoint_sources& sources) : sources_(sources) {}

  bool handleGet(CivetServer*, mg_connection* connection) override {
    const auto* request = mg_get_request_info(connection);
    const std::string path = request && request->local_uri ? request->local_uri : "";
    try {
      if (path == "/metrics") {
        std::ostringstream text;
        prometheus::TextSerializer{}.Serialize(text, sources_.metrics());
        reply(connection, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text.str());
      } else if (path == "/healthz") {
        reply(connection, 200, "OK", text_type, "ok\n");
      } else if (path == "/readyz") {
        const auto why = sources_.unready();
        if (why.empty())
          reply(connection, 200, "OK", text_type, "ready\n");
        else
          reply(connection, 503, "Service Unavailable", text_type, "not ready: " + why + "\n");
      } else {
        reply(connection, 404, "Not Found", text_type, "not found\n");
      }
    } catch (const std::exception& e) {
      reply(connection, 500, "Internal Server Error", text_type, std::string{"error: "} + e.what() + "\n");
    }
    return true;
  }

private:
  const endpoint_sources& sources_;
};

/// "127.0.0.1:9100" for civetweb, from an IPv4 address literal: civetweb reads flags from the
/// option's text (a trailing 's' means TLS, a comma another port), so nothing but an address is
/// passed on. (Debian's civetweb is built without IPv6.)
result<std::string> listening_port(const std::string& bind, std::uint16_t port) {
  in_addr address{};
  if (inet_pton(AF_INET, bind.c_str(), &address) == 1)
    return bind + ":" + std::to_string(port);
  return fail_invalid("--metrics-bind " + bind + ": not an IPv4 address (give 127.0.0.1, 0.0.0.0 or "
                      "an interface's address)");
}

} // namespace

struct metrics_endpoint::impl {
  explicit impl(endpoint_sources s) : sources(std::move(s)), handler(sources) {}

  endpoint_sources sources;
  probe_handler handler;
  std::unique_ptr<CivetServer> server;  // last: stopped (and its threads joined) first
};

metrics_endpoint::metrics_endpoint(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
metrics_endpoint::metrics_endpoint(metrics_endpoint&&) noexcept = default;
metrics_endpoint& metrics_endpoint::operator=(metrics_endpoint&&) noexcept = default;
metrics_endpoint::~metrics_endpoint() = default;

std::uint16_t metrics_endpoint::port() const {
  const auto ports = impl_->server->getListeningPorts();
  return ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

result<metrics_endpoint> metrics_endpoint::start(const std::string& bind, std::uint16_t port,
                                                 endpoint_sources sources) {
  auto listen = listening_port(bind, port);
  if (!listen)
    return listen.error();
  // Eight threads, small requests, short timeouts: a client that opens connections and sends
  // nothing ties up a thread for 2 s at most, and needs eight such connections at once to delay a
  // scrape. (Liveness probes use the node's own port: see deploy/kubernetes/nodes.yaml.)
  const std::vector<std::string> options{
    "listening_ports", *listen,  "num_threads",       "8",   "request_timeout_ms", "2000",
    "max_request_size", "8192",  "enable_keep_alive", "no",  "enable_directory_listing", "no"};
  auto state = std::make_unique<impl>(std::move(sources));
  try {
    state->server = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return fail_invalid("metrics endpoint on " + *listen + ": cannot listen (" + e.what() + ")");
  }
  for (const char* path : {"/metrics", "/healthz", "/readyz"})
    state->server->addHandler(path, state->handler);
  return metrics_endpoint{std::move(state)};
}

result<std::unique_ptr<metrics_endpoint>> start_metrics(const metrics_options& options,
                                                        endpoint_sources sources,
                                                        const std::string& who) {
  if (!options.enabled())
    return std::unique_ptr<metrics_endpoint>{};
  auto endpoint = metrics_endpoint::start(options.bind, static_cast<std::uint16_t>(options.port),
                                          std::move(sources));
  if (!endpoint)
    return endpoint.error();
  std::fprintf(stderr, "%s: metrics on http://%s:%u/metrics\n", who.c_str(), options.bind.c_str(),
               static_cast<unsigned>(endpoint->port()));
  return std::make_unique<metrics_endpoint>(std::move(*endpoint));
}

} // namespace shardopt::apps
