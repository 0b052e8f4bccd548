// Node-local parts: for any number of parts, the parts of a file hold every example exactly once and
// in order (Hadoop's split rule), and fitting from part summaries equals fitting on the whole.

#include "io/binary_cache.hpp"
#include "io/partition.hpp"
#include "io/splits.hpp"
#include "model/exact_sum.hpp"
#include "support/datasets.hpp"
#include "support/bits.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <random>
#include <sstream>
#include <tuple>

namespace io = shardopt::io;
namespace model = shardopt::model;
using shardopt::test::temp_dir;
namespace test = shardopt::test;

namespace {

/// A CSV file with a header and lines of very different lengths (so byte ranges cut mid-line).
std::string make_csv(std::mt19937& rng, int rows) {
  std::ostringstream out;
  out << "label,a,b,c\n";
  std::uniform_int_distribution<int> label(0, 2);
  std::uniform_int_distribution<int> digits(0, 12);
  for (int i = 0; i < rows; ++i) {
    out << label(rng);
    for (int j = 0; j < 3; ++j)
      out << "," << i * 3 + j << "." << std::string(static_cast<std::size_t>(digits(rng)), '5');
    out << "\n";
  }
  return out.str();
}

std::string make_libsvm(std::mt19937& rng, int rows) {
  std::ostringstream out;
  std::uniform_int_distribution<int> coin(0, 1);
  for (int i = 0; i < rows; ++i) {
    out << (coin(rng) ? "+1" : "-1");
    for (int j = 1; j <= 9; ++j)
      if (coin(rng))
        out << " " << j << ":" << i + j * 0.25;
    out << "   # comment " << std::string(static_cast<std::size_t>(i % 17), 'x') << "\n";
  }
  return out.str();
}

/// Reads all parts and checks that together they are the whole, in order.
void check_parts_cover(const std::string& path, const io::read_options& options) {
  auto whole = io::read_dataset(path, io::split::train, options);
  REQUIRE(whole.ok());
  for (std::int64_t parts = 1; parts <= 7; ++parts) {
    INFO(parts << " parts");
    std::int64_t row = 0;
    for (std::int64_t part = 0; part < parts; ++part) {
      auto piece = io::read_part(io::part_request{path, options, part, parts});
      REQUIRE_MESSAGE(piece.ok(), piece.error().message());
      CHECK(piece->source.find("part " + std::to_string(part + 1) + " of " + std::to_string(parts))
            != std::string::npos);
      for (std::int64_t i = 0; i < piece->data.rows(); ++i, ++row) {
        REQUIRE(row < whole->data.rows());
        CHECK(piece->data.y[i] == whole->data.y[row]);
        if (whole->data.is_sparse()) {
          const Eigen::VectorXf a = piece->data.sparse().row(i);
          const Eigen::VectorXf b = whole->data.sparse().row(row);
          CHECK(a.head(std::min(a.size(), b.size())) == b.head(std::min(a.size(), b.size())));
        } else {
          CHECK(piece->data.dense().row(i) == whole->data.dense().row(row));
        }
      }
    }
    CHECK(row == whole->data.rows());
  }
}

/// Reads every part of 1..7 as the driver does for node-local shards: natural parts first (their
/// example counts), then again moved by block_aligned_shifts. Every moved part after the first
/// starts a canonical block, together they are the whole in order, and every example keeps its
/// line, counted from its moved part's first line (blank and comment lines included).
void check_aligned_parts(const std::string& path, const io::read_options& options) {
  auto whole = io::read_dataset(path, io::split::train, options);
  REQUIRE(whole.ok());
  const auto n = whole->data.rows();
  const auto block = model::block_rows_for(n);
  REQUIRE(block > 1);
  int moved = 0;
  for (std::int64_t parts = 1; parts <= 7; ++parts) {
    INFO(parts << " parts");
    std::vector<std::int64_t> rows;
    for (std::int64_t part = 0; part < parts; ++part) {
      auto piece = io::read_part(io::part_request{path, options, part, parts});
      REQUIRE(piece.ok());
      rows.push_back(piece->data.rows());
    }
    const auto shifts = io::block_aligned_shifts(rows, block);
    REQUIRE(shifts.size() == rows.size());
    std::int64_t row = 0;
    for (std::int64_t part = 0; part < parts; ++part) {
      io::part_request request{path, options, part, parts};
      std::tie(request.skip, request.extra) = shifts[static_cast<std::size_t>(part)];
      moved += request.skip + request.extra > 0;
      auto piece = io::read_part(request);
      REQUIRE_MESSAGE(piece.ok(), piece.error().message());
      CHECK(row % block == 0);
      CHECK((piece->source.find("moved to start a block") != std::string::npos) == (request.skip + request.extra > 0));
      const auto offset = whole->lines[static_cast<std::size_t>(row)] - piece->lines[0];
      for (std::int64_t i = 0; i < piece->data.rows(); ++i, ++row) {
        REQUIRE(row < n);
        CHECK(piece->data.y[i] == whole->data.y[row]);
        CHECK(piece->lines[static_cast<std::size_t>(i)] + offset == whole->lines[static_cast<std::size_t>(row)]);
        if (whole->data.is_sparse()) {
          const Eigen::VectorXf a = piece->data.sparse().row(i);
          const Eigen::VectorXf b = whole->data.sparse().row(row);
          CHECK(a.head(std::min(a.size(), b.size())) == b.head(std::min(a.size(), b.size())));
          CHECK(piece->data.sparse().row(i).nonZeros() == whole->data.sparse().row(row).nonZeros());
        } else {
          CHECK(piece->data.dense().row(i) == whole->data.dense().row(row));
        }
      }
    }
    CHECK(row == n);
  }
  CHECK(moved > 0);  // the byte ranges did cut blocks: the shifts were exercised
}

/// LIBSVM lines with blank and comment lines between them (lines that are not examples).
std::string make_gappy_libsvm(std::mt19937& rng, int rows) {
  std::ostringstream out;
  const auto body = make_libsvm(rng, rows);
  std::istringstream lines{body};
  std::string line;
  for (int i = 0; std::getline(lines, line); ++i) {
    if (i % 7 == 3)
      out << "\n";
    if (i % 11 == 5)
      out << "# a comment line\n";
    out << line << "\n";
  }
  return out.str();
}

} // namespace

