#include "io/reader_support.hpp"
#include "io/readers.hpp"
#include "io/text_parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace shardopt::io {

namespace {

using detail::piece_counts;
using detail::piece_result;
using detail::region;

constexpr auto max_index = std::int64_t{std::numeric_limits<std::int32_t>::max()};

/// The arrays a LIBSVM text is parsed into, kept alive by the dataset that shares them.
struct csr_storage {
  std::unique_ptr<std::int32_t[]> starts;   // rows + 1
  std::unique_ptr<std::int32_t[]> indices;  // 0-based columns
  std::unique_ptr<float[]> values;
};

bool blank(char c) { return c == ' ' || c == '\t'; }

/// LIBSVM/svmlight lines (`label index:value ...`, 1-based strictly increasing indices, `#` starts
/// a comment, `qid:` tokens ignored) for parse_text (text_parse.hpp).
class libsvm_format {
public:
  libsvm_format(std::string name, const read_options& options)
    : name_(std::move(name)), features_(options.features) {}

  piece_counts count(std::string_view piece, bool last) const {
    piece_counts c;
    const auto [newlines, colons] = detail::count_bytes(piece, '\n', ':');
    c.lines = newlines;
    c.rows = c.lines + (last && !piece.empty() && piece.back() != '\n' ? 1 : 0);
    // A pair takes at least 4 bytes: a blank before it, an index, ':' and a value.
    c.items = std::min<std::int64_t>(colons, static_cast<std::int64_t>(piece.size() / 4));
    return c;
  }

  std::int64_t data_lines(std::string_view buffer, std::int64_t lines_before) const {
    std::int64_t rows = 0;
    detail::for_each_line(buffer, lines_before + 1, [&](std::string_view line, std::int64_t) {
      // As parse: blanks and carriage returns around a line, or a comment, are not an example.
      const auto first = line.find_first_not_of(" \t\r");
      rows += first != std::string_view::npos && line[first] != '#';
    });
    return rows;
  }

  result<void> allocate(const piece_counts& total) {
    capacity_ = std::min(total.items, max_index);
    storage_ = std::make_shared<csr_storage>();
    storage_->starts = detail::uninitialised<std::int32_t>(total.rows + 1);
    storage_->indices = detail::uninitialised<std::int32_t>(capacity_);
    storage_->values = detail::uninitialised<float>(capacity_);
    if (!storage_->starts || !storage_->indices || !storage_->values || !rows_.allocate(total.rows))
      return fail_runtime(name_ + ": not enough memory for " + std::to_string(total.rows) + " rows and "
                  + std::to_string(capacity_) + " non-zero values");
    storage_->starts[0] = 0;
    return {};
  }

  piece_result parse(std::string_view piece, std::int64_t first_line, region at,
                     const piece_counts& room) {
    piece_result out;
    std::int64_t line_number = first_line - 1;
    const auto fail_at = [&](std::string message) {
      out.error = std::pair{out.rows, name_ + ":" + std::to_string(line_number) + ": " + std::move(message)};
      return out;
    };
    const char* p = piece.data();
    const char* const end = p + piece.size();
    while (p < end) {
      ++line_number;
      const auto* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const char* line_end = newline ? newline : end;
      const char* next = newline ? newline + 1 : end;
      if (const auto* hash = static_cast<const char*>(std::memchr(p, '#', static_cast<std::size_t>(line_end - p))))
        line_end = hash;
      while (line_end > p && (line_end[-1] == '\r' || blank(line_end[-1])))
        --line_end;
      while (p < line_end && blank(*p))
        ++p;
      if (p == line_end) {
        p = next;
        continue;
      }
      if (out.rows == room.rows)  // the counts make this impossible; it guards the writes
        return fail_at("more rows than the text can hold; the reader is wrong");
      // The label, then index:value pairs with strictly increasing 1-based indices.
      const char* token_end = p;
      while (token_end < line_end && !blank(*token_end))
        ++token_end;
      const std::string_view label_text{p, static_cast<std::size_t>(token_end - p)};
      const auto label = detail::parse_number(label_text);
      if (!label)
        return fail_at("label: expected a number, got " + detail::quote(label_text));
      std::int64_t previous = 0;
      p = token_end;
      for (;;) {
        while (p < line_end && blank(*p))
          ++p;
        if (p == line_end)
          break;
        token_end = p;
        while (token_end < line_end && !blank(*token_end))
          ++token_end;
        const std::string_view token{p, static_cast<std::size_t>(token_end - p)};
        p = token_end;
        if (token.substr(0, 4) == "qid:")  // svmlight ranking groups carry no feature
          continue;
        const auto colon = token.find(':');
        if (colon == std::string_view::npos)
          return fail_at("malformed pair " + detail::quote(token) + ": expected index:value");
        const auto index = detail::parse_integer(token.substr(0, colon));
        if (!index)
          return fail_at("malformed pair " + detail::quote(token) + ": index is not an integer");
        const auto value = detail::parse_number(token.substr(colon + 1));
        if (!value)
          return fail_at("malformed pair " + detail::quote(token) + ": value is not a number");
        if (std::fabs(*value) > std::numeric_limits<float>::max())
          return fail_at("malformed pair " + detail::quote(token) + ": the value is too large for a float");
        if (*index < 1)
          return fail_at("index " + std::to_string(*index) + ": LIBSVM indices start at 1");
        if (*index <= previous)
          return fail_at("index " + std::to_string(*index) + " after " + std::to_string(previous)
                         + ": indices must increase");
        if (features_ > 0 && *index > features_)
          return fail_at("index " + std::to_string(*index) + " is larger than the number of features ("
                         + std::to_string(features_) + ")");
        if (*index > max_index)
          return fail_at("index " + std::to_string(*index) + " is too large (at most "
                         + std::to_string(max_index) + ")");
        const auto item = at.item + out.items;
        if (item >= capacity_ || out.items == room.items)
          return fail_at("more than " + std::to_string(max_index)
                         + " non-zero values; too many for one dataset");
        previous = *index;
        storage_->indices[static_cast<std::size_t>(item)] = static_cast<std::int32_t>(*index - 1);
        storage_->values[static_cast<std::size_t>(item)] = static_cast<float>(*value);
        ++out.items;
      }
      const auto row = at.row + out.rows;
      rows_.set(row, *label, line_number);
      storage_->starts[static_cast<std::size_t>(row + 1)] = static_cast<std::int32_t>(at.item + out.items);
      ++out.rows;
      p = next;
    }
    return out;
  }

