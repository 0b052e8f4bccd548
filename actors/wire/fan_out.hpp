#pragma once

// The one fan-out of the project: a blocking actor (a driver thread, a worker) sends one request
// to each of a group of peers (shards, nodes, parameter servers) and collects one reply from each,
// tagged with the round it answers, within a deadline, noticing at once a peer that goes down.
// The sharded objective, the cluster and the parameter-server client are all built on it
// (xgboost's src/collective keeps one such layer for the same reason).

#include "actors/wire/messages.hpp"
#include "base/result.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace shardopt::actors {

/// What a round does when one of its peers goes down before answering.
enum class down_action {
  fail,      ///< the round fails, naming the peer
  answered,  ///< the peer counts as having answered (it may end right after a final request)
  resend,    ///< the handler replaced the peer (peer_group::replace): ask the new one
};

/// The reply types of a round, after the echoed round number: `reply<double, dense_vector>{}`.
template <class... Ts>
struct reply {};

/// Peers that a blocking actor talks to in rounds. Monitors every peer; remembers why one went
/// down. Not thread-safe: use from the actor that owns `self` only.
template <class Handle>
class peer_group {
public:
  /// Decides what to do about peer i going down mid-round; a failure fails the round.
  using on_down = std::function<result<down_action>(std::size_t)>;

  peer_group(caf::blocking_actor* self, std::vector<Handle> peers, std::vector<std::string> names)
    : self_(self), peers_(std::move(peers)), names_(std::move(names)), gone_(peers_.size()) {
    for (auto& peer : peers_)
      self_->monitor(peer);
  }

  std::size_t size() const { return peers_.size(); }
  const Handle& operator[](std::size_t i) const { return peers_[i]; }
  const std::vector<Handle>& handles() const { return peers_; }
  const std::string& name(std::size_t i) const { return names_[i]; }
  caf::blocking_actor* self() const { return self_; }

  /// Hands the down messages of actors that are not this group's peers to `other` (another group
  /// on the same `self`, whose rounds would otherwise never see them: a round consumes every down
  /// message it receives).
  void pass_other_downs_to(std::function<void(const caf::down_msg&)> other) {
    others_down_ = std::move(other);
  }

  /// Records that the peer `msg` names went down, outside a round.
  void note_down(const caf::down_msg& msg) {
    for (std::size_t i = 0; i < size(); ++i)
      if (caf::actor_cast<caf::actor_addr>(peers_[i]) == msg.source && gone_[i].empty())
        gone_[i] = describe(msg.reason, self_->system());
  }

  /// Numbers this group's rounds from `first` on (two groups asking the same peers must not reuse
  /// each other's numbers).
  void start_rounds_at(std::uint64_t first) { rounds_ = first; }

  /// Why peer i went down, or empty while it is up.
  const std::string& down_reason(std::size_t i) const { return gone_[i]; }

  /// Adds a peer at the end (index size() - 1) and monitors it.
  void add(Handle peer, std::string name) {
    peers_.push_back(std::move(peer));
    names_.push_back(std::move(name));
    gone_.emplace_back();
    self_->monitor(peers_.back());
  }

  /// Puts a fresh peer in place of peer i (after it went down) and monitors it.
  void replace(std::size_t i, Handle fresh) {
    peers_[i] = std::move(fresh);
    gone_[i].clear();
    self_->monitor(peers_[i]);
  }

  /// One round over the peers `which`: calls `send(i, round)` for each, then `on_reply(i,
  /// values...)` for the first reply `(round, values...)` of each peer, where values are of the
  /// types in `reply<...>`. A late reply (an earlier round, a replaced peer) is dropped. Fails,
  /// naming the peer, on an error reply, on a peer going down (unless `down` says otherwise), and
  /// when not every peer answered within `timeout`.
  template <class... Ts, class Send, class OnReply>
  result<void> round(reply<Ts...> shape, const std::vector<std::size_t>& which,
                     std::chrono::milliseconds timeout, const std::string& what, Send send,
                     OnReply on_reply, const on_down& down = {}) {
    return round_in_parts(shape, which, 1, timeout, what, std::move(send), std::move(on_reply),
                          down);
  }

