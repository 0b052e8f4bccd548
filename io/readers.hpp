#pragma once

#include "io/hashing.hpp"
#include "model/dataset.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardopt::io {

/// On-disk formats of a dataset.
/// Values are stored in binary datasets and sent to nodes: append only.
enum class data_format { automatic, csv, libsvm, idx, vw, tsv };

/// The field separator of CSV-like text: a tab for TSV, else a comma.
inline char field_separator(data_format format) { return format == data_format::tsv ? '\t' : ','; }

/// "tabs" or "commas", for messages about fields.
inline const char* separator_name(data_format format) { return format == data_format::tsv ? "tabs" : "commas"; }

/// Parses "auto", "csv", "tsv", "libsvm" (or "svmlight"), "idx", "vw"; nullopt otherwise.
std::optional<data_format> parse_data_format(const std::string& name);

/// The default of `read_options::max_decompressed`: 4 GiB.
constexpr std::uint64_t default_max_decompressed = std::uint64_t{4} << 30;

/// How to read a dataset.
struct read_options {
  data_format format = data_format::automatic;
  /// CSV: 0-based column of the label; negative counts from the end (-1 = last column).
  int label_column = 0;
  /// CSV: whether the first row is a header; nullopt = detect (a first row with a non-numeric field).
  std::optional<bool> header;
  /// LIBSVM: number of features; 0 = the largest index seen. A larger index is an error.
  /// CSV: the number of features every row must have (0 = as many as the first row).
  std::int64_t features = 0;
  /// Read at most this many examples (0 = all).
  std::int64_t limit = 0;
  /// gzip-compressed input: the most bytes it may decompress to (0 = no limit). A file that
  /// decompresses to more fails ("<file>: decompresses to more than <n> bytes, ...") after reading at
  /// most this much, so a small hostile file (a "gzip bomb") cannot fill the memory. The default,
  /// 4 GiB, is larger than any dataset this program is meant for held in memory at once; raise it
  /// for a genuine larger file. Plain files are bounded by their size and not limited.
  std::uint64_t max_decompressed = default_max_decompressed;
  /// Feature hashing (io/hashing.hpp): VW input always (bits 0 there means the default, 18); CSV
  /// when `hashing.enabled()`, which makes string columns readable (--categorical, --text) and every
  /// other column a hashed number. Hashed rows are CSR of 2^bits columns.
  hashing_options hashing;
};

/// A dataset as read from disk: features (dense for CSV and IDX, CSR for LIBSVM) and raw label values
/// (not yet encoded for a model), plus where every example came from, for error messages.
struct raw_dataset {
  model::dataset data;
  /// The file the examples came from (for IDX, the labels file).
  std::string source;
  /// Text formats: the 1-based line of each example; empty for IDX.
  std::vector<std::int64_t> lines;
  /// True for IDX images: raw 0..255 pixel intensities, scaled by 1/255 by default.
  bool pixels = false;
  /// How the features were hashed from raw tokens (VW, CSV with string columns); off for numbers.
  hashing_options hashing;

  /// Names example `row` (0-based) for messages: "train.csv:17" (its 1-based line) for text formats,
  /// "train-labels-idx1-ubyte.gz: record 16" (the 0-based record index) for IDX.
  std::string where(std::int64_t row) const;
};

/// Reads a CSV file (plain or gzip-compressed): one example per line, the label in `label_column`,
/// every other field a feature. Fields are split at every comma (no quoted commas), or at every tab
/// when `options.format` is `tsv`; blank lines are skipped. Errors name file and line: a ragged row, a non-numeric field, an empty file.
result<raw_dataset> read_csv(const std::string& path, const read_options& options);

/// Reads a LIBSVM/svmlight file (plain or gzip-compressed): `label index:value ...`, 1-based strictly
/// increasing indices, `#` starts a comment, `qid:` tokens are ignored. Errors name file and line:
/// index 0, indices out of order, malformed pairs, an index above `options.features`.
result<raw_dataset> read_libsvm(const std::string& path, const read_options& options);

/// Reads Vowpal Wabbit's text format (plain or gzip-compressed), hashed as `options.hashing` says:
/// `label [importance] [tag]|namespace[:weight] feature[:value] ... |other ...`. An importance
/// other than 1 is refused (examples are not weighted); the tag is ignored; VW's constant feature
/// is the model's bias. Errors name file and line: no '|', a label or value that is not a number,
/// a namespace with no features, a row of more than max_hashed_row features.
result<raw_dataset> read_vw(const std::string& path, const read_options& options);

/// Reads an IDX image file and its IDX label file (MNIST family), raw or gzip-compressed.
/// Errors name the file: bad magic, truncated data, image and label counts that differ.
result<raw_dataset> read_idx(const std::string& images_path, const std::string& labels_path,
                             const read_options& options);

/// Which part of a dataset in the MNIST directory layout to read.
enum class split { train, test };

/// Resolves a `--data` or `--test` argument and reads it:
/// - "fashion-mnist": Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist);
/// - a directory in the MNIST layout: train-images-idx3-ubyte[.gz] + train-labels-idx1-ubyte[.gz]
///   for `split::train`, t10k-* for `split::test`;
/// - a binary dataset (binary_cache.hpp), by its magic number, whatever its name;
/// - a file: CSV, TSV, LIBSVM or VW by `options.format`, else by extension (.csv; .tsv; .svm,
///   .libsvm, .svmlight, .txt; .vw; each optionally followed by .gz).
result<raw_dataset> read_dataset(const std::string& spec, split which, const read_options& options);

/// Checks that a test set has the training set's number of features; the message names both files
/// and both counts. (LIBSVM test files with fewer features are widened to the training count.)
result<void> check_same_features(const raw_dataset& train, raw_dataset& test);

/// Checks that `data` has `features` columns (widening sparse data with fewer); the message names
/// `reference` (what fixed the count, e.g. the training file or the model) and `data`'s source.
result<void> match_features(raw_dataset& data, std::int64_t features, const std::string& reference);

/// True when `spec` names a dataset with its own test split (a MNIST-layout directory or a name).
bool has_builtin_test_split(const std::string& spec);

} // namespace shardopt::io
