#pragma once

// The readers take paths, so a fuzz target writes each input to a file first. One scratch directory
// per process holds those files; they are rewritten for every input and removed at exit.

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>

namespace shardopt::fuzz {

/// A private directory for the files of one fuzzing process, in $TMPDIR when set, else /dev/shm
/// (memory-backed), else /tmp; removed with its contents on destruction. Any failure to create or
/// write a file aborts the process: a fuzz run that cannot write its inputs tests nothing.
class scratch_dir {
public:
  scratch_dir() {
    std::string pattern = base() + "/shardopt-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      die("cannot create a scratch directory " + pattern);
    path_ = pattern;
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  /// The directory itself.
  const std::string& path() const { return path_; }

  /// The path of `name` inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  /// Replaces `name` with exactly `bytes`; returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const auto path = file(name);
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (out == nullptr)
      die("cannot write " + path);
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    if (std::fclose(out) != 0 || !written)
      die("cannot write " + path);
    return path;
  }

  /// Replaces `name` with `bytes` gzip-compressed (one gzip member); returns its path.
  std::string write_gzip(const std::string& name, std::string_view bytes) const {
    const auto path = file(name);
    gzFile out = gzopen(path.c_str(), "wb");
    if (out == nullptr)
      die("cannot write " + path);
    const bool written =
        bytes.empty() || gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size())) > 0;
    if (gzclose(out) != Z_OK || !written)
      die("cannot write " + path);
    return path;
  }

  /// Removes `name` if it exists.
  void remove(const std::string& name) const {
    std::error_code ignored;
    std::filesystem::remove(file(name), ignored);
  }

private:
  static std::string base() {
    if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0')
      return tmp;
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0)
      return "/dev/shm";
    return "/tmp";
  }

  [[noreturn]] static void die(const std::string& message) {
    std::fprintf(stderr, "fuzz: %s\n", message.c_str());
    std::abort();
  }

  std::string path_;
};

} // namespace shardopt::fuzz
