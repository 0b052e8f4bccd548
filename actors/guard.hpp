#pragma once

// The mailbox guard of every actor that a peer can reach over the network (nodes, shards, parameter
// servers). CAF delivers any message to any actor whose id a peer names, and some messages are
// handled by CAF itself before the actor sees them: an exit message with reason `kill` ends an
// actor whatever its exit handler says. A guarded actor drops, before they reach its mailbox:
//   - exit messages that do not come from an actor of this process (a remote peer, or an anonymous
//     sender, which is what a remote anonymous message looks like), and
//   - stream handshakes and stream traffic, which no shardopt protocol uses.
// Everything else reaches the behavior, where typed handlers check tokens and sizes and unexpected
// messages are dropped (set_default_handler(caf::drop) in `guard_behavior`).

#include <caf/all.hpp>

namespace shardopt::actors {

/// True when `element` is a system message that a peer outside this process must not deliver.
inline bool foreign_system_message(const caf::mailbox_element& element, const caf::node_id& home) {
  const auto& content = element.content();
  const bool local_sender = element.sender && element.sender->node() == home;
  if (content.match_elements<caf::exit_msg>())
    return !local_sender;
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
    if (what && foreign_system_message(*what, this->home_system().node()))
      return;  // dropped: a request among them gets no reply, which is what a refusal costs
    Base::enqueue(std::move(what), host);
  }
};

/// Makes an actor drop messages outside its typed interface instead of printing them.
template <class Self>
void guard_behavior(Self* self) {
  self->set_default_handler(caf::drop);
}

} // namespace shardopt::actors