  void move(region from, region to, const piece_result& stored) {
    const auto shift = from.item - to.item;
    rows_.move(from.row, to.row, stored.rows);
    for (std::int64_t r = 0; r < stored.rows; ++r)
      storage_->starts[static_cast<std::size_t>(to.row + r + 1)] =
        static_cast<std::int32_t>(storage_->starts[static_cast<std::size_t>(from.row + r + 1)] - shift);
    const auto n = static_cast<std::size_t>(stored.items);
    std::memmove(&storage_->indices[static_cast<std::size_t>(to.item)],
                 &storage_->indices[static_cast<std::size_t>(from.item)], n * sizeof(std::int32_t));
    std::memmove(&storage_->values[static_cast<std::size_t>(to.item)],
                 &storage_->values[static_cast<std::size_t>(from.item)], n * sizeof(float));
  }

  std::int64_t items_before(std::int64_t row) const { return storage_->starts[static_cast<std::size_t>(row)]; }

  /// The parsed rows as a dataset sharing the arrays.
  raw_dataset finish(const detail::parsed_text& stored) {
    const auto rows = stored.rows;
    raw_dataset out;
    rows_.finish(rows, out);
    model::shared_sparse x;
    x.starts = storage_->starts.get();
    x.indices = storage_->indices.get();
    x.values = storage_->values.get();
    x.rows = rows;
    // The widest row kept (a row's last index is its largest): rows past a limit do not count.
    std::int64_t widest = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      if (storage_->starts[static_cast<std::size_t>(r + 1)] > storage_->starts[static_cast<std::size_t>(r)])
        widest = std::max<std::int64_t>(widest, storage_->indices[static_cast<std::size_t>(storage_->starts[static_cast<std::size_t>(r + 1)] - 1)] + 1);
    x.cols = features_ > 0 ? features_ : widest;
    x.owner = std::move(storage_);
    x.writable = true;
    out.data.x = std::move(x);
    out.source = name_;
    return out;
  }

private:
  std::string name_;
  std::int64_t features_;
  std::int64_t capacity_ = 0;
  std::shared_ptr<csr_storage> storage_;
  detail::row_labels rows_;
};

} // namespace

result<raw_dataset> detail::parse_libsvm(const std::string& name, text_source& source,
                                         const read_options& options, parse_options how) {
  if (options.features > max_index)
    return fail_invalid(name + ": " + std::to_string(options.features) + " features are too many (at most " +
                std::to_string(max_index) + ")");
  how.limit = options.limit;
  libsvm_format format{name, options};
  return parse_whole(source, format, how, name + ": empty file (no examples)");
}

result<raw_dataset> detail::parse_libsvm(const std::string& name, std::string_view text,
                                         const read_options& options) {
  auto source = text_source::of(text);
  return parse_libsvm(name, source, options, parse_options{});
}

result<raw_dataset> read_libsvm(const std::string& path, const read_options& options) {
  auto source = detail::text_source::open(path, options.max_decompressed);
  if (!source)
    return source.error();
  return detail::parse_libsvm(path, *source, options, detail::parse_options{});
}

} // namespace shardopt::io
