#pragma once

// Reading and hashing from Python with the command line's own readers (io/), so that Python's
// features are the CLI's to the bit: `shardopt.read_data` and `shardopt.hash_text`.

#include "io/model_file.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardopt::python {

namespace py = pybind11;

/// The words of each of `texts` hashed as a CSV --text column named `column` is (io/hashing.hpp):
/// CSR arrays (indptr int64, indices int32, data float64) of 2^bits columns.
py::tuple hash_text(const std::vector<std::string>& texts, const std::string& column, int bits, bool word_pairs);

/// Reads `path` with the command line's readers and read options (hashing included): a tuple
/// ("csr", data, indices, indptr, (rows, cols), y) for sparse rows, ("dense", X, y) otherwise.
/// With a `model` (else null), rows are hashed as its training rows were, as `shardopt eval` does
/// (hashing options given that differ are refused), and sparse rows get the model's width.
py::tuple read_data(const std::string& path, const std::string& format, int label_column, const std::string& header,
                    std::int64_t limit, int hash_bits, const std::vector<std::string>& pairs,
                    const std::vector<std::string>& categorical, const std::vector<std::string>& text,
                    bool word_pairs, const std::shared_ptr<io::saved_model>& model);

} // namespace shardopt::python
