// Groups and the fronts of trees: one actor that answers for several peers (a group the shard
// protocol, a tree its slices) by asking each and adding their exact sums (group.hpp says what each is for; gatherer.hpp how a
// front and its gatherer split the work; tree.cpp holds a tree's gatherer).

#include "actors/node/group.hpp"

#include "actors/node/gatherer.hpp"
#include "actors/wire/guard.hpp"
#include "actors/wire/tree_slices.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

namespace shardopt::actors {

namespace {

using sums_result = caf::result<std::uint64_t, block_sums>;
using part_result = caf::result<std::uint64_t, std::uint32_t, block_sums>;

/// A group's gatherer: forwards each request to every member (in-process, so theta is shared, not
/// copied), adds their replies (`merge`: exact, so in any order) and sends the sum, or the first
/// error, to the group under the request's ticket. It is never handed to a peer, so no peer can
/// name it: responses and down messages reach it only from this process. (A peer can name the
/// group, and CAF matches a response by its id alone, so the group itself must not wait on
/// anything.) Ends when a member goes down, before or while it is asked; the group watches it and
/// ends too.
gatherer_actor::behavior_type gatherer(gatherer_actor::pointer self, std::vector<shard_actor> members,
                                       std::size_t window, group_actor group) {
  for (const auto& member : members)
    self->monitor(member);
  // A member going down ends the group: the driver sees one peer go down and recreates it.
  self->set_down_handler([self](caf::down_msg& down) { self->quit(down.reason); });
  window = std::clamp<std::size_t>(window, 1, std::max<std::size_t>(members.size(), 1));
  // One request being gathered: the members asked so far and the sum so far.
  struct pending {
    access_token ticket;
    std::size_t next = 0;
    std::size_t left = 0;
    std::optional<block_sums> total;
    bool done = false;
    std::function<void()> ask_next;
  };
  // Asks the members `window` at a time, the next as each one answers: at most `window` of them
  // hold their dimension-sized buffers at once.
  auto gather = [self, members, window, group](const access_token& ticket, auto ask) {
    auto state = std::make_shared<pending>();
    state->ticket = ticket;
    state->left = members.size();
    std::weak_ptr<pending> weak = state;  // the handlers hold the state; it must not hold itself
    state->ask_next = [self, members, group, ask = std::move(ask), weak] {
      auto current = weak.lock();
      if (!current || current->done || current->next == members.size())
        return;
      const auto m = current->next++;
      ask(members[m]).then(
        [self, group, current](std::uint64_t, block_sums& part) {
          if (current->done)
            return;
          if (!current->total) {
            current->total = std::move(part);
          } else if (auto ok = merge(*current->total, std::move(part)); !ok) {
            current->done = true;
            self->send(group, gathered_atom::value, current->ticket,
                       make_error(errc::shard_failed, ok.error().message()));
            return;
          }
          if (--current->left == 0) {
            current->done = true;
            self->send(group, gathered_atom::value, current->ticket, std::move(*current->total));
            return;
          }
          current->ask_next();
        },
        [self, group, current](caf::error& err) {
          if (current->done)
            return;
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
  // Only its group hands it requests.
  auto from_group = [self, group] {
    return self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(group);
  };
  return {
    [self, gather, from_group](eval_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const exact_grid& grid, const dense_vector& theta) {
      if (from_group())
        gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, grid, theta);
      });
    },
    [self, gather, from_group](hessvec_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, std::uint64_t at, const exact_grid& grid,
                   const dense_vector& theta, const dense_vector& v) {
      if (from_group())
        gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, at, grid, theta, v);
      });
    },
    [self, gather, from_group](quality_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const dense_vector& theta) {
      if (from_group())
        gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, theta);
      });
    },
    [self, gather, from_group](line_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, std::uint64_t from, std::uint64_t to, const dense_vector& alphas,
                   const dense_vector& theta_from, const dense_vector& theta_to) {
      if (from_group())
        gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, from, to, alphas, theta_from, theta_to);
      });
    },
    [](part_atom, const access_token&, const access_token&, std::uint64_t, const tree_slice&,
       const exact_grid&, const dense_vector&, const dense_vector&) {
      // never sent: a group's front refuses slices
    },
  };
}