TEST_CASE("read_part: CSV parts (header in part 1 only) hold every line once, for 1..7 parts") {
  std::mt19937 rng{17};
  temp_dir dir;
  const auto path = dir.write("data.csv", make_csv(rng, 61));
  check_parts_cover(path, {});
}

TEST_CASE("read_part: LIBSVM parts hold every line once, for 1..7 parts") {
  std::mt19937 rng{18};
  temp_dir dir;
  const auto path = dir.write("data.svm", make_libsvm(rng, 53));
  check_parts_cover(path, {});
}

TEST_CASE("read_part: gzip text is split the same way after decompression") {
  std::mt19937 rng{19};
  temp_dir dir;
  const auto path = dir.write_gz("data.csv.gz", make_csv(rng, 40));
  check_parts_cover(path, {});
}

TEST_CASE("read_part: Fashion-MNIST parts are record ranges of whole canonical blocks, as local shards") {
  shardopt::test::require_fashion_mnist();
  auto part = io::read_part(io::part_request{"fashion-mnist", {}, 2, 3});
  REQUIRE(part.ok());
  // 60,000 rows in 79 blocks of 768 rows (the last of 96): 27, 26 and 26 blocks, so part 3 starts
  // at row 40,704.
  const auto expected = io::partition_blocks(60000, 3)[2];
  CHECK(expected.begin == 53 * 768);
  CHECK(expected.end == 60000);
  CHECK(part->data.rows() == expected.size());
  CHECK(part->source.find("records 40704-60000") != std::string::npos);
  auto whole = io::read_dataset("fashion-mnist", io::split::train, {});
  REQUIRE(whole.ok());
  CHECK(part->data.dense().row(0) == whole->data.dense().row(40704));
  CHECK(part->data.y[expected.size() - 1] == whole->data.y[59999]);
}

