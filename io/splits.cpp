#include "io/splits.hpp"

#include "io/binary_cache.hpp"
#include "io/reader_support.hpp"
#include "io/text_parse.hpp"
#include "io/text_source.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <vector>

namespace shardopt::io {

namespace {

constexpr std::size_t max_distinct_labels = 65'537;

/// Where the line after line `line` (1-based, counted from the source's first line) starts in the
/// text: the end of the lines that hold a part's first examples.
result<std::int64_t> start_after_line(detail::text_source& source, std::int64_t line) {
  if (auto ok = source.rewind(); !ok)
    return ok.error();
  for (;;) {
    auto text = source.next();
    if (!text)
      return text.error();
    if (text->empty())
      return fail_invalid(source.name() + ": the text ended before line " + std::to_string(line) + " of the part");
    const auto at = source.position() - static_cast<std::int64_t>(text->size());
    for (std::size_t from = 0; from < text->size();) {
      auto newline = text->find('\n', from);
      if (newline == std::string_view::npos)
        newline = text->size() - 1;  // the text's last line, with no newline
      if (--line == 0)
        return at + static_cast<std::int64_t>(newline) + 1;
      from = newline + 1;
    }
  }
}

} // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> block_aligned_shifts(const std::vector<std::int64_t>& rows,
                                                                        std::int64_t block_rows) {
  if (rows.empty() || block_rows < 1 || block_rows > max_part_shift)
    return {};
  std::vector<std::int64_t> starts{0};  // where each part's examples start in the file, and the end
  for (const auto count : rows)
    starts.push_back(starts.back() + count);
  const auto n = starts.back();
  // Part i after the first starts at the first block boundary at or after its first example.
  std::vector<std::int64_t> aligned(starts.size());
  for (std::size_t i = 0; i < starts.size(); ++i)
    aligned[i] = i == 0 ? 0 : i + 1 == starts.size() ? n : std::min(n, (starts[i] + block_rows - 1) / block_rows * block_rows);
  std::vector<std::pair<std::int64_t, std::int64_t>> shifts;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (aligned[i + 1] <= aligned[i])
      return {};  // this part's examples all lie in its predecessor's last block
    shifts.emplace_back(aligned[i] - starts[i], aligned[i + 1] - starts[i + 1]);
  }
  return shifts;
}

