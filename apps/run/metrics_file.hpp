#pragma once

// The `--metrics` file of a run, one writer for both modes: one JSON object per line (an L-BFGS
// iteration, a parameter-server log step), flushed as it is written. A row that cannot be written
// (a full disk) does not stop training: the first failure is kept, warned about once, and handed
// back at the end, naming the file and the row.

#include "base/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>

namespace shardopt::apps {

class metrics_file {
public:
  /// Opens `path`: truncated, or for a run resumed after row `resumed_at`, with the rows whose
  /// `key` (e.g. "iteration") is at most `resumed_at` kept (rows a killed run wrote beyond its
  /// checkpoint are dropped: the resumed run writes them again). Errors name the path.
  result<void> open(const std::string& path, const std::string& key = {}, std::int64_t resumed_at = 0);

  bool is_open() const { return out_.is_open(); }

  /// Appends `row`; `what` names it in an error ("iteration 12"). Warns on stderr unless `quiet`.
  void write(const nlohmann::json& row, const std::string& what, bool quiet);

  /// Whether every row was written; the first failure names the file, the row and the cause.
  result<void> written() const;

private:
  std::ofstream out_;
  std::string path_;
  std::string error_;
};

} // namespace shardopt::apps
