// What the readers make of the data a user has (Fashion-MNIST from its Debian package,
// scikit-learn's CSV files), of test data against training data, and of hostile files: headers
// claiming billions of records, gzip bombs, wide rows, huge indices. Errors name the file, memory
// stays bounded.

#include "io/readers.hpp"
#include "support/datasets.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace shardopt;
using shardopt::test::idx_bytes;
using shardopt::test::temp_dir;
using dense = model::dense_features;

TEST_CASE("parse_data_format") {
  CHECK(io::parse_data_format("auto") == io::data_format::automatic);
  CHECK(io::parse_data_format("csv") == io::data_format::csv);
  CHECK(io::parse_data_format("libsvm") == io::data_format::libsvm);
  CHECK(io::parse_data_format("svmlight") == io::data_format::libsvm);
  CHECK(io::parse_data_format("idx") == io::data_format::idx);
  CHECK_FALSE(io::parse_data_format("CSV").has_value());
  CHECK_FALSE(io::parse_data_format("").has_value());
}

TEST_CASE("check_same_features: dense mismatch fails, narrower sparse test data is widened") {
  io::raw_dataset train;
  train.source = "train.csv";
  train.data.x = dense::Zero(2, 784);
  io::raw_dataset test;
  test.source = "test.csv";
  test.data.x = dense::Zero(3, 783);
  auto r = io::check_same_features(train, test);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == "dimension mismatch: train.csv has 784 features, test.csv has 783");

  test.data.x = dense::Zero(3, 784);
  CHECK(io::check_same_features(train, test).ok());

  model::sparse_features narrow(2, 5);
  narrow.insert(1, 4) = 2.0f;
  narrow.makeCompressed();
  test.source = "test.svm";
  test.data.x = narrow;
  auto widened = io::check_same_features(train, test);
  REQUIRE_MESSAGE(widened.ok(), widened.error().message());
  CHECK(test.data.cols() == 784);
  CHECK(test.data.rows() == 2);
  CHECK(test.data.sparse().coeff(1, 4) == 2.0f);
  CHECK(test.data.sparse().nonZeros() == 1);

  test.data.x = model::sparse_features(2, 800);
  auto wide = io::check_same_features(train, test);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.error().message() == "dimension mismatch: train.csv has 784 features, test.svm has 800");
}

TEST_CASE("real data: Fashion-MNIST from the Debian package") {
  shardopt::test::require_fashion_mnist();
  auto train = io::read_dataset("fashion-mnist", io::split::train, {});
  REQUIRE_MESSAGE(train.ok(), train.error().message());
  CHECK(train->data.rows() == 60000);
  CHECK(train->data.cols() == 784);
  CHECK(train->pixels);
  CHECK(train->data.y.minCoeff() == 0);
  CHECK(train->data.y.maxCoeff() == 9);
  CHECK(train->data.dense().maxCoeff() == 255.0f);
  CHECK(train->data.dense().minCoeff() == 0.0f);
  // Fashion-MNIST is balanced: 6000 examples per class.
  CHECK((train->data.y.array() == 3).count() == 6000);

  auto test = io::read_dataset("fashion-mnist", io::split::test, {});
  REQUIRE_MESSAGE(test.ok(), test.error().message());
  CHECK(test->data.rows() == 10000);
  CHECK(test->data.cols() == 784);
  CHECK(io::check_same_features(*train, *test).ok());
}

TEST_CASE("real data: scikit-learn's bundled CSV files") {
  const std::string dir = shardopt::test::sklearn_data + "/";
  shardopt::test::require_sklearn_csv("iris.csv");
  io::read_options last;
  last.label_column = -1;
  // iris.csv opens with "150,4,setosa,versicolor,virginica": a header, because of the names.
  auto iris = io::read_dataset(dir + "iris.csv", io::split::train, last);
  REQUIRE_MESSAGE(iris.ok(), iris.error().message());
  CHECK(iris->data.rows() == 150);
  CHECK(iris->data.cols() == 4);
  CHECK(iris->data.y.minCoeff() == 0);
  CHECK(iris->data.y.maxCoeff() == 2);
  CHECK(iris->lines.front() == 2);
  CHECK(iris->data.dense()(0, 0) == 5.1f);
  CHECK(iris->data.dense()(0, 3) == 0.2f);

  auto cancer = io::read_dataset(dir + "breast_cancer.csv", io::split::train, last);
  REQUIRE_MESSAGE(cancer.ok(), cancer.error().message());
  CHECK(cancer->data.rows() == 569);
  CHECK(cancer->data.cols() == 30);

  auto digits = io::read_dataset(dir + "digits.csv.gz", io::split::train, last);
  REQUIRE_MESSAGE(digits.ok(), digits.error().message());
  CHECK(digits->data.rows() == 1797);
  CHECK(digits->data.cols() == 64);
  CHECK(digits->data.y.maxCoeff() == 9);
  CHECK(digits->lines.front() == 1);
}

