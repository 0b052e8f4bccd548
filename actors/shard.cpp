#include "actors/shard.hpp"

#include "actors/guard.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

namespace shardopt::actors {

namespace {

std::string dimension_message(std::size_t got, std::int64_t expected) {
  return "theta has " + std::to_string(got) + " entries, the shard's model expects "
         + std::to_string(expected);
}

/// An exact sum on a request's grids, or the error to answer with.
caf::expected<model::exact_sum> sum_on(const exact_grid& grid, std::int64_t dimension) {
  if (static_cast<std::int64_t>(grid.below.size()) != dimension)
    return make_error(errc::dimension_mismatch, "the grid has " + std::to_string(grid.below.size())
                                                  + " entries, the shard's model expects "
                                                  + std::to_string(dimension));
  auto exponents = decode_grid(grid);
  if (!exponents)
    return make_error(errc::bad_request, exponents.error().message());
  return model::exact_sum{std::move(*exponents)};
}

using sums_result = caf::result<std::uint64_t, block_sums>;

/// A shard: consecutive canonical blocks of a shared dataset, served to the holder of one token.
/// Guarded (guard.hpp): a peer's exit message cannot end it; its node or its driver's objective
/// (or its group) ends it.
class shard_impl : public guarded<shard_actor::base> {
public:
  shard_impl(caf::actor_config& config, model::model_shape shape,
             std::shared_ptr<const model::dataset> data, model::row_range rows,
             block_layout layout, access_token token)
    : guarded<shard_actor::base>(config), shape_(std::move(shape)), data_(std::move(data)),
      rows_(rows), blocks_(model::blocks_of(rows, layout.block_rows)), block_rows_(layout.block_rows),
      first_(layout.first_block),
      token_(token) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    const auto dimension = shape_.dimension();
    return {
      [this, dimension](eval_atom, const access_token& token, std::uint64_t round,
                        const exact_grid& grid, const dense_vector& theta) -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        if (static_cast<std::int64_t>(theta.size()) != dimension)
          return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
        auto grad = sum_on(grid, dimension);
        if (!grad)
          return std::move(grad.error());
        const bool keep = keep_curvature_;
        block_sums out = sums();
        model::block_loss_grad(shape_, *data_, blocks_, block_rows_, theta.map(), out.values, *grad,
                               keep ? &curvature_ : nullptr);
        cached_ = keep;
        cached_round_ = round;
        return {round, finish(std::move(out), *grad)};
      },
      [this, dimension](hessvec_atom, const access_token& token, std::uint64_t round,
                        std::uint64_t at, const exact_grid& grid, const dense_vector& theta,
                        const dense_vector& v) -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        if (!model::has_hessian(shape_))
          return make_error(errc::bad_request, "Hessian-vector products are defined for the linear "
                                               "models, not " + model::describe(shape_));
        if (static_cast<std::int64_t>(v.size()) != dimension)
          return make_error(errc::dimension_mismatch, "the product's v has " + std::to_string(v.size())
                                                        + " entries, the shard's model expects "
                                                        + std::to_string(dimension));
        auto hv = sum_on(grid, dimension);
        if (!hv)
          return std::move(hv.error());
        // From the first product on, evaluations keep the curvature (L-BFGS never pays for it).
        keep_curvature_ = true;
        if (theta.size() != 0) {
          if (static_cast<std::int64_t>(theta.size()) != dimension)
            return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
          curvature_ = model::block_curvature(shape_, *data_, blocks_, theta.map());
          cached_ = true;
          cached_round_ = at;
        }
        if (!cached_ || cached_round_ != at)
          return make_error(errc::bad_request,
                            "a product at the evaluation of round " + std::to_string(at)
                              + ", but this shard's last evaluation "
                              + (cached_ ? "was round " + std::to_string(cached_round_) : "kept nothing"));
        model::block_hessian_vector(shape_, *data_, blocks_, block_rows_, curvature_, v.map(), *hv);
        return {round, finish(sums(), *hv)};
      },
      [this, dimension](quality_atom, const access_token& token, std::uint64_t round,
                        const dense_vector& theta) -> sums_result {
        if (token != token_)
          return refused("this shard belongs to another driver");
        if (static_cast<std::int64_t>(theta.size()) != dimension)
          return make_error(errc::dimension_mismatch, dimension_message(theta.size(), dimension));
        block_sums out = sums();
        for (const auto& block : blocks_) {
          const auto part = model::quality(shape_, *data_, block, theta.map());
          out.values.push_back(part.squared_error);
          out.correct += part.correct;
        }
        return {round, std::move(out)};
      },
    };
  }

