#include "actors/wire/runtime.hpp"

#include "actors/wire/messages.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include <thread>

namespace shardopt::actors {

namespace {

/// The project's actor system configuration: our message types, a bounded scheduler, quiet logs.
struct shardopt_config : caf::actor_system_config {
  shardopt_config(std::size_t threads, const runtime_options& options) {
    set("scheduler.max-threads", threads);
    // Shards compute on threads of their own; scheduled actors only pass messages. The sharing
    // policy lets idle workers sleep on a condition variable instead of polling, which on a small
    // machine otherwise steals cycles from the shards (measured in bench/).
    set("scheduler.policy", caf::atom("sharing"));
    set("logger.console", caf::atom("none"));
    actors::add_message_types(*this);
    if (options.network) {
      load<caf::io::middleman>();
      // A peer that stops answering (a dead host, a cut cable) is dropped after a few seconds;
      // a killed process closes its sockets and is noticed at once.
      set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds{1}});
      set("middleman.connection-timeout", caf::timespan{std::chrono::seconds{5}});
      // Messages are deserialised on the I/O thread, from its read buffer: a BASP worker would
      // first copy each payload into a buffer of its own, and keep that buffer (as large as the
      // largest message, a shipped shard) for the life of the process.
      set("middleman.workers", std::size_t{0});
    }
    if (options.tls.enabled()) {
      load<caf::openssl::manager>();
      set("openssl.certificate", options.tls.certificate);
      set("openssl.key", options.tls.key);
      set("openssl.cafile", options.tls.ca);
    }
  }
};

std::size_t resolve_threads(std::size_t requested) {
  return requested > 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

struct runtime::impl {
  explicit impl(runtime_options opts)
    : options(std::move(opts)), threads(resolve_threads(options.worker_threads)),
      config(threads, options), system(config) {}

  runtime_options options;
  std::size_t threads;
  shardopt_config config;
  caf::actor_system system;
};

runtime::runtime(runtime_options options) : impl_(std::make_unique<impl>(options)) {}

runtime::~runtime() {
  if (impl_ && impl_->options.abandon_at_exit)
    static_cast<void>(impl_.release());  // deliberately left running: the process ends next
}

caf::actor_system& runtime::system() {
  return impl_->system;
}

std::size_t runtime::worker_threads() const {
  return impl_->threads;
}

const runtime_options& runtime::options() const {
  return impl_->options;
}

} // namespace shardopt::actors
