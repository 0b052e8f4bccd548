#include "apps/commands/node_command.hpp"

#include "actors/wire/network.hpp"
#include "actors/node/node_service.hpp"
#include "apps/serving/service_metrics.hpp"
#include "apps/run/summary.hpp"
#include "io/tls_files.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <pthread.h>
#include <thread>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace shardopt::apps {

namespace {

/// The node's limits from its options; the data root made canonical (it must be a directory).
result<actors::node_limits> limits_of(const node_options& options) {
  auto limits = options.limits;
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  limits.bytes = static_cast<std::int64_t>(options.max_gib * gib);
  limits.bytes_per_driver = static_cast<std::int64_t>(options.max_gib_per_driver * gib);
  if (options.max_gib < 0 || options.max_gib_per_driver < 0 || limits.shards < 1
      || limits.shards_per_driver < 1 || limits.dimension < 1)
    return fail_invalid("node limits must be positive");
  if (!(options.staging_timeout > 0 && options.staging_timeout <= 86400))
    return fail_invalid("--staging-timeout must lie in (0, 86400] seconds");
  limits.staging_idle = std::chrono::milliseconds{
    std::max<std::int64_t>(1, static_cast<std::int64_t>(options.staging_timeout * 1000))};
  if (!limits.data_root.empty()) {
    std::error_code ec;
    const auto root = std::filesystem::canonical(limits.data_root, ec);
    if (ec || !std::filesystem::is_directory(root))
      return fail_invalid("--data-root " + limits.data_root + ": not a directory");
    limits.data_root = root.string();
  }
  return limits;
}

/// Drains after a SIGTERM: the node takes no new drivers (and /readyz fails) while the drivers it
/// holds go on, until none holds anything, `seconds` have passed, or another stop signal comes.
/// Returns the signal that ends the node (SIGUSR2: it ended by itself meanwhile).
int drain(actors::node_counters& counters, const sigset_t& stop_signals, double seconds) {
  counters.draining = true;
  std::fprintf(stderr, "shardopt node: SIGTERM, draining: no new drivers; waiting up to %g s for "
                       "%lld driver(s) to finish\n",
               seconds, static_cast<long long>(counters.drivers.load()));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  const timespec poll{0, 100'000'000};
  while (counters.drivers.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    const int signal = sigtimedwait(&stop_signals, nullptr, &poll);
    if (signal > 0)
      return signal;
  }
  if (counters.drivers.load() > 0)
    std::fprintf(stderr, "shardopt node: drain time is up with %lld driver(s) left\n",
                 static_cast<long long>(counters.drivers.load()));
  return SIGTERM;
}

} // namespace

int run_node(const node_options& options) {
  if (auto ok = io::check_tls_files(options.tls.certificate, options.tls.key, options.tls.ca); !ok)
    return exit_with_error(ok.error().message());
  if (auto ok = actors::check_exposure(options.bind, options.tls.enabled(), options.insecure,
                                       "shardopt node");
      !ok)
    return exit_with_error(ok.error().message());
  auto limits = limits_of(options);
  if (!limits)
    return exit_with_error(limits.error().message());
  // Block the stop signals before any thread starts, so that only the waiting thread gets them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR2);  // wakes the waiting thread when the node ends by itself
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
#ifdef __GLIBC__
  // Shards allocate dimension-sized buffers (a gradient, its exact sums) per request, each on its
  // own thread. glibc's adaptive threshold would serve them from each thread's arena after the
  // first request and keep them there, so a node would hold one set per shard for good; a fixed
  // threshold maps them fresh and returns them when freed (measured: bench/, BM_shard_memory).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif

  actors::runtime rt{actors::runtime_options{options.threads, true, options.tls, true}};
  auto counters = std::make_shared<actors::node_counters>();
  auto service = actors::node_service::start(rt, options.bind, options.port, *limits, counters);
  if (!service)
    return exit_with_error(service.error().message());
  auto endpoint = start_metrics(
    options.metrics,
    {[counters] { return joined(process_metrics("node"), node_metrics(*counters)); },
     [counters] { return std::string{counters->draining ? "draining: taking no new drivers" : ""}; }},
    "shardopt node");
  if (!endpoint)
    return exit_with_error(endpoint.error().message());
  if (options.insecure && !actors::is_loopback(options.bind))
    std::fprintf(stderr, "shardopt node: warning: --insecure: listening on %s without TLS\n",
                 options.bind.c_str());
  std::printf("shardopt node listening on %s:%u (%zu worker threads%s%s)\n", options.bind.c_str(),
              static_cast<unsigned>(service->port()), rt.worker_threads(),
              options.tls.enabled() ? ", mutual TLS" : "",
              limits->data_root.empty() ? "" : (", data root " + limits->data_root).c_str());
  std::fflush(stdout);
  int received = 0;
  std::thread signals{[&] {
    sigwait(&stop_signals, &received);
    if (received == SIGTERM && options.drain_seconds > 0)
      received = drain(*counters, stop_signals, options.drain_seconds);
    service->stop();
  }};
  auto served = service->serve();
  if (!served)
    pthread_kill(signals.native_handle(), SIGUSR2);
  signals.join();
  if (!served)
    return exit_with_error(served.error().message());
  std::fprintf(stderr, "shardopt node: %s, shutting down\n", received == SIGINT ? "SIGINT" : "SIGTERM");
  endpoint->reset();  // its threads read the counters: stopped before the node goes
  // Unpublish and end the node and its shards; the runtime is left to the process's exit.
  { auto stopping = std::move(*service); }
  return 0;
}

} // namespace shardopt::apps
