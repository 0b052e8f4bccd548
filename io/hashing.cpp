#include "io/hashing.hpp"

#include <murmurhash.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace shardopt::io {

std::uint32_t murmur3(std::string_view bytes, std::uint32_t seed) {
  std::uint32_t out[1] = {0};
  lmmh_x86_32(bytes.data(), static_cast<unsigned>(bytes.size()), seed, out);
  return out[0];
}

std::string describe(const hashing_options& h) {
  if (!h.enabled())
    return {};
  nlohmann::json j;
  j["bits"] = h.bits;
  j["pairs"] = h.pairs;
  j["categorical"] = h.categorical;
  j["text"] = h.text;
  j["word_pairs"] = h.word_pairs;
  if (!h.columns.empty())
    j["columns"] = h.columns;
  return j.dump();
}

result<hashing_options> parse_hashing(std::string_view text) {
  hashing_options h;
  if (text.empty())
    return h;
  try {
    const auto j = nlohmann::json::parse(text);
    const auto& bits = j.at("bits");
    if (!bits.is_number_integer() || bits.get<std::int64_t>() < 1 || bits.get<std::int64_t>() > max_hash_bits)
      return fail_invalid("unreadable hashing settings (bits " + bits.dump() + ")");
    if (!j.at("word_pairs").is_boolean())
      return fail_invalid("unreadable hashing settings (word_pairs " + j.at("word_pairs").dump() + ")");
    h.bits = bits.get<int>();
    h.pairs = j.at("pairs").get<std::vector<std::string>>();
    h.categorical = j.at("categorical").get<std::vector<std::string>>();
    h.text = j.at("text").get<std::vector<std::string>>();
    h.word_pairs = j.at("word_pairs").get<bool>();
    if (j.contains("columns"))
      h.columns = j.at("columns").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return fail_invalid(std::string{"unreadable hashing settings ("} + e.what() + ")");
  }
  if (auto ok = check_hashing(h); !ok)
    return ok.error();
  return h;
}

result<void> check_hashing(const hashing_options& h) {
  const bool asked = !h.pairs.empty() || !h.categorical.empty() || !h.text.empty() || h.word_pairs;
  if (h.bits == 0 && !asked)
    return {};
  if (h.bits < 1 || h.bits > max_hash_bits)
    return fail_invalid("--hash-bits: " + std::to_string(h.bits) + " is out of range (1 to "
                        + std::to_string(max_hash_bits) + ")");
  if (h.pairs.size() > max_hashing_pairs)
    return fail_invalid("--pairs: more than " + std::to_string(max_hashing_pairs) + " pairs");
  for (std::size_t i = 0; i < h.pairs.size(); ++i) {
    const auto& pair = h.pairs[i];
    if (pair.size() != 2)
      return fail_invalid("--pairs: '" + pair + "' is not two namespace letters (as VW's -q ab)");
    for (std::size_t k = 0; k < i; ++k)
      if (h.pairs[k] == pair)
        return fail_invalid("--pairs: '" + pair + "' is given twice");
  }
  if (h.categorical.size() > max_hashing_columns || h.text.size() > max_hashing_columns
      || h.columns.size() > max_hashing_columns)
    return fail_invalid("--categorical, --text: more than " + std::to_string(max_hashing_columns) + " columns");
  for (const auto* columns : {&h.categorical, &h.text})
    for (const auto& column : *columns)
      if (column.empty())
        return fail_invalid(std::string{columns == &h.text ? "--text" : "--categorical"}
                            + ": an empty column name");
  if (h.word_pairs && h.text.empty())
    return fail_invalid("--word-pairs needs --text columns");
  return {};
}

std::string summary_of(const hashing_options& h) {
  if (!h.enabled())
    return "none";
  std::string out = "2^" + std::to_string(h.bits) + " hashed columns";
  const auto list = [&](const char* what, const std::vector<std::string>& items) {
    if (items.empty())
      return;
    out += std::string{", "} + what + " ";
    for (std::size_t i = 0; i < items.size(); ++i)
      out += (i ? "," : "") + items[i];
  };
  list("pairs", h.pairs);
  list("categorical", h.categorical);
  list("text", h.text);
  if (h.word_pairs)
    out += ", word pairs";
  return out;
}

void hashed_row::finish(int bits) {
  const auto mask = bits >= 32 ? std::numeric_limits<std::uint32_t>::max() : (std::uint32_t{1} << bits) - 1;
  for (auto& item : items_)
    item.first &= mask;
  // Sorted by column, then value: equal columns add up in an order fixed by the values alone, so
  // a row's sums do not depend on the order of its tokens.
  std::sort(items_.begin(), items_.end());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < items_.size();) {
    std::size_t j = i + 1;
    while (j < items_.size() && items_[j].first == items_[i].first)
      ++j;
    double sum = 0;
    for (std::size_t k = i; k < j; ++k)
      sum += items_[k].second;
    if (sum != 0)
      items_[kept++] = {items_[i].first, sum};
    i = j;
  }
  items_.resize(kept);
}

namespace {

bool word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

} // namespace

std::int64_t add_words(std::string_view text, std::uint32_t seed, bool word_pairs, hashed_row& row) {
  thread_local std::string word;
  thread_local std::string pair;
  thread_local std::string previous;
  previous.clear();
  std::int64_t words = 0;
  std::size_t i = 0;
  const auto n = text.size();
  while (i < n) {
    while (i < n && !word_byte(static_cast<unsigned char>(text[i])))
      ++i;
    if (i == n)
      break;
    word.clear();
    while (i < n && word_byte(static_cast<unsigned char>(text[i]))) {
      const auto c = static_cast<unsigned char>(text[i++]);
      word.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c));
    }
    row.add(murmur3(word, seed), 1.0);
    if (word_pairs && words > 0) {
      pair.assign(previous).append(1, ' ').append(word);
      row.add(murmur3(pair, seed), 1.0);
    }
    if (word_pairs)
      previous = word;
    ++words;
  }
  return words;
}

} // namespace shardopt::io
