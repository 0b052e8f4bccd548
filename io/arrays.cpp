#include "io/arrays.hpp"

#include <cmath>
#include <limits>
#include <charconv>

namespace shardopt::io {

namespace {

/// The shortest text that reads back as `value` ("0.1", "1e+300", "nan", "inf").
std::string number(double value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

/// The labels, checked finite and as many as the rows; the dataset is named after `y_name`, whose
/// records `raw_dataset::where` then names ("y: record 3").
result<raw_dataset> with_labels(std::int64_t rows, const double* labels, std::int64_t label_count,
                                const std::string& x_name, const std::string& y_name) {
  if (label_count != rows)
    return fail_invalid(y_name + " has " + std::to_string(label_count) + " labels but " + x_name + " has " +
                std::to_string(rows) + " rows");
  raw_dataset raw;
  raw.source = y_name;
  raw.data.y.resize(rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    if (!std::isfinite(labels[i]))
      return fail_invalid(y_name + "[" + std::to_string(i) + "]: expected a finite number, got " + number(labels[i]));
    raw.data.y(i) = labels[i];
  }
  return raw;
}

/// The error for entry (i, j) of `x_name`, which is not a finite float32.
template <class T>
failure bad_entry(const std::string& x_name, std::int64_t i, std::int64_t j, T value) {
  return fail_invalid(x_name + "[" + std::to_string(i) + ", " + std::to_string(j) +
                      "]: expected a finite number, got " + number(static_cast<double>(value)));
}

/// Whether `value` fits a float32 feature (finite after the conversion).
template <class T>
bool fits_float(T value) {
  return std::isfinite(value) && std::fabs(static_cast<double>(value)) <= std::numeric_limits<float>::max();
}

} // namespace

template <class T>
result<raw_dataset> dataset_from_arrays(const strided_matrix<T>& x, const double* labels,
                                        std::int64_t label_count, const std::string& x_name,
                                        const std::string& y_name) {
  if (x.rows < 0 || x.cols < 1)
    return fail_invalid(x_name + " has " + std::to_string(x.cols) + " columns; it needs at least one feature");
  auto raw = with_labels(x.rows, labels, label_count, x_name, y_name);
  if (!raw)
    return raw;
  model::dense_features features(x.rows, x.cols);
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const T* row = x.data + i * x.row_stride;
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const T value = row[j * x.col_stride];
      if (!fits_float(value))
        return bad_entry(x_name, i, j, value);
      features(i, j) = static_cast<float>(value);
    }
  }
  raw->data.x = std::move(features);
  return raw;
}

result<raw_dataset> dataset_over_array(const float* values, std::int64_t rows, std::int64_t cols,
                                       std::shared_ptr<void> owner, const double* labels,
                                       std::int64_t label_count, const std::string& x_name,
                                       const std::string& y_name) {
  if (rows < 0 || cols < 1)
    return fail_invalid(x_name + " has " + std::to_string(cols) + " columns; it needs at least one feature");
  auto raw = with_labels(rows, labels, label_count, x_name, y_name);
  if (!raw)
    return raw;
  for (std::int64_t k = 0; k < rows * cols; ++k)
    if (!std::isfinite(values[k]))
      return bad_entry(x_name, k / cols, k % cols, values[k]);
  raw->data.x = model::shared_dense{const_cast<float*>(values), rows, cols, std::move(owner), false};
  return raw;
}

template <class I, class T>
result<raw_dataset> dataset_from_arrays(const csr_arrays<I, T>& x, const double* labels,
                                        std::int64_t label_count, const std::string& x_name,
                                        const std::string& y_name) {
  if (x.rows < 0 || x.cols < 1 || x.cols > std::numeric_limits<std::int32_t>::max())
    return fail_invalid(x_name + " has " + std::to_string(x.cols) + " columns; it needs 1.." +
                std::to_string(std::numeric_limits<std::int32_t>::max()));
  auto raw = with_labels(x.rows, labels, label_count, x_name, y_name);
  if (!raw)
    return raw;
  if (x.indptr[0] != 0)
    return fail_invalid(x_name + ".indptr[0] is " + std::to_string(x.indptr[0]) + ", not 0");
  const std::int64_t nonzeros = x.indptr[x.rows];
  if (nonzeros < 0 || nonzeros > std::numeric_limits<std::int32_t>::max())
    return fail_invalid(x_name + " has " + std::to_string(nonzeros) + " stored entries; 0.." +
                std::to_string(std::numeric_limits<std::int32_t>::max()) + " are allowed");
  model::sparse_features features(x.rows, x.cols);
  features.resizeNonZeros(nonzeros);
  auto* outer = features.outerIndexPtr();
  outer[0] = 0;
  for (std::int64_t i = 0; i < x.rows; ++i) {
    const std::int64_t begin = x.indptr[i];
    const std::int64_t end = x.indptr[i + 1];
    if (end < begin || end > nonzeros)
      return fail_invalid(x_name + ".indptr[" + std::to_string(i + 1) + "] is " + std::to_string(end) +
                  ": not in " + std::to_string(begin) + ".." + std::to_string(nonzeros));
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t column = x.indices[k];
      const std::string at = x_name + "[" + std::to_string(i) + ", " + std::to_string(column) + "]";
      if (column < 0 || column >= x.cols)
        return fail_invalid(x_name + ": row " + std::to_string(i) + " has column " + std::to_string(column) +
                    ", outside 0.." + std::to_string(x.cols - 1));
      if (k > begin && column <= x.indices[k - 1])
        return fail_invalid(x_name + ": row " + std::to_string(i) + "'s columns are not strictly increasing (" +
                    std::to_string(x.indices[k - 1]) + " then " + std::to_string(column) +
                    "); call sum_duplicates() first");
      if (!fits_float(x.values[k]))
        return fail_invalid(at + ": expected a finite number, got " + number(static_cast<double>(x.values[k])));
      features.innerIndexPtr()[k] = static_cast<std::int32_t>(column);
      features.valuePtr()[k] = static_cast<float>(x.values[k]);
    }
    outer[i + 1] = static_cast<std::int32_t>(end);
  }
  raw->data.x = std::move(features);
  return raw;
}

template result<raw_dataset> dataset_from_arrays(const strided_matrix<float>&, const double*, std::int64_t,
                                                 const std::string&, const std::string&);
template result<raw_dataset> dataset_from_arrays(const strided_matrix<double>&, const double*, std::int64_t,
                                                 const std::string&, const std::string&);
template result<raw_dataset> dataset_from_arrays(const csr_arrays<std::int32_t, double>&, const double*,
                                                 std::int64_t, const std::string&, const std::string&);
template result<raw_dataset> dataset_from_arrays(const csr_arrays<std::int64_t, double>&, const double*,
                                                 std::int64_t, const std::string&, const std::string&);
template result<raw_dataset> dataset_from_arrays(const csr_arrays<std::int32_t, float>&, const double*,
                                                 std::int64_t, const std::string&, const std::string&);
template result<raw_dataset> dataset_from_arrays(const csr_arrays<std::int64_t, float>&, const double*,
                                                 std::int64_t, const std::string&, const std::string&);

} // namespace shardopt::io
