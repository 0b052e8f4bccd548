#include "io/reader_support.hpp"
#include "io/readers.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace shardopt::io {

namespace {

/// Splits a line at every comma into trimmed fields; a field in double quotes loses its quotes.
/// Quoted commas are not supported: numeric data has none.
void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  for (;;) {
    const auto comma = line.find(',');
    auto field = detail::trim(line.substr(0, comma));
    if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
      field = field.substr(1, field.size() - 2);
    fields.push_back(field);
    if (comma == std::string_view::npos)
      return;
    line.remove_prefix(comma + 1);
  }
}

bool all_numeric(const std::vector<std::string_view>& fields) {
  return std::all_of(fields.begin(), fields.end(),
                     [](std::string_view field) { return detail::parse_number(field).has_value(); });
}

} // namespace

/// Parses CSV text already in memory; `path` only names the file in messages.
result<raw_dataset> detail::parse_csv(const std::string& path, std::string_view text,
                              const read_options& options) {
  std::vector<std::string_view> fields;
  std::vector<double> labels;
  std::vector<std::int64_t> lines;
  model::dense_features x;
  std::int64_t field_count = 0; // fixed by the first data row
  std::int64_t label_column = 0;
  std::int64_t rows = 0;
  std::int64_t line_number = 0;
  std::int64_t header_line = 0;
  bool seen_first_row = false;

  std::string_view rest = text;
  std::string_view line;
  const auto at = [&] { return path + ":" + std::to_string(line_number); };
  while (detail::next_line(rest, line)) {
    ++line_number;
    if (detail::trim(line).empty())
      continue;
    split_fields(line, fields);

    // The first non-blank row is a header when told so, or when any field is not a number.
    if (!seen_first_row) {
      seen_first_row = true;
      if (options.header.value_or(!all_numeric(fields))) {
        header_line = line_number;
        continue;
      }
    }

    // The first data row fixes the number of fields, the label column and an upper bound on the
    // number of rows, so the feature matrix is allocated once.
    if (field_count == 0) {
      field_count = options.features > 0 ? options.features + 1
                                         : static_cast<std::int64_t>(fields.size());
      if (field_count < 2)
        return fail(at() + ": only one field; a row needs a label and at least one feature");
      label_column = options.label_column < 0 ? field_count + options.label_column
                                              : options.label_column;
      if (label_column < 0 || label_column >= field_count)
        return fail(at() + ": label column " + std::to_string(options.label_column) +
                    " is out of range for " + std::to_string(field_count) + " fields");
      if (static_cast<std::int64_t>(fields.size()) != field_count)
        return fail(at() + ": expected " + std::to_string(field_count) + " fields, got " +
                    std::to_string(fields.size()));
      // This row, plus at most one per line left (the last may lack its '\n') and at most as many
      // as the bytes left can hold: a row of f non-empty fields takes 2f - 1 bytes and a newline,
      // so blank lines cannot make a wide first row cost more than the file's own size.
      const auto lines_left = 1 + std::count(rest.begin(), rest.end(), '\n');
      const auto rows_left = static_cast<std::int64_t>(rest.size() + 1) / (2 * field_count);
      std::int64_t capacity = 1 + std::min<std::int64_t>(lines_left, rows_left);
      if (options.limit > 0)
        capacity = std::min(capacity, options.limit);
      x.resize(capacity, field_count - 1);
      labels.reserve(static_cast<std::size_t>(capacity));
      lines.reserve(static_cast<std::size_t>(capacity));
    }

    if (static_cast<std::int64_t>(fields.size()) != field_count)
      return fail(at() + ": expected " + std::to_string(field_count) + " fields, got " +
                  std::to_string(fields.size()));
    if (rows == x.rows())  // the bound above makes this impossible; it guards the unchecked writes
      return fail(at() + ": more rows than the file can hold; the reader is wrong");
    std::int64_t feature = 0;
    for (std::int64_t i = 0; i < field_count; ++i) {
      const auto field = fields[static_cast<std::size_t>(i)];
      const auto value = detail::parse_number(field);
      if (!value)
        return fail(at() + ": field " + std::to_string(i + 1) + ": expected a number, got " +
                    detail::quote(field));
      if (i == label_column)
        labels.push_back(*value);
      else
        x(rows, feature++) = static_cast<float>(*value);
    }
    lines.push_back(line_number);
    ++rows;
    if (options.limit > 0 && rows == options.limit)
      break;
  }

  if (!seen_first_row)
    return fail(path + ": empty file");
  if (rows == 0)
    return fail(path + ": no data rows after the header on line " + std::to_string(header_line));

  // Shrinking the row count of a row-major matrix keeps its data in place.
  x.conservativeResize(rows, field_count - 1);
  raw_dataset out;
  out.data.x = std::move(x);
  out.data.y = Eigen::Map<const Eigen::VectorXd>(labels.data(), rows);
  out.source = path;
  out.lines = std::move(lines);
  return out;
}


result<raw_dataset> read_csv(const std::string& path, const read_options& options) {
  auto text = detail::read_whole_file(path, options.max_decompressed);
  if (!text)
    return text.error();
  return detail::parse_csv(path, text.value(), options);
}

} // namespace shardopt::io
