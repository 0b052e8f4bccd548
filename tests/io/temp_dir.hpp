#pragma once

// Test helper: a fresh scratch directory that removes itself, and small file writers.

#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

namespace shardopt::io::testing {

/// A new, empty directory under the system temporary directory, removed with its contents on
/// destruction.
class temp_dir {
public:
  temp_dir() {
    std::random_device device;
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() /
            ("shardopt-io-test-" + std::to_string(device()) + "-" + std::to_string(ticks));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// The path of `name` inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

  /// Writes `bytes` to `name` (exactly, in binary) and returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::string p = file(name);
    std::ofstream out{p, std::ios::binary};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  /// Writes `bytes` gzip-compressed to `name` and returns its path.
  std::string write_gz(const std::string& name, std::string_view bytes) const {
    const std::string p = file(name);
    gzFile out = gzopen(p.c_str(), "wb");
    gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(out);
    return p;
  }

private:
  std::filesystem::path path_;
};

} // namespace shardopt::io::testing
