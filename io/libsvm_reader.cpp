#include "io/reader_support.hpp"
#include "io/readers.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

namespace shardopt::io {

namespace {

/// Splits off the next token of `rest` separated by spaces or tabs; false when none is left.
bool next_token(std::string_view& rest, std::string_view& token) {
  const auto begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    rest = {};
    return false;
  }
  rest.remove_prefix(begin);
  const auto end = rest.find_first_of(" \t");
  token = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return true;
}

} // namespace

/// Parses LIBSVM text already in memory into CSR arrays; `path` only names the file in messages.
result<raw_dataset> detail::parse_libsvm(const std::string& path, std::string_view text,
                                 const read_options& options) {
  constexpr auto max_index = std::int64_t{std::numeric_limits<std::int32_t>::max()};
  if (options.features > max_index)
    return fail(path + ": " + std::to_string(options.features) + " features are too many (at most " +
                std::to_string(max_index) + ")");
  std::vector<std::int32_t> row_starts{0};
  std::vector<std::int32_t> columns;
  std::vector<float> values;
  std::vector<double> labels;
  std::vector<std::int64_t> lines;
  std::int64_t widest = 0; // the largest index seen
  std::int64_t line_number = 0;

  const auto at = [&] { return path + ":" + std::to_string(line_number); };
  std::string_view rest = text;
  std::string_view line;
  while (detail::next_line(rest, line)) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::string_view token;
    if (!next_token(line, token))
      continue;

    // The label, then index:value pairs with strictly increasing 1-based indices.
    const auto label = detail::parse_number(token);
    if (!label)
      return fail(at() + ": label: expected a number, got " + detail::quote(token));
    std::int64_t previous = 0;
    while (next_token(line, token)) {
      if (token.substr(0, 4) == "qid:") // svmlight ranking groups carry no feature
        continue;
      const auto colon = token.find(':');
      if (colon == std::string_view::npos)
        return fail(at() + ": malformed pair " + detail::quote(token) + ": expected index:value");
      const auto index = detail::parse_integer(token.substr(0, colon));
      if (!index)
        return fail(at() + ": malformed pair " + detail::quote(token) + ": index is not an integer");
      const auto value = detail::parse_number(token.substr(colon + 1));
      if (!value)
        return fail(at() + ": malformed pair " + detail::quote(token) + ": value is not a number");
      if (*index < 1)
        return fail(at() + ": index " + std::to_string(*index) + ": LIBSVM indices start at 1");
      if (*index <= previous)
        return fail(at() + ": index " + std::to_string(*index) + " after " +
                    std::to_string(previous) + ": indices must increase");
      if (options.features > 0 && *index > options.features)
        return fail(at() + ": index " + std::to_string(*index) +
                    " is larger than the number of features (" + std::to_string(options.features) +
                    ")");
      if (*index > max_index)
        return fail(at() + ": index " + std::to_string(*index) + " is too large (at most " +
                    std::to_string(max_index) + ")");
      if (columns.size() == static_cast<std::size_t>(max_index))
        return fail(at() + ": more than " + std::to_string(max_index) +
                    " non-zero values; too many for one dataset");
      previous = *index;
      columns.push_back(static_cast<std::int32_t>(*index - 1));
      values.push_back(static_cast<float>(*value));
    }
    widest = std::max(widest, previous);
    row_starts.push_back(static_cast<std::int32_t>(columns.size()));
    labels.push_back(*label);
    lines.push_back(line_number);
    if (options.limit > 0 && static_cast<std::int64_t>(labels.size()) == options.limit)
      break;
  }
  if (labels.empty())
    return fail(path + ": empty file (no examples)");

  const auto rows = static_cast<std::int64_t>(labels.size());
  const auto cols = options.features > 0 ? options.features : widest;
  const auto nonzeros = static_cast<std::int64_t>(columns.size());
  // The CSR arrays are copied into the matrix's own storage as they are. Assigning a Map instead
  // makes Eigen reserve 2 x max(rows, cols) entries first: 16 GB for one index near 2^31.
  model::sparse_features x(rows, cols);
  x.resizeNonZeros(nonzeros);
  std::copy(row_starts.begin(), row_starts.end(), x.outerIndexPtr());
  std::copy(columns.begin(), columns.end(), x.innerIndexPtr());
  std::copy(values.begin(), values.end(), x.valuePtr());
  raw_dataset out;
  out.data.x = std::move(x);
  out.data.y = Eigen::Map<const Eigen::VectorXd>(labels.data(), rows);
  out.source = path;
  out.lines = std::move(lines);
  return out;
}


result<raw_dataset> read_libsvm(const std::string& path, const read_options& options) {
  auto text = detail::read_whole_file(path, options.max_decompressed);
  if (!text)
    return text.error();
  return detail::parse_libsvm(path, text.value(), options);
}

} // namespace shardopt::io
