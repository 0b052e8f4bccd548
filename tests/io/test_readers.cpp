// The readers (CSV, LIBSVM, IDX, a dataset directory) on small files the tests write: what they
// read, and errors that name the file, the line and what is wrong.

#include "io/readers.hpp"
#include "io/splits.hpp"
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

namespace {

using dense = model::dense_features;


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
          path + ":1: only one field (split at commas); a row needs a label and at least one feature");
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
  CHECK(unknown.error().message() == "cannot tell the format of " + other + "; pass --format csv|tsv|libsvm|vw");

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

TEST_CASE("read_dataset: TSV reads as CSV split at tabs, by extension, by format, whole and in parts") {
  temp_dir dir;
  const std::string rows = "label,a,b\n1,2.5,-3\r\n0, 4 ,\"5\"\n\n1,6,7\n";  // CRLF, a blank line
  std::string tabbed = rows;
  for (auto& c : tabbed)
    c = c == ',' ? '\t' : c;
  const auto csv = dir.write("d.csv", rows);
  const auto tsv = dir.write("d.tsv", tabbed);
  const auto plain = dir.write("d.dat", tabbed);
  auto expected = io::read_dataset(csv, io::split::train, {});
  REQUIRE_MESSAGE(expected.ok(), expected.error().message());
  CHECK(expected->data.dense() == test::dense_rows({{2.5, -3}, {4, 5}, {6, 7}}));

  auto by_extension = io::read_dataset(tsv, io::split::train, {});
  REQUIRE_MESSAGE(by_extension.ok(), by_extension.error().message());
  CHECK(by_extension->data.dense() == expected->data.dense());
  CHECK(by_extension->data.y == expected->data.y);
  CHECK(by_extension->lines == expected->lines);

  io::read_options options;
  REQUIRE(io::parse_data_format("tsv"));
  options.format = *io::parse_data_format("tsv");
  auto by_format = io::read_dataset(plain, io::split::train, options);
  REQUIRE_MESSAGE(by_format.ok(), by_format.error().message());
  CHECK(by_format->data.dense() == expected->data.dense());

  // As nodes read node-local parts: a .tsv file, and another name with the format told.
  for (const auto& [path, how] : {std::pair{tsv, io::read_options{}}, std::pair{plain, options}}) {
    for (std::int64_t parts : {2, 3}) {
      CAPTURE(path);
      CAPTURE(parts);
      std::vector<double> labels;
      for (std::int64_t part = 0; part < parts; ++part) {
        auto piece = io::read_part({path, how, part, parts});
        if (!piece && piece.error().message().find("no examples") != std::string::npos)
          continue;  // a part of blank bytes only
        REQUIRE_MESSAGE(piece.ok(), piece.error().message());
        CHECK(piece->data.cols() == 2);
        for (Eigen::Index r = 0; r < piece->data.y.size(); ++r)
          labels.push_back(piece->data.y[r]);
      }
      CHECK(labels == std::vector<double>{1, 0, 1});
    }
  }

  // A CSV file read as TSV has one field a line: the message says where it split.
  options.format = io::data_format::tsv;
  auto wrong = io::read_dataset(csv, io::split::train, options);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message()
        == csv + ":2: only one field (split at tabs); a row needs a label and at least one feature");
}
