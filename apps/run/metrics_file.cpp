#include "apps/run/metrics_file.hpp"

#include "io/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardopt::apps {

result<void> metrics_file::open(const std::string& path, const std::string& key, std::int64_t resumed_at) {
  path_ = path;
  if (resumed_at > 0) {
    std::string kept;
    std::ifstream old{path};
    for (std::string line; std::getline(old, line);) {
      const auto row = nlohmann::json::parse(line, nullptr, false);
      if (row.is_object() && row.contains(key) && row[key].is_number_integer()
          && row[key].get<std::int64_t>() <= resumed_at)
        kept += line + '\n';
    }
    if (auto ok = io::write_file_atomically(path, kept); !ok)
      return ok.error();
  }
  out_.open(path, std::ios::out | (resumed_at > 0 ? std::ios::app : std::ios::trunc));
  if (!out_)
    return fail_runtime(path + ": cannot open the metrics file for writing: " + std::strerror(errno));
  return {};
}

void metrics_file::write(const nlohmann::json& row, const std::string& what, bool quiet) {
  if (!out_.is_open())
    return;
  out_ << row.dump() << '\n';
  out_.flush();
  if (!out_ && error_.empty()) {
    error_ = path_ + ": cannot write the metrics row of " + what + ": " + std::strerror(errno);
    if (!quiet)
      std::fprintf(stderr, "shardopt: warning: %s (training goes on)\n", error_.c_str());
  }
}

result<void> metrics_file::written() const {
  if (error_.empty())
    return {};
  return fail_runtime(error_);
}

} // namespace shardopt::apps