TEST_CASE("read_part: errors name the part, a part with no line is an error, not an empty shard") {
  temp_dir dir;
  const auto path = dir.write("tiny.csv", "0,1\n1,2\n");
  // 8 bytes in 8 parts: part 4 covers byte 3 (in the middle of line 1) and owns no line.
  auto empty = io::read_part(io::part_request{path, {}, 3, 8});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message().find("no examples; use fewer shards") != std::string::npos);
  const auto bad = dir.write("bad.csv", "0,1\n1,2\n0,x\n1,4\n");
  auto broken = io::read_part(io::part_request{bad, {}, 1, 2});
  REQUIRE_FALSE(broken.ok());
  INFO(broken.error().message());
  CHECK(broken.error().message().find("bad.csv (part 2 of 2, bytes 8-16):1: field 2") != std::string::npos);
  auto missing = io::read_part(io::part_request{dir.file("none.csv"), {}, 0, 2});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("no such file") != std::string::npos);
  io::read_options limited;
  limited.limit = 3;
  CHECK_FALSE(io::read_part(io::part_request{path, limited, 0, 1}).ok());
}

TEST_CASE("fit_parts equals fit_labels and fit_scaling on the whole data") {
  std::mt19937 rng{20};
  temp_dir dir;
  for (const bool sparse : {false, true}) {
    INFO((sparse ? "sparse" : "dense"));
    const auto path = sparse ? dir.write("fit.svm", make_libsvm(rng, 45))
                             : dir.write("fit.csv", make_csv(rng, 45));
    const auto kind = sparse ? model::model_kind::logistic : model::model_kind::softmax;
    auto whole = io::read_dataset(path, io::split::train, {});
    REQUIRE(whole.ok());
    const auto expected_labels = io::fit_labels(kind, *whole, 0);
    REQUIRE(expected_labels.ok());
    const auto expected_scaling = io::fit_scaling(*whole, io::scale_mode::automatic, true);
    REQUIRE(expected_scaling.ok());
    std::vector<io::raw_dataset> pieces;
    std::vector<io::part_summary> summaries;
    for (std::int64_t part = 0; part < 4; ++part) {
      auto piece = io::read_part(io::part_request{path, {}, part, 4});
      REQUIRE(piece.ok());
      summaries.push_back(io::summarize(*piece));
      pieces.push_back(std::move(*piece));
    }
    int asked = 0;
    auto fitted = io::fit_parts(kind, 0, summaries, io::scale_mode::automatic, true, path,
                                [&](std::size_t part, const io::moment_grid& grid) {
                                  ++asked;
                                  return io::moments_of(pieces[part].data, grid, pieces[part].source);
                                });
    REQUIRE_MESSAGE(fitted.ok(), fitted.error().message());
    CHECK(asked == 4);
    CHECK(fitted->rows == whole->data.rows());
    CHECK(fitted->features == whole->data.cols());
    CHECK(fitted->labels.classes == expected_labels->classes);
    // The statistics of the parts are those of the whole, to the bit.
    CHECK(fitted->scaling.factor == expected_scaling->factor);
    CHECK(test::same_bits(fitted->scaling.mean, expected_scaling->mean));
    CHECK(test::same_bits(fitted->scaling.inv_std, expected_scaling->inv_std));
    CHECK(fitted->scaling.inv_std.size() == whole->data.cols());
    CHECK(fitted->scaling.mean.size() == (sparse ? 0 : whole->data.cols()));
  }
}

TEST_CASE("block_aligned_shifts: every part after the first starts a block, or no shifts when a part would be empty") {
  using shifts = std::vector<std::pair<std::int64_t, std::int64_t>>;
  // Starts 0, 10, 20 in blocks of 4: parts move to 0, 12, 20 (12, 8 and 10 examples).
  CHECK(io::block_aligned_shifts({10, 10, 10}, 4) == shifts{{0, 2}, {2, 0}, {0, 0}});
  CHECK(io::block_aligned_shifts({3, 20}, 4) == shifts{{0, 1}, {1, 0}});
  CHECK(io::block_aligned_shifts({8, 8, 5}, 4) == shifts{{0, 0}, {0, 0}, {0, 0}});
  CHECK(io::block_aligned_shifts({7}, 4) == shifts{{0, 0}});
  // Part 2 (examples 5) lies inside the block [4, 8) that part 1 ends: it would be left empty.
  CHECK(io::block_aligned_shifts({5, 1, 10}, 4).empty());
  // The last part inside the block the previous part ends.
  CHECK(io::block_aligned_shifts({9, 2}, 4).empty());
  CHECK(io::block_aligned_shifts({10, 10}, io::max_part_shift + 1).empty());
  CHECK(io::block_aligned_shifts({}, 4).empty());
}

