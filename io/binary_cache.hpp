#pragma once

// Binary datasets: what `shardopt convert` writes and `--data` reads by its magic number, as VW's
// cache, XGBoost's binary DMatrix and LightGBM's .bin do for their users. A text file is parsed
// once; afterwards the file is memory-mapped and checked, never parsed, and the page cache shares
// it between the shards of a process and between the runs of a sweep.
//
// Layout (little-endian; every section starts on a 64-byte boundary):
//   header      magic "SHOPTBIN", version, layout (dense/CSR), flags, rows, cols, non-zeros, the
//               offset of each section, the file's size, the source's size and modification time,
//               how it was read (format, label column, header, features, limit), the source's
//               name, and a CRC-32 of all of it
//   labels      rows doubles, raw (not yet encoded for a model)
//   lines       rows int64: each example's line in the source (for messages), 0 for IDX
//   starts      rows + 1 int32 (CSR only), from 0
//   indices     non-zeros int32 (CSR only), strictly increasing within a row, below cols
//   values      non-zeros floats (CSR), or rows x cols floats row-major (dense), all finite
// A file that breaks any of this (truncated, a section outside the file, an index out of order, a
// non-finite value, a header whose checksum fails) is refused with a message that names it and
// what is wrong.

#include "io/readers.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <string>

namespace shardopt::io {

/// Whether `path` is a file that starts with the binary dataset's magic number.
bool is_binary_dataset(const std::string& path);


/// Maps a binary dataset and checks it; the dataset's features share the mapping (read-only), its
/// labels and line numbers are copied. Its source is the text it was converted from, so messages
/// name that file's lines. `options.limit` keeps the first rows; `options.features` widens sparse
/// data (fewer than it holds is an error).
result<raw_dataset> read_binary_dataset(const std::string& path, const read_options& options);

/// As read_binary_dataset, rows [n p / P, n (p + 1) / P) of whole canonical blocks
/// (io::partition_blocks): a node's part of a cache, checking and touching only those rows.
result<raw_dataset> read_binary_part(const std::string& path, const read_options& options,
                                     std::int64_t part, std::int64_t parts);

/// What the cache of a text file records of it, to tell whether it still describes the file.
struct cache_origin {
  std::string source;          ///< the text's path as given
  std::uint64_t size = 0;      ///< its size in bytes
  std::int64_t mtime_ns = 0;   ///< its modification time
  read_options options;        ///< how it was read (format, label column, header, features, limit)
};

/// Whether two origins describe the same text read the same way.
bool same_origin(const cache_origin& a, const cache_origin& b);

/// The origin a cache of `source` read with `options` would record now; errors when the source
/// cannot be looked at. A source that is not a file (a dataset directory) has size and time 0.
result<cache_origin> origin_of(const std::string& source, const read_options& options);

/// The origin recorded in a binary dataset's header (checked as read_binary_dataset checks it).
result<cache_origin> recorded_origin(const std::string& path);

/// Writes `data`, read from `origin` (looked at before it was read: `origin_of`), to `path`
/// atomically (atomic_file.hpp). Errors name the path and the failing step ("No space left on
/// device"), or a value that is not finite.
result<void> write_binary_dataset(const std::string& path, const raw_dataset& data,
                                  const cache_origin& origin);

/// Where the cache of `source` read with `options` lives: next to it, or in `directory` when that
/// is not empty, named after the source and a digest of its absolute path and the options.
std::string cache_path(const std::string& source, const read_options& options,
                       const std::string& directory);

} // namespace shardopt::io
