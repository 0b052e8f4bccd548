#pragma once

// # Sums that do not depend on the cluster
//
// Floating-point addition is not associative: adding the same shard sums in another grouping (four
// shards instead of three, a node's shards summed on the node, a lost shard recreated elsewhere)
// changes the last bits of the gradient, and with them every later iterate. shardopt's sums are
// instead a function of the data and theta alone:
//
// - A dataset's rows are cut into *canonical blocks* of `block_rows_for(rows)` consecutive rows,
//   aligned to global row numbers; shards own whole blocks. A block's loss and gradient sums are
//   computed in double by the kernels, always over the same rows in the same order, so they are
//   the same bits whichever shard computes them.
// - Scalars (a block's loss sum) travel per block and are added in block order by the driver.
// - Vectors (gradients, Hessian-vector products) are rounded, block by block, to fixed-point
//   grids (entry i to multiples of 2^e_i, the same for the whole evaluation) and added as 64-bit
//   integers: integer addition is associative (wrapping is harmless while the true total fits),
//   so any grouping of any blocks gives the same integers. Each e_i is chosen from a bound on
//   entry i of any block sum, so that the total cannot overflow (`grid_exponent`); the bounds are
//   a function of the data and theta alone (block_bounds.hpp), and a block past them (which they
//   rule out) makes the caller evaluate again on grids coarser by `grid_shift`, itself a
//   function of the data.
//
// Dense data rounds each block's gradient sum once per entry (a block is computed by matrix
// products in double). Sparse data rounds each *term* x_ij r_ik to its entry's grid as the backward
// product scatters it (sparse_kernels.cpp): a sparse block then costs nothing per touched feature,
// and the total is still a sum of integers that no grouping changes. Terms are bounded as block
// sums are (the grids come from the same bounds); a sparse pass reports twice its largest residual
// in its output's bias-grid units, times the rows per block, as its largest deposit, which bounds
// every block sum made of such terms.
//
// Precision: a block sum is rounded to about 2^-(62 - log2 rows) of its entry's bound (a sparse
// term to 2^-(55 - log2 rows)): with a million rows, 2^-42 (2^-35) of it, and a mean over the
// rows to 2^-62 (2^-55) of the largest term. A dense entry is rounded once per block, a sparse
// entry once per non-zero of its feature. (ReproBLAS's
// binned sums need no shared grid but several words per entry; one word keeps the bytes on the
// wire those of a double.)

#include "model/dataset.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace shardopt::model {

/// Entries of a chunk of a driver's work over the dimension (adding answers, turning sums into
/// doubles, CG's vector updates): sums over a vector are added chunk by chunk, in chunk order, so
/// they are the same bits on one thread or on many.
constexpr Eigen::Index vector_chunk = Eigen::Index{1} << 15;

/// Rows per canonical block of a dataset of `rows` examples: rows / 64, rounded down to a multiple
/// of the kernels' 256-row chunk and capped at 1,024 rows from 16,384 rows up (so summing block by
/// block costs the kernels no extra chunks, and each block's gradient is rounded once per 256 to
/// 1,024 rows); rows / 64 (at least 1) below. So there are at least 64 blocks (shards may number up
/// to the block count) whenever there are 64 rows, and a million rows make 977 blocks.
std::int64_t block_rows_for(std::int64_t rows);

/// `rows` cut into consecutive blocks of `block_rows` starting at rows.begin (the last one may be
/// shorter). Empty for an empty range.
std::vector<row_range> blocks_of(row_range rows, std::int64_t block_rows);

/// How many blocks `blocks_of` makes of `rows` rows.
std::int64_t block_count(std::int64_t rows, std::int64_t block_rows);

/// Integer bits a fixed-point sum may use: every partial sum stays within 2^62 grid units, and
/// every largest deposit a sum reports (`max_units`) is measured against that.
constexpr int fixed_bits = 62;

