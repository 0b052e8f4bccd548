#pragma once

// The mailbox guard of every actor that a peer can reach over the network (nodes, shards, parameter
// servers). CAF delivers any message to any actor whose id a peer names, and some messages are
// handled by CAF itself before the actor sees them: an exit message with reason `kill` ends an
// actor whatever its exit handler says, and a bare error message ends it by default. A guarded
// actor drops, before they reach its mailbox:
//   - exit messages unless they come from an actor of this process that no peer can name: one not
//     in the actor registry. (CAF 0.17's BASP resolves a sender a peer claims on this node through
//     the registry, so a registered sender may be forged; an anonymous sender is what a remote
//     anonymous message looks like.) Scoped actors of this process send the legitimate exits.
//   - stream handshakes and stream traffic, which no shardopt protocol uses.
// Everything else reaches the behavior, where typed handlers check tokens and sizes; unexpected
// messages and bare errors are dropped (`guard_behavior`).

#include "actors/wire/messages.hpp"

#include <caf/all.hpp>

#include <exception>
#include <string>

namespace shardopt::actors {

/// True when `element` is a system message that a peer outside this process must not deliver.
inline bool foreign_system_message(const caf::mailbox_element& element, caf::actor_system& home) {
  const auto& content = element.content();
  if (content.match_elements<caf::exit_msg>()) {
    const auto& sender = element.sender;
    const bool unnameable_local = sender && sender->node() == home.node()
                                  && !home.registry().get(sender->id());
    return !unnameable_local;
  }
  return content.match_elements<caf::open_stream_msg>()
         || content.match_elements<caf::upstream_msg>()
         || content.match_elements<caf::downstream_msg>();
}

/// `Base` (an actor class) with a mailbox that refuses foreign system messages (see above).
template <class Base>
class guarded : public Base {
public:
  using Base::Base;

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    if (what && foreign_system_message(*what, this->home_system()))
      return;  // dropped: a request among them gets no reply, which is what a refusal costs
    Base::enqueue(std::move(what), host);
  }
};

/// Makes an actor drop messages outside its typed interface instead of printing them, bare error
/// messages instead of ending (guarded actors make no requests whose errors they await), and down
/// messages instead of printing them (an actor that monitors something sets its own handler).
template <class Self>
void guard_behavior(Self* self) {
  self->set_default_handler(caf::drop);
  self->set_error_handler([](caf::error&) {});
  self->set_down_handler([](caf::down_msg&) {});
}

/// Runs a handler body, turning any exception into an error reply: no request ends the node.
template <class F>
auto shielded(F body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return make_error(errc::shard_failed, std::string{"the node could not serve the request: "}
                                            + e.what());
  } catch (...) {
    return make_error(errc::shard_failed, "the node could not serve the request");
  }
}

} // namespace shardopt::actors
