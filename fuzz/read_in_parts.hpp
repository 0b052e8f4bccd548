#pragma once

// Reading a dataset in parts (io::read_part, what a node does for node-local shards) as a fuzz
// target checks it: no crash for any part, and the promise of io/splits.hpp when everything reads.

#include "io/splits.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace shardopt::fuzz {

/// Reads every part of `parts` of `spec` with io::read_part. When `whole` (the same data read at
/// once) and every part read without error, the parts must hold the whole dataset's examples once
/// each and in order: the labels of the parts, one after another, are the whole's. Aborts with a
/// message when they are not, so that libFuzzer keeps the input as a crash.
inline void read_in_parts(const std::string& spec, const io::read_options& options,
                          std::int64_t parts, const result<io::raw_dataset>& whole) {
  std::vector<double> labels;
  bool every_part_read = true;
  for (std::int64_t part = 0; part < parts; ++part) {
    auto piece = io::read_part({spec, options, part, parts});
    if (!piece) {
      every_part_read = false;
      continue;
    }
    const auto& y = piece->data.y;
    labels.insert(labels.end(), y.data(), y.data() + y.size());
  }
  if (!whole || !every_part_read)
    return;
  const auto& y = whole->data.y;
  if (labels != std::vector<double>(y.data(), y.data() + y.size())) {
    std::fprintf(stderr, "fuzz: %lld parts of %s hold %zu examples, the whole file %lld\n",
                 static_cast<long long>(parts), spec.c_str(), labels.size(),
                 static_cast<long long>(y.size()));
    std::abort();
  }
}

} // namespace shardopt::fuzz
