// Groups and trees: one actor that answers the shard protocol for several peers by asking each
// and adding their exact sums (shard.hpp says what each is for).

#include "actors/shard.hpp"

#include "actors/guard.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

namespace shardopt::actors {

namespace {

using sums_result = caf::result<std::uint64_t, block_sums>;

using gathered_atom = caf::atom_constant<caf::atom("gathered")>;

/// A group as it is reached: the shard protocol, and the replies of its gatherer (below).
using group_actor = shard_actor::extend<caf::reacts_to<gathered_atom, access_token, block_sums>,
                                        caf::reacts_to<gathered_atom, access_token, caf::error>>;

/// The half of a group that waits on the members: forwards each request to every member
/// (in-process, so theta is shared, not copied), adds their replies (`merge`: exact, so in any
/// order) and sends the sum, or the first error, to the group under the request's ticket. It is
/// never handed to a peer, so no peer can name it: responses and down messages reach it only from
/// this process. (A peer can name the group, and CAF matches a response by its id alone, so the
/// group itself must not wait on anything.) Ends when a member goes down, before or while it is
/// asked; the group watches it and ends too.
using gatherer_actor = caf::typed_actor<
  caf::reacts_to<eval_atom, access_token, access_token, std::uint64_t, exact_grid, dense_vector>,
  caf::reacts_to<hessvec_atom, access_token, access_token, std::uint64_t, std::uint64_t, exact_grid,
                 dense_vector, dense_vector>,
  caf::reacts_to<quality_atom, access_token, access_token, std::uint64_t, dense_vector>>;

gatherer_actor::behavior_type gatherer(gatherer_actor::pointer self, std::vector<shard_actor> members,
                                       std::size_t window, group_actor group, bool tree) {
  for (const auto& member : members)
    self->monitor(member);
  window = std::clamp<std::size_t>(window, 1, std::max<std::size_t>(members.size(), 1));
  // One request being gathered: the members asked so far, which of them answered (or were left
  // out), and the sum so far.
  struct pending {
    access_token ticket;
    std::size_t next = 0;
    std::size_t left = 0;
    std::vector<char> settled;
    std::optional<block_sums> total;
    bool done = false;
    std::function<void()> ask_next;
  };
  auto open = std::make_shared<std::vector<std::weak_ptr<pending>>>();
  auto lost = std::make_shared<std::vector<char>>(members.size(), 0);
  auto finish = [self, group](pending& current) {
    current.done = true;
    if (current.total)
      self->send(group, gathered_atom::value, current.ticket, std::move(*current.total));
    else
      self->send(group, gathered_atom::value, current.ticket,
                 make_error(errc::shard_failed, "no member of this node's tree answered"));
  };
  // Member m of `current` is left out (a tree's member that failed or went down).
  auto leave_out = [finish](pending& current, std::size_t m) {
    if (current.done || current.settled[m])
      return;
    current.settled[m] = 1;
    if (--current.left == 0)
      return finish(current);
    current.ask_next();
  };
  // A group's members are its node's shards: one going down ends the group. A tree's members are
  // other nodes' trees and this node's peers: one that goes down or fails is left out, and the
  // tree answers the sum of the others (the driver asks the missing blocks' peers itself).
  self->set_down_handler([self, tree, members, lost, open, leave_out](caf::down_msg& down) {
    if (!tree)
      return self->quit(down.reason);
    for (std::size_t m = 0; m < members.size(); ++m)
      if (caf::actor_cast<caf::actor_addr>(members[m]) == down.source) {
        (*lost)[m] = 1;
        for (const auto& weak : *open)
          if (auto current = weak.lock())
            leave_out(*current, m);
      }
  });
  // Asks the members `window` at a time, the next as each one answers: at most `window` of them
  // hold their dimension-sized buffers at once.
  auto gather = [self, members, window, group, tree, lost, open, finish, leave_out](
                  const access_token& ticket, auto ask) {
    auto state = std::make_shared<pending>();
    state->ticket = ticket;
    state->left = members.size();
    state->settled.assign(members.size(), 0);
    open->erase(std::remove_if(open->begin(), open->end(), [](auto& w) { return w.expired(); }),
                open->end());
    open->push_back(state);
    std::weak_ptr<pending> weak = state;  // the handlers hold the state; it must not hold itself
    state->ask_next = [self, members, group, ask = std::move(ask), weak, tree, lost, finish,
                       leave_out] {
      auto current = weak.lock();
      if (!current || current->done || current->next == members.size())
        return;
      const auto m = current->next++;
      if (tree && (*lost)[m])
        return leave_out(*current, m);
      ask(members[m]).then(
        [self, group, current, m, finish, leave_out, member = members[m], tree](
          std::uint64_t, block_sums& part) {
          if (current->done || current->settled[m])
            return;
          // CAF matches a response by its id alone, and a tree's gatherer is known to other nodes:
          // a reply from anyone but the member asked is a forgery, and that member is left out (or
          // the group fails): the driver then asks the peers themselves.
          if (self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(member)) {
            if (tree)
              return leave_out(*current, m);
            current->done = true;
            self->send(group, gathered_atom::value, current->ticket,
                       make_error(errc::shard_failed, "a reply came from another actor"));
            return;
          }
          current->settled[m] = 1;
          if (!current->total) {
            current->total = std::move(part);
          } else if (auto ok = merge(*current->total, std::move(part)); !ok) {
            current->done = true;
            self->send(group, gathered_atom::value, current->ticket,
                       make_error(errc::shard_failed, ok.error().message()));
            return;
          }
          if (--current->left == 0)
            return finish(*current);
          current->ask_next();
        },
        [self, group, current, m, tree, leave_out](caf::error& err) {
          if (current->done || current->settled[m])
            return;
          if (tree)  // left out: the driver asks its blocks' peers itself
            return leave_out(*current, m);
          current->done = true;
          if (err == caf::sec::request_receiver_down)  // a member ended with the request queued
            self->quit(std::move(err));
          else
            self->send(group, gathered_atom::value, current->ticket, std::move(err));
        });
    };
    for (std::size_t i = 0; i < window; ++i)
      state->ask_next();
  };
  return {
    [self, gather, group](eval_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const exact_grid& grid, const dense_vector& theta) {
      if (self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(group))
        return;  // only its group hands it requests: no peer makes it forward anything
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, grid, theta);
      });
    },
    [self, gather, group](hessvec_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, std::uint64_t at, const exact_grid& grid,
                   const dense_vector& theta, const dense_vector& v) {
      if (self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(group))
        return;  // only its group hands it requests: no peer makes it forward anything
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, at, grid, theta, v);
      });
    },
    [self, gather, group](quality_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const dense_vector& theta) {
      if (self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(group))
        return;  // only its group hands it requests: no peer makes it forward anything
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, theta);
      });
    },
  };
}

