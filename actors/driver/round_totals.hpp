#pragma once

// Internal to the sharded objective's source (objective_state.hpp): one round's totals, each
// peer's reply checked against what the peer holds and added exactly, what a tree's reply covers,
// and the time rounds wait. Not part of the actors library's interface.

#include "actors/driver/block_runs.hpp"
#include "actors/wire/messages.hpp"
#include "actors/driver/peers.hpp"
#include "model/block_bounds.hpp"
#include "base/spare_words.hpp"
#include "optimizer/vector_pool.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
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

/// What the peers `which` of `shares` hold together.
inline peer_share joint_share(const std::vector<peer_share>& shares, const std::vector<std::size_t>& which) {
  peer_share joint;
  for (const auto i : which) {
    joint.runs.insert(joint.runs.end(), shares[i].runs.begin(), shares[i].runs.end());
    joint.rows += shares[i].rows;
  }
  return joint;
}

/// The peers among `candidates` (indices into `shares`) whose blocks a tree reply's runs name:
/// each wholly or not at all.
inline result<std::vector<std::size_t>> covered_peers(const std::vector<peer_share>& shares,
                                                      const std::vector<std::size_t>& candidates,
                                                      const std::vector<std::int64_t>& flat) {
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
  if (!detail::runs_match(flat, joint_share(shares, covered).runs))
    return fail_runtime("answered for blocks that are not whole peers of its tree");
  return covered;
}

/// A round's totals over the objective's `blocks` canonical blocks: each block's values, which
/// blocks a reply answered for, the exact sums and the correct predictions. Work over the
/// dimension runs on the pool each call is handed (the driver's threads).
///
/// The exact sums hold no words of their own between rounds: a round's results are read before
/// the next round begins, which gives the words back (base/spare_words.hpp) for the answers the
/// peers are about to make. The round's first answer, when dense, then becomes the total (zero
/// plus its words) and later answers are added to it; only a round whose first answer is sparse
/// has words zeroed for it: one dimension-sized buffer fewer, and no zeroing and one merge fewer,
/// a round where shards answer densely.
struct round_totals {
  /// Starts a round's totals: exact sums on grid `g` (none for quality and lines), and `per_block`
  /// values per block.
  void begin(const model::grid& g, std::size_t per_block, optimizer::vector_pool&) {
    values_per_block = per_block;
    block_values.assign(static_cast<std::size_t>(blocks) * per_block, 0.0);
    seen.assign(static_cast<std::size_t>(blocks), 0);
    shardopt::give_back_words(total.take_words());  // the last round's, read by now
    grid = g;
    unset = true;
    correct = 0;
  }

  /// Entries of the round's exact sums.
  std::size_t size() const { return grid.size(); }

  /// Zero sums on the round's grid if no answer was taken yet (then every use of `total` is safe).
  void settle(optimizer::vector_pool& pool) {
    if (!unset)
      return;
    total.reset(grid, false);
    pool.for_chunks(static_cast<Eigen::Index>(total.size()),
                    [&](Eigen::Index begin, Eigen::Index end) { total.zero(begin, end); });
    unset = false;
  }

  /// Checks a reply expected to cover `share` and adds it to the round's totals: its example
  /// count, its blocks (in range, each once in the round, as many as its share), finite values per
  /// block when `values`, and well-formed finite exact sums on the round's grid.
  result<void> take_share(const peer_share& share, block_sums sums, bool values,
                          optimizer::vector_pool& pool) {
    if (sums.count != share.rows)
      return fail_runtime("answered for " + std::to_string(sums.count) + " examples, it holds "
                  + std::to_string(share.rows));
    if (sums.length != size() || !sums_fit(sums))
      return fail_runtime("returned sums of " + std::to_string(sums.length) + " entries, expected "
                  + std::to_string(size()) + (sums_fit(sums) ? "" : " (malformed)"));
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
      if (first < 0 || count < 0 || count > blocks || first > blocks - count)
        return fail_runtime("answered for blocks outside 0-" + std::to_string(blocks - 1));
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
    add(sums, pool);
    correct += sums.correct;
    shardopt::give_back_words(std::move(sums.words));  // the next pass's answers take them
    return {};
  }

  /// Adds a reply's exact sums to the round's total: the round's first dense answer becomes it
  /// (its words taken, `sums.words` left empty); others are added, dense words chunk by chunk,
  /// sparse ones in chunks of their entries (which touch distinct words).
  void add(block_sums& sums, optimizer::vector_pool& pool) {
    if (unset && !sums.entries && sums.words.size() == size()) {
      total.adopt(grid, std::move(sums.words));
      sums.words = {};
      unset = false;
      total.note_units(sums.max_units);
      return;
    }
    settle(pool);
    const auto* entries = sums.entries ? sums.entries->data() : nullptr;
    pool.for_chunks(static_cast<Eigen::Index>(sums.words.size()), [&](Eigen::Index begin, Eigen::Index end) {
      if (entries)
        total.merge(entries + begin, sums.words.data() + begin, static_cast<std::size_t>(end - begin), 0.0);
      else
        total.merge_range(sums.words.data(), begin, end);
    });
    total.note_units(sums.max_units);
  }

  /// The round's total as a linear model's full vector (model::finish_part) for a model of
  /// `shape`, `lambda` and `rows` examples, entries [first, first + out.size()); returns the
  /// squared norm of `weights`' weights, added chunk by chunk.
  double total_to(Eigen::Ref<Eigen::VectorXd> out, Eigen::Index first, const Eigen::VectorXd* weights,
                  const model::model_shape& shape, double lambda, std::int64_t rows,
                  optimizer::vector_pool& pool) {
    return pool.sum_chunks(out.size(), [&](Eigen::Index begin, Eigen::Index end) {
      return model::finish_part(shape, total, out, first, begin, end, lambda, rows, weights);
    });
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

  /// Whether a tree's runs name blocks 0..blocks-1 only (before any arithmetic on them).
  result<void> runs_in_range(const std::vector<std::int64_t>& flat) const {
    if (flat.size() % 2 != 0)
      return fail_runtime("returned a malformed list of blocks");
    for (std::size_t r = 0; r < flat.size(); r += 2)
      if (flat[r] < 0 || flat[r + 1] < 0 || flat[r + 1] > blocks || flat[r] > blocks - flat[r + 1])
        return fail_runtime("answered for blocks outside 0-" + std::to_string(blocks - 1));
    return {};
  }

  std::int64_t blocks = 0;  // the objective's canonical blocks (its data_bounds')
  std::vector<double> block_values;
  std::size_t values_per_block = 1;
  std::vector<char> seen;
  model::grid grid;          // the round's exact sums'
  bool unset = false;        // no words for them yet: `settle` before reading `total`
  model::exact_sum total;    // the round's exact sums, once an answer was taken or `settle`d
  double correct = 0;
};

} // namespace shardopt::actors