/// The integer bits of a sparse pass's sums: it keeps an entry's grid in the low 8 bits of its word
/// while it adds terms, so 56 bits hold the sum (sparse_kernels.cpp). Grids for sparse data are
/// chosen for 2^55 units, and a sparse pass reports its deposits 2^7 times larger, so that the
/// check against 2^62 units is the check against 2^55.
constexpr int packed_bits = 55;

/// The grid exponent for sums of `terms` values of magnitude up to `max_abs`: the smallest e with
/// terms * max_abs < 2^(bits + e) (a zero `max_abs` counts as the smallest normal double), clamped to
/// `lowest_grid`..`highest_grid`.
int grid_exponent(double max_abs, std::int64_t terms, int bits = fixed_bits);

/// The finest and coarsest grids: every multiple of 2^e up to 2^62 units is a finite double.
constexpr int lowest_grid = -1080;
constexpr int highest_grid = 1023 - fixed_bits;

/// How many binades an entry's grid may lie below the coarsest grid of its vector: a finer one is
/// used as that one (coarser: still exact). One byte per entry, on the wire as in memory.
constexpr int max_grid_below = 255;

/// Whether `terms` values of at most `units` grid units each add up within 2^62 units: when not
/// (or when `units` is not finite), the sum must be redone on coarser grids.
bool fits_grid(double units, std::int64_t terms);

/// How much coarser (a power of two) the grids must be for `terms` values of `units` to fit: at
/// least 1, at most the whole range of grids (for infinite units, from a grid far too fine).
int grid_shift(double units, std::int64_t terms);

/// Adds n fixed-point integers `from` into `into` (wrapping, which is exact while the true totals
/// fit: see `fits_grid`).
void add_words(std::int64_t* into, const std::int64_t* from, std::size_t n);

/// The grids of one request's sums, as the wire carries them: entry i is summed in multiples of
/// 2^(base - below[i]) (never finer than `lowest_grid`). `below` is shared, not copied: for the
/// linear models it depends on the data alone, and every request of a run shares one table
/// (block_bounds.hpp, `grid_plan`); a request uses its first `entries` entries (a gradient the
/// first half of a table that also holds its Hessian's diagonal).
struct grid {
  int base = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> below;
  std::size_t entries = 0;

  std::size_t size() const { return entries; }
  /// Entry i's exponent.
  int exponent(std::size_t i) const;
};

/// The grid of per-entry exponents (each clamped to lowest_grid..highest_grid; more than
/// `max_grid_below` binades below the coarsest is used as that one).
grid make_grid(const std::vector<int>& exponents);

/// The exact sums one peer answers for: words on a request's grid for some entries of the vector
/// (`entries`, increasing; null: every entry, words[i] being entry i's), and the largest deposit
/// they hold in grid units (NaN once a value was not finite). A shard of sparse rows answers for
/// the entries of the features its rows touch, so its answer costs its non-zeros, not the
/// dimension (or densely, when its rows touch most features); the entry list is the
/// shard's for the whole run, so it is shared, not copied.
struct entry_sums {
  std::shared_ptr<const std::vector<std::int32_t>> entries;
  std::vector<std::int64_t> words;
  double max_units = 0;

  bool dense() const { return !entries; }
};

/// Whether an answer's entries are valid for a vector of `size` entries: as many words as
/// entries, entries increasing and below `size` (dense: exactly `size` words).
bool entries_fit(const entry_sums& sums, std::size_t size);

/// A vector of exact sums, each entry on its own grid: a deposited value is rounded to the nearest
/// multiple of 2^exponent(i) and added as an integer, so the result is the same whatever order and
/// grouping the values (or other `exact_sum`s on the same grids) arrive in. Remembers the largest
/// deposit in grid units (NaN once a value was not finite). Its words are kept when it is reset to
/// another grid (so a sum reset every round reuses one buffer), unless taken (`take_words`); it can
/// also take another's words whole (`adopt`). Not thread-safe, except `to_doubles` over disjoint
/// ranges.
class exact_sum {
public:
  exact_sum() = default;

