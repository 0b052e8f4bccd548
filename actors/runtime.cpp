#include "actors/runtime.hpp"

#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "actors/parameter_server.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include <thread>

namespace shardopt::actors {

namespace {

std::string render_error(std::uint8_t code, caf::atom_value, const caf::message& context) {
  std::string what;
  switch (static_cast<errc>(code)) {
    case errc::dimension_mismatch:
      what = "dimension mismatch";
      break;
    case errc::shard_failed:
      what = "shard failed";
      break;
    case errc::timeout:
      what = "timeout";
      break;
    case errc::bad_request:
      what = "bad request";
      break;
    case errc::training_failed:
      what = "training failed";
      break;
  }
  if (context.match_elements<std::string>())
    what += ": " + context.get_as<std::string>(0);
  return what;
}

} // namespace

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<std::uint8_t>(code), error_category,
                    caf::make_message(std::move(message))};
}

std::string describe(const caf::error& error, const caf::actor_system& system) {
  if (!error)
    return "normal exit";  // CAF 0.17's category() must not be called on an empty error
  if (error.category() == error_category) {
    if (error.context().match_elements<std::string>())
      return error.context().get_as<std::string>(0);
    return render_error(error.code(), error.category(), error.context());
  }
  return system.render(error);
}

caf::error expect_bytes(caf::deserializer& f, std::uint64_t bytes, const char* what) {
  if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&f))
    if (binary->remaining() < bytes)
      return make_error(errc::dimension_mismatch,
                        "peer announced " + std::to_string(bytes) + " bytes of " + what + ", only "
                          + std::to_string(binary->remaining()) + " arrived");
  return {};
}

caf::error inspect(caf::serializer& f, dense_vector& x) {
  auto length = x.size();
  return caf::error::eval([&] { return f.begin_sequence(length); },
                          [&] {
                            return length == 0 ? caf::error{}
                                               : f.apply_raw(length * sizeof(double),
                                                             const_cast<double*>(x.data()));
                          },
                          [&] { return f.end_sequence(); });
}

caf::error inspect(caf::deserializer& f, dense_vector& x) {
  std::size_t length = 0;
  if (auto err = f.begin_sequence(length))
    return err;
  if (length > max_wire_elements)
    return make_error(errc::dimension_mismatch,
                      "peer announced a vector of " + std::to_string(length) + " doubles, more than "
                        + std::to_string(max_wire_elements));
  if (auto err = expect_bytes(f, length * sizeof(double), "vector data"))
    return err;
  auto values = std::make_shared<Eigen::VectorXd>(static_cast<Eigen::Index>(length));
  if (length > 0)
    if (auto err = f.apply_raw(length * sizeof(double), values->data()))
      return err;
  if (auto err = f.end_sequence())
    return err;
  x = dense_vector{std::shared_ptr<const Eigen::VectorXd>{std::move(values)}};
  return {};
}

void add_message_types(caf::actor_system_config& config) {
  config.add_message_type<dense_vector>("shardopt::dense_vector");
  config.add_message_type<data_block>("shardopt::data_block");
  config.add_message_type<shard_spec>("shardopt::shard_spec");
  config.add_message_type<node_info>("shardopt::node_info");
  config.add_message_type<shard_actor>("shardopt::shard_actor");
  config.add_message_type<node_actor>("shardopt::node_actor");
  config.add_message_type<part_message>("shardopt::part_message");
  config.add_message_type<summary_message>("shardopt::summary_message");
  config.add_message_type<part_shard_spec>("shardopt::part_shard_spec");
  config.add_message_type<ps_config>("shardopt::ps_config");
  config.add_message_type<ps_snapshot>("shardopt::ps_snapshot");
  config.add_message_type<ps_view>("shardopt::ps_view");
  config.add_message_type<ps_stats>("shardopt::ps_stats");
  config.add_message_type<ps_actor>("shardopt::ps_actor");
  config.add_error_category(error_category, render_error);
}

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

runtime::~runtime() = default;

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
