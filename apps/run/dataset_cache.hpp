#pragma once

// `train --cache`: text datasets read through a binary cache (io/binary_cache.hpp) that is made on
// first use, next to the source or under --cache-dir, and made again when the source changes.

#include "io/readers.hpp"
#include "base/result.hpp"

#include <string>

namespace shardopt::apps {

/// Where caches go: `enabled` turns them on; `directory` empty means next to each source.
struct cache_settings {
  bool enabled = false;
  std::string directory;
};

/// Reads `spec` as io::read_dataset does; a CSV or LIBSVM file with caching enabled is read from
/// its cache when the cache records this file (size and modification time) read with these
/// options, and otherwise parsed and its cache written. A cache that cannot be written is reported
/// on stderr and the parsed data used.
result<io::raw_dataset> read_with_cache(const std::string& spec, io::split which,
                                        const io::read_options& options, const cache_settings& cache);

} // namespace shardopt::apps
