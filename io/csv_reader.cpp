#include "io/reader_support.hpp"
#include "io/readers.hpp"
#include "io/text_parse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <string_view>
#include <vector>

namespace shardopt::io {

namespace {

using detail::piece_counts;
using detail::piece_result;
using detail::region;

/// Splits a line at every `separator` (a comma, or a tab for TSV) into trimmed fields; a field in
/// double quotes loses its quotes. Quoted separators are not supported: numeric data has none.
void split_fields(std::string_view line, char separator, std::vector<std::string_view>& fields) {
  fields.clear();
  for (;;) {
    const auto end = line.find(separator);
    auto field = detail::trim(line.substr(0, end));
    if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
      field = field.substr(1, field.size() - 2);
    fields.push_back(field);
    if (end == std::string_view::npos)
      return;
    line.remove_prefix(end + 1);
  }
}

bool all_numeric(const std::vector<std::string_view>& fields) {
  return std::all_of(fields.begin(), fields.end(),
                     [](std::string_view field) { return detail::parse_number(field).has_value(); });
}

/// One line of text and its 1-based number.
struct numbered_line {
  std::string_view text;
  std::int64_t number = 0;
};

/// The rows of a CSV text: its header line (0: none), field count and label column, fixed by its
/// first non-blank lines before anything is allocated.
struct csv_layout {
  std::int64_t header_line = 0;
  std::int64_t fields = 0;
  std::int64_t label_column = 0;
};

/// Finds the header and the first data row (`options.header`, or a first non-blank row with a
/// non-numeric field) in the first lines of `source`, and checks the first data row's fields.
result<csv_layout> layout_of(const std::string& name, detail::text_source& source,
                             const read_options& options) {
  csv_layout layout;
  std::vector<std::string_view> fields;
  std::int64_t line_number = 0;
  bool seen_first_row = false;
  for (;;) {
    auto text = source.next();
    if (!text)
      return text.error();
    if (text->empty())
      break;
    std::string_view rest = *text;
    std::string_view line;
    while (detail::next_line(rest, line)) {
      ++line_number;
      if (detail::trim(line).empty())
        continue;
      split_fields(line, field_separator(options.format), fields);
      const auto at = name + ":" + std::to_string(line_number);
      if (!seen_first_row) {
        seen_first_row = true;
        if (options.header.value_or(!all_numeric(fields))) {
          layout.header_line = line_number;
          continue;
        }
      }
      // The first data row fixes the number of fields and the label column.
      layout.fields = options.features > 0 ? options.features + 1 : static_cast<std::int64_t>(fields.size());
      if (layout.fields < 2)
        return fail_invalid(at + ": only one field (split at " + separator_name(options.format)
                            + "); a row needs a label and at least one feature");
      layout.label_column = options.label_column < 0 ? layout.fields + options.label_column
                                                     : options.label_column;
      if (layout.label_column < 0 || layout.label_column >= layout.fields)
        return fail_invalid(at + ": label column " + std::to_string(options.label_column) +
                    " is out of range for " + std::to_string(layout.fields) + " fields");
      if (static_cast<std::int64_t>(fields.size()) != layout.fields)
        return fail_invalid(at + ": expected " + std::to_string(layout.fields) + " fields, got " +
                    std::to_string(fields.size()));
      return layout;
    }
  }
  if (!seen_first_row)
    return fail_invalid(name + ": empty file");
  return fail_invalid(name + ": no data rows after the header on line " + std::to_string(layout.header_line));
}

/// The features a CSV text is parsed into (rows x features, row-major), kept alive by the dataset.
struct dense_storage {
  std::unique_ptr<float[]> values;
};

/// CSV rows of a known layout, for parse_text (text_parse.hpp).
class csv_format {
public:
  csv_format(std::string name, csv_layout layout, char separator)
    : name_(std::move(name)), layout_(layout), width_(layout.fields - 1), separator_(separator) {}

  piece_counts count(std::string_view piece, bool last) const {
    piece_counts c;
    c.lines = detail::count_bytes(piece, '\n', '\n').first;
    // A row of f fields takes at least 2f - 1 bytes and its newline: blank lines cost no rows.
    const auto lines = c.lines + (last && !piece.empty() && piece.back() != '\n' ? 1 : 0);
    c.rows = std::min<std::int64_t>(lines, static_cast<std::int64_t>(piece.size() + 1) / (2 * layout_.fields));
    c.items = c.rows * width_;
    return c;
  }

  std::int64_t data_lines(std::string_view buffer, std::int64_t lines_before) const {
    std::int64_t rows = 0;
    detail::for_each_line(buffer, lines_before + 1, [&](std::string_view line, std::int64_t number) {
      rows += number != layout_.header_line && !detail::trim(line).empty();
    });
    return rows;
  }

