#include "io/readers.hpp"
#include "support/datasets.hpp"
#include "support/files.hpp"
#include "support/memory.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace shardopt;
using shardopt::test::temp_dir;

namespace {

using dense = model::dense_features;


/// The bytes of an IDX file: big-endian magic and sizes, then `payload`.
std::string idx_bytes(std::uint32_t magic, const std::vector<std::uint32_t>& sizes,
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

/// Three 2x2 images with pixel values 0..11 (and 255 in the last), labels 7, 0, 9.
const std::vector<unsigned char> image_payload{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
const std::vector<unsigned char> label_payload{7, 0, 9};
const std::string images_idx = idx_bytes(0x803, {3, 2, 2}, image_payload);
const std::string labels_idx = idx_bytes(0x801, {3}, label_payload);

void check_tiny_images(const io::raw_dataset& d) {
  REQUIRE_FALSE(d.data.is_sparse());
  CHECK(d.data.dense() == test::dense_rows({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 255}}));
  CHECK(d.data.y == test::vector_of({7, 0, 9}));
  CHECK(d.pixels);
  CHECK(d.lines.empty());
}

} // namespace

TEST_CASE("read_csv: no header, label in the first column") {
  temp_dir dir;
  const auto path = dir.write("a.csv", "1,2.5,3\n0,-1,4e2\n");
  auto r = io::read_csv(path, {});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.dense() == test::dense_rows({{2.5f, 3}, {-1, 400}}));
  CHECK(r->data.y == test::vector_of({1, 0}));
  CHECK(r->lines == std::vector<std::int64_t>{1, 2});
  CHECK(r->source == path);
  CHECK_FALSE(r->pixels);
  CHECK(r->where(1) == path + ":2");
}

TEST_CASE("read_csv: detected header, CRLF, blank lines, label last via a negative column") {
  temp_dir dir;
  const auto path = dir.write("b.csv", "x1, x2 ,label\r\n\r\n1,2,3\r\n   \n4,5,6\r\n");
  io::read_options options;
  options.label_column = -1;
  auto r = io::read_csv(path, options);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.dense() == test::dense_rows({{1, 2}, {4, 5}}));
  CHECK(r->data.y == test::vector_of({3, 6}));
  CHECK(r->lines == std::vector<std::int64_t>{3, 5});
  CHECK(r->where(0) == path + ":3");
}

TEST_CASE("read_csv: label in a middle column, quoted and signed numbers, no final newline") {
  temp_dir dir;
  const auto path = dir.write("c.csv", "1, \"+7\" ,2\n3,8,4");
  io::read_options options;
  options.label_column = 1;
  auto r = io::read_csv(path, options);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.dense() == test::dense_rows({{1, 2}, {3, 4}}));
  CHECK(r->data.y == test::vector_of({7, 8}));
  CHECK(r->lines == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("read_csv: the header option overrides detection, and limit stops early") {
  temp_dir dir;
  const auto path = dir.write("d.csv", "9,9\n1,2\n3,4\n5,6\n");
  io::read_options options;
  options.header = true;
  options.limit = 2;
  auto r = io::read_csv(path, options);
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.dense() == test::dense_rows({{2}, {4}}));
  CHECK(r->data.y == test::vector_of({1, 3}));
  CHECK(r->lines == std::vector<std::int64_t>{2, 3});

  const auto named = dir.write("e.csv", "a,b\n1,2\n");
  options = {};
  options.header = false;
  auto forced = io::read_csv(named, options);
  REQUIRE_FALSE(forced.ok());
  CHECK(forced.error().message() == named + ":1: field 1: expected a number, got 'a'");
}

