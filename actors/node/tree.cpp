// A node's part of a reduction tree, the half that waits (gatherer.hpp): it takes a request slice
// by slice from its parent (or, at a root, from the driver), forwards each slice to the children's
// trees at once, asks this node's peers the whole request once every slice has arrived, and
// answers slice by slice.

#include "actors/node/gatherer.hpp"
#include "actors/node/group.hpp"
#include "actors/wire/guard.hpp"
#include "actors/wire/tree_slices.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>

namespace shardopt::actors {
namespace {

using request_ptr = std::shared_ptr<request_state>;

/// The gatherer of one node's part of a tree. Guarded: the children learn its address (their
/// replies come to it), so a reply is taken only from the member asked, and no peer can end it.
class tree_gatherer : public guarded<gatherer_actor::base> {
public:
  tree_gatherer(caf::actor_config& config, std::vector<shard_actor> own,
                std::vector<tree_actor> children, group_actor front)
    : guarded<gatherer_actor::base>(config), own_(std::move(own)), children_(std::move(children)),
      front_(std::move(front)), own_lost_(own_.size(), 0), child_lost_(children_.size(), 0) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    for (const auto& peer : own_)
      monitor(peer);
    for (const auto& child : children_)
      monitor(child);
    set_down_handler([this](caf::down_msg& down) { lost(down.source); });
    return {
      // Whole requests never come: the front refuses them (a tree takes slices).
      [](eval_atom, const access_token&, const access_token&, std::uint64_t, const exact_grid&,
         const dense_vector&) {},
      [](hessvec_atom, const access_token&, const access_token&, std::uint64_t, std::uint64_t,
         const exact_grid&, const dense_vector&, const dense_vector&) {},
      [](quality_atom, const access_token&, const access_token&, std::uint64_t,
         const dense_vector&) {},
      [](line_atom, const access_token&, const access_token&, std::uint64_t, std::uint64_t,
         std::uint64_t, const dense_vector&, const dense_vector&, const dense_vector&) {},
      [this](part_atom, const access_token& ticket, const access_token& token, std::uint64_t round,
             const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
             const dense_vector& v) {
        if (from_front())
          serve(ticket, [&] { take_slice(ticket, token, round, slice, grid, theta, v); });
      },
    };
  }

private:
  static constexpr std::size_t max_open = 8;     // requests in flight; older ones are failed
  static constexpr std::size_t max_closed = 64;  // rounds remembered after they ended

  void on_exit() override {
    for (const auto& entry : requests_)
      entry.second->closed = true;
    requests_.clear();
    own_.clear();
    children_.clear();
    front_ = group_actor{};
  }

  /// Runs a request's handling, answering an exception (out of memory) as an error: no request
  /// ends the tree.
  template <class F>
  void serve(const access_token& ticket, F handle) {
    auto err = shielded([&]() -> caf::error {
      handle();
      return {};
    });
    if (err)
      send(front_, gathered_atom::value, ticket, std::move(err));
  }

  bool from_front() {
    return current_sender() == caf::actor_cast<caf::strong_actor_ptr>(front_);
  }

  /// A slice from the parent (or the driver): forwarded to the children at once; the own peers are
  /// asked when every slice has arrived.
  void take_slice(const access_token& ticket, const access_token& token, std::uint64_t round,
                  const tree_slice& slice, const exact_grid& grid, const dense_vector& theta,
                  const dense_vector& v) {
    const auto refuse = [&](const std::string& why) {
      send(front_, gathered_atom::value, ticket,
           refused("invalid slice: slice " + std::to_string(slice.index) + " of round "
                   + std::to_string(round) + " " + why));
    };
    if (std::find(closed_.begin(), closed_.end(), round) != closed_.end())
      return refuse("comes after its request was answered or dropped");
    request_ptr r = requests_.count(round) ? requests_.at(round) : nullptr;
    if (!r) {
      r = open(round, token, slice);
      r->tickets.resize(slice.count);
      r->theta_parts.resize(slice.count);
      r->v_parts.resize(slice.count);
      r->grid_parts.resize(slice.count);
    }
    if (r->token != token || !same_shape(r->shape, slice) || r->slices[slice.index].sent)
      return refuse("repeats or does not fit its other slices");
    r->tickets[slice.index] = ticket;
    r->theta_parts[slice.index] = theta;
    r->v_parts[slice.index] = v;
    r->grid_parts[slice.index] = grid;
    ask_children(r, slice, grid, theta, v);
    if (++r->arrivals == slice.count) {
      const auto whole_grid = join_grid(r->grid_parts, slice);
      const auto whole_theta = join_vectors(r->theta_parts, slice.theta_size);
      const auto whole_v = join_vectors(r->v_parts, slice.v_size);
      r->grid_parts.clear();
      r->theta_parts.clear();
      r->v_parts.clear();
      ask_own(r, whole_grid, whole_theta, whole_v);
    }
  }