  result<void> allocate(const piece_counts& total) {
    storage_ = std::make_shared<dense_storage>();
    storage_->values = detail::uninitialised<float>(total.items);
    if (!storage_->values || !rows_.allocate(total.rows))
      return fail_runtime(name_ + ": not enough memory for " + std::to_string(total.rows) + " rows of "
                  + std::to_string(width_) + " features");
    return {};
  }

  piece_result parse(std::string_view piece, std::int64_t first_line, region at,
                     const piece_counts& room) {
    piece_result out;
    std::vector<std::string_view> fields;
    std::vector<float> row_values;
    std::int64_t line_number = first_line - 1;
    std::string_view rest = piece;
    std::string_view line;
    const auto fail_at = [&](std::string message) {
      out.error = std::pair{out.rows, name_ + ":" + std::to_string(line_number) + ": " + std::move(message)};
      return out;
    };
    while (detail::next_line(rest, line)) {
      ++line_number;
      if (line_number == layout_.header_line || detail::trim(line).empty())
        continue;
      split_fields(line, separator_, fields);
      if (static_cast<std::int64_t>(fields.size()) != layout_.fields)
        return fail_at("expected " + std::to_string(layout_.fields) + " fields, got " +
                       std::to_string(fields.size()));
      // The row is checked whole before it takes a place: the places are counted for rows of valid
      // (non-empty) fields.
      row_values.resize(static_cast<std::size_t>(width_));
      std::int64_t feature = 0;
      double label = 0;
      for (std::int64_t i = 0; i < layout_.fields; ++i) {
        const auto field = fields[static_cast<std::size_t>(i)];
        const auto value = detail::parse_number(field);
        if (!value)
          return fail_at("field " + std::to_string(i + 1) + ": expected a number, got " + detail::quote(field));
        if (i == layout_.label_column) {
          label = *value;
        } else {
          if (std::fabs(*value) > std::numeric_limits<float>::max())
            return fail_at("field " + std::to_string(i + 1) + ": " + detail::quote(field)
                           + " is too large for a float");
          row_values[static_cast<std::size_t>(feature++)] = static_cast<float>(*value);
        }
      }
      if (out.rows == room.rows)  // the counts make this impossible; it guards the writes
        return fail_at("more rows than the file can hold; the reader is wrong");
      const auto row = at.row + out.rows;
      std::copy(row_values.begin(), row_values.end(), &storage_->values[static_cast<std::size_t>(row * width_)]);
      rows_.set(row, label, line_number);
      ++out.rows;
    }
    out.items = out.rows * width_;
    return out;
  }

  void move(region from, region to, const piece_result& stored) {
    rows_.move(from.row, to.row, stored.rows);
    std::memmove(&storage_->values[static_cast<std::size_t>(to.item)],
                 &storage_->values[static_cast<std::size_t>(from.item)],
                 static_cast<std::size_t>(stored.items) * sizeof(float));
  }

  std::int64_t items_before(std::int64_t row) const { return row * width_; }

  /// The parsed rows as a dataset sharing the array.
  raw_dataset finish(const detail::parsed_text& stored) {
    raw_dataset out;
    rows_.finish(stored.rows, out);
    model::shared_dense x;
    x.values = storage_->values.get();
    x.rows = stored.rows;
    x.cols = width_;
    x.owner = std::move(storage_);
    x.writable = true;
    out.data.x = std::move(x);
    out.source = name_;
    return out;
  }

private:
  std::string name_;
  csv_layout layout_;
  std::int64_t width_;
  char separator_;
  std::shared_ptr<dense_storage> storage_;
  detail::row_labels rows_;
};

} // namespace

result<raw_dataset> detail::parse_csv(const std::string& name, text_source& source,
                                      const read_options& options, parse_options how) {
  auto layout = layout_of(name, source, options);
  if (!layout)
    return layout.error();
  if (auto ok = source.rewind(); !ok)
    return ok.error();
  how.limit = options.limit;
  csv_format format{name, *layout, field_separator(options.format)};
  return parse_whole(source, format, how,
                     name + ": no data rows after the header on line " + std::to_string(layout->header_line));
}

result<raw_dataset> detail::parse_csv(const std::string& name, std::string_view text,
                                      const read_options& options) {
  auto source = text_source::of(text);
  return parse_csv(name, source, options, parse_options{});
}

result<raw_dataset> read_csv(const std::string& path, const read_options& options) {
  auto source = detail::text_source::open(path, options.max_decompressed);
  if (!source)
    return source.error();
  if (options.hashing.enabled())
    return detail::parse_hashed_csv(path, *source, options, detail::parse_options{}, nullptr);
  return detail::parse_csv(path, *source, options, detail::parse_options{});
}

} // namespace shardopt::io
