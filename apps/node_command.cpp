#include "apps/node_command.hpp"

#include "actors/cluster.hpp"
#include "io/tls_files.hpp"

#include <csignal>
#include <cstdlib>
#include <cstdio>

namespace shardopt::apps {

namespace {

bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "localhost" || address == "::1";
}

} // namespace

int run_node(const node_options& options) {
  if (auto ok = io::check_tls_files(options.tls.certificate, options.tls.key, options.tls.ca); !ok) {
    std::fprintf(stderr, "shardopt: error: %s\n", ok.error().message().c_str());
    return 1;
  }
  if (!options.tls.enabled() && !is_loopback(options.bind))
    std::fprintf(stderr,
                 "shardopt node: warning: listening on %s without TLS: anyone who can reach this "
                 "port can run computations here and read shipped data (see --tls-cert)\n",
                 options.bind.c_str());
  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  actors::runtime rt{actors::runtime_options{options.threads, true, options.tls}};
  auto service = actors::node_service::start(rt, options.bind, options.port);
  if (!service) {
    std::fprintf(stderr, "shardopt: error: %s\n", service.error().message().c_str());
    return 1;
  }
  std::printf("shardopt node listening on %s:%u (%zu worker threads%s)\n", options.bind.c_str(),
              static_cast<unsigned>(service->port()), rt.worker_threads(),
              options.tls.enabled() ? ", mutual TLS" : "");
  std::fflush(stdout);
  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "shardopt node: %s, shutting down\n", received == SIGINT ? "SIGINT" : "SIGTERM");
  // Unpublish and end the node and its shards, then leave without CAF 0.17's actor-system teardown:
  // it waits for every detached actor to be released, and the middleman may still hold a shard for
  // a driver that has just gone, which can block that wait forever. A node keeps no state to save.
  { auto stopping = std::move(*service); }
  std::fflush(nullptr);
  std::_Exit(0);
}

} // namespace shardopt::apps