/// The gatherer, guarded: a tree's children learn its address (their replies go to it), and must
/// not be able to end it.
class gatherer_impl : public guarded<gatherer_actor::base> {
public:
  gatherer_impl(caf::actor_config& config, std::vector<shard_actor> members, std::size_t window,
                group_actor group, bool tree)
    : guarded<gatherer_actor::base>(config), members_(std::move(members)), window_(window),
      group_(std::move(group)), tree_(tree) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    return gatherer(this, std::move(members_), window_, std::move(group_), tree_);
  }

private:
  std::vector<shard_actor> members_;
  std::size_t window_;
  group_actor group_;
  bool tree_;
};

/// A node's group of shards of one driver: answers the shard protocol once for all of them. Each
/// request goes to the gatherer with a fresh random ticket, and the gatherer's sum comes back under
/// it; a message under any other ticket (a peer's forgery) is dropped. Ends when the gatherer ends
/// (a down message naming it cannot be forged: no peer can name it), and ends the gatherer and the
/// members when it ends: the driver sees one peer go down and recreates the group.
class group_impl : public guarded<group_actor::base> {
public:
  group_impl(caf::actor_config& config, std::vector<shard_actor> members, std::size_t window,
             access_token token, bool tree)
    : guarded<group_actor::base>(config), members_(std::move(members)), window_(window),
      token_(token), tree_(tree) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    gatherer_ = spawn<gatherer_impl, caf::monitored>(members_, window_,
                                                     caf::actor_cast<group_actor>(this), tree_);
    set_down_handler([this](caf::down_msg& down) {
      if (down.source == caf::actor_cast<caf::actor_addr>(gatherer_))
        quit(caf::exit_reason::user_shutdown);
    });
    return {
      [this](eval_atom atom, const access_token& token, std::uint64_t round,
             const exact_grid& grid, const dense_vector& theta) -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, grid, theta);
        });
      },
      [this](hessvec_atom atom, const access_token& token, std::uint64_t round, std::uint64_t at,
             const exact_grid& grid, const dense_vector& theta, const dense_vector& v)
        -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, at, grid, theta, v);
        });
      },
      [this](quality_atom atom, const access_token& token, std::uint64_t round,
             const dense_vector& theta) -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, theta);
        });
      },
      [this](gathered_atom, const access_token& ticket, block_sums& sums) {
        if (auto it = waiting_.find(ticket); it != waiting_.end()) {
          it->second.promise.deliver(it->second.round, std::move(sums));
          waiting_.erase(it);
        }
      },
      [this](gathered_atom, const access_token& ticket, caf::error& err) {
        if (auto it = waiting_.find(ticket); it != waiting_.end()) {
          it->second.promise.deliver(std::move(err));
          waiting_.erase(it);
        }
      },
    };
  }

  void on_exit() override {
    caf::scoped_actor reaper{system()};  // unnameable: guarded members accept its exit
    reaper->send_exit(gatherer_, caf::exit_reason::user_shutdown);
    if (!tree_)  // a tree's members live on: its node's peers serve the driver directly too
      for (const auto& member : members_)
        reaper->send_exit(member, caf::exit_reason::user_shutdown);
    members_.clear();
    waiting_.clear();
  }

private:
  struct waiting {
    std::uint64_t round = 0;
    caf::typed_response_promise<std::uint64_t, block_sums> promise;
  };
  struct ticket_hash {
    std::size_t operator()(const access_token& t) const noexcept { return t.high ^ t.low; }
  };

  /// Sends a request to the gatherer under a fresh ticket and promises its sum.
  template <class Send>
  sums_result forward(std::uint64_t round, Send send_under) {
    const auto ticket = access_token::random();
    auto promise = make_response_promise<std::uint64_t, block_sums>();
    waiting_.emplace(ticket, waiting{round, promise});
    send_under(ticket);
    return promise;
  }

  std::vector<shard_actor> members_;
  std::size_t window_;
  access_token token_;
  bool tree_;
  gatherer_actor gatherer_;
  std::unordered_map<access_token, waiting, ticket_hash> waiting_;
};

} // namespace

shard_actor spawn_group(caf::actor_system& system, std::vector<shard_actor> members,
                        std::size_t window, const access_token& token) {
  return caf::actor_cast<shard_actor>(
    system.spawn<group_impl>(std::move(members), window, token, false));
}

shard_actor spawn_tree(caf::actor_system& system, std::vector<shard_actor> members,
                       const access_token& token) {
  const auto all = members.size();
  return caf::actor_cast<shard_actor>(
    system.spawn<group_impl>(std::move(members), all, token, true));
}

} // namespace shardopt::actors
