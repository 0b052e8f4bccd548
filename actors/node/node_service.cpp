#include "actors/node/node_service.hpp"

#include "actors/wire/network.hpp"
#include "actors/node/node.hpp"

#include <optional>

namespace shardopt::actors {

namespace {
using stop_atom = caf::atom_constant<caf::atom("stopnode")>;
} // namespace

struct node_service::impl {
  impl(runtime& r, node_actor n, std::uint16_t p)
    : rt(r), node(std::move(n)), port(p), waiter(r.system()) {
    waiter->monitor(node);
  }

  runtime& rt;
  node_actor node;
  std::uint16_t port;
  caf::scoped_actor waiter;  // watches the node; woken by stop()
};

node_service::node_service(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
node_service::node_service(node_service&&) noexcept = default;
node_service& node_service::operator=(node_service&&) noexcept = default;

node_service::~node_service() {
  if (!impl_)
    return;
  // Unpublish first: the middleman holds the node until then. The node's exit handler accepts
  // this exit because it comes from an actor of this process (wire/guard.hpp).
  unpublish_actor(impl_->rt, caf::actor_cast<caf::strong_actor_ptr>(impl_->node), impl_->port);
  impl_->waiter->send_exit(impl_->node, caf::exit_reason::user_shutdown);
}

std::uint16_t node_service::port() const {
  return impl_->port;
}

result<void> node_service::serve() {
  std::optional<result<void>> out;
  while (!out)
    impl_->waiter->receive(
      [&](stop_atom) { out = result<void>{}; },
      [&](caf::down_msg& down) {
        out = result<void>{fail_invalid("the node actor ended (" + describe(down.reason, impl_->rt.system())
                                + "); exiting so that a supervisor can restart the node")};
      },
      caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; });
  return *out;
}

void node_service::stop() {
  caf::anon_send(caf::actor_cast<caf::actor>(impl_->waiter), stop_atom::value);
}

result<node_service> node_service::start(runtime& rt, const std::string& bind, std::uint16_t port,
                                         const node_limits& limits,
                                         std::shared_ptr<node_counters> counters) {
  auto node = spawn_node(rt, static_cast<std::uint32_t>(rt.worker_threads()), limits,
                         std::move(counters));
  auto bound = publish(rt, node, bind, port);
  if (!bound) {
    caf::scoped_actor self{rt.system()};
    self->send_exit(node, caf::exit_reason::user_shutdown);
    return bound.error();
  }
  return node_service{std::make_unique<impl>(rt, node, *bound)};
}

result<node_status> ask_node_status(runtime& rt, const endpoint& where,
                                    std::chrono::milliseconds timeout) {
  auto node = connect_to<node_actor>(rt, where, "a shardopt node");
  if (!node)
    return node.error();
  return ask_once<node_status>(rt, *node, timeout, status_atom::value, std::uint64_t{1})
    .with_context(where.text() + ": status");
}

} // namespace shardopt::actors