  /// Sums on `g`, all zero.
  explicit exact_sum(grid g) { reset(std::move(g)); }

  /// Sums on the grids `exponents` (see make_grid).
  explicit exact_sum(const std::vector<int>& exponents) : exact_sum(make_grid(exponents)) {}

  /// Zero sums on the grid `g`, reusing the words' memory (a kept buffer, base/spare_words.hpp, once
  /// they were taken); without `zero` the words are left to the caller to zero (`zero`, range by
  /// range, on several threads).
  void reset(grid g, bool zero = true);

  /// Sums on the grid `g` whose integers are `words` (g.size() of them, checked by the caller):
  /// what zero sums that merged them would hold, without zeroing or adding.
  void adopt(grid g, std::vector<std::int64_t>&& words) {
    grid_ = std::move(g);
    words_ = std::move(words);
    max_units_ = 0;
  }

  /// Zeroes words [begin, end).
  void zero(std::size_t begin, std::size_t end) { std::fill(words_.begin() + static_cast<std::ptrdiff_t>(begin), words_.begin() + static_cast<std::ptrdiff_t>(end), 0); }

  std::size_t size() const { return words_.size(); }

  /// Entry i's grid exponent, and the grid.
  int exponent(std::size_t i) const { return grid_.exponent(i); }
  int base() const { return grid_.base; }
  const grid& grids() const { return grid_; }

  /// The largest |value| / 2^exponent deposited so far: 0 before any, NaN after a non-finite one.
  double max_units() const { return max_units_; }

  /// Adds `value` to entry i (rounded to its grid; clamped at 2^62 units, which `fits_grid` on
  /// `max_units` then reports).
  void deposit(std::size_t i, double value);

  /// Adds values[i] to entry `first + i` for every i.
  void deposit(std::size_t first, Eigen::Ref<const Eigen::VectorXd> values);

  /// Adds another sum's integers (of the same size and grids, checked by the caller).
  void merge(const std::int64_t* words, double max_units);

  /// Adds an answer on the same grids (`entries_fit` checked by the caller).
  void merge(const entry_sums& part) {
    merge(part.entries ? part.entries->data() : nullptr, part.words.data(), part.words.size(), part.max_units);
  }

  /// Adds `count` words for `entries` (increasing; null: entries 0..count-1), on the same grids.
  void merge(const std::int32_t* entries, const std::int64_t* words, std::size_t count, double max_units);

  /// Adds words[begin, end) of a dense answer to entries [begin, end), without its units (for
  /// several threads, each on its own range; `note_units` once after).
  void merge_range(const std::int64_t* words, std::size_t begin, std::size_t end) {
    add_words(words_.data() + begin, words + begin, end - begin);
  }

  /// Records `units` as a deposit's size in grid units without depositing (NaN: not finite).
  void note_units(double units);

  /// The integers, for the wire; `take_words` leaves this sum empty. `word_data` lets a kernel
  /// add integers it rounded itself.
  const std::vector<std::int64_t>& words() const { return words_; }
  std::vector<std::int64_t> take_words() { return std::move(words_); }
  std::int64_t* word_data() { return words_.data(); }

  /// The sums as doubles, into `out` (size() entries): each integer times its 2^exponent, rounded
  /// once.
  void to_doubles(Eigen::Ref<Eigen::VectorXd> out) const { to_doubles(out, 0, out.size()); }

  /// Entries [begin, end) of `to_doubles` only, entry i into out[i - first] (for several threads,
  /// each on its own range; or for a part of the vector, such as a Hessian diagonal after its
  /// gradient).
  void to_doubles(Eigen::Ref<Eigen::VectorXd> out, Eigen::Index begin, Eigen::Index end,
                  Eigen::Index first = 0) const;

private:
  std::vector<std::int64_t> words_;
  grid grid_;
  double max_units_ = 0;
};

} // namespace shardopt::model