result<raw_dataset> read_part(const part_request& request) {
  const auto& spec = request.spec;
  const auto part = request.part;
  const auto parts = request.parts;
  if (parts < 1 || part < 0 || part >= parts)
    return fail_invalid(spec + ": part " + std::to_string(part) + " of " + std::to_string(parts)
                + " does not exist");
  if (request.options.limit > 0)
    return fail_invalid("--limit cannot be combined with node-local data");
  const std::string label = " (part " + std::to_string(part + 1) + " of " + std::to_string(parts);
  const bool shifted = request.skip != 0 || request.extra != 0;
  if (request.skip < 0 || request.skip >= max_part_shift || request.extra < 0
      || request.extra >= max_part_shift || (request.extra > 0 && part + 1 == parts)
      || (request.skip > 0 && part == 0))
    return fail_invalid(spec + label + "): cannot move " + std::to_string(request.skip) + " examples out and "
                        + std::to_string(request.extra) + " in (each at most " + std::to_string(max_part_shift - 1)
                        + ", none before the first part or after the last part)");

  // IDX: fixed-size records, split by record ranges; the records before the part are skipped.
  if (has_builtin_test_split(spec) || is_binary_dataset(spec)) {
    if (shifted)
      return fail_invalid(spec + label + "): only text parts move examples across their edges; this part "
                          + "is whole canonical blocks already");
  }
  if (has_builtin_test_split(spec)) {
    auto files = detail::mnist_files(spec, split::train);
    if (!files)
      return files.error();
    auto piece = detail::read_idx_range(files->first, files->second, request.options, part, parts);
    if (!piece)
      return piece.error().with_context(spec + label + ")");
    piece->source += label + ")";
    return piece;
  }

  if (is_binary_dataset(spec))
    return read_binary_part(spec, request.options, part, parts);
  auto format = detail::file_format(spec, request.options);
  if (!format)
    return format.error();
  const bool csv = *format == data_format::csv || *format == data_format::tsv;
  if (!csv && *format != data_format::libsvm && *format != data_format::vw)
    return fail_invalid(spec + ": IDX data is read from a directory in the MNIST layout, not a single file");
  auto source = detail::text_source::open(spec, request.options.max_decompressed, part, parts);
  if (!source)
    return source.error();
  const std::string name = spec + label + ", bytes " + std::to_string(source->begin()) + "-"
                           + std::to_string(source->end()) + ")";
  // A part with no line that holds anything has no examples: say so before parsing says less.
  auto holds_lines = [](detail::text_source& text) -> result<bool> {
    for (;;) {
      auto buffer = text.next();
      if (!buffer)
        return buffer.error();
      if (buffer->empty())
        return false;
      if (buffer->find_first_not_of(" \t\r\n") != std::string_view::npos) {
        if (auto ok = text.rewind(); !ok)
          return ok.error();
        return true;
      }
    }
  };
  auto holds = holds_lines(*source);
  if (!holds)
    return holds.error();
  if (!*holds)
    return fail_invalid(name + ": no examples; use fewer shards");
  auto parse = [&](detail::text_source& text, std::int64_t which, const std::string& named,
                   read_options options) -> result<raw_dataset> {
    if (*format == data_format::vw)
      return detail::parse_vw(named, text, options, detail::parse_options{});
    options.format = *format;  // CSV or TSV: the separator, for a format told by the extension
    if (csv && options.hashing.enabled()) {
      // Hashed columns are named by the header, which only the file's first part holds: a later
      // part reads it from the start of the file, so that every part hashes alike.
      if (which == 0)
        return detail::parse_hashed_csv(named, text, options, detail::parse_options{}, nullptr);
      auto whole = detail::text_source::open(spec, options.max_decompressed, 0, 1, std::size_t{1} << 20);
      if (!whole)
        return whole.error();
      return detail::parse_hashed_csv(named, text, options, detail::parse_options{}, &*whole);
    }
    if (*format == data_format::libsvm && options.hashing.enabled())
      return fail_invalid(spec + ": LIBSVM input is numbers already; hashing (--hash-bits) is for VW and CSV");
    if (which > 0)
      options.header = false;  // only the file's first line can be a header
    return csv ? detail::parse_csv(named, text, options, detail::parse_options{})
               : detail::parse_libsvm(named, text, options, detail::parse_options{});
  };
  if (!shifted)
    return parse(*source, part, name, request.options);
  // Moved edges: the part's first `skip` examples end the previous part's last block, and the
  // first `extra` examples of the next part's text end this part's. Each edge is found by reading
  // those few examples (in buffers of 1 MiB) and the end of the line of the last of them; the part
  // is then parsed once, between its new edges, so its line numbers count from its new first line.
  constexpr std::size_t probe_buffer = std::size_t{1} << 20;
  auto edge = [&](std::int64_t begin, std::int64_t end, std::int64_t which, std::int64_t examples,
                  const std::string& named) -> result<std::int64_t> {
    auto probe = detail::text_source::open_range(spec, request.options.max_decompressed, begin, end, probe_buffer);
    if (!probe)
      return probe.error();
    auto options = request.options;
    options.limit = examples;
    auto first = parse(*probe, which, named, options);
    if (!first)
      return first.error();
    if (first->data.rows() < examples)
      return fail_invalid(named + ": holds " + std::to_string(first->data.rows()) + " examples, not the "
                          + std::to_string(examples) + " that the block alignment moves");
    return start_after_line(*probe, first->lines.back());
  };
  auto begin = source->begin();
  auto end = source->end();
  if (request.skip > 0) {
    auto moved = edge(begin, end, part, request.skip, name);
    if (!moved)
      return moved.error();
    begin = *moved;
  }
  if (request.extra > 0) {
    const auto next_name = spec + " (part " + std::to_string(part + 2) + " of " + std::to_string(parts)
                           + ", bytes " + std::to_string(end) + "-)";
    auto moved = edge(end, INT64_MAX, part + 1, request.extra, next_name);
    if (!moved)
      return moved.error();
    end = *moved;
  }
  if (begin >= end)
    return fail_invalid(name + ": no examples left after moving the first " + std::to_string(request.skip)
                        + " to the previous part; use fewer shards");
  auto narrowed = detail::text_source::open_range(spec, request.options.max_decompressed, begin, end);
  if (!narrowed)
    return narrowed.error();
  holds = holds_lines(*narrowed);
  if (!holds)
    return holds.error();
  if (!*holds)
    return fail_invalid(name + ": no examples left after moving the first " + std::to_string(request.skip)
                        + " to the previous part; use fewer shards");
  const std::string moved_name = spec + label + ", bytes " + std::to_string(begin) + "-" + std::to_string(end)
                                 + " moved to start a block)";
  return parse(*narrowed, part, moved_name, request.options);
}