  /// `round` where `send(i, round)` sends peer i `parts` requests and each answers them with
  /// `parts` replies (slices of one request): `on_reply` hears each, and must refuse a repeat
  /// (it is counted). With several parts a peer that goes down cannot be asked again (`resend`
  /// fails the round). Errors carry no round number: a peer that failed a round in parts must not
  /// be asked again (a failed tree round builds a new tree, with new roots).
  template <class... Ts, class Send, class OnReply>
  result<void> round_in_parts(reply<Ts...>, const std::vector<std::size_t>& which,
                              std::size_t parts, std::chrono::milliseconds timeout,
                              const std::string& what, Send send, OnReply on_reply,
                              const on_down& down = {}) {
    using clock = std::chrono::steady_clock;
    const auto number = ++rounds_;
    std::vector<bool> asked(size(), false);
    std::vector<std::size_t> due(size(), 0);  // replies still due, per peer
    for (const auto i : which) {
      asked[i] = true;
      due[i] = parts;
    }
    auto remaining = which.size();
    std::string problem;
    auto settle_down = [&](std::size_t i) {
      auto action = down ? down(i) : result<down_action>{down_action::fail};
      if (!action) {
        problem = name(i) + ": went down (" + gone_[i] + "); " + action.error().message();
      } else if (*action == down_action::answered) {
        due[i] = 0;
        --remaining;
      } else if (*action == down_action::resend && parts == 1) {
        due[i] = parts;
        send(i, number);
      } else {
        problem = name(i) + " went down (" + gone_[i] + ")";
      }
    };
    for (const auto i : which) {
      if (!problem.empty())
        break;
      if (gone_[i].empty())
        send(i, number);
      else
        settle_down(i);
    }
    auto index_of = [&](const caf::actor_addr& who) -> std::size_t {
      for (const auto i : which)
        if (caf::actor_cast<caf::actor_addr>(peers_[i]) == who)
          return i;
      return size();
    };
    const auto deadline = clock::now() + timeout;
    while (remaining > 0 && problem.empty()) {
      const auto left = deadline - clock::now();
      if (left <= clock::duration::zero()) {
        std::string late;
        for (const auto i : which)
          if (due[i] > 0)
            late += (late.empty() ? "" : ", ") + name(i);
        problem = late + ": no reply to " + what + " within " + std::to_string(timeout.count())
                  + " ms";
        break;
      }
      self_->receive(
        [&](std::uint64_t r, Ts&... values) {
          const auto i = index_of(caf::actor_cast<caf::actor_addr>(self_->current_sender()));
          if (r != number || i == size() || due[i] == 0)
            return;  // late: an earlier round's reply, or a replaced peer's
          if (--due[i] == 0)
            --remaining;
          if (auto ok = on_reply(i, std::move(values)...); !ok)
            problem = name(i) + ": " + ok.error().message();
        },
        [&](caf::error& err) {
          const auto i = index_of(caf::actor_cast<caf::actor_addr>(self_->current_sender()));
          if (i != size() && due[i] > 0)
            problem = name(i) + ": " + what + ": " + describe(err, self_->system());
        },
        [&](caf::down_msg& msg) {
          bool ours = false;
          for (std::size_t i = 0; i < size(); ++i) {
            if (caf::actor_cast<caf::actor_addr>(peers_[i]) != msg.source)
              continue;
            ours = true;
            if (!gone_[i].empty())
              continue;
            gone_[i] = describe(msg.reason, self_->system());
            if (asked[i] && due[i] > 0 && problem.empty())
              settle_down(i);
          }
          if (!ours && others_down_)
            others_down_(msg);
        },
        caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
          return caf::message{};  // replies of another shape, stale exits: not part of this round
        },
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [] {});
    }
    if (!problem.empty())
      return fail_invalid(problem);
    return {};
  }

  /// One round over peers [first, last).
  template <class... Ts, class Send, class OnReply>
  result<void> round(reply<Ts...> shape, std::size_t first, std::size_t last,
                     std::chrono::milliseconds timeout, const std::string& what, Send send,
                     OnReply on_reply, const on_down& down = {}) {
    std::vector<std::size_t> which;
    for (auto i = first; i < last; ++i)
      which.push_back(i);
    return round(shape, which, timeout, what, std::move(send), std::move(on_reply), down);
  }

  /// A round over every peer.
  template <class... Ts, class Send, class OnReply>
  result<void> round(reply<Ts...> shape, std::chrono::milliseconds timeout, const std::string& what,
                     Send send, OnReply on_reply, const on_down& down = {}) {
    return round(shape, 0, size(), timeout, what, std::move(send), std::move(on_reply), down);
  }

private:
  caf::blocking_actor* self_;
  std::vector<Handle> peers_;
  std::vector<std::string> names_;
  std::vector<std::string> gone_;
  std::uint64_t rounds_ = 0;
  std::function<void(const caf::down_msg&)> others_down_;
};

} // namespace shardopt::actors
