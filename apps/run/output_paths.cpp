#include "apps/run/output_paths.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace shardopt::apps {

result<void> check_output_file(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return fail_invalid(option + ": " + path + " is a folder, not a file");
  const auto parent = fs::path{path}.parent_path().empty() ? fs::path{"."} : fs::path{path}.parent_path();
  if (!fs::is_directory(parent, ec))
    return fail_not_found(option + ": " + path + ": the folder " + parent.string() + " does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return fail_invalid(option + ": " + path + ": cannot write into " + parent.string() + ": " + std::strerror(errno));
  return {};
}

result<void> check_output_folder(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto at = fs::absolute(path, ec);
  while (!at.empty() && !fs::exists(at, ec) && at.has_parent_path() && at.parent_path() != at)
    at = at.parent_path();
  if (!fs::is_directory(at, ec))
    return fail_invalid(option + ": " + path + ": " + at.string() + " is not a folder");
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    return fail_invalid(option + ": " + path + ": cannot write into " + at.string() + ": " + std::strerror(errno));
  return {};
}

} // namespace shardopt::apps
