#pragma once

// Internal to io/: the text of a file, or of one part of it, as consecutive buffers of whole lines,
// read and (for gzip) decompressed one buffer at a time, so that no reader holds a whole file.

#include "io/reader_support.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <climits>

namespace shardopt::io::detail {

/// Whole lines of a file, or of part `part` of `parts` of it by Hadoop's split rule (part p covers
/// bytes [size p / P, size (p + 1) / P) of the text and owns every line whose first byte lies
/// there; for gzip the text is the decompressed data), or of text in memory. `rewind` starts over,
/// so a reader can count in one pass and parse in a second.
class text_source {
public:
  /// Default buffer: 64 MiB of text at a time.
  static constexpr std::size_t default_buffer = std::size_t{64} << 20;

  /// Opens `path` (plain or gzip; decompressing to at most `max_decompressed` bytes, 0: no limit).
  /// Errors as for gz_input; a part of gzip text decompresses the file once more to learn its size.
  static result<text_source> open(const std::string& path, std::uint64_t max_decompressed,
                                  std::int64_t part = 0, std::int64_t parts = 1,
                                  std::size_t buffer_bytes = default_buffer);

  /// Whole lines of bytes [begin, end) of the text of `path` by the same rule: the lines whose
  /// first byte lies there (end INT64_MAX: to the end of the text).
  static result<text_source> open_range(const std::string& path, std::uint64_t max_decompressed,
                                        std::int64_t begin, std::int64_t end,
                                        std::size_t buffer_bytes = default_buffer);

  /// Text in memory (kept by the caller), in buffers of `buffer_bytes`.
  static text_source of(std::string_view text, std::size_t buffer_bytes = default_buffer);

  /// The next buffer of whole lines, ending with '\n' except for the text's last line; empty at the
  /// end. Valid until the next call. A line longer than the buffer makes the buffer grow to hold it.
  result<std::string_view> next();

  /// The text offset just past the buffer `next` last handed out: where the line after it starts
  /// (after an empty buffer or a rewind: where reading stands).
  std::int64_t position() const { return offset_ + static_cast<std::int64_t>(stop_); }

  /// Starts over from the first line.
  result<void> rewind();

  /// The file's path, or "text" for text in memory.
  std::string name() const { return path_.empty() ? std::string{"text"} : path_; }

  /// The bytes of the part, [begin, end) of the text (the whole text: [0, size)).
  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }

private:
  text_source() = default;

  /// Reads up to `size` bytes of text into `out`; 0 at the end.
  result<std::size_t> read(char* out, std::size_t size);

  std::string path_;
  std::uint64_t max_decompressed_ = 0;
  std::optional<gz_input> input_;  // empty for text in memory
  std::string_view memory_;
  std::size_t memory_at_ = 0;
  std::int64_t begin_ = 0;
  std::int64_t end_ = INT64_MAX;
  std::size_t capacity_ = default_buffer;
  std::string buffer_;
  std::size_t kept_ = 0;         // bytes of an unfinished line at the front of buffer_
  std::int64_t offset_ = 0;      // text offset of buffer_[0]
  bool aligned_ = false;         // the part's first line start has been found
  bool exhausted_ = false;       // the text has no more bytes
  bool finished_ = false;        // the part has no more lines
  bool handed_ = false;          // buffer_[.., stop_) was handed out; buffer_[stop_, used_) waits
  std::size_t stop_ = 0;
  std::size_t used_ = 0;
};

} // namespace shardopt::io::detail
