#pragma once

// The real datasets tests use: Fashion-MNIST from Debian's `dataset-fashion-mnist` and the small CSV
// files of `python3-sklearn`.
//
// One policy for every test that needs them: the README's commands (scripts/install-deps) install
// both packages, so a test that finds its data missing fails, loudly, instead of passing without
// testing anything.

#include <doctest/doctest.h>

#include <filesystem>
#include <cstdint>
#include <string>
#include <vector>

namespace shardopt::test {

inline const std::string fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";
inline const std::string sklearn_data = "/usr/lib/python3/dist-packages/sklearn/datasets/data";

/// Fails the current test (REQUIRE) when `path` is missing, naming the Debian package that has it.
inline void require_dataset(const std::string& path, const std::string& package) {
  REQUIRE_MESSAGE(std::filesystem::exists(path), path << " is missing: run scripts/install-deps (or "
                                                          "apt-get install " << package << ")");
}

/// Fails the current test when Fashion-MNIST is not installed.
inline void require_fashion_mnist() {
  require_dataset(fashion_mnist_dir + "/train-images-idx3-ubyte.gz", "dataset-fashion-mnist");
}

/// The path of one of scikit-learn's CSV files ("iris.csv"), failing the test when it is missing.
inline std::string require_sklearn_csv(const std::string& name) {
  const auto path = sklearn_data + "/" + name;
  require_dataset(path, "python3-sklearn");
  return path;
}

/// The bytes of an IDX file: big-endian magic and sizes, then `payload`.
inline std::string idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& sizes,
                      const std::vector<unsigned char>& payload) {
  std::string bytes;
  const auto put = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  put(magic);
  for (auto s : sizes)
    put(s);
  bytes.append(payload.begin(), payload.end());
  return bytes;
}

} // namespace shardopt::test
