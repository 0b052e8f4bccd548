#include "io/hashed_rows.hpp"
#include "io/reader_support.hpp"
#include "io/readers.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

namespace shardopt::io {

namespace {

using detail::piece_counts;
using detail::piece_result;
using detail::region;

bool vw_blank(char c) { return c == ' ' || c == '\t'; }

/// A line without its trailing '\r' and blanks.
std::string_view trimmed_end(const char* begin, const char* end) {
  while (end > begin && (end[-1] == '\r' || vw_blank(end[-1])))
    --end;
  return {begin, static_cast<std::size_t>(end - begin)};
}

/// Calls f(token) for each blank-separated token of `text`.
template <class F>
void for_each_token(std::string_view text, F&& f) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && vw_blank(text[i]))
      ++i;
    const auto start = i;
    while (i < text.size() && !vw_blank(text[i]))
      ++i;
    if (i > start)
      f(text.substr(start, i - start));
  }
}

/// A namespace section of a line: its name (empty for the default one) and its features.
struct section {
  std::string_view name;
  std::string_view features;
};

/// Calls f(section) for each '|'-started section of `text` (which starts at the first '|').
template <class F>
void for_each_section(std::string_view text, F&& f) {
  while (!text.empty()) {
    text.remove_prefix(1);  // the '|'
    const auto next = text.find('|');
    const auto body = text.substr(0, next);
    std::size_t name_end = 0;
    while (name_end < body.size() && !vw_blank(body[name_end]))
      ++name_end;
    f(section{body.substr(0, name_end), body.substr(name_end)});
    text.remove_prefix(next == std::string_view::npos ? text.size() : next);
  }
}

/// A namespace's name without its weight (`name:weight`).
std::string_view bare_name(std::string_view name) { return name.substr(0, name.find(':')); }

/// The first letter of a namespace, by which `--pairs` names it (' ' for the default one); `name`
/// without its weight.
unsigned char letter_of(std::string_view name) { return name.empty() ? ' ' : static_cast<unsigned char>(name[0]); }

/// Features of a row by namespace letter: how many (for bounds) before pairing.
using letter_counts = std::array<std::int64_t, 256>;

/// The most features pairs `pairs` make of namespaces with `counts` features.
std::int64_t paired(const std::vector<std::string>& pairs, const letter_counts& counts) {
  std::int64_t total = 0;
  for (const auto& pair : pairs) {
    const auto a = counts[static_cast<unsigned char>(pair[0])];
    const auto b = counts[static_cast<unsigned char>(pair[1])];
    total += pair[0] == pair[1] ? a * (a + 1) / 2 : a * b;
    if (total > max_hashed_row)
      return max_hashed_row + 1;
  }
  return total;
}

/// Vowpal Wabbit's text format, hashed (io/hashing.hpp), for parse_text (text_parse.hpp):
/// `label [importance] [tag]|namespace[:weight] feature[:value] ... |other ...`.
class vw_format {
public:
  vw_format(std::string name, const read_options& options)
    : name_(name), hashing_(options.hashing), rows_(std::move(name), options.hashing) {}

  piece_counts count(std::string_view piece, bool last) const {
    piece_counts c;
    c.lines = detail::count_bytes(piece, '\n', '\n').first;
    c.rows = c.lines + (last && !piece.empty() && piece.back() != '\n' ? 1 : 0);
    // Items: a row's features, plus its pairs' (bounded: a larger row fails when parsed).
    letter_counts counts;
    detail::for_each_line(piece, 0, [&](std::string_view line, std::int64_t) {
      const auto bar = line.find('|');
      if (bar == std::string_view::npos)
        return;
      std::int64_t features = 0;
      if (!hashing_.pairs.empty())
        counts.fill(0);
      for_each_section(line.substr(bar), [&](const section& s) {
        std::int64_t n = 0;
        for_each_token(s.features, [&](std::string_view) { ++n; });
        features += n;
        if (!hashing_.pairs.empty())
          counts[letter_of(bare_name(s.name))] += n;
      });
      // After its columns are merged a row has at most 2^bits of them.
      c.items += std::min({features + (hashing_.pairs.empty() ? 0 : paired(hashing_.pairs, counts)),
                           max_hashed_row, hashing_.dimension()});
    });
    return c;
  }

