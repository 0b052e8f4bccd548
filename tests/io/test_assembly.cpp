// A shard's data shipped in pieces (io/assembly.hpp) must arrive as exactly the rows sent, and
// pieces that do not fit what was announced must be refused, naming why.

#include "io/assembly.hpp"
#include "support/problems.hpp"

#include <doctest/doctest.h>

#include <cstring>

namespace io = shardopt::io;
namespace model = shardopt::model;

namespace {

/// Rows `rows` of `data` as a dataset of their own, as a node deserialises a piece.
model::dataset rows_of(const model::dataset& data, model::row_range rows) {
  model::dataset out;
  out.y = data.y.segment(rows.begin, rows.size());
  if (data.is_sparse())
    out.x = model::sparse_features(data.sparse().middleRows(rows.begin, rows.size()));
  else
    out.x = model::dense_features(data.dense().middleRows(rows.begin, rows.size()));
  return out;
}

/// Whether two datasets hold the same bytes: labels, features, and for CSR every array.
bool same_bytes(const model::dataset& a, const model::dataset& b) {
  if (a.is_sparse() != b.is_sparse() || a.rows() != b.rows() || a.cols() != b.cols()
      || std::memcmp(a.y.data(), b.y.data(), sizeof(double) * a.y.size()) != 0)
    return false;
  if (!a.is_sparse())
    return std::memcmp(a.dense().data(), b.dense().data(), sizeof(float) * a.dense().size()) == 0;
  const auto& x = a.sparse();
  const auto& y = b.sparse();
  return x.nonZeros() == y.nonZeros()
         && std::memcmp(x.outerIndexPtr(), y.outerIndexPtr(), sizeof(std::int32_t) * (x.rows() + 1)) == 0
         && std::memcmp(x.innerIndexPtr(), y.innerIndexPtr(), sizeof(std::int32_t) * x.nonZeros()) == 0
         && std::memcmp(x.valuePtr(), y.valuePtr(), sizeof(float) * x.nonZeros()) == 0;
}

} // namespace

TEST_CASE("dataset_assembly: rows 37-290 sent in pieces of at most 1 KiB arrive byte for byte, dense and sparse") {
  for (const bool sparse : {false, true}) {
    CAPTURE(sparse);
    const auto data = shardopt::test::random_problem(7, 300, 24, 3, sparse);
    const model::row_range range{37, 291};
    const auto pieces = io::pieces_of(*data, range, 1024);
    REQUIRE(pieces.size() > 5);
    CHECK(pieces.front().begin == range.begin);
    CHECK(pieces.back().end == range.end);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      CHECK(io::bytes_of(io::extent_of(*data, pieces[i])) <= 1024);
      if (i > 0)
        CHECK(pieces[i].begin == pieces[i - 1].end);
    }
    const auto whole = io::extent_of(*data, range);
    CHECK(whole.rows == range.size());
    auto assembly = io::dataset_assembly::start(whole);
    REQUIRE(assembly.ok());
    for (const auto& piece : pieces) {
      CHECK_FALSE(assembly->complete());
      REQUIRE(assembly->append(piece.begin - range.begin, *data, piece).ok());
      CHECK(assembly->rows_received() == piece.end - range.begin);
    }
    REQUIRE(assembly->complete());
    const auto received = assembly->finish();
    REQUIRE(received);
    CHECK(same_bytes(*received, rows_of(*data, range)));
    CHECK(io::bytes_of(whole) == io::bytes_of(io::extent_of(*received)));
  }
}

TEST_CASE("dataset_assembly: a piece out of order, of other features or kind, or past the announced rows or non-zeros is refused") {
  const auto dense = shardopt::test::random_problem(8, 40, 6, 2);
  const auto sparse = shardopt::test::random_problem(8, 40, 6, 2, true);
  auto message = [](const shardopt::result<void>& r) { return r.ok() ? std::string{"ok"} : r.error().message(); };

  auto a = io::dataset_assembly::start(io::extent_of(*dense, {0, 20}));
  REQUIRE(a.ok());
  CHECK(message(a->append(5, *dense, {5, 10})) == "a piece starting at row 5, expected row 0");
  CHECK(message(a->append(0, *sparse, {0, 5})) == "a piece of 6 sparse features, the data has 6 dense");
  const auto wider = shardopt::test::random_problem(8, 40, 7, 2);
  CHECK(message(a->append(0, *wider, {0, 5})) == "a piece of 7 dense features, the data has 6 dense");
  REQUIRE(a->append(0, *dense, {0, 15}).ok());
  CHECK(message(a->append(15, *dense, {15, 21})) == "a piece of 6 rows, only 5 are left");
  CHECK_FALSE(a->complete());
  CHECK_FALSE(a->finish());  // incomplete: nothing to hand out

  // Sparse: fewer non-zeros announced than the rows hold, then more.
  auto extent = io::extent_of(*sparse, {0, 10});
  extent.nonzeros -= 1;
  auto b = io::dataset_assembly::start(extent);
  REQUIRE(b.ok());
  CHECK(message(b->append(0, *sparse, {0, 10})).find("non-zeros, only") != std::string::npos);
  extent.nonzeros += 2;
  auto c = io::dataset_assembly::start(extent);
  REQUIRE(c.ok());
  const auto held = std::to_string(extent.nonzeros - 1);
  CHECK(message(c->append(0, *sparse, {0, 10}))
        == "the pieces hold " + held + " non-zeros, " + std::to_string(extent.nonzeros) + " were announced");
}

TEST_CASE("dataset_assembly: impossible extents are refused before anything is allocated") {
  auto message = [](const io::data_extent& e) {
    auto r = io::dataset_assembly::start(e);
    return r.ok() ? std::string{"ok"} : r.error().message();
  };
  CHECK(message({false, -1, 3, 0}).find("impossible data extent") != std::string::npos);
  CHECK(message({false, std::int64_t{1} << 30, std::int64_t{1} << 30, 0}).find("impossible data extent") != std::string::npos);
  CHECK(message({false, 10, 3, 5}) == "impossible data extent: non-zeros given for dense data");
  CHECK(message({true, 10, 3, std::int64_t{1} << 31}).find("more than 32-bit offsets allow") != std::string::npos);
  CHECK(message({true, 10, 3, 31}) == "impossible data extent: 31 non-zeros in 10 rows of 3 features");
  CHECK(io::check_extent({true, std::int64_t{1} << 30, std::int64_t{1} << 20, 7}).ok());  // sparse: no cell limit
  CHECK(message({true, 10, 3, 7}) == "ok");
}
