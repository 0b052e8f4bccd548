#include "io/checkpoint_files.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <signal.h>
#include <unistd.h>

namespace shardopt::io::detail {

namespace {

const std::string suffix = ".txt";

/// What a directory entry's name says: not a checkpoint, a checkpoint at a step, or a checkpoint
/// name whose step does not fit in 64 bits (a foreign or hostile file; never one of ours).
struct parsed_name {
  enum { other, checkpoint, out_of_range } kind = other;
  std::int64_t step = -1;
};

parsed_name parse_name(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0
      || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size() - suffix.size();
  if (!std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; }))
    return {};
  parsed_name parsed;
  const auto [end, ec] = std::from_chars(first, last, parsed.step);
  parsed.kind = ec == std::errc{} && end == last ? parsed_name::checkpoint : parsed_name::out_of_range;
  return parsed;
}

} // namespace

std::string checkpoint_file_name(const std::string& prefix, std::int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012lld", static_cast<long long>(step));
  return prefix + digits + suffix;
}

result<checkpoint_listing> list_checkpoint_files(const std::string& directory, const std::string& prefix) {
  checkpoint_listing out;
  std::error_code ec;
  if (!std::filesystem::exists(directory, ec) && !ec)
    return out;
  std::filesystem::directory_iterator it{directory, ec};
  for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const auto parsed = parse_name(it->path().filename().string(), prefix);
    if (parsed.kind == parsed_name::checkpoint)
      out.found.emplace_back(parsed.step, it->path().string());
    else if (parsed.kind == parsed_name::out_of_range)
      out.ignored.push_back(it->path().string() + ": ignored: the step in its name does not fit in 64 bits");
  }
  if (ec)
    return fail_invalid(directory + ": cannot list the checkpoint directory: " + ec.message());
  std::sort(out.found.begin(), out.found.end());
  return out;
}

/// Whether a temporary file ".<prefix>...tmp-<pid>-<random>" was left by a writer that is gone (a
/// killed run): its process no longer exists.
bool abandoned_temporary(const std::string& name, const std::string& prefix) {
  if (name.rfind("." + prefix, 0) != 0)
    return false;
  const auto at = name.find(".tmp-");
  if (at == std::string::npos)
    return false;
  long pid = 0;
  const char* first = name.data() + at + 5;
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, pid);
  if (ec != std::errc{} || end == last || *end != '-' || pid <= 0)
    return false;
  return pid != static_cast<long>(::getpid()) && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void prune_checkpoint_files(const std::string& directory, const std::string& prefix, int keep,
                            std::int64_t written) {
  std::error_code ec;
  // Temporary files of writes a kill interrupted.
  std::filesystem::directory_iterator it{directory, ec};
  for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec))
    if (abandoned_temporary(it->path().filename().string(), prefix)) {
      std::error_code ignored;
      std::filesystem::remove(it->path(), ignored);
    }
  auto all = list_checkpoint_files(directory, prefix);
  if (!all || keep <= 0)
    return;
  auto& found = all->found;  // sorted by step
  found.erase(std::upper_bound(found.begin(), found.end(), std::make_pair(written, std::string{"\xff"})),
              found.end());
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < found.size(); ++i)
    std::filesystem::remove(found[i].second, ec);
}

} // namespace shardopt::io::detail
