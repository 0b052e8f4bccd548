#pragma once

// A full disk on demand: a tiny tmpfs mounted in a mount namespace of the test process's own, so
// nothing outside the test (and its children, which inherit the namespace) sees it.

#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace shardopt::test {

/// Mounts a tmpfs of `size` (mount's syntax: "64k") on `dir` (needs CAP_SYS_ADMIN; a test run as
/// root has it). Returns why not when that is not allowed; the caller then skips, visibly.
inline std::optional<std::string> mount_small_tmpfs(const std::filesystem::path& dir,
                                                    const std::string& size = "64k") {
  if (::unshare(CLONE_NEWNS) != 0)
    return std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno);
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string{"making / private: "} + std::strerror(errno);
  const auto options = "size=" + size;
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0)
    return "mount -t tmpfs -o " + options + ": " + std::strerror(errno);
  return std::nullopt;
}

/// Fills the file system of `dir` to the last byte (a file "filler", then the partial block).
inline void fill_disk(const std::filesystem::path& dir) {
  {
    std::ofstream filler{dir / "filler", std::ios::binary};
    const std::string block(4096, 'f');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())))
      filler.flush();
  }
  std::ofstream{dir / "last-bytes"} << std::string(200, 'b');
}

} // namespace shardopt::test
