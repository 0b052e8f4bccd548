#pragma once

// Private helpers shared by the dataset readers (not installed, not included outside io/).

#include "io/readers.hpp"
#include "base/result.hpp"

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardopt::io::detail {

/// A file opened for reading through zlib, which decompresses gzip data and passes anything else
/// through unchanged. Move-only; closes the file on destruction.
class gz_input {
public:
  /// Opens `path`; compressed data may decompress to at most `max_decompressed` bytes (0: no limit;
  /// see read_options::max_decompressed). Errors: "<path>: no such file", "<path>: cannot open:
  /// <reason>".
  static result<gz_input> open(const std::string& path, std::uint64_t max_decompressed);

  /// Reads up to `size` bytes into `buffer`, stopping early only at the end of the data. Returns the
  /// number of bytes read. Errors: "<path>: read error: <zlib message>" on corrupt compressed data,
  /// "<path>: decompresses to more than <n> bytes, ..." past the limit.
  result<std::uint64_t> read(void* buffer, std::uint64_t size);

  /// Whether the data is gzip-compressed (known once something has been read; false before).
  bool compressed() const;

  /// The size of the file on disk (for plain data, the size of the data).
  std::uint64_t file_size() const { return file_size_; }

  /// Moves to byte `offset` of the data (plain files: a seek; compressed data: decompresses and
  /// drops what lies before it). Errors: a read error, or "truncated" past the end.
  result<void> seek(std::uint64_t offset);

  /// Reads past `size` bytes without keeping them (for compressed data: decompresses and drops
  /// them through a small buffer). Errors: a read error, or "truncated" when the data ends first.
  result<void> skip(std::uint64_t size);

  const std::string& path() const { return path_; }

private:
  struct closer {
    void operator()(gzFile file) const { gzclose(file); }
  };

  gz_input(std::string path, gzFile file, std::uint64_t file_size, std::uint64_t max_decompressed)
      : path_(std::move(path)), file_(file), file_size_(file_size), max_decompressed_(max_decompressed) {}

  std::string path_;
  std::unique_ptr<gzFile_s, closer> file_;
  std::uint64_t file_size_ = 0;
  std::uint64_t max_decompressed_ = 0;
  std::uint64_t produced_ = 0;  ///< bytes read so far (decompressed)
};

/// The format of a dataset file: `options.format` unless automatic, else by extension. Errors: a
/// missing file, an extension that says nothing.
result<data_format> file_format(const std::string& spec, const read_options& options);

class text_source;
struct parse_options;

/// Parses CSV text (see read_csv); `name` names it in messages. `how` picks the threads and
/// buffer size (text_parse.hpp); the result does not depend on them.
result<raw_dataset> parse_csv(const std::string& name, text_source& source,
                              const read_options& options, parse_options how);

/// Parses LIBSVM text (see read_libsvm), as `parse_csv`.
result<raw_dataset> parse_libsvm(const std::string& name, text_source& source,
                                 const read_options& options, parse_options how);

/// Parses VW text (see read_vw), as `parse_csv`.
result<raw_dataset> parse_vw(const std::string& name, text_source& source, const read_options& options,
                             parse_options how);

/// Parses CSV text with hashed columns (`options.hashing` enabled; see read_options), as
/// `parse_csv`. `header_source`, when given, is the whole file, from which the header and the
/// columns are read (for a part after the first); else they come from `source`.
result<raw_dataset> parse_hashed_csv(const std::string& name, text_source& source,
                                     const read_options& options, parse_options how,
                                     text_source* header_source);

/// As above, for text already in memory, with the default threads and buffers.
result<raw_dataset> parse_csv(const std::string& name, std::string_view text,
                              const read_options& options);
result<raw_dataset> parse_libsvm(const std::string& name, std::string_view text,
                                 const read_options& options);
result<raw_dataset> parse_vw(const std::string& name, std::string_view text, const read_options& options);
result<raw_dataset> parse_hashed_csv(const std::string& name, std::string_view text,
                                     const read_options& options);

/// The images and labels files of the `which` split of a MNIST-layout dataset (a directory, or
/// "fashion-mnist"), each raw or gzip-compressed. Errors name the directory and the missing files.
result<std::pair<std::string, std::string>> mnist_files(const std::string& spec, split which);

/// Reads records [n*part/parts, n*(part+1)/parts) of an IDX images file and its labels file, n being
/// the record count (capped by `options.limit`), skipping the others without keeping them.
result<raw_dataset> read_idx_range(const std::string& images_path, const std::string& labels_path,
                                   const read_options& options, std::int64_t part,
                                   std::int64_t parts);

/// Parses a decimal number that fills all of `text` (one leading '+' allowed). Returns nullopt for
/// anything else: empty text, trailing junk, out-of-range values, inf and nan.
std::optional<double> parse_number(std::string_view text);

/// Parses a decimal integer that fills all of `text`; nullopt otherwise.
std::optional<std::int64_t> parse_integer(std::string_view text);

/// `text` without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

/// Splits off the next line of `rest` (without its '\n' and any trailing '\r'); false at the end.
bool next_line(std::string_view& rest, std::string_view& line);

/// `text` in single quotes for an error message, cut to 40 characters.
std::string quote(std::string_view text);

/// A number for an error message: integers without a decimal point ("7"), others in the shortest
/// form that reads back exactly ("2.5").
std::string format_number(double value);

} // namespace shardopt::io::detail