private:
  /// The shard's blocks and count, with no sums yet.
  block_sums sums() const {
    block_sums out;
    out.runs = {first_, static_cast<std::int64_t>(blocks_.size())};
    out.count = rows_.size();
    return out;
  }

  static block_sums finish(block_sums out, model::exact_sum& exact) {
    out.max_units = exact.max_units();
    out.words = exact.take_words();
    return out;
  }

  model::model_shape shape_;
  std::shared_ptr<const model::dataset> data_;
  model::row_range rows_;
  std::vector<model::row_range> blocks_;
  std::int64_t block_rows_;
  std::int64_t first_;
  access_token token_;
  std::vector<model::curvature> curvature_;  // of the last evaluation, per block, for products
  bool keep_curvature_ = false;              // set by the first product request
  bool cached_ = false;
  std::uint64_t cached_round_ = 0;           // the round of that evaluation
};

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
                                       std::size_t window, group_actor group) {
  for (const auto& member : members)
    self->monitor(member);
  self->set_down_handler([self](caf::down_msg& down) { self->quit(down.reason); });
  window = std::clamp<std::size_t>(window, 1, std::max<std::size_t>(members.size(), 1));
  // Asks the members `window` at a time, the next as each one answers: at most `window` of them
  // hold their dimension-sized buffers at once.
  auto gather = [self, members, window, group](const access_token& ticket, auto ask) {
    struct pending {
      std::size_t next = 0;
      std::size_t left = 0;
      std::optional<block_sums> total;
      bool done = false;
      std::function<void()> ask_next;
    };
    auto state = std::make_shared<pending>();
    state->left = members.size();
    std::weak_ptr<pending> weak = state;  // the handlers hold the state; it must not hold itself
    state->ask_next = [self, members, group, ticket, ask = std::move(ask), weak] {
      auto current = weak.lock();
      if (!current || current->done || current->next == members.size())
        return;
      ask(members[current->next++]).then(
        [self, group, ticket, current](std::uint64_t, block_sums& part) {
          if (current->done)
            return;
          if (!current->total) {
            current->total = std::move(part);
          } else if (auto ok = merge(*current->total, std::move(part)); !ok) {
            current->done = true;
            self->send(group, gathered_atom::value, ticket,
                       make_error(errc::shard_failed, ok.error().message()));
            return;
          }
          if (--current->left == 0) {
            current->done = true;
            self->send(group, gathered_atom::value, ticket, std::move(*current->total));
            return;
          }
          current->ask_next();
        },
        [self, group, ticket, current](caf::error& err) {
          if (current->done)
            return;
          current->done = true;
          if (err == caf::sec::request_receiver_down)  // a member ended with the request queued
            self->quit(std::move(err));
          else
            self->send(group, gathered_atom::value, ticket, std::move(err));
        });
    };
    for (std::size_t i = 0; i < window; ++i)
      state->ask_next();
  };
  return {
    [self, gather](eval_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const exact_grid& grid, const dense_vector& theta) {
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, grid, theta);
      });
    },
    [self, gather](hessvec_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, std::uint64_t at, const exact_grid& grid,
                   const dense_vector& theta, const dense_vector& v) {
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, at, grid, theta, v);
      });
    },
    [self, gather](quality_atom atom, const access_token& ticket, const access_token& token,
                   std::uint64_t round, const dense_vector& theta) {
      gather(ticket, [=](const shard_actor& member) {
        return self->request(member, caf::infinite, atom, token, round, theta);
      });
    },
  };
}

/// A node's group of shards of one driver: answers the shard protocol once for all of them. Each
/// request goes to the gatherer with a fresh random ticket, and the gatherer's sum comes back under
/// it; a message under any other ticket (a peer's forgery) is dropped. Ends when the gatherer ends
/// (a down message naming it cannot be forged: no peer can name it), and ends the gatherer and the
/// members when it ends: the driver sees one peer go down and recreates the group.
class group_impl : public guarded<group_actor::base> {
public:
  group_impl(caf::actor_config& config, std::vector<shard_actor> members, std::size_t window,
             access_token token)
    : guarded<group_actor::base>(config), members_(std::move(members)), window_(window),
      token_(token) {}

  behavior_type make_behavior() override {
    guard_behavior(this);
    gatherer_ = spawn<caf::monitored>(gatherer, members_, window_, caf::actor_cast<group_actor>(this));
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
  gatherer_actor gatherer_;
  std::unordered_map<access_token, waiting, ticket_hash> waiting_;
};

} // namespace

shard_actor spawn_shard(caf::actor_system& system, model::model_shape shape,
                        std::shared_ptr<const model::dataset> data, model::row_range rows,
                        block_layout layout, const access_token& token) {
  return system.spawn<shard_impl, caf::detached>(std::move(shape), std::move(data), rows, layout,
                                                 token);
}

shard_actor spawn_group(caf::actor_system& system, std::vector<shard_actor> members,
                        std::size_t window, const access_token& token) {
  return caf::actor_cast<shard_actor>(system.spawn<group_impl>(std::move(members), window, token));
}

} // namespace shardopt::actors
