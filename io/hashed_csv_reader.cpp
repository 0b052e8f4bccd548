#include "io/hashed_rows.hpp"
#include "io/reader_support.hpp"
#include "io/readers.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace shardopt::io {

namespace {

using detail::piece_counts;
using detail::piece_result;
using detail::region;

/// One field of a CSV line: its text (without its quotes) and whether it holds escaped quotes ("").
struct field {
  std::string_view text;
  bool escaped = false;
};

/// Splits a line into fields (RFC 4180 within one line): `separator` (a comma, or a tab for TSV)
/// separates fields; a field that starts with '"' runs to its closing '"', may hold separators, and
/// writes '"' as "". Unquoted fields are trimmed of blanks (spaces, and tabs where they do not
/// separate). Returns the error text (naming the field) for an unterminated quote or text after a
/// closing quote.
std::optional<std::string> split_quoted(std::string_view line, char separator, std::vector<field>& fields) {
  fields.clear();
  std::size_t i = 0;
  const auto n = line.size();
  const auto blank = [&](char c) { return c == ' ' || (c == '\t' && separator != '\t'); };
  for (;;) {
    while (i < n && blank(line[i]))
      ++i;
    field f;
    if (i < n && line[i] == '"') {
      std::size_t j = i + 1;
      for (;; ++j) {
        if (j >= n)
          return "field " + std::to_string(fields.size() + 1)
                 + ": unterminated quote (a quoted field must close on its line)";
        if (line[j] == '"') {
          if (j + 1 < n && line[j + 1] == '"') {
            f.escaped = true;
            ++j;
            continue;
          }
          break;
        }
      }
      f.text = line.substr(i + 1, j - i - 1);
      i = j + 1;
      while (i < n && blank(line[i]))
        ++i;
      if (i < n && line[i] != separator)
        return "field " + std::to_string(fields.size() + 1) + ": text after the closing quote";
    } else {
      const auto end = line.find(separator, i);
      f.text = detail::trim(line.substr(i, end == std::string_view::npos ? n - i : end - i));
      i = end == std::string_view::npos ? n : end;
    }
    fields.push_back(f);
    if (i >= n)
      return std::nullopt;
    ++i;  // the separator
  }
}

/// A field's text with "" written back as '"'.
std::string_view unescaped(const field& f, std::string& buffer) {
  if (!f.escaped)
    return f.text;
  buffer.clear();
  for (std::size_t i = 0; i < f.text.size(); ++i) {
    buffer.push_back(f.text[i]);
    if (f.text[i] == '"')
      ++i;
  }
  return buffer;
}

/// What each column of a hashed CSV is.
enum class column_kind { label, number, category, text };

/// The columns of a hashed CSV: names (the header's, or 0-based indices), kinds and seeds.
struct hashed_layout {
  std::int64_t header_line = 0;  ///< 0: no header
  char separator = ',';          ///< a tab for TSV
  std::vector<std::string> names;
  std::vector<column_kind> kinds;
  std::vector<std::uint32_t> hashes;  ///< numbers: the column's feature hash; others: the namespace seed
  std::int64_t numbers = 0;           ///< number and category columns: one feature each at most
  bool has_text = false;
};

/// The index of column `wanted` (a header name, else a 0-based index), or an error naming `option`.
result<std::size_t> column_index(const std::string& wanted, const std::vector<std::string>& names,
                                 bool header, const std::string& option) {
  for (std::size_t i = 0; i < names.size() && header; ++i)
    if (names[i] == wanted)
      return i;
  if (auto index = detail::parse_integer(wanted); index && *index >= 0
      && *index < static_cast<std::int64_t>(names.size()) && wanted.find_first_not_of("0123456789") == std::string::npos)
    return static_cast<std::size_t>(*index);
  std::string have;
  for (std::size_t i = 0; i < names.size() && i < 20; ++i)
    have += (i ? ", " : "") + names[i];
  return fail_invalid(option + ": no column '" + wanted + "' ("
                      + (header ? "the header names " + have : "no header: columns are 0 to "
                                                                 + std::to_string(names.size() - 1))
                      + ")");
}

/// The layout from the first non-blank lines of `source`: the header (`options.header`, or when not
/// given, a first line whose label field is not a number), the columns' kinds and hashes.
result<hashed_layout> hashed_layout_of(const std::string& name, detail::text_source& source,
                                       const read_options& options) {
  std::vector<field> fields;
  std::int64_t line_number = 0;
  const char separator = field_separator(options.format);
  for (;;) {
    auto text = source.next();
    if (!text)
      return text.error();
    if (text->empty())
      return fail_invalid(name + ": empty file");
    std::string_view rest = *text;
    std::string_view line;
    while (detail::next_line(rest, line)) {
      ++line_number;
      if (detail::trim(line).empty())
        continue;
      const auto at = name + ":" + std::to_string(line_number);
      if (auto problem = split_quoted(line, separator, fields))
        return fail_invalid(at + ": " + *problem);
      const auto count = static_cast<std::int64_t>(fields.size());
      if (count < 2)
        return fail_invalid(at + ": only one field (split at " + separator_name(options.format)
                            + "); a row needs a label and at least one feature");
      const auto label = options.label_column < 0 ? count + options.label_column : options.label_column;
      if (label < 0 || label >= count)
        return fail_invalid(at + ": label column " + std::to_string(options.label_column)
                            + " is out of range for " + std::to_string(count) + " fields");
      hashed_layout layout;
      layout.separator = separator;
      const bool header = options.header.value_or(!detail::parse_number(fields[static_cast<std::size_t>(label)].text));
      std::string buffer;
      for (std::int64_t i = 0; i < count; ++i)
        layout.names.push_back(header ? std::string{unescaped(fields[static_cast<std::size_t>(i)], buffer)}
                                      : std::to_string(i));
      if (header)
        layout.header_line = line_number;
      // Columns recorded at training (eval): a header must name them; a file without one has them.
      const auto& recorded = options.hashing.columns;
      if (!recorded.empty()) {
        const auto list = [](const std::vector<std::string>& names) {
          std::string out;
          for (std::size_t i = 0; i < names.size() && i < 20; ++i)
            out += (i ? "," : "") + names[i];
          return out;
        };
        if (recorded.size() != layout.names.size())
          return fail_invalid(at + ": " + std::to_string(count) + " fields, but the model's data had "
                              + std::to_string(recorded.size()) + " columns (" + list(recorded) + ")");
        if (header && layout.names != recorded)
          return fail_invalid(at + ": the header names " + list(layout.names) + ", the model's data had "
                              + list(recorded));
        layout.names = recorded;
      }
      const bool named = header || !recorded.empty();
      layout.kinds.assign(static_cast<std::size_t>(count), column_kind::number);
      layout.kinds[static_cast<std::size_t>(label)] = column_kind::label;
      for (const auto& [columns, kind, option] :
           {std::tuple{&options.hashing.categorical, column_kind::category, "--categorical"},
            std::tuple{&options.hashing.text, column_kind::text, "--text"}})
        for (const auto& wanted : *columns) {
          auto index = column_index(wanted, layout.names, named, option);
          if (!index)
            return index.error().with_context(name);
          auto& slot = layout.kinds[*index];
          if (slot == column_kind::label)
            return fail_invalid(name + ": " + option + ": column '" + wanted + "' is the label column");
          if (slot != column_kind::number)
            return fail_invalid(name + ": column '" + wanted + "' is named twice in --categorical and --text");
          slot = kind;
        }
      for (std::size_t i = 0; i < layout.kinds.size(); ++i) {
        const auto kind = layout.kinds[i];
        layout.hashes.push_back(kind == column_kind::number ? murmur3(layout.names[i], 0)
                                                            : namespace_seed(layout.names[i]));
        layout.numbers += kind == column_kind::number || kind == column_kind::category;
        layout.has_text = layout.has_text || kind == column_kind::text;
      }
      return layout;
    }
  }
}

/// CSV rows with hashed string columns (io/hashing.hpp), for parse_text (text_parse.hpp).
class hashed_csv_format {
public:
  /// `h` with the layout's column names recorded (the dataset and a model trained on it keep them).
  hashed_csv_format(std::string name, hashed_layout layout, hashing_options h)
    : name_(name), layout_(std::move(layout)), word_pairs_(h.word_pairs), dimension_(h.dimension()),
      rows_(std::move(name), recorded(std::move(h), layout_.names)) {}