TEST_CASE("read_part with shifts: CSV, LIBSVM with blank and comment lines, VW and gzip parts start canonical blocks") {
  std::mt19937 rng{23};
  temp_dir dir;
  check_aligned_parts(dir.write("aligned.csv", make_csv(rng, 700)), {});
  check_aligned_parts(dir.write("aligned.svm", make_gappy_libsvm(rng, 900)), {});
  check_aligned_parts(dir.write_gz("aligned.csv.gz", make_csv(rng, 650)), {});
  std::ostringstream vw;
  for (int i = 0; i < 800; ++i)
    vw << (i % 3 ? "1" : "-1") << " |w word" << i % 37 << " other" << (i * 7) % 19 << (i % 5 ? " |c x:2" : "") << "\n";
  io::read_options hashed;
  hashed.hashing.bits = 12;
  check_aligned_parts(dir.write("aligned.vw", vw.str()), hashed);
  // CSV with a header and string columns (a later part takes the header from the file's start),
  // and TSV.
  std::ostringstream csv;
  std::ostringstream tsv;
  csv << "label,city,review\n";
  for (int i = 0; i < 760; ++i) {
    csv << i % 2 << ",town" << i % 13 << ",\"word" << i % 29 << ", and more " << std::string(static_cast<std::size_t>(i % 11), 'z') << "\"\n";
    tsv << i % 3 << "\t" << i * 0.5 << "\t" << std::string(static_cast<std::size_t>(i % 9 + 1), '7') << "\n";
  }
  io::read_options strings;
  strings.hashing.bits = 14;
  strings.hashing.categorical = {"city"};
  strings.hashing.text = {"review"};
  check_aligned_parts(dir.write("aligned_strings.csv", csv.str()), strings);
  check_aligned_parts(dir.write("aligned.tsv", tsv.str()), {});
  check_aligned_parts(dir.write_gz("aligned.svm.gz", make_gappy_libsvm(rng, 640)), {});
}

TEST_CASE("read_part with shifts: bounds, data that is not text, and text after the part too short are errors") {
  std::mt19937 rng{24};
  temp_dir dir;
  const auto path = dir.write("shift.csv", make_csv(rng, 300));
  auto message = [&](io::part_request request) {
    auto piece = io::read_part(request);
    REQUIRE_FALSE(piece.ok());
    return piece.error().message();
  };
  io::part_request request{path, {}, 0, 3};
  request.extra = io::max_part_shift;
  CHECK(message(request).find("cannot move 0 examples out and 1024 in") != std::string::npos);
  request = {path, {}, 1, 3};
  request.skip = -1;
  CHECK(message(request).find("each at most 1023") != std::string::npos);
  request = {path, {}, 2, 3};
  request.extra = 1;  // nothing comes after the last part
  CHECK(message(request).find("or after the last part") != std::string::npos);
  request = {path, {}, 0, 3};
  request.skip = 1;  // nor before the first (which would look for a header on a data line)
  CHECK(message(request).find("none before the first part") != std::string::npos);
  auto second = io::read_part(io::part_request{path, {}, 1, 3});
  REQUIRE(second.ok());
  request = {path, {}, 1, 3};
  request.skip = std::min<std::int64_t>(second->data.rows(), io::max_part_shift - 1);
  REQUIRE(request.skip == second->data.rows());
  CHECK(message(request).find("no examples left after moving the first") != std::string::npos);
  // Part 3 holds about 100 examples: part 2 cannot take 1000 of them.
  request = {path, {}, 1, 3};
  request.extra = 1000;
  const auto short_next = message(request);
  INFO(short_next);
  CHECK(short_next.find("shift.csv (part 3 of 3, bytes ") != std::string::npos);
  CHECK(short_next.find("not the 1000 that the block alignment moves") != std::string::npos);
  // IDX and binary parts are whole blocks already.
  const auto binary = dir.file("shift.shoptbin");
  {
    auto whole = io::read_dataset(path, io::split::train, {});
    REQUIRE(whole.ok());
    auto origin = io::origin_of(path, {});
    REQUIRE(origin.ok());
    REQUIRE(io::write_binary_dataset(binary, *whole, *origin).ok());
  }
  request = {binary, {}, 0, 2};
  request.extra = 3;
  CHECK(message(request).find("only text parts move examples") != std::string::npos);
}