/// The front of a node's group of shards of one driver (answering the shard protocol once for all
/// of them), or of its part of a reduction tree (answering slices only). Each request goes to the gatherer with a fresh random
/// ticket, and the gatherer's sum comes back under it; a message under any other ticket (a peer's
/// forgery) is dropped. Ends when the gatherer ends (a down message naming it cannot be forged: no
/// peer can name it), and ends the gatherer when it ends. A group also ends its members then (the
/// driver sees one peer go down and recreates the group); a tree's members live on (its node's
/// peers serve the driver directly too).
class group_impl : public guarded<group_actor::base> {
public:
  group_impl(caf::actor_config& config, std::vector<shard_actor> members,
             std::vector<tree_actor> children, std::size_t window, access_token token, bool tree,
             std::int64_t dimension)
    : guarded<group_actor::base>(config), members_(std::move(members)),
      children_(std::move(children)), window_(window), token_(token), tree_(tree),
      dimension_(static_cast<std::uint64_t>(std::max<std::int64_t>(dimension, 0))) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    const auto self = caf::actor_cast<group_actor>(this);
    if (tree_)
      gatherer_ = spawn_tree_gatherer(this, members_, std::move(children_), self);
    else
      gatherer_ = spawn(gatherer, members_, window_, self);
    monitor(gatherer_);
    set_down_handler([this](caf::down_msg& down) {
      if (down.source == caf::actor_cast<caf::actor_addr>(gatherer_))
        quit(caf::exit_reason::user_shutdown);
    });
    return {
      [this](eval_atom atom, const access_token& token, std::uint64_t round,
             const exact_grid& grid, const dense_vector& theta) -> sums_result {
        if (auto err = check_whole(token))
          return err;
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, grid, theta);
        });
      },
      [this](hessvec_atom atom, const access_token& token, std::uint64_t round, std::uint64_t at,
             const exact_grid& grid, const dense_vector& theta, const dense_vector& v)
        -> sums_result {
        if (auto err = check_whole(token))
          return err;
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, at, grid, theta, v);
        });
      },
      [this](quality_atom atom, const access_token& token, std::uint64_t round,
             const dense_vector& theta) -> sums_result {
        if (auto err = check_whole(token))
          return err;
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, theta);
        });
      },
      [this](line_atom atom, const access_token& token, std::uint64_t round, std::uint64_t from,
             std::uint64_t to, const dense_vector& alphas, const dense_vector& theta_from,
             const dense_vector& theta_to) -> sums_result {
        if (auto err = check_whole(token))
          return err;
        return forward(round, [&](const access_token& ticket) {
          send(gatherer_, atom, ticket, token, round, from, to, alphas, theta_from, theta_to);
        });
      },
      [this](part_atom atom, const access_token& token, std::uint64_t round,
             const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
             const dense_vector& v) -> part_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        if (!tree_)
          return refused("invalid slice: this is a node's group, not its part of a tree");
        if (auto err = check_slice(slice, grid, theta, v, dimension_))
          return err;
        const auto ticket = access_token::random();
        auto promise = make_response_promise<std::uint64_t, std::uint32_t, block_sums>();
        waiting_.emplace(ticket, waiting{round, slice.index, {}, promise});
        send(gatherer_, atom, ticket, token, round, slice, grid, theta, v);
        return promise;
      },
      [this](gathered_atom, const access_token& ticket, block_sums& sums) {
        if (auto it = waiting_.find(ticket); it != waiting_.end()) {
          auto& w = it->second;
          sums.keep_words_when_dropped = true;  // dropped once sent: the next pass's total takes its words
          if (w.slice_promise)
            w.slice_promise->deliver(w.round, w.index, std::move(sums));
          else
            w.promise->deliver(w.round, std::move(sums));
          waiting_.erase(it);
        }
      },
      [this](gathered_atom, const access_token& ticket, caf::error& err) {
        if (auto it = waiting_.find(ticket); it != waiting_.end()) {
          auto& w = it->second;
          if (w.slice_promise)
            w.slice_promise->deliver(std::move(err));
          else
            w.promise->deliver(std::move(err));
          waiting_.erase(it);
        }
      },
    };
  }

  void on_exit() override {
    caf::scoped_actor reaper{system()};  // unnameable: guarded members accept its exit
    reaper->send_exit(gatherer_, caf::exit_reason::user_shutdown);
    gatherer_ = gatherer_actor{};
    if (!tree_)
      for (const auto& member : members_)
        reaper->send_exit(member, caf::exit_reason::user_shutdown);
    members_.clear();
    waiting_.clear();
  }

private:
  struct waiting {  // a whole request's promise (groups) or a slice's (trees)
    std::uint64_t round = 0;
    std::uint32_t index = 0;
    std::optional<caf::typed_response_promise<std::uint64_t, block_sums>> promise;
    std::optional<caf::typed_response_promise<std::uint64_t, std::uint32_t, block_sums>>
      slice_promise;
  };
  struct ticket_hash {
    std::size_t operator()(const access_token& t) const noexcept { return t.high ^ t.low; }
  };

  /// Why a whole request is refused: another driver's token, or sent to a tree (which takes slices).
  caf::error check_whole(const access_token& token) const {
    if (token != token_)
      return refused("this shard belongs to another driver");
    if (tree_)
      return refused("invalid request: a node's part of a tree takes requests in slices");
    return {};
  }

  /// Sends a request to the gatherer under a fresh ticket and promises its sum.
  template <class Send>
  sums_result forward(std::uint64_t round, Send send_under) {
    const auto ticket = access_token::random();
    auto promise = make_response_promise<std::uint64_t, block_sums>();
    waiting_.emplace(ticket, waiting{round, 0, promise, {}});
    send_under(ticket);
    return promise;
  }

  std::vector<shard_actor> members_;
  std::vector<tree_actor> children_;
  std::size_t window_;
  access_token token_;
  bool tree_;
  std::uint64_t dimension_;  // a tree's slices are of vectors at most this long (grids twice it)
  gatherer_actor gatherer_;
  std::unordered_map<access_token, waiting, ticket_hash> waiting_;
};

} // namespace

shard_actor spawn_group(caf::actor_system& system, std::vector<shard_actor> members,
                        std::size_t window, const access_token& token) {
  return caf::actor_cast<shard_actor>(system.spawn<group_impl>(
    std::move(members), std::vector<tree_actor>{}, window, token, false, std::int64_t{0}));
}

tree_actor spawn_tree(caf::actor_system& system, std::vector<shard_actor> own,
                      std::vector<tree_actor> children, const access_token& token, std::int64_t dimension) {
  const auto window = own.size();
  return caf::actor_cast<tree_actor>(
    system.spawn<group_impl>(std::move(own), std::move(children), window, token, true, dimension));
}

} // namespace shardopt::actors
