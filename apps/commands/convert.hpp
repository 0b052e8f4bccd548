#pragma once

// `shardopt convert`: a dataset read once from text (or IDX) and written as a binary dataset
// (io/binary_cache.hpp) that `--data` then maps instead of parsing.

#include "apps/run/data.hpp"

#include <string>

namespace shardopt::apps {

/// `shardopt convert`'s options: what to read and how (as `train --data`), and where to write.
struct convert_options {
  data_options data;
  std::string output;
  bool quiet = false;
};

/// Reads `data.data` (the training split of a dataset directory) and writes it to `output`.
/// Returns the process exit code.
int run_convert(const convert_options& options);

} // namespace shardopt::apps