  /// A fresh request's state, evicting the oldest beyond max_open; null if the round is open.
  request_ptr open(std::uint64_t round, const access_token& token, const tree_slice& shape) {
    if (requests_.count(round))
      return nullptr;
    while (requests_.size() >= max_open) {
      auto oldest = std::min_element(requests_.begin(), requests_.end(), [](auto& a, auto& b) {
        return a.second->opened < b.second->opened;
      });
      fail(oldest->second, make_error(errc::shard_failed, "dropped for newer requests"));
    }
    auto r = std::make_shared<request_state>();
    r->round = round;
    r->opened = opened_++;
    r->token = token;
    r->shape = shape;
    r->slices.resize(shape.count);
    requests_.emplace(round, r);
    return r;
  }

  void ask_children(const request_ptr& r, const tree_slice& slice, const exact_grid& grid,
                    const dense_vector& theta, const dense_vector& v) {
    auto& state = r->slices[slice.index];
    state.sent = true;
    state.settled.assign(children_.size(), 0);
    state.left = children_.size();
    for (std::size_t k = 0; k < children_.size(); ++k) {
      if (child_lost_[k]) {
        leave_out_child(r, slice.index, k);
        continue;
      }
      const auto c = slice.index;
      request(children_[k], caf::infinite, part_atom::value, r->token, r->round, slice, grid,
              theta, v)
        .then(
          [this, r, c, k](std::uint64_t, std::uint32_t index, block_sums& part) {
            auto& s = r->slices[c];
            if (r->closed || s.done || s.settled[k])
              return;
            // CAF matches a response by its id alone, and this gatherer is known to other nodes:
            // a reply from anyone but the child asked is a forgery, and the child is left out;
            // so is one of another slice or length, before it can spoil its siblings' sum.
            const auto [first, last] = slice_bounds(r->shape.grid_size, c, r->shape.count);
            if (current_sender() != caf::actor_cast<caf::strong_actor_ptr>(children_[k])
                || index != c || part.length != last - first || !sums_fit(part))
              return leave_out_child(r, c, k);
            if (s.children && !merge(*s.children, std::move(part)))
              return leave_out_child(r, c, k);
            if (!s.children)
              s.children = std::move(part);
            s.settled[k] = 1;
            --s.left;
            try_finish(r, c);
          },
          [this, r, c, k](caf::error&) { leave_out_child(r, c, k); });
    }
    try_finish(r, slice.index);
  }

  void ask_own(const request_ptr& r, const exact_grid& grid, const dense_vector& theta,
               const dense_vector& v) {
    r->own_asked = true;
    r->own_settled.assign(own_.size(), 0);
    r->own_left = own_.size();
    for (std::size_t m = 0; m < own_.size(); ++m) {
      if (own_lost_[m]) {
        leave_out_own(r, m);
        continue;
      }
      auto asked = [&] {
        switch (static_cast<tree_kind>(r->shape.kind)) {
          case tree_kind::hessvec:
            return request(own_[m], caf::infinite, hessvec_atom::value, r->token, r->round,
                           r->shape.at, grid, theta, v);
          case tree_kind::quality:
            return request(own_[m], caf::infinite, quality_atom::value, r->token, r->round, theta);
          default:
            return request(own_[m], caf::infinite, eval_atom::value, r->token, r->round, grid,
                           theta);
        }
      }();
      asked.then(
        [this, r, m](std::uint64_t, block_sums& part) {
          if (r->closed || r->own_settled[m])
            return;
          if (current_sender() != caf::actor_cast<caf::strong_actor_ptr>(own_[m]))
            return leave_out_own(r, m);
          if (r->own && !merge(*r->own, std::move(part)))
            return leave_out_own(r, m);
          if (!r->own)
            r->own = std::move(part);
          r->own_settled[m] = 1;
          if (--r->own_left == 0)
            finish_all(r);
        },
        [this, r, m](caf::error&) { leave_out_own(r, m); });
    }
    finish_all(r);
  }

