#pragma once

// Internal to the sharded objective's source: its state over the peers and how a round gathers
// their replies (through the reduction tree, then directly), checks them and adds them exactly.
// Not part of the actors library's interface.

#include "actors/block_runs.hpp"
#include "actors/fan_out.hpp"
#include "actors/request_spec.hpp"
#include "actors/shard.hpp"
#include "actors/sharded_objective.hpp"
#include "actors/tree_slices.hpp"
#include "model/block_bounds.hpp"
#include "optimizer/vector_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace shardopt::actors {

/// Adds the seconds of its lifetime to a total: the time a round waits for the peers.
class round_clock {
public:
  explicit round_clock(double& total) : total_(total) {}
  ~round_clock() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }
  round_clock(const round_clock&) = delete;
  round_clock& operator=(const round_clock&) = delete;

private:
  double& total_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

struct sharded_objective::impl {
  impl(runtime& rt, model::model_shape model_shape, double l2, std::vector<shard_actor> handles,
       std::vector<peer_share> peer_shares, model::data_bounds data, access_token run_token,
       std::chrono::milliseconds limit, shard_factory make_peer)
    : system(rt.system()), self(system), shape(std::move(model_shape)), lambda(l2),
      peers(self.ptr(), std::move(handles), peer_names(peer_shares)),
      shares(std::move(peer_shares)), bounds(std::move(data)), plan(shape, bounds), token(run_token), timeout(limit),
      replace(std::move(make_peer)) {
    for (const auto& share : shares)
      rows += share.rows;
  }

