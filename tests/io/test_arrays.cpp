// Datasets from arrays in memory (io/arrays.hpp), as the Python module hands them over: any strides
// give the same rows, CSR gives the same numbers as its dense form, and bad arrays are refused
// naming the entry.

#include "io/arrays.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace io = shardopt::io;
namespace model = shardopt::model;

namespace {

// A 3 x 4 matrix with entry (i, j) = 10 i + j - 0.5, stored in both orders.
const std::vector<double> row_major = {-0.5, 0.5, 1.5, 2.5, 9.5, 10.5, 11.5, 12.5, 19.5, 20.5, 21.5, 22.5};
const std::vector<double> column_major = {-0.5, 9.5, 19.5, 0.5, 10.5, 20.5, 1.5, 11.5, 21.5, 2.5, 12.5, 22.5};
const std::vector<double> labels = {0, 1, 2};

model::dense_features expected_dense() {
  model::dense_features x(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      x(i, j) = static_cast<float>(10 * i + j - 0.5);
  return x;
}

} // namespace

TEST_CASE("dense arrays in C order, Fortran order and float32 give the same rows") {
  const auto c = io::dataset_from_arrays(io::strided_matrix<double>{row_major.data(), 3, 4, 4, 1}, labels.data(), 3, "X", "y");
  const auto f = io::dataset_from_arrays(io::strided_matrix<double>{column_major.data(), 3, 4, 1, 3}, labels.data(), 3, "X", "y");
  std::vector<float> single(row_major.begin(), row_major.end());
  const auto s = io::dataset_from_arrays(io::strided_matrix<float>{single.data(), 3, 4, 4, 1}, labels.data(), 3, "X", "y");
  // Every other column of the C-order array: a strided view.
  const auto view = io::dataset_from_arrays(io::strided_matrix<double>{row_major.data(), 3, 2, 4, 2}, labels.data(), 3, "X", "y");
  REQUIRE(c.ok());
  REQUIRE(f.ok());
  REQUIRE(s.ok());
  REQUIRE(view.ok());
  CHECK(c->data.dense() == expected_dense());
  CHECK(f->data.dense() == expected_dense());
  CHECK(s->data.dense() == expected_dense());
  CHECK(view->data.dense().col(1) == expected_dense().col(2));
  CHECK(c->data.y == Eigen::Vector3d(0, 1, 2));
  CHECK(c->where(2) == "y: record 2");
}

TEST_CASE("CSR arrays give the numbers of their dense form") {
  // Row 0: (0, 1) = 2.5; row 1: empty; row 2: (2, 0) = -1, (2, 3) = 4.
  const std::vector<double> values = {2.5, -1, 4};
  const std::vector<std::int32_t> indices = {1, 0, 3};
  const std::vector<std::int32_t> indptr = {0, 1, 1, 3};
  const auto csr = io::dataset_from_arrays(io::csr_arrays<std::int32_t, double>{values.data(), indices.data(), indptr.data(), 3, 4},
                                           labels.data(), 3, "X", "y");
  REQUIRE(csr.ok());
  REQUIRE(csr->data.is_sparse());
  Eigen::MatrixXf dense = Eigen::MatrixXf(csr->data.sparse());
  Eigen::MatrixXf expected = Eigen::MatrixXf::Zero(3, 4);
  expected(0, 1) = 2.5f;
  expected(2, 0) = -1;
  expected(2, 3) = 4;
  CHECK(dense == expected);
}

TEST_CASE("bad arrays are refused naming the array and the entry") {
  std::vector<double> x = row_major;
  x[6] = std::nan("");
  auto r = io::dataset_from_arrays(io::strided_matrix<double>{x.data(), 3, 4, 4, 1}, labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "X[1, 2]: expected a finite number, got nan");

  x[6] = 1e300;  // finite as a double, infinite as the float32 features are stored
  r = io::dataset_from_arrays(io::strided_matrix<double>{x.data(), 3, 4, 4, 1}, labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "X[1, 2]: expected a finite number, got 1e+300");

  r = io::dataset_from_arrays(io::strided_matrix<double>{row_major.data(), 3, 4, 4, 1}, labels.data(), 2, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "y has 2 labels but X has 3 rows");

  const std::vector<double> bad_labels = {0, std::numeric_limits<double>::infinity(), 1};
  r = io::dataset_from_arrays(io::strided_matrix<double>{row_major.data(), 3, 4, 4, 1}, bad_labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "y[1]: expected a finite number, got inf");

  const std::vector<double> values = {1, 2, 3};
  const std::vector<std::int64_t> unsorted = {2, 1, 0};
  const std::vector<std::int64_t> indptr = {0, 2, 2, 3};
  r = io::dataset_from_arrays(io::csr_arrays<std::int64_t, double>{values.data(), unsorted.data(), indptr.data(), 3, 4},
                              labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "X: row 0's columns are not strictly increasing (2 then 1); call sum_duplicates() first");

  const std::vector<std::int64_t> outside = {0, 4, 1};
  r = io::dataset_from_arrays(io::csr_arrays<std::int64_t, double>{values.data(), outside.data(), indptr.data(), 3, 4},
                              labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "X: row 0 has column 4, outside 0..3");

  const std::vector<std::int64_t> backwards = {0, 2, 1, 3};
  const std::vector<std::int64_t> sorted = {0, 1, 2};
  r = io::dataset_from_arrays(io::csr_arrays<std::int64_t, double>{values.data(), sorted.data(), backwards.data(), 3, 4},
                              labels.data(), 3, "X", "y");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "X.indptr[2] is 1: not in 2..3");
}
