#pragma once
// Datasets handed over as arrays in memory (the Python module's NumPy and SciPy arrays) rather than
// read from files: checked as a reader checks a file, with errors naming the array and the entry.

#include "io/readers.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace shardopt::io {

/// A rows x cols matrix in someone else's memory: entry (i, j) is at
/// `data[i * row_stride + j * col_stride]` (strides in elements, so C and Fortran order and views
/// are all one case). `T` is float or double.
template <class T>
struct strided_matrix {
  const T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;
};

/// A CSR matrix in someone else's memory: row i's entries are [indptr[i], indptr[i+1]) of
/// `indices` (0-based columns) and `values`. `I` is int32 or int64; values are double or float.
template <class I, class T>
struct csr_arrays {
  const T* values = nullptr;
  const I* indices = nullptr;
  const I* indptr = nullptr;  ///< rows + 1 entries
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

/// A dataset from a dense feature matrix `x` and one label per row (`labels`, `rows` of them),
/// named `x_name` and `y_name` in messages ("X[3, 5]: expected a finite number, got nan").
/// Features are stored as float32, like a file's. Labels stay raw (encode them with io::labels).
template <class T>
result<raw_dataset> dataset_from_arrays(const strided_matrix<T>& x, const double* labels,
                                        std::int64_t label_count, const std::string& x_name,
                                        const std::string& y_name);

/// A dataset over a caller's rows x cols float32 matrix in C order, without a copy: the dataset
/// refers to `values` (checked finite first) and shares `owner`, which must keep them alive and
/// unchanged for as long as the dataset or any copy of it exists.
result<raw_dataset> dataset_over_array(const float* values, std::int64_t rows, std::int64_t cols,
                                       std::shared_ptr<void> owner, const double* labels,
                                       std::int64_t label_count, const std::string& x_name,
                                       const std::string& y_name);

/// The same from a CSR feature matrix; indices within a row must be strictly increasing.
template <class I, class T>
result<raw_dataset> dataset_from_arrays(const csr_arrays<I, T>& x, const double* labels,
                                        std::int64_t label_count, const std::string& x_name,
                                        const std::string& y_name);

} // namespace shardopt::io