  piece_counts count(std::string_view piece, bool last) const {
    piece_counts c;
    c.lines = detail::count_bytes(piece, '\n', '\n').first;
    c.rows = c.lines + (last && !piece.empty() && piece.back() != '\n' ? 1 : 0);
    c.items = c.rows * layout_.numbers
              + (layout_.has_text ? max_words(static_cast<std::int64_t>(piece.size()), word_pairs_) : 0);
    c.items = std::min(c.items, c.rows * dimension_);  // a merged row has at most 2^bits columns
    return c;
  }

  std::int64_t data_lines(std::string_view buffer, std::int64_t lines_before) const {
    std::int64_t rows = 0;
    detail::for_each_line(buffer, lines_before + 1, [&](std::string_view line, std::int64_t number) {
      rows += number != layout_.header_line && !detail::trim(line).empty();
    });
    return rows;
  }

  result<void> allocate(const piece_counts& total) { return rows_.allocate(total); }

  piece_result parse(std::string_view piece, std::int64_t first_line, region at, const piece_counts& room) {
    piece_result out;
    std::int64_t line_number = first_line - 1;
    const auto fail_at = [&](std::string message) {
      out.error = std::pair{out.rows, name_ + ":" + std::to_string(line_number) + ": " + std::move(message)};
      return out;
    };
    std::vector<field> fields;
    std::string buffer;
    hashed_row row;
    std::string_view rest = piece;
    std::string_view line;
    const auto count = layout_.kinds.size();
    while (detail::next_line(rest, line)) {
      ++line_number;
      if (line_number == layout_.header_line || detail::trim(line).empty())
        continue;
      if (auto problem = split_quoted(line, layout_.separator, fields))
        return fail_at(*problem);
      if (fields.size() != count)
        return fail_at("expected " + std::to_string(count) + " fields, got " + std::to_string(fields.size()));
      row.clear();
      double label = 0;
      for (std::size_t i = 0; i < count; ++i) {
        const auto& f = fields[i];
        const auto column = [&] { return "field " + std::to_string(i + 1) + " (" + layout_.names[i] + ")"; };
        switch (layout_.kinds[i]) {
          case column_kind::label:
          case column_kind::number: {
            const auto value = detail::parse_number(f.text);
            if (!value)
              return fail_at(column() + ": expected a number, got " + detail::quote(f.text));
            if (layout_.kinds[i] == column_kind::label)
              label = *value;
            else
              row.add(layout_.hashes[i], *value);
            break;
          }
          case column_kind::category:
            if (!f.text.empty())  // an empty category is a missing value: no feature
              row.add(murmur3(unescaped(f, buffer), layout_.hashes[i]), 1.0);
            break;
          case column_kind::text:
            add_words(f.text, layout_.hashes[i], word_pairs_, row);
            break;
        }
        if (static_cast<std::int64_t>(row.size()) > max_hashed_row)
          return fail_at(column() + ": more than " + std::to_string(max_hashed_row) + " features in one row");
      }
      if (auto problem = rows_.store(row, label, line_number, at, out, room))
        return fail_at(*problem);
    }
    return out;
  }

