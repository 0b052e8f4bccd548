#pragma once

// Feature hashing: raw tokens (words, categories, Vowpal Wabbit features) become columns of a
// 2^bits-wide sparse row, as in Vowpal Wabbit and scikit-learn's FeatureHasher (Weinberger et al.,
// "Feature hashing for large scale multitask learning", ICML 2009). The hash is MurmurHash3 x86
// 32-bit (Debian's libmurmurhash; scikit-learn's sklearn.utils.murmurhash3_32 computes the same
// values), so the command line, node-local parts and Python agree to the bit:
// - a namespace (a VW namespace, a CSV column) has the seed murmur3(its name, 0); the default VW
//   namespace (no name) has the seed 0;
// - a token's hash is murmur3(token, its namespace's seed), its column the low `bits` bits;
// - a pair of features a, b has the hash a * 16777619 ^ b (VW's), and the value of a times b's;
// - features that land on one column add up (collisions too, as in VW).
// docs/data.md states the same for users. No actors, no files.

#include "base/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardopt::io {

/// The widest hashed rows: 2^28 columns (a theta of 2 GiB for one output).
constexpr int max_hash_bits = 28;

/// The default of `--hash-bits` (Vowpal Wabbit's `-b`).
constexpr int default_hash_bits = 18;

/// The most features one hashed row may have after pairing (a hostile line cannot ask for more).
constexpr std::int64_t max_hashed_row = std::int64_t{1} << 24;

/// The longest lists a hashing may have: pairs, and CSV columns (named, and recorded).
constexpr std::size_t max_hashing_pairs = 1024;
constexpr std::size_t max_hashing_columns = 1 << 16;

/// How raw input is hashed into features; `bits` = 0 means no hashing (numbers only).
struct hashing_options {
  int bits = 0;
  /// VW: pairs of namespaces crossed, each two characters: the first letters of their names (VW's
  /// `-q ab`; ' ' is the default namespace). CSV: unused.
  std::vector<std::string> pairs;
  /// CSV: the columns hashed as `column=value` categories, by header name or 0-based index.
  std::vector<std::string> categorical;
  /// CSV: the columns of free text whose words are hashed, by header name or 0-based index.
  std::vector<std::string> text;
  /// CSV text columns: adjacent word pairs ("new york") hashed as well as the words.
  bool word_pairs = false;
  /// CSV: every column's name as the training data had them (its header, or 0-based indices),
  /// recorded by the reader; reading with them set (eval) checks a header against them, or names a
  /// header-less file's columns by them. Not part of equality: the options are the same.
  std::vector<std::string> columns;

  bool enabled() const { return bits > 0; }
  std::int64_t dimension() const { return enabled() ? std::int64_t{1} << bits : 0; }
  bool operator==(const hashing_options& other) const {
    return bits == other.bits && pairs == other.pairs && categorical == other.categorical
           && text == other.text && word_pairs == other.word_pairs;  // `columns` left out
  }
  bool operator!=(const hashing_options& other) const { return !(*this == other); }
};

/// The hashing as one line of JSON (empty for no hashing), as model files, binary datasets and the
/// node protocol carry it; `parse_hashing` reads it back.
std::string describe(const hashing_options& h);

/// Reads what `describe` wrote; an empty text is no hashing. Errors say what is wrong.
result<hashing_options> parse_hashing(std::string_view text);

/// Checks a hashing's settings: bits in [1, max_hash_bits] when any other setting is given, pairs of
/// two characters, each once, and bounded lists (a peer's description is checked alike). Errors
/// name the option (--hash-bits, --pairs).
result<void> check_hashing(const hashing_options& h);

/// A human-readable account for summaries and messages: "2^18 hashed columns, pairs ab".
std::string summary_of(const hashing_options& h);

/// MurmurHash3 x86 32-bit of `bytes` with `seed`.
std::uint32_t murmur3(std::string_view bytes, std::uint32_t seed);

/// A namespace's seed: murmur3(name, 0); 0 for the unnamed namespace.
inline std::uint32_t namespace_seed(std::string_view name) { return name.empty() ? 0 : murmur3(name, 0); }

/// The hash of the pair of features hashed `a` and `b` (VW's quadratic features).
inline std::uint32_t pair_hash(std::uint32_t a, std::uint32_t b) { return a * 16777619u ^ b; }

/// One row's hashed features as they are found, then as sorted columns with their values summed.
/// Reused from row to row, so a row costs no allocation once the buffer has grown.
class hashed_row {
public:
  void clear() { items_.clear(); }
  void add(std::uint32_t hash, double value) { items_.emplace_back(hash, value); }
  std::size_t size() const { return items_.size(); }

  /// Takes each hash to its column (its low `bits` bits), sorts, and adds up the values of equal
  /// columns; columns whose values add to 0 are dropped. Then `items()` holds the row.
  void finish(int bits);

  /// (column, value) pairs, columns strictly increasing (after `finish`).
  const std::vector<std::pair<std::uint32_t, double>>& items() const { return items_; }

private:
  std::vector<std::pair<std::uint32_t, double>> items_;
};

/// Adds the words of `text` to `row` with the namespace seed `seed`, each with value 1: a word is a
/// longest run of ASCII letters and digits and bytes >= 0x80 (any non-ASCII UTF-8 character,
/// punctuation and spaces outside ASCII included), ASCII letters lower-cased (others kept). With `word_pairs`, each two adjacent words also count, as "first second". Returns
/// the words found.
std::int64_t add_words(std::string_view text, std::uint32_t seed, bool word_pairs, hashed_row& row);

/// At most how many features `add_words` adds for `bytes` bytes of text.
inline std::int64_t max_words(std::int64_t bytes, bool word_pairs) {
  const auto words = (bytes + 1) / 2;
  return word_pairs ? 2 * words : words;
}

} // namespace shardopt::io