  void leave_out_child(const request_ptr& r, std::uint32_t c, std::size_t k) {
    auto& s = r->slices[c];
    if (r->closed || s.done || s.settled[k])
      return;
    s.settled[k] = 1;
    --s.left;
    try_finish(r, c);
  }

  void leave_out_own(const request_ptr& r, std::size_t m) {
    if (r->closed || !r->own_asked || r->own_settled[m])
      return;
    r->own_settled[m] = 1;
    if (--r->own_left == 0)
      finish_all(r);
  }

  void finish_all(const request_ptr& r) {
    for (std::uint32_t c = 0; c < r->shape.count && !r->closed; ++c)
      try_finish(r, c);
  }

  /// Answers slice c once the own peers and every child settled it: the own sums' share of it
  /// plus the children's.
  void try_finish(const request_ptr& r, std::uint32_t c) {
    auto& s = r->slices[c];
    if (r->closed || s.done || !s.sent || !r->own_asked || r->own_left > 0 || s.left > 0)
      return;
    const auto [first, last] = slice_bounds(r->shape.grid_size, c, r->shape.count);
    std::optional<block_sums> out;
    if (r->own) {
      if (r->own->length != r->shape.grid_size)
        return fail(r, make_error(errc::shard_failed, "this node's peers answered sums of "
                                                        + std::to_string(r->own->length)
                                                        + " entries, not "
                                                        + std::to_string(r->shape.grid_size)));
      out = share_of(*r->own, first, last);
    }
    if (s.children) {
      if (!out)
        out = std::move(s.children);
      else if (!merge(*out, std::move(*s.children)))
        return fail(r, make_error(errc::shard_failed, "the children's sums do not fit"));
    }
    if (!out)
      return fail(r, make_error(errc::shard_failed, "no member of this node's tree answered"));
    if (out->length != last - first)
      return fail(r, make_error(errc::shard_failed, "a child answered slice " + std::to_string(c)
                                                      + " with sums of the wrong length"));
    s.done = true;
    send(front_, gathered_atom::value, r->tickets[c], std::move(*out));
    if (++r->finished == r->shape.count)
      close(r);
  }

  /// Fails what of the request is still unanswered.
  void fail(const request_ptr& r, const caf::error& err) {
    if (r->closed)
      return;
    for (std::uint32_t c = 0; c < r->shape.count; ++c)
      if (r->slices[c].sent && !r->slices[c].done)
        send(front_, gathered_atom::value, r->tickets[c], err);
    close(r);
  }

  /// Ends a request: its buffers freed (late replies still hold the state), its round remembered
  /// so that a late slice of it is refused rather than opening it again.
  void close(const request_ptr& r) {
    r->closed = true;
    r->theta_parts.clear();
    r->v_parts.clear();
    r->grid_parts.clear();
    r->own.reset();
    for (auto& slice : r->slices)
      slice.children.reset();
    requests_.erase(r->round);
    closed_.push_back(r->round);
    if (closed_.size() > max_closed)
      closed_.pop_front();
  }

  /// A member went down: it is left out of every open request, and of every later one.
  void lost(const caf::actor_addr& source) {
    std::vector<request_ptr> open_now;
    for (const auto& entry : requests_)
      open_now.push_back(entry.second);
    for (std::size_t k = 0; k < children_.size(); ++k)
      if (caf::actor_cast<caf::actor_addr>(children_[k]) == source) {
        child_lost_[k] = 1;
        for (const auto& r : open_now)
          for (std::uint32_t c = 0; c < r->shape.count; ++c)
            if (r->slices[c].sent)
              leave_out_child(r, c, k);
      }
    for (std::size_t m = 0; m < own_.size(); ++m)
      if (caf::actor_cast<caf::actor_addr>(own_[m]) == source) {
        own_lost_[m] = 1;
        for (const auto& r : open_now)
          leave_out_own(r, m);
      }
  }

  std::vector<shard_actor> own_;
  std::vector<tree_actor> children_;
  group_actor front_;
  std::vector<char> own_lost_, child_lost_;  // members that went down
  std::map<std::uint64_t, request_ptr> requests_;
  std::deque<std::uint64_t> closed_;
  std::uint64_t opened_ = 0;
};

} // namespace

gatherer_actor spawn_tree_gatherer(caf::local_actor* parent, std::vector<shard_actor> own,
                                   std::vector<tree_actor> children, group_actor front) {
  return parent->spawn<tree_gatherer>(std::move(own), std::move(children), std::move(front));
}

} // namespace shardopt::actors