namespace {

/// Writes `head` and then `chunk` `repeats` times gzip-compressed to `path`, never holding more than
/// one chunk: a small file that decompresses to a large one.
void write_gz_bomb(const std::string& path, const std::string& head, const std::string& chunk, int repeats) {
  gzFile out = gzopen(path.c_str(), "wb9");
  REQUIRE(out != nullptr);
  REQUIRE(gzwrite(out, head.data(), static_cast<unsigned>(head.size())) == static_cast<int>(head.size()));
  for (int i = 0; i < repeats; ++i)
    REQUIRE(gzwrite(out, chunk.data(), static_cast<unsigned>(chunk.size())) == static_cast<int>(chunk.size()));
  REQUIRE(gzclose(out) == Z_OK);
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

/// The peak resident and virtual sizes of this process.
struct memory_peaks {
  std::int64_t rss = test::peak_rss_bytes();
  std::int64_t virtual_size = test::peak_virtual_bytes();
};

/// Checks the growth of both peaks since `before` against the hostile-file bound, and prints them.
/// The virtual peak catches allocations that are made but never touched (under AddressSanitizer,
/// whose allocator reserves address space of its own, only the RSS is checked).
void check_bounded(const memory_peaks& before, const std::string& what) {
  const memory_peaks after;
  MESSAGE("peak growth reading " << what << ": RSS " << (after.rss - before.rss) / 1024 << " KiB, virtual "
                                 << (after.virtual_size - before.virtual_size) / 1024 << " KiB");
  CHECK(after.rss - before.rss < test::hostile_file_memory_bound);
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(after.virtual_size - before.virtual_size < test::hostile_file_memory_bound);
#endif
}

} // namespace

TEST_CASE("hostile files: IDX headers claiming billions of records fail naming the file, in bounded memory") {
  temp_dir dir;
  const memory_peaks before;
  const std::uint32_t huge = 0xffffffffU;
  const auto images = dir.write("images", idx_bytes(0x803, {huge, 28, 28}, {1, 2, 3}));
  const auto labels = dir.write("labels", idx_bytes(0x801, {huge}, {1}));
  auto plain = io::read_idx(images, labels, {});
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.error().message() == images + ": truncated: expected " + std::to_string(std::uint64_t{huge} * 784) +
                                       " bytes of image data, got 3");
  // Compressed, the file size says nothing; the read stops where the data does.
  const auto images_gz = dir.write_gz("images.gz", idx_bytes(0x803, {huge, 28, 28}, {1, 2, 3}));
  const auto labels_gz = dir.write_gz("labels.gz", idx_bytes(0x801, {huge}, {1}));
  auto packed = io::read_idx(images_gz, labels_gz, {});
  REQUIRE_FALSE(packed.ok());
  CHECK(packed.error().message() == images_gz + ": truncated: expected " +
                                        std::to_string(std::uint64_t{huge} * 784) + " bytes of image data, got 3");
  check_bounded(before, "IDX files claiming 2^32 images");
}

TEST_CASE("hostile files: a gzip bomb stops at the decompressed-size limit, naming the file") {
  temp_dir dir;
  // 256 MiB of CSV rows in a file of a few hundred KiB.
  std::string rows;
  while (rows.size() < (std::size_t{1} << 20))
    rows += "0,1,2,3\n";
  const auto csv = dir.file("bomb.csv.gz");
  write_gz_bomb(csv, "", rows, 256);
  CHECK(std::filesystem::file_size(csv) < (std::uintmax_t{1} << 20));
  // An IDX images file whose header is honest about its 10 GB of pixels.
  const auto images = dir.file("images.gz");
  write_gz_bomb(images, idx_bytes(0x803, {1000000, 100, 100}, {}), std::string(std::size_t{1} << 20, '\0'), 256);
  const auto labels = dir.write_gz("labels.gz", idx_bytes(0x801, {1000000}, {}));

  const memory_peaks before;
  io::read_options limited;
  limited.max_decompressed = std::uint64_t{4} << 20;
  const std::string limit_text = ": decompresses to more than 4194304 bytes";
  auto r = io::read_csv(csv, limited);
  REQUIRE_FALSE(r.ok());
  CHECK(starts_with(r.error().message(), csv + limit_text));
  auto l = io::read_libsvm(csv, limited);
  REQUIRE_FALSE(l.ok());
  CHECK(starts_with(l.error().message(), csv + limit_text));
  auto i = io::read_idx(images, labels, limited);
  REQUIRE_FALSE(i.ok());
  CHECK(starts_with(i.error().message(), images + limit_text));
  check_bounded(before, "gzip bombs with a 4 MiB limit");

  // The default limit is the documented one.
  CHECK(io::read_options{}.max_decompressed == io::default_max_decompressed);
  CHECK(io::default_max_decompressed == std::uint64_t{4} << 30);
}

TEST_CASE("hostile files: a wide first CSV row followed by blank lines costs no more than the file") {
  temp_dir dir;
  // 20,001 fields on the first row, then 4 million blank lines: rows x width would be 300 GiB.
  std::string text = "1";
  for (int i = 0; i < 20000; ++i)
    text += ",0";
  text += "\n" + std::string(std::size_t{4} << 20, '\n');
  const auto path = dir.write("wide.csv", text);
  const memory_peaks before;
  auto r = io::read_csv(path, {});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.rows() == 1);
  CHECK(r->data.cols() == 20000);
  // A feature count from the options that the row does not have fails before anything is allocated.
  io::read_options wide;
  wide.features = std::int64_t{1} << 40;
  auto w = io::read_csv(path, wide);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().message() == path + ":1: expected 1099511627777 fields, got 20001");
  check_bounded(before, "a 20,001-field row over 4 million blank lines");
}

TEST_CASE("hostile files: LIBSVM indices past 2^31 fail naming file and line, the largest allowed costs nothing") {
  temp_dir dir;
  const memory_peaks before;
  const auto huge = dir.write("huge.svm", "1 3:1\n-1 1000000000000:1\n");
  auto r = io::read_libsvm(huge, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == huge + ":2: index 1000000000000 is too large (at most 2147483647)");
  const auto widest = dir.write("widest.svm", "1 2147483647:1\n");
  auto w = io::read_libsvm(widest, {});
  REQUIRE_MESSAGE(w.ok(), w.error().message());
  CHECK(w->data.cols() == 2147483647);
  CHECK(w->data.rows() == 1);
  check_bounded(before, "LIBSVM files with indices near 2^31");
}