  ~impl() {
    for (const auto& peer : peers.handles())
      self->send_exit(peer, caf::exit_reason::user_shutdown);
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
    mark_fresh(i);
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
      mark_fresh(i);
    }
  }

  /// Peer i was put in place since the last evaluations: it has served neither, so products and
  /// lines bring their thetas.
  void mark_fresh(std::size_t i) {
    if (i < needs_theta.size())
      needs_theta[i] = true;
    if (i < needs_previous.size())
      needs_previous[i] = true;
  }

  /// Starts a round's totals: exact sums on grid `g` (none for quality and lines), and `per_block`
  /// values per block.
  void begin(const model::grid& g, std::size_t per_block = 1) {
    values_per_block = per_block;
    block_values.assign(static_cast<std::size_t>(bounds.blocks) * per_block, 0.0);
    seen.assign(static_cast<std::size_t>(bounds.blocks), 0);
    total.reset(g, false);
    pool().for_chunks(static_cast<Eigen::Index>(total.size()),
                      [&](Eigen::Index begin, Eigen::Index end) { total.zero(begin, end); });
    correct = 0;
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
    return take_share(shares[i], std::move(sums), values);
  }

  /// `take` for a reply expected to cover `share`.
  result<void> take_share(const peer_share& share, block_sums sums, bool values) {
    if (sums.count != share.rows)
      return fail_runtime("answered for " + std::to_string(sums.count) + " examples, it holds "
                  + std::to_string(share.rows));
    if (sums.length != total.size() || !sums_fit(sums))
      return fail_runtime("returned sums of " + std::to_string(sums.length) + " entries, expected "
                  + std::to_string(total.size()) + (sums_fit(sums) ? "" : " (malformed)"));
    if (sums.runs.size() % 2 != 0)
      return fail_runtime("returned a malformed list of blocks");
    if (!detail::runs_match(sums.runs, share.runs))
      return fail_runtime("answered for blocks that are not its own");
    std::int64_t expected = 0;
    for (const auto& run : share.runs)
      expected += run.second;
    std::size_t next = 0;
    std::int64_t covered = 0;
    for (std::size_t r = 0; r < sums.runs.size(); r += 2) {
      const auto first = sums.runs[r];
      const auto count = sums.runs[r + 1];
      if (first < 0 || count < 0 || count > bounds.blocks || first > bounds.blocks - count)
        return fail_runtime("answered for blocks outside 0-" + std::to_string(bounds.blocks - 1));
      for (auto b = first; b < first + count; ++b) {
        if (seen[static_cast<std::size_t>(b)])
          return fail_runtime("answered for block " + std::to_string(b) + ", which another reply covers");
        seen[static_cast<std::size_t>(b)] = 1;
        if (values) {
          for (std::size_t k = 0; k < values_per_block; ++k) {
            if (next >= sums.values.size())
              return fail_runtime("returned fewer values than blocks");
            if (!std::isfinite(sums.values[next]))
              return fail_runtime("returned a non-finite sum for block " + std::to_string(b));
            block_values[static_cast<std::size_t>(b) * values_per_block + k] = sums.values[next++];
          }
        }
      }
      covered += count;
    }
    if (covered != expected || (values && next != sums.values.size()))
      return fail_runtime("answered for " + std::to_string(covered) + " blocks with "
                  + std::to_string(sums.values.size()) + " values, it holds "
                  + std::to_string(expected) + " blocks");
    // Infinite units are honest (a grid far too fine: the round is redone on coarser ones); NaN
    // means a non-finite term.
    if (std::isnan(sums.max_units) || sums.max_units < 0 || !std::isfinite(sums.correct)
        || sums.correct < 0 || sums.correct > static_cast<double>(sums.count))
      return fail_runtime("returned a non-finite gradient or impossible counts");
    add(sums);
    correct += sums.correct;
    return {};
  }

  /// Adds a reply's exact sums to the round's total, on the driver's threads: dense words chunk by
  /// chunk, sparse ones in chunks of their entries (which touch distinct words).
  void add(const block_sums& sums) {
    const auto* entries = sums.entries ? sums.entries->data() : nullptr;
    pool().for_chunks(static_cast<Eigen::Index>(sums.words.size()), [&](Eigen::Index begin, Eigen::Index end) {
      if (entries)
        total.merge(entries + begin, sums.words.data() + begin, static_cast<std::size_t>(end - begin), 0.0);
      else
        total.merge_range(sums.words.data(), begin, end);
    });
    total.note_units(sums.max_units);
  }

  /// The round's total as a linear model's full vector (model::finish_part), entries [first,
  /// first + out.size()), on the driver's threads; returns the squared norm of `weights`' weights,
  /// added chunk by chunk.
  double total_to(Eigen::Ref<Eigen::VectorXd> out, Eigen::Index first, const Eigen::VectorXd* weights) {
    return pool().sum_chunks(out.size(), [&](Eigen::Index begin, Eigen::Index end) {
      return model::finish_part(shape, total, out, first, begin, end, lambda, rows, weights);
    });
  }

  /// A copy of x in shared storage for this round's requests, in a buffer no message and no kept
  /// evaluation holds any more where there is one (no allocation, and so no page faults, from the
  /// second request of a run on), copied on the driver's threads.
  dense_vector shared_copy(const Eigen::VectorXd& x) {
    // The buffers are made at once, at the first request: the last two evaluations' thetas, a
    // product's vector and one a shard has not yet dropped are in use together, and a set that
    // grew when timing first asked for its fourth would allocate in the middle of a run.
    if (send_buffers.empty()) {
      for (std::size_t i = 0; i < max_send_buffers; ++i)
        send_buffers.push_back(std::make_shared<Eigen::VectorXd>(x.size()));
    }
    std::shared_ptr<Eigen::VectorXd> buffer;
    const auto free_buffer = [&] {
      for (const auto& candidate : send_buffers)
        if (candidate.use_count() == 1 && candidate->size() == x.size())
          return candidate;
      return std::shared_ptr<Eigen::VectorXd>{};
    };
    buffer = free_buffer();
    // A shard drops its request's message just after it replies: with every buffer taken, wait a
    // moment (at most 2 ms) for one rather than allocate a vector of the dimension.
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
         !buffer && send_buffers.size() >= max_send_buffers && std::chrono::steady_clock::now() < until;) {
      std::this_thread::yield();
      buffer = free_buffer();
    }
    if (!buffer) {
      buffer = std::make_shared<Eigen::VectorXd>(x.size());
      if (send_buffers.size() < max_send_buffers)
        send_buffers.push_back(buffer);
    }
    pool().for_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
      buffer->segment(begin, end - begin) = x.segment(begin, end - begin);
    });
    return dense_vector{std::shared_ptr<const Eigen::VectorXd>(std::move(buffer))};
  }

  /// Whether every block was answered for; the first missing one otherwise.
  result<void> covered() const {
    for (std::size_t b = 0; b < seen.size(); ++b)
      if (!seen[b])
        return fail_runtime("no shard answered for block " + std::to_string(b));
    return {};
  }

  /// Value k of every block, added in block order: the same bits whatever the peers.
  double value_sum(std::size_t k = 0) const {
    double sum = 0;
    for (std::size_t b = k; b < block_values.size(); b += values_per_block)
      sum += block_values[b];
    return sum;
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
        begin(total.grids(), values_per_block);
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
        if (auto ok = runs_in_range(whole->runs); !ok)
          return ok;
        auto covered = covered_peers(tree->under[r], whole->runs);
        if (!covered)
          return covered.error();
        if (auto ok = take_share(share_of(*covered), std::move(*whole), values); !ok)
          return ok;
        for (const auto i : *covered)
          done[i] = 1;
        return {};
      },
      [](std::size_t) -> result<down_action> { return down_action::answered; });
  }

  /// Whether a tree's runs name blocks 0..blocks-1 only (before any arithmetic on them).
  result<void> runs_in_range(const std::vector<std::int64_t>& flat) const {
    if (flat.size() % 2 != 0)
      return fail_runtime("returned a malformed list of blocks");
    for (std::size_t r = 0; r < flat.size(); r += 2)
      if (flat[r] < 0 || flat[r + 1] < 0 || flat[r + 1] > bounds.blocks
          || flat[r] > bounds.blocks - flat[r + 1])
        return fail_runtime("answered for blocks outside 0-" + std::to_string(bounds.blocks - 1));
    return {};
  }

  /// The peers among `candidates` whose blocks a tree reply's runs name: each wholly or not at all.
  result<std::vector<std::size_t>> covered_peers(const std::vector<std::size_t>& candidates,
                                                 const std::vector<std::int64_t>& flat) const {
    std::vector<std::size_t> covered;
    for (const auto i : candidates) {
      const auto& first = shares[i].runs;
      if (first.empty())
        continue;
      for (std::size_t r = 0; r + 1 < flat.size(); r += 2)
        if (flat[r] <= first.front().first && first.front().first < flat[r] + flat[r + 1]) {
          covered.push_back(i);
          break;
        }
    }
    if (!detail::runs_match(flat, share_of(covered).runs))
      return fail_runtime("answered for blocks that are not whole peers of its tree");
    return covered;
  }

  /// What the peers `which` hold together.
  peer_share share_of(const std::vector<std::size_t>& which) const {
    peer_share joint;
    for (const auto i : which) {
      joint.runs.insert(joint.runs.end(), shares[i].runs.begin(), shares[i].runs.end());
      joint.rows += shares[i].rows;
    }
    return joint;
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
      begin(g);
      auto done = gather(what, values, [&](std::uint64_t round, const std::vector<std::size_t>& under) {
        return ask(round, grid, under);
      });
      if (!done)
        return done.error();
      if (auto all = covered(); !all)
        return all;
      if (model::fits_grid(total.max_units(), bounds.blocks))
        return {};
      if (attempt > 0)
        return fail_runtime(what + ": block sums overflow their grids");
      g = model::grid_plan::coarser(std::move(g), model::grid_shift(total.max_units(), bounds.blocks));
    }
  }

  caf::actor_system& system;
  caf::scoped_actor self;
  model::model_shape shape;
  double lambda;
  peer_group<shard_actor> peers;
  std::vector<peer_share> shares;
  model::data_bounds bounds;
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
  // A round's totals.
  std::vector<double> block_values;
  std::size_t values_per_block = 1;
  std::vector<char> seen;
  model::exact_sum total;
  double correct = 0;
  // The last two successful evaluations (products are taken at the last, lines run between the
  // two), and which peers have not served them.
  dense_vector evaluated_theta, previous_theta;
  std::uint64_t evaluated_round = 0, previous_round = 0;
  std::vector<bool> needs_theta, needs_previous;
  // Buffers for the vectors requests carry, reused once no message holds them (two evaluations
  // kept, the one being sent, and a product's v).
  static constexpr std::size_t max_send_buffers = 4;
  std::vector<std::shared_ptr<Eigen::VectorXd>> send_buffers;
};

} // namespace shardopt::actors
