#pragma once

// Internal to io/: parsing line-oriented text (CSV, LIBSVM) with every CPU the process may use,
// straight into the dataset's final arrays. Two passes over a text_source: the first bounds the
// rows and items (values, or index:value pairs) of the whole text, which fixes the arrays once;
// the second cuts each buffer into pieces at line starts, parses the pieces in parallel into the
// regions their bounds reserve, and closes the gaps where a piece stored less than it reserved (a
// comment, a blank line). The first error in text order wins, whichever thread finds it.

#include "base/parallel.hpp"
#include "io/readers.hpp"
#include "io/text_source.hpp"
#include "base/result.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardopt::io::detail {

/// How text is parsed: on `threads` threads (0: as many as the CPUs this process may use), a piece
/// of at least `piece_bytes` each (smaller ones are not worth a thread); `limit` > 0 keeps only
/// the first `limit` rows. The result never depends on the threads or the pieces.
struct parse_options {
  unsigned threads = 0;
  std::size_t piece_bytes = std::size_t{4} << 20;
  std::int64_t limit = 0;
};

using shardopt::run_parallel;
using shardopt::usable_cpus;

/// How often bytes `a` and `b` occur in `text` (one pass, in byte-wide vector lanes).
std::pair<std::int64_t, std::int64_t> count_bytes(std::string_view text, char a, char b);

/// Cuts whole lines into at most `count` pieces of about equal size, each starting a line.
std::vector<std::string_view> cut_lines(std::string_view text, std::size_t count);

/// Counts of a piece of text: its newlines, and at most how many rows and items it holds.
struct piece_counts {
  std::int64_t lines = 0;
  std::int64_t rows = 0;
  std::int64_t items = 0;

  piece_counts& operator+=(const piece_counts& other) {
    lines += other.lines;
    rows += other.rows;
    items += other.items;
    return *this;
  }
};

/// Where a piece writes: its first row and first item in the final arrays.
struct region {
  std::int64_t row = 0;
  std::int64_t item = 0;
};

/// What parsing a piece stored, and its first error: the rows stored before the failing line and
/// the message (naming the line).
struct piece_result {
  std::int64_t rows = 0;
  std::int64_t items = 0;
  std::optional<std::pair<std::int64_t, std::string>> error;
};

/// What `parse_text` stored: rows and items.
struct parsed_text {
  std::int64_t rows = 0;
  std::int64_t items = 0;
};

/// Arrays of `n` elements left uninitialised (pages never written are never resident), or
/// nullptr-holding when the memory cannot be had.
template <class T>
std::unique_ptr<T[]> uninitialised(std::int64_t n) {
  try {
    return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(std::max<std::int64_t>(n, 1))]);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

/// Calls f(line, number) for each line of `text` (whole lines, numbered from `first`), without
/// its newline or a trailing '\r'.
template <class F>
void for_each_line(std::string_view text, std::int64_t first, F&& f) {
  std::int64_t number = first;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    auto line = text.substr(0, newline);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    f(line, number++);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
}

/// What every text format keeps of a row besides its features: its label and its line number, in
/// arrays sized by the counts and written by many threads at disjoint rows.
class row_labels {
public:
  /// Room for `rows` rows; false when the memory cannot be had.
  bool allocate(std::int64_t rows) {
    lines_ = uninitialised<std::int64_t>(rows);
    if (!lines_)
      return false;
    labels_.resize(std::max<std::int64_t>(rows, 1));
    return true;
  }

  void set(std::int64_t row, double label, std::int64_t line) {
    labels_[row] = label;
    lines_[static_cast<std::size_t>(row)] = line;
  }

  /// Moves `count` rows from `from` down to `to`.
  void move(std::int64_t from, std::int64_t to, std::int64_t count) {
    for (std::int64_t r = 0; r < count; ++r)
      set(to + r, labels_[from + r], lines_[static_cast<std::size_t>(from + r)]);
  }

  /// Hands the first `rows` labels and line numbers to `out`.
  void finish(std::int64_t rows, raw_dataset& out) {
    labels_.conservativeResize(rows);
    out.data.y = std::move(labels_);
    out.lines.assign(lines_.get(), lines_.get() + rows);
    lines_.reset();
  }

private:
  Eigen::VectorXd labels_;
  std::unique_ptr<std::int64_t[]> lines_;
};

