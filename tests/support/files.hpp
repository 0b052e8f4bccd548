#pragma once

// Test helpers for files: a scratch directory that removes itself, writers (plain and gzip), a
// reader, and dense matrices written out row by row in a test.

#include "model/dataset.hpp"

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

namespace shardopt::test {

/// A new, empty directory under the system temporary directory, removed with its contents on
/// destruction.
class temp_dir {
public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "shardopt-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  /// The path of `name` inside the directory, as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

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

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary};
  out << text;
}

/// A vector of doubles written out in the test.
inline Eigen::VectorXd vector_of(std::initializer_list<double> values) {
  Eigen::VectorXd v(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (double x : values)
    v(i++) = x;
  return v;
}

/// A dense feature matrix from rows written out in the test.
inline model::dense_features dense_rows(std::initializer_list<std::initializer_list<float>> rows) {
  model::dense_features m(static_cast<Eigen::Index>(rows.size()),
                          static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& row : rows) {
    Eigen::Index j = 0;
    for (float v : row)
      m(i, j++) = v;
    ++i;
  }
  return m;
}

} // namespace shardopt::test
