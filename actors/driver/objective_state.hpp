#pragma once

// Internal to the sharded objective's source: its state over the peers and how a round gathers
// their replies (through the reduction tree, then directly). It keeps three parts of its own: a
// round's totals (round_totals.hpp), the buffers its requests carry (send_buffers.hpp) and the
// evaluations that products and lines are taken at (line_state.hpp). Not part of the actors
// library's interface.

#include "actors/wire/fan_out.hpp"
#include "actors/driver/line_state.hpp"
#include "actors/driver/peers.hpp"
#include "actors/driver/request_spec.hpp"
#include "actors/driver/round_totals.hpp"
#include "actors/driver/send_buffers.hpp"
#include "actors/driver/sharded_objective.hpp"
#include "actors/wire/tree_slices.hpp"
#include "model/block_bounds.hpp"
#include "base/spare_words.hpp"
#include "base/parallel.hpp"
#include "optimizer/vector_pool.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::actors {

struct sharded_objective::impl {
  impl(runtime& rt, model::model_shape model_shape, double l2, std::vector<shard_actor> handles,
       std::vector<peer_share> peer_shares, model::data_bounds data, access_token run_token,
       std::chrono::milliseconds limit, shard_factory make_peer)
    : system(rt.system()), self(system), shape(std::move(model_shape)), lambda(l2),
      peers(self.ptr(), std::move(handles), peer_names(peer_shares)),
      shares(std::move(peer_shares)), blocks(data.blocks), plan(shape, std::move(data), usable_cpus()), token(run_token), timeout(limit),
      replace(std::move(make_peer)) {
    for (const auto& share : shares)
      rows += share.rows;
    totals.blocks = blocks;
    shardopt::hold_spare_words();  // answers' buffers kept between passes (base/spare_words.hpp)
  }

  ~impl() {
    for (const auto& peer : peers.handles())
      self->send_exit(peer, caf::exit_reason::user_shutdown);
    shardopt::let_go_spare_words();  // freed unless a node or another run here still holds them
  }