TEST_CASE("read_csv: malformed files name file, line and what is wrong") {
  temp_dir dir;
  SUBCASE("ragged row") {
    const auto path = dir.write("ragged.csv", "h1,h2,h3,h4,h5\n1,2,3,4,5\n\n1,2,3,4\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ":4: expected 5 fields, got 4");
  }
  SUBCASE("non-numeric field") {
    const auto path = dir.write("word.csv", "1,2,3\n4,5,abc\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ":2: field 3: expected a number, got 'abc'");
  }
  SUBCASE("trailing junk after a number") {
    const auto path = dir.write("junk.csv", "1,2,3\n4,5.5x,6\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ":2: field 2: expected a number, got '5.5x'");
  }
  SUBCASE("nan and inf are not accepted") {
    const auto path = dir.write("nan.csv", "1,2,3\n4,nan,6\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ":2: field 2: expected a number, got 'nan'");
  }
  SUBCASE("empty file") {
    const auto path = dir.write("empty.csv", "\n  \n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ": empty file");
  }
  SUBCASE("header only") {
    const auto path = dir.write("header.csv", "a,b,c\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ": no data rows after the header on line 1");
  }
  SUBCASE("label column out of range") {
    const auto path = dir.write("narrow.csv", "1,2\n");
    io::read_options options;
    options.label_column = -3;
    auto r = io::read_csv(path, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ":1: label column -3 is out of range for 2 fields");
  }
  SUBCASE("a single column") {
    const auto path = dir.write("one.csv", "1\n2\n");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() ==
          path + ":1: only one field; a row needs a label and at least one feature");
  }
  SUBCASE("missing file") {
    const auto path = dir.file("absent.csv");
    auto r = io::read_csv(path, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + ": no such file");
  }
}

TEST_CASE("read_csv: gzip-compressed CSV reads like plain CSV") {
  temp_dir dir;
  const auto path = dir.write_gz("a.csv.gz", "1,2.5,3\n0,-1,4e2\n");
  auto r = io::read_dataset(path, io::split::train, {});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  CHECK(r->data.dense() == test::dense_rows({{2.5f, 3}, {-1, 400}}));
  CHECK(r->data.y == test::vector_of({1, 0}));
}

TEST_CASE("read_libsvm: CSR with exact entries, comments, blank lines and empty rows") {
  temp_dir dir;
  const auto path = dir.write("a.svm", "+1 1:0.5 3:2\n"
                                       "-1 2:1.5   # trailing comment\n"
                                       "# a comment line\n"
                                       "\n"
                                       "0\r\n"
                                       "2 qid:4 3:-4\n");
  auto r = io::read_libsvm(path, {});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  REQUIRE(r->data.is_sparse());
  const auto& x = r->data.sparse();
  CHECK(x.rows() == 4);
  CHECK(x.cols() == 3);
  CHECK(x.nonZeros() == 4);
  CHECK(x.coeff(0, 0) == 0.5f);
  CHECK(x.coeff(0, 2) == 2.0f);
  CHECK(x.coeff(1, 1) == 1.5f);
  CHECK(x.coeff(3, 2) == -4.0f);
  CHECK(x.coeff(0, 1) == 0.0f);
  CHECK(x.coeff(2, 0) == 0.0f);
  CHECK(r->data.y == test::vector_of({1, -1, 0, 2}));
  CHECK(r->lines == std::vector<std::int64_t>{1, 2, 5, 6});
  CHECK(r->where(2) == path + ":5");

  io::read_options options;
  options.features = 5;
  options.limit = 2;
  auto wide = io::read_libsvm(path, options);
  REQUIRE_MESSAGE(wide.ok(), wide.error().message());
  CHECK(wide->data.cols() == 5);
  CHECK(wide->data.rows() == 2);
}

TEST_CASE("read_libsvm: malformed files name file, line and what is wrong") {
  temp_dir dir;
  const auto check = [&](const std::string& text, const std::string& expected,
                         io::read_options options = {}) {
    const auto path = dir.write("bad.libsvm", text);
    auto r = io::read_libsvm(path, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == path + expected);
  };
  check("1 1:1\n0 0:1\n", ":2: index 0: LIBSVM indices start at 1");
  check("1 7:1 5:2\n", ":1: index 5 after 7: indices must increase");
  check("1 3:1 3:2\n", ":1: index 3 after 3: indices must increase");
  check("1 3\n", ":1: malformed pair '3': expected index:value");
  check("1 a:3\n", ":1: malformed pair 'a:3': index is not an integer");
  check("1 3:x\n", ":1: malformed pair '3:x': value is not a number");
  check("# only\n1 1:1\nyes 1:1\n", ":3: label: expected a number, got 'yes'");
  io::read_options narrow;
  narrow.features = 4;
  check("1 1:1 5:1\n", ":1: index 5 is larger than the number of features (4)", narrow);
  check("# nothing\n\n", ": empty file (no examples)");
}

TEST_CASE("read_idx: raw and gzip files round-trip a tiny 3-image 2x2 set") {
  temp_dir dir;
  SUBCASE("raw") {
    const auto images = dir.write("images", images_idx);
    const auto labels = dir.write("labels", labels_idx);
    auto r = io::read_idx(images, labels, {});
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    check_tiny_images(*r);
    CHECK(r->source == labels);
    CHECK(r->where(2) == labels + ": record 2");
  }
  SUBCASE("gzip") {
    const auto images = dir.write_gz("images.gz", images_idx);
    const auto labels = dir.write_gz("labels.gz", labels_idx);
    auto r = io::read_idx(images, labels, {});
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    check_tiny_images(*r);
  }
  SUBCASE("limit") {
    const auto images = dir.write("images", images_idx);
    const auto labels = dir.write_gz("labels.gz", labels_idx);
    io::read_options options;
    options.limit = 2;
    auto r = io::read_idx(images, labels, options);
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    CHECK(r->data.dense() == test::dense_rows({{0, 1, 2, 3}, {4, 5, 6, 7}}));
    CHECK(r->data.y == test::vector_of({7, 0}));
  }
}

TEST_CASE("read_idx: malformed files name the file") {
  temp_dir dir;
  const auto images = dir.write("images", images_idx);
  const auto labels = dir.write("labels", labels_idx);
  SUBCASE("bad magic: labels passed as images") {
    auto r = io::read_idx(labels, images, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == labels + ": bad magic 0x00000801, expected 0x00000803 (IDX images)");
  }
  SUBCASE("bad magic in the labels file") {
    auto r = io::read_idx(images, images, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == images + ": bad magic 0x00000803, expected 0x00000801 (IDX labels)");
  }
  SUBCASE("truncated image data") {
    const auto cut = dir.write_gz("cut.gz", images_idx.substr(0, images_idx.size() - 3));
    auto r = io::read_idx(cut, labels, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == cut + ": truncated: expected 12 bytes of image data, got 9");
  }
  SUBCASE("truncated label data") {
    const auto cut = dir.write("cut", labels_idx.substr(0, labels_idx.size() - 1));
    auto r = io::read_idx(images, cut, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == cut + ": truncated: expected 3 bytes of label data, got 2");
  }
  SUBCASE("truncated header") {
    const auto cut = dir.write("cut", images_idx.substr(0, 10));
    auto r = io::read_idx(cut, labels, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == cut + ": truncated: expected a 16-byte IDX header, got 10 bytes");
  }
  SUBCASE("image and label counts differ") {
    const auto two = dir.write("two", idx_bytes(0x801, {2}, {1, 2}));
    auto r = io::read_idx(images, two, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == images + " has 3 images but " + two + " has 2 labels");
  }
  SUBCASE("missing file") {
    auto r = io::read_idx(images, dir.file("nothing"), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == dir.file("nothing") + ": no such file");
  }
}

TEST_CASE("read_dataset: MNIST directory layout, raw train split and gzip test split") {
  temp_dir dir;
  dir.write("train-images-idx3-ubyte", images_idx);
  dir.write("train-labels-idx1-ubyte", labels_idx);
  dir.write_gz("t10k-images-idx3-ubyte.gz", idx_bytes(0x803, {1, 2, 2}, {1, 2, 3, 4}));
  dir.write_gz("t10k-labels-idx1-ubyte.gz", idx_bytes(0x801, {1}, {5}));
  auto train = io::read_dataset(dir.path().string(), io::split::train, {});
  REQUIRE_MESSAGE(train.ok(), train.error().message());
  check_tiny_images(*train);
  auto test = io::read_dataset(dir.path().string(), io::split::test, {});
  REQUIRE_MESSAGE(test.ok(), test.error().message());
  CHECK(test->data.dense() == test::dense_rows({{1, 2, 3, 4}}));
  CHECK(test->data.y == test::vector_of({5}));
  CHECK(test->source == dir.file("t10k-labels-idx1-ubyte.gz"));
  CHECK(io::has_builtin_test_split(dir.path().string()));
}

TEST_CASE("read_dataset: a directory without the MNIST files names it and the expected files") {
  temp_dir dir;
  dir.write("train-images-idx3-ubyte", images_idx);
  auto r = io::read_dataset(dir.path().string(), io::split::train, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == dir.path().string() +
                                   ": neither train-labels-idx1-ubyte nor train-labels-idx1-ubyte.gz "
                                   "found (expected the MNIST layout)");
  auto test = io::read_dataset(dir.path().string(), io::split::test, {});
  REQUIRE_FALSE(test.ok());
  CHECK(test.error().message() == dir.path().string() +
                                      ": neither t10k-images-idx3-ubyte nor t10k-images-idx3-ubyte.gz "
                                      "found (expected the MNIST layout)");
}

TEST_CASE("read_dataset: files by extension or by the format option") {
  temp_dir dir;
  const auto csv = dir.write("data.CSV", "1,2\n3,4\n");
  const auto svm = dir.write("data.txt", "1 2:3\n");
  const auto other = dir.write("data.dat", "1 2:3\n");

  auto a = io::read_dataset(csv, io::split::train, {});
  REQUIRE_MESSAGE(a.ok(), a.error().message());
  CHECK_FALSE(a->data.is_sparse());
  CHECK(a->data.rows() == 2);

  auto b = io::read_dataset(svm, io::split::train, {});
  REQUIRE_MESSAGE(b.ok(), b.error().message());
  CHECK(b->data.is_sparse());
  CHECK(b->data.cols() == 2);

  auto unknown = io::read_dataset(other, io::split::train, {});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message() == "cannot tell the format of " + other + "; pass --format csv|libsvm");

  io::read_options options;
  options.format = io::data_format::libsvm;
  auto forced = io::read_dataset(other, io::split::train, options);
  REQUIRE_MESSAGE(forced.ok(), forced.error().message());
  CHECK(forced->data.sparse().coeff(0, 1) == 3.0f);

  auto missing = io::read_dataset(dir.file("nope.csv"), io::split::train, {});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message() == dir.file("nope.csv") + ": no such file");

  CHECK_FALSE(io::has_builtin_test_split(csv));
  CHECK(io::has_builtin_test_split("fashion-mnist"));
}

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