  void move(region from, region to, const piece_result& stored) { rows_.move(from, to, stored); }
  std::int64_t items_before(std::int64_t row) const { return rows_.items_before(row); }
  raw_dataset finish(const detail::parsed_text& stored) { return rows_.finish(stored); }

private:
  static hashing_options recorded(hashing_options h, const std::vector<std::string>& names) {
    h.columns = names;
    return h;
  }

  std::string name_;
  hashed_layout layout_;
  bool word_pairs_;
  std::int64_t dimension_;
  detail::hashed_rows rows_;
};

} // namespace

result<raw_dataset> detail::parse_hashed_csv(const std::string& name, text_source& source,
                                             const read_options& options, parse_options how,
                                             text_source* header_source) {
  if (auto ok = check_hashing(options.hashing); !ok)
    return ok.error();
  if (!options.hashing.pairs.empty())
    return fail_invalid(name + ": --pairs crosses VW namespaces; for CSV text use --word-pairs");
  if (options.features > 0 && options.features != options.hashing.dimension())
    return fail_invalid(name + ": --features " + std::to_string(options.features) + " differs from the 2^"
                        + std::to_string(options.hashing.bits) + " hashed columns");
  // A part after the first reads the columns from the file's first lines (`header_source`).
  auto& first = header_source ? *header_source : source;
  auto layout = hashed_layout_of(name, first, options);
  if (!layout)
    return layout.error();
  if (auto ok = first.rewind(); !ok)
    return ok.error();
  if (header_source)
    layout->header_line = 0;  // this part's lines are numbered from its own first line
  how.limit = options.limit;
  const auto header_line = layout->header_line;
  hashed_csv_format format{name, std::move(*layout), options.hashing};
  return parse_whole(source, format, how,
                     header_line > 0 ? name + ": no data rows after the header on line " + std::to_string(header_line)
                                     : name + ": empty file (no examples)");
}

result<raw_dataset> detail::parse_hashed_csv(const std::string& name, std::string_view text,
                                             const read_options& options) {
  auto source = text_source::of(text);
  return parse_hashed_csv(name, source, options, parse_options{}, nullptr);
}

} // namespace shardopt::io