part_summary summarize(const raw_dataset& part) {
  part_summary out;
  const auto& data = part.data;
  out.rows = data.rows();
  out.cols = data.cols();
  out.pixels = part.pixels;
  out.hashing = part.hashing;
  std::set<double> labels;
  for (Eigen::Index i = 0; i < data.y.size() && labels.size() < max_distinct_labels; ++i)
    labels.insert(data.y[i]);
  out.labels.assign(labels.begin(), labels.end());
  out.bounds = bounds_of(data);
  return out;
}

result<fitted_parts> fit_parts(model::model_kind kind, std::int64_t classes,
                               const std::vector<part_summary>& parts, scale_mode mode,
                               bool standardize, const std::string& source, const part_moments& moments) {
  if (parts.empty())
    return fail_invalid(source + ": no parts");
  fitted_parts out;
  const bool sparse = parts.front().bounds.sparse;
  const bool pixels = parts.front().pixels;
  std::int64_t d = 0;
  std::set<double> labels;
  feature_bounds bounds;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const auto& part = parts[p];
    if (part.bounds.sparse != sparse || part.pixels != pixels || part.hashing != parts.front().hashing)
      return fail_invalid(source + ": part " + std::to_string(p + 1) + " is stored differently from part 1");
    if (!sparse && p > 0 && part.cols != d)
      return fail_invalid(source + ": part " + std::to_string(p + 1) + " has " + std::to_string(part.cols)
                  + " features, part 1 has " + std::to_string(d));
    d = std::max(d, part.cols);
    out.rows += part.rows;
    labels.insert(part.labels.begin(), part.labels.end());
    merge_into(bounds, part.bounds);
  }
  out.features = d;
  out.hashing = parts.front().hashing;

  // Labels: fit on one example per distinct value, as fit_labels does on the whole data.
  raw_dataset distinct;
  distinct.source = source + " (labels of all parts)";
  distinct.data.x = model::dense_features(static_cast<Eigen::Index>(labels.size()), 0);
  distinct.data.y = Eigen::Map<const Eigen::VectorXd>(
    std::vector<double>(labels.begin(), labels.end()).data(), static_cast<Eigen::Index>(labels.size()));
  auto encoding = fit_labels(kind, distinct, classes);
  if (!encoding)
    return encoding.error();
  out.labels = std::move(*encoding);

  // Scaling: the moments of every part on the grid of the merged bounds, checked, then merged.
  auto scaling = fit_scaling(bounds, scale_factor(mode, pixels), standardize,
                             [&](const moment_grid& grid) -> result<feature_moments> {
                               feature_moments total;
                               for (std::size_t p = 0; p < parts.size(); ++p) {
                                 const auto where = source + ": part " + std::to_string(p + 1);
                                 auto part = moments(p, grid);
                                 if (!part)
                                   return part.error().with_context(where);
                                 if (auto ok = check_moments(*part, parts[p].rows, parts[p].cols); !ok)
                                   return ok.error().with_context(where);
                                 merge_into(total, *part);
                               }
                               return total;
                             });
  if (!scaling)
    return scaling.error();
  out.scaling = std::move(*scaling);
  return out;
}

} // namespace shardopt::io
