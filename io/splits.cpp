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

namespace shardopt::io {

namespace {

constexpr std::size_t max_distinct_labels = 65'537;

} // namespace

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

  // IDX: fixed-size records, split by record ranges; the records before the part are skipped.
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
  for (bool blank = true; blank;) {
    auto text = source->next();
    if (!text)
      return text.error();
    if (text->empty())
      return fail_invalid(name + ": no examples; use fewer shards");
    blank = text->find_first_not_of(" \t\r\n") == std::string_view::npos;
  }
  if (auto ok = source->rewind(); !ok)
    return ok.error();
  if (*format == data_format::vw)
    return detail::parse_vw(name, *source, request.options, detail::parse_options{});
  auto options = request.options;
  options.format = *format;  // CSV or TSV: the separator, for a format told by the extension
  if (csv && options.hashing.enabled()) {
    // Hashed columns are named by the header, which only the file's first part holds: a later part
    // reads it from the start of the file, so that every part hashes alike.
    if (part == 0)
      return detail::parse_hashed_csv(name, *source, options, detail::parse_options{}, nullptr);
    auto whole = detail::text_source::open(spec, request.options.max_decompressed);
    if (!whole)
      return whole.error();
    return detail::parse_hashed_csv(name, *source, options, detail::parse_options{}, &*whole);
  }
  if (*format == data_format::libsvm && request.options.hashing.enabled())
    return fail_invalid(spec + ": LIBSVM input is numbers already; hashing (--hash-bits) is for VW and CSV");
  if (part > 0)
    options.header = false;  // only the file's first line can be a header
  return csv ? detail::parse_csv(name, *source, options, detail::parse_options{})
           : detail::parse_libsvm(name, *source, options, detail::parse_options{});
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