/// A text format's side of `parse_text`:
/// - `piece_counts count(std::string_view piece, bool last) const`: newlines, and bounds on the
///   rows and items of a piece (`last`: the text's final piece, whose last line may lack '\n');
/// - `result<void> allocate(const piece_counts& total)`: the final arrays, once;
/// - `piece_result parse(std::string_view piece, std::int64_t first_line, region at,
///   const piece_counts& room)`: stores the piece's rows from `at` on, never more than `room`
///   holds; called for disjoint regions from several threads at once;
/// - `void move(region from, region to, const piece_result& stored)`: moves what a piece stored
///   down to `to` (to <= from), fixing anything that records positions;
/// - `std::int64_t items_before(std::int64_t row) const`: items of the rows before `row` (for a
///   limit that falls inside a piece);
/// - `std::int64_t data_lines(std::string_view buffer, std::int64_t lines_before) const`: how
///   many lines of a buffer hold a row or an error (not blank, not a comment, not a header), the
///   buffer starting after `lines_before` lines: with a limit, the first pass stops there.
template <class Format>
result<parsed_text> parse_text(text_source& source, Format& format, const parse_options& options) {
  const unsigned threads = options.threads > 0 ? options.threads : usable_cpus();
  const auto pieces_of = [&](std::string_view text) {
    return cut_lines(text, std::clamp<std::size_t>(text.size() / std::max<std::size_t>(options.piece_bytes, 1), 1, threads));
  };
  const auto counts_lines = [](const std::vector<piece_counts>& counts) {
    std::int64_t lines = 0;
    for (const auto& c : counts)
      lines += c.lines;
    return lines;
  };
  // Each piece's counts, in parallel; `unterminated`: the buffer's last line lacks its newline.
  const auto count_pieces = [&](const std::vector<std::string_view>& pieces, bool unterminated) {
    std::vector<piece_counts> counts(pieces.size());
    run_parallel(pieces.size(), threads, [&](std::size_t i) {
      counts[i] = format.count(pieces[i], unterminated && i + 1 == pieces.size());
    });
    return counts;
  };
  // Pass 1: bounds of the whole text, or with a limit, of the buffers up to the one in which the
  // limit's row lies (a line that is not blank or a comment is a row or an error).
  piece_counts total;
  std::size_t buffers = 0;
  std::int64_t data_lines = 0;
  for (;;) {
    if (options.limit > 0 && data_lines >= options.limit)
      break;
    auto text = source.next();
    if (!text)
      return text.error();
    if (text->empty())
      break;
    ++buffers;
    const auto pieces = pieces_of(*text);
    const auto counts = count_pieces(pieces, text->back() != '\n');
    for (const auto& c : counts)
      total += c;
    if (options.limit > 0)
      data_lines += format.data_lines(*text, total.lines - counts_lines(counts));
  }
  if (auto ok = format.allocate(total); !ok)
    return ok.error();
  if (auto ok = source.rewind(); !ok)
    return ok.error();

  // Pass 2: each buffer's pieces into their regions, in parallel; then the gaps closed in order.
  parsed_text stored;
  std::int64_t lines = 0;
  for (std::size_t buffer = 0; buffer < buffers; ++buffer) {
    auto text = source.next();
    if (!text)
      return text.error();
    if (text->empty())
      break;
    const auto pieces = pieces_of(*text);
    const auto counts = count_pieces(pieces, text->back() != '\n');
    std::vector<region> at(pieces.size());
    std::vector<std::int64_t> first_line(pieces.size());
    region next{stored.rows, stored.items};
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      at[i] = next;
      first_line[i] = lines + 1;
      next.row += counts[i].rows;
      next.item += counts[i].items;
      lines += counts[i].lines;
    }
    // The same buffers as in the first pass give regions within its totals; a text that changed
    // in between would not.
    if (next.row > total.rows || next.item > total.items)
      return fail_runtime(source.name() + ": changed while it was read; read it again");
    std::vector<piece_result> results(pieces.size());
    run_parallel(pieces.size(), threads, [&](std::size_t i) {
      results[i] = format.parse(pieces[i], first_line[i], at[i], counts[i]);
    });
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      auto& r = results[i];
      const bool limited = options.limit > 0;
      if (r.error && !(limited && stored.rows + r.error->first >= options.limit))
        return fail_invalid(r.error->second);
      const region to{stored.rows, stored.items};
      if (to.row != at[i].row || to.item != at[i].item)
        format.move(at[i], to, r);
      stored.rows += r.rows;
      stored.items += r.items;
      if (limited && stored.rows >= options.limit) {
        stored.rows = options.limit;
        stored.items = format.items_before(options.limit);
        return stored;
      }
      if (r.error)
        return stored;  // past the limit: nothing after it counts
    }
  }
  return stored;
}

/// `parse_text` over the whole source, then the format's dataset; `empty` is the error (naming
/// the file) when the text holds no row.
template <class Format>
auto parse_whole(text_source& source, Format& format, const parse_options& how, const std::string& empty)
  -> result<decltype(format.finish(std::declval<const parsed_text&>()))> {
  auto stored = parse_text(source, format, how);
  if (!stored)
    return stored.error();
  if (stored->rows == 0)
    return fail_invalid(empty);
  return format.finish(*stored);
}

} // namespace shardopt::io::detail