  std::int64_t data_lines(std::string_view buffer, std::int64_t lines_before) const {
    std::int64_t rows = 0;
    detail::for_each_line(buffer, lines_before + 1, [&](std::string_view line, std::int64_t) {
      rows += line.find_first_not_of(" \t\r") != std::string_view::npos;
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
    hashed_row row;
    struct feature {
      unsigned char letter;
      std::uint32_t hash;
      double value;
    };
    std::vector<feature> found;
    letter_counts counts;
    const char* p = piece.data();
    const char* const end = p + piece.size();
    while (p < end) {
      ++line_number;
      const auto* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const auto line = trimmed_end(p, newline ? newline : end);
      p = newline ? newline + 1 : end;
      if (line.find_first_not_of(" \t") == std::string_view::npos)
        continue;
      const auto bar = line.find('|');
      if (bar == std::string_view::npos)
        return fail_at("no '|': expected 'label [weight] [tag]|namespace feature ...' (VW format)");

      // The label, an importance weight (only 1: examples are not weighted) and a tag (ignored).
      std::vector<std::string_view> head;
      for_each_token(line.substr(0, bar), [&](std::string_view token) { head.push_back(token); });
      if (head.empty())
        return fail_at("no label before '|'");
      const auto label = detail::parse_number(head[0]);
      if (!label)
        return fail_at("label: expected a number, got " + detail::quote(head[0]));
      std::size_t tags = 0;
      for (std::size_t i = 1; i < head.size(); ++i) {
        const auto number = detail::parse_number(head[i]);
        if (i == 1 && number) {
          if (*number != 1)
            return fail_at("importance weight " + detail::quote(head[i])
                           + ": weighted examples are not supported (every example weighs 1)");
          continue;
        }
        if (++tags > 1)
          return fail_at("unexpected " + detail::quote(head[i]) + " before '|' (expected label [weight] [tag])");
      }

      // Each namespace's features, then the pairs asked for.
      row.clear();
      found.clear();
      std::optional<std::string> error;
      for_each_section(line.substr(bar), [&](const section& s) {
        if (error)
          return;
        auto name = s.name;
        double weight = 1;
        if (const auto colon = name.find(':'); colon != std::string_view::npos) {
          const auto w = detail::parse_number(name.substr(colon + 1));
          if (!w) {
            error = "namespace " + detail::quote(name) + ": its weight is not a number";
            return;
          }
          weight = *w;
          name = name.substr(0, colon);
        }
        const auto seed = namespace_seed(name);
        std::int64_t n = 0;
        for_each_token(s.features, [&](std::string_view token) {
          if (error)
            return;
          ++n;
          auto feature_name = token;
          double value = 1;
          if (const auto colon = token.find(':'); colon != std::string_view::npos) {
            const auto v = detail::parse_number(token.substr(colon + 1));
            if (!v) {
              error = "feature " + detail::quote(token) + ": the value is not a number";
              return;
            }
            value = *v;
            feature_name = token.substr(0, colon);
          }
          if (feature_name.empty()) {
            error = "feature " + detail::quote(token) + " has no name";
            return;
          }
          if (static_cast<std::int64_t>(row.size()) >= max_hashed_row) {
            error = "more than " + std::to_string(max_hashed_row) + " features in one row";
            return;
          }
          const double weighted = value * weight;
          if (!std::isfinite(weighted)) {
            error = "feature " + detail::quote(token) + ": its value times the namespace's weight is not finite";
            return;
          }
          const auto hash = murmur3(feature_name, seed);
          row.add(hash, weighted);
          if (!hashing_.pairs.empty())
            found.push_back({letter_of(name), hash, weighted});
        });
        if (!error && n == 0)
          error = "namespace " + (name.empty() ? std::string{"(default)"} : detail::quote(name))
                  + " has no features";
      });
      if (error)
        return fail_at(*error);
      if (!hashing_.pairs.empty()) {
        counts.fill(0);
        for (const auto& f : found)
          ++counts[f.letter];
        if (static_cast<std::int64_t>(row.size()) + paired(hashing_.pairs, counts) > max_hashed_row)
          return fail_at("more than " + std::to_string(max_hashed_row) + " features in one row with --pairs");
        // The features grouped by letter, in line order: a pair costs only the features it pairs.
        std::stable_sort(found.begin(), found.end(), [](const feature& x, const feature& y) { return x.letter < y.letter; });
        std::array<std::size_t, 257> first{};
        for (const auto& f : found)
          ++first[f.letter + 1u];
        for (std::size_t l = 1; l < first.size(); ++l)
          first[l] += first[l - 1];
        for (const auto& pair : hashing_.pairs) {
          const auto a = static_cast<unsigned char>(pair[0]);
          const auto b = static_cast<unsigned char>(pair[1]);
          for (std::size_t i = first[a]; i < first[a + 1u]; ++i)
            for (std::size_t j = a == b ? i : first[b]; j < first[b + 1u]; ++j) {
              const double product = found[i].value * found[j].value;
              if (!std::isfinite(product))
                return fail_at("a pair of features (--pairs " + pair + ") has a value that is not finite");
              row.add(pair_hash(found[i].hash, found[j].hash), product);
            }
        }
      }
      if (auto problem = rows_.store(row, *label, line_number, at, out, room))
        return fail_at(*problem);
    }
    return out;
  }

  void move(region from, region to, const piece_result& stored) { rows_.move(from, to, stored); }
  std::int64_t items_before(std::int64_t row) const { return rows_.items_before(row); }
  raw_dataset finish(const detail::parsed_text& stored) { return rows_.finish(stored); }

private:
  std::string name_;
  hashing_options hashing_;
  detail::hashed_rows rows_;
};

} // namespace

result<raw_dataset> detail::parse_vw(const std::string& name, text_source& source,
                                     const read_options& options, parse_options how) {
  auto read = options;
  if (read.hashing.bits == 0)
    read.hashing.bits = default_hash_bits;
  if (auto ok = check_hashing(read.hashing); !ok)
    return ok.error();
  if (!read.hashing.categorical.empty() || !read.hashing.text.empty())
    return fail_invalid(name + ": --categorical and --text name CSV columns; VW input has namespaces");
  if (read.features > 0 && read.features != read.hashing.dimension())
    return fail_invalid(name + ": --features " + std::to_string(read.features) + " differs from the 2^"
                        + std::to_string(read.hashing.bits) + " hashed columns");
  how.limit = read.limit;
  vw_format format{name, read};
  return parse_whole(source, format, how, name + ": empty file (no examples)");
}

result<raw_dataset> detail::parse_vw(const std::string& name, std::string_view text, const read_options& options) {
  auto source = text_source::of(text);
  return parse_vw(name, source, options, parse_options{});
}

result<raw_dataset> read_vw(const std::string& path, const read_options& options) {
  auto source = detail::text_source::open(path, options.max_decompressed);
  if (!source)
    return source.error();
  return detail::parse_vw(path, *source, options, detail::parse_options{});
}

} // namespace shardopt::io