  /// Each peer's name, "shard 2 of 4" unless its share names it.
  static std::vector<std::string> peer_names(const std::vector<peer_share>& shares) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < shares.size(); ++i)
      names.push_back(!shares[i].name.empty() ? shares[i].name
                                              : "shard " + std::to_string(i) + " of "
                                                  + std::to_string(shares.size()));
    return names;
  }

  /// A peer that went down mid-round: recreated through the factory and asked again.
  result<down_action> recreate(std::size_t i) {
    if (!replace)
      return down_action::fail;
    auto fresh = replace(i);
    if (!fresh)
      return fresh.error().with_context("recreating it failed");
    peers.replace(i, std::move(*fresh));
    ++recreated;
    tree_stale = true;
    line.mark_fresh(i);
    return down_action::resend;
  }

  /// At an evaluation boundary: puts the peers the boundary hook hands over in place. They have
  /// served no evaluation (products bring the theta), and the tree is built again.
  void cross_boundary() {
    if (!boundary)
      return;
    for (auto& [i, fresh] : boundary()) {
      if (i >= peers.size())
        continue;
      peers.replace(i, std::move(fresh));
      tree_stale = true;
      line.mark_fresh(i);
    }
  }

  /// The driver's threads for work over the dimension (the calling thread alone without any).
  optimizer::vector_pool& pool() {
    static thread_local optimizer::vector_pool alone{1};
    return threads ? *threads : alone;
  }

  /// Checks peer i's reply and adds it to the round's totals: its example count, its blocks (in
  /// range, each once in the round, as many as its share), finite values per block when
  /// `values`, and well-formed finite exact sums on the round's grid.
  result<void> take(std::size_t i, block_sums sums, bool values) {
    return totals.take_share(shares[i], std::move(sums), values, pool());
  }

  /// The round's total into `out` (round_totals::total_to) for this objective's model.
  double total_to(Eigen::Ref<Eigen::VectorXd> out, Eigen::Index first, const Eigen::VectorXd* weights) {
    return totals.total_to(out, first, weights, shape, lambda, rows, pool());
  }

  /// One round of a request over every peer: through the reduction tree when there is one (built
  /// again first after a loss), then directly to each peer whose blocks no tree reply covered (a
  /// lost inner node's subtree, or everything when the root failed). `spec_of(round, under)` says
  /// what to ask of a peer or root that answers for the peers `under`. The totals are the same
  /// bits whichever way each block came.
  template <class SpecOf>
  result<void> gather(const std::string& what, bool values, SpecOf spec_of) {
    const round_clock clock{round_seconds};
    std::vector<char> done(peers.size(), 0);
    fell_back = false;
    if (build_tree && tree_stale) {
      tree_stale = false;
      peers.pass_other_downs_to({});
      tree.reset();
      roots.reset();
      auto built = build_tree(peers.handles());
      if (built && !built->roots.empty()) {
        tree = std::move(*built);
        std::vector<std::string> names;
        for (std::size_t r = 0; r < tree->roots.size(); ++r)
          names.push_back("tree root " + std::to_string(r));
        roots.emplace(self.ptr(), tree->roots, std::move(names));
        // Never a peer's round number, nor an earlier tree's (a late request of an old tree must not
        // pass for this one's at a shard that keeps curvature by round number).
        roots->start_rounds_at((std::uint64_t{1} << 62) + (++tree_builds << 32));
        roots->pass_other_downs_to([this](const caf::down_msg& msg) { peers.note_down(msg); });
        peers.pass_other_downs_to([this](const caf::down_msg& msg) { roots->note_down(msg); });
      }
    }
    if (tree) {
      auto via_tree = ask_tree(what, values, spec_of, done);
      if (!via_tree) {  // nothing of it is kept: every peer is asked directly
        totals.begin(totals.grid, totals.values_per_block, pool());
        std::fill(done.begin(), done.end(), 0);
      }
    }
    std::vector<std::size_t> direct;
    for (std::size_t i = 0; i < peers.size(); ++i)
      if (!done[i])
        direct.push_back(i);
    if (tree && !direct.empty()) {
      tree_stale = true;  // a new tree, over the live nodes, from the next round on
      fell_back = true;
    }
    if (direct.empty())
      return {};
    return peers.round(
      reply<block_sums>{}, direct, timeout, what,
      [&](std::size_t i, std::uint64_t round) { send_whole(peers[i], round, spec_of(round, {i})); },
      [&](std::size_t i, block_sums sums) { return take(i, std::move(sums), values); },
      [this](std::size_t i) { return recreate(i); });
  }

  /// Sends `spec` whole to a peer.
  void send_whole(const shard_actor& to, std::uint64_t round, const request_spec& spec) {
    const auto& grid = spec.grid_or_none();
    switch (spec.kind) {
      case tree_kind::hessvec:
        return self->send(to, hessvec_atom::value, token, round, spec.at, grid, spec.theta, spec.v);
      case tree_kind::quality:
        return self->send(to, quality_atom::value, token, round, spec.theta);
      case tree_kind::line:
        return self->send(to, line_atom::value, token, round, spec.at, spec.to, spec.v, spec.theta, spec.theta_to);
      default:
        return self->send(to, eval_atom::value, token, round, grid, spec.theta);
    }
  }

  /// One round through the reduction tree: each root gets the request in slices and answers them
  /// one by one (so the root forwards the first slice while the rest is still on the wire); the
  /// slices of a root are put together and taken as its subtree's reply, marking its peers `done`.
  /// A root that went down before its last slice counts as answered for nothing.
  template <class SpecOf>
  result<void> ask_tree(const std::string& what, bool values, SpecOf& spec_of,
                        std::vector<char>& done) {
    const auto dimension = static_cast<std::uint64_t>(shape.dimension());
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      max_tree_slices, std::max<std::uint64_t>(1, (dimension + tree_slice_entries - 1)
                                                    / tree_slice_entries)));
    std::vector<std::vector<block_sums>> parts(roots->size(), std::vector<block_sums>(count));
    std::vector<std::vector<char>> arrived(roots->size(), std::vector<char>(count, 0));
    std::vector<tree_slice> shapes(roots->size());
    std::vector<std::size_t> every(roots->size());
    for (std::size_t r = 0; r < every.size(); ++r)
      every[r] = r;
    return roots->round_in_parts(
      reply<std::uint32_t, block_sums>{}, every, count, timeout, what + " (in slices)",
      [&](std::size_t r, std::uint64_t round) {
        const auto spec = spec_of(round, tree->under[r]);
        const auto& grid = spec.grid_or_none();
        auto slice = tree_slice{static_cast<std::uint8_t>(spec.kind), spec.at, 0, count,
                                spec.theta.size(), spec.v.size(), grid.entries, grid.base};
        shapes[r] = slice;
        const auto& to = (*roots)[r];
        for (slice.index = 0; slice.index < count; ++slice.index)
          self->send(to, part_atom::value, token, round, slice, grid_slice(grid, slice),
                     vector_slice(spec.theta, slice.theta_size, slice),
                     vector_slice(spec.v, slice.v_size, slice));
      },
      [&](std::size_t r, std::uint32_t index, block_sums sums) -> result<void> {
        if (index >= count || arrived[r][index])
          return fail_runtime("answered slice " + std::to_string(index) + " of "
                              + std::to_string(count) + " twice, or one it was not sent");
        const auto [first, last] = slice_bounds(shapes[r].grid_size, index, count);
        if (sums.words.size() != last - first)
          return fail_runtime("answered slice " + std::to_string(index) + " with "
                              + std::to_string(sums.words.size()) + " sums, not "
                              + std::to_string(last - first));
        arrived[r][index] = 1;
        parts[r][index] = std::move(sums);
        if (std::find(arrived[r].begin(), arrived[r].end(), 0) != arrived[r].end())
          return {};
        auto whole = put_together(parts[r], shapes[r].grid_size);
        if (!whole)
          return fail_runtime(describe(whole.error(), system));
        if (auto ok = totals.runs_in_range(whole->runs); !ok)
          return ok;
        auto covered = covered_peers(shares, tree->under[r], whole->runs);
        if (!covered)
          return covered.error();
        const auto share = joint_share(shares, *covered);
        if (auto ok = totals.take_share(share, std::move(*whole), values, pool()); !ok)
          return ok;
        for (const auto i : *covered)
          done[i] = 1;
        return {};
      },
      [](std::size_t) -> result<down_action> { return down_action::answered; });
  }

  /// Runs rounds of `ask(round, grid, under)` (a request_spec for a peer or root answering for the
  /// peers `under`) on grid `g` until every block sum fits it: the grids come from bounds, so a
  /// second round means a bound failed, and is on grids coarser by what the largest block sum
  /// needs (a function of the data, like the bounds).
  template <class Ask>
  result<void> exact_round(const std::string& what, model::grid g, bool values, Ask ask) {
    for (int attempt = 0;; ++attempt) {
      const auto grid = exact_grid::of(g);
      if (auto ok = check_grid(grid); !ok)
        return ok.error();
      totals.begin(g, 1, pool());
      auto done = gather(what, values, [&](std::uint64_t round, const std::vector<std::size_t>& under) {
        return ask(round, grid, under);
      });
      if (!done)
        return done.error();
      if (auto all = totals.covered(); !all)
        return all;
      totals.settle(pool());
      if (model::fits_grid(totals.total.max_units(), blocks))
        return {};
      if (attempt > 0)
        return fail_runtime(what + ": block sums overflow their grids");
      g = model::grid_plan::coarser(std::move(g), model::grid_shift(totals.total.max_units(), blocks));
    }
  }

  caf::actor_system& system;
  caf::scoped_actor self;
  model::model_shape shape;
  double lambda;
  peer_group<shard_actor> peers;
  std::vector<peer_share> shares;
  std::int64_t blocks;     // the data's (its bounds', which the plan keeps)
  model::grid_plan plan;
  optimizer::vector_pool* threads = nullptr;
  std::int64_t rows = 0;
  access_token token;
  std::chrono::milliseconds timeout;
  shard_factory replace;
  std::size_t recreated = 0;
  double round_seconds = 0;  // waiting for the peers (see round_clock)
  // The reduction tree over the peers, if any: built by `build_tree`, again after a loss.
  tree_builder build_tree;
  boundary_hook boundary;
  std::optional<peer_tree> tree;
  std::optional<peer_group<tree_actor>> roots;
  bool tree_stale = true;
  std::uint64_t tree_builds = 0;
  bool fell_back = false;  // the last round asked some peers directly
  round_totals totals;     // the round's
  send_buffers buffers;    // for the vectors requests carry
  line_state line;         // the last two evaluations
};

} // namespace shardopt::actors