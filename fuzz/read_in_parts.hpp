#pragma once

// Reading a dataset in parts (io::read_part, what a node does for node-local shards) as a fuzz
// target checks it: no crash for any part, and the promise of io/splits.hpp when everything reads.

#include "io/binary_cache.hpp"
#include "io/splits.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace shardopt::fuzz {

/// Text formats move examples across part edges; IDX directories and binary datasets do not.
inline bool is_text(const std::string& spec) {
  return !std::filesystem::is_directory(spec) && !io::is_binary_dataset(spec);
}

/// Reads every part of `parts` of `spec` with io::read_part. When `whole` (the same data read at
/// once) and every part read without error, the parts must hold the whole dataset's examples once
/// each and in order: the labels of the parts, one after another, are the whole's. Aborts with a
/// message when they are not, so that libFuzzer keeps the input as a crash.
inline void read_in_parts(const std::string& spec, const io::read_options& options,
                          std::int64_t parts, const result<io::raw_dataset>& whole) {
  std::vector<double> labels;
  std::vector<std::int64_t> rows;
  bool every_part_read = true;
  for (std::int64_t part = 0; part < parts; ++part) {
    auto piece = io::read_part({spec, options, part, parts});
    if (!piece) {
      every_part_read = false;
      continue;
    }
    const auto& y = piece->data.y;
    labels.insert(labels.end(), y.data(), y.data() + y.size());
    rows.push_back(y.size());
  }
  if (!whole || !every_part_read)
    return;
  const auto& y = whole->data.y;
  const std::vector<double> expected(y.data(), y.data() + y.size());
  auto check = [&](const char* how) {
    if (labels != expected) {
      std::fprintf(stderr, "fuzz: %lld parts of %s (%s) hold %zu examples, the whole file %lld\n",
                   static_cast<long long>(parts), spec.c_str(), how, labels.size(),
                   static_cast<long long>(y.size()));
      std::abort();
    }
  };
  check("as their bytes say");
  // Moved to start blocks of 3 examples, as a driver moves text parts: the same examples, in order.
  const auto shifts = io::block_aligned_shifts(rows, 3);
  if (shifts.empty() || !is_text(spec))
    return;
  labels.clear();
  for (std::int64_t part = 0; part < parts; ++part) {
    io::part_request request{spec, options, part, parts};
    request.skip = shifts[static_cast<std::size_t>(part)].first;
    request.extra = shifts[static_cast<std::size_t>(part)].second;
    auto piece = io::read_part(request);
    if (!piece) {
      std::fprintf(stderr, "fuzz: part %lld of %s moved by (%lld, %lld): %s\n", static_cast<long long>(part + 1),
                   spec.c_str(), static_cast<long long>(request.skip), static_cast<long long>(request.extra),
                   piece.error().message().c_str());
      std::abort();
    }
    labels.insert(labels.end(), piece->data.y.data(), piece->data.y.data() + piece->data.y.size());
  }
  check("moved to start blocks");
}

} // namespace shardopt::fuzz
