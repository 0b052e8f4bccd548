// Binary datasets (io/binary_cache.hpp): round trips of sparse, dense and IDX data, parts of a
// file as a node reads them, and files that are truncated, damaged or hostile, refused by name.

#include "io/binary_cache.hpp"
#include "io/partition.hpp"
#include "io/readers.hpp"
#include "io/splits.hpp"

#include "support/files.hpp"
#include "support/memory.hpp"
#include "support/small_disk.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace shardopt;
namespace fs = std::filesystem;

namespace {

/// Header fields at their documented byte offsets (binary_cache.hpp; the header is 152 bytes).
constexpr std::size_t rows_at = 24;
constexpr std::size_t nonzeros_at = 40;
constexpr std::size_t indices_at_field = 72;
constexpr std::size_t values_at_field = 80;
constexpr std::size_t name_bytes_at = 124;
constexpr std::size_t crc_at = 144;
constexpr std::size_t header_size = 152;

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
T field(const std::string& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

template <class T>
void set_field(std::string& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

/// Recomputes the header's CRC-32 after a hostile edit, so that the edit itself is what is judged.
void reseal(std::string& bytes) {
  set_field<std::uint32_t>(bytes, crc_at, 0);
  const auto name = field<std::uint32_t>(bytes, name_bytes_at);
  auto crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), header_size + name);
  set_field<std::uint32_t>(bytes, crc_at, static_cast<std::uint32_t>(crc));
}

/// LIBSVM text of `rows` rows with up to 6 non-zeros each, from `seed`.
std::string libsvm_text(unsigned seed, int rows) {
  std::mt19937 rng{seed};
  std::string text;
  for (int r = 0; r < rows; ++r) {
    text += std::to_string(static_cast<int>(rng() % 3));
    int index = 0;
    for (unsigned k = 0; k < rng() % 7; ++k) {
      index += 1 + static_cast<int>(rng() % 40);
      text += " " + std::to_string(index) + ":" + std::to_string(static_cast<int>(rng() % 100) - 50) + ".5";
    }
    text += "\n";
  }
  return text;
}

/// What a cache of `source` read with `options` records (named datasets record no size or time).
io::cache_origin origin(const std::string& source, const io::read_options& options = {}) {
  auto now = io::origin_of(source, options);
  return now ? *now : io::cache_origin{source, 0, 0, options};
}

void check_same(const io::raw_dataset& a, const io::raw_dataset& b) {
  REQUIRE(a.data.is_sparse() == b.data.is_sparse());
  REQUIRE(a.data.rows() == b.data.rows());
  REQUIRE(a.data.cols() == b.data.cols());
  CHECK(a.data.y == b.data.y);
  CHECK(a.lines == b.lines);
  CHECK(a.pixels == b.pixels);
  if (a.data.is_sparse()) {
    const auto x = a.data.sparse();
    const auto y = b.data.sparse();
    REQUIRE(x.nonZeros() == y.nonZeros());
    for (Eigen::Index r = 0; r <= x.rows(); ++r)
      CHECK(x.outerIndexPtr()[r] == y.outerIndexPtr()[r]);
    CHECK(std::memcmp(x.innerIndexPtr(), y.innerIndexPtr(), 4 * static_cast<std::size_t>(x.nonZeros())) == 0);
    CHECK(std::memcmp(x.valuePtr(), y.valuePtr(), 4 * static_cast<std::size_t>(x.nonZeros())) == 0);
  } else {
    CHECK(a.data.dense() == b.data.dense());
  }
}

} // namespace

TEST_CASE("binary datasets: sparse, dense and IDX data round-trip, read by magic number whatever the name") {
  test::temp_dir dir;
  const auto svm = dir.write("a.svm", libsvm_text(1, 500));
  const auto csv = dir.write("a.csv", "y,a,b\n1,2.5,3\n0,-1,4e2\n1,0,0\n");
  for (const auto& source : {svm, csv, std::string{"fashion-mnist"}}) {
    INFO(source);
    io::read_options options;
    if (source == "fashion-mnist")
      options.limit = 300;
    auto text = io::read_dataset(source, io::split::train, options);
    REQUIRE_MESSAGE(text.ok(), text.error().message());
    const auto cache = dir.file("cache.whatever");
    REQUIRE(io::write_binary_dataset(cache, *text, origin(source, options)).ok());
    CHECK(io::is_binary_dataset(cache));
    CHECK_FALSE(io::is_binary_dataset(svm));
    auto mapped = io::read_dataset(cache, io::split::train, {});
    REQUIRE_MESSAGE(mapped.ok(), mapped.error().message());
    check_same(*text, *mapped);
    CHECK(mapped->source == text->source);  // messages name the text's lines
    CHECK(mapped->data.is_shared());
  }
}

TEST_CASE("binary datasets: parts are whole canonical blocks of rows, and a limit and wider features apply") {
  test::temp_dir dir;
  const auto svm = dir.write("a.svm", libsvm_text(2, 2000));
  auto text = io::read_libsvm(svm, {});
  REQUIRE(text.ok());
  const auto cache = dir.file("a.bin");
  REQUIRE(io::write_binary_dataset(cache, *text, origin(svm)).ok());
  for (std::int64_t parts = 1; parts <= 5; ++parts) {
    const auto ranges = io::partition_blocks(2000, parts);
    for (std::int64_t p = 0; p < parts; ++p) {
      INFO(p << " of " << parts);
      auto part = io::read_part({cache, {}, p, parts});  // as a node reads node-local data
      REQUIRE_MESSAGE(part.ok(), part.error().message());
      const auto range = ranges[static_cast<std::size_t>(p)];
      REQUIRE(part->data.rows() == range.size());
      CHECK(part->data.y == text->data.y.segment(range.begin, range.size()));
      CHECK(part->lines[0] == text->lines[static_cast<std::size_t>(range.begin)]);
      for (Eigen::Index r = 0; r < range.size(); ++r)
        for (Eigen::Index c = 0; c < text->data.cols(); c += 7)
          CHECK(part->data.sparse().coeff(r, c) == text->data.sparse().coeff(range.begin + r, c));
    }
  }
  io::read_options options;
  options.limit = 10;
  options.features = text->data.cols() + 5;
  auto limited = io::read_binary_dataset(cache, options);
  REQUIRE(limited.ok());
  CHECK(limited->data.rows() == 10);
  CHECK(limited->data.cols() == text->data.cols() + 5);
  options.features = text->data.cols() - 1;
  auto narrow = io::read_binary_dataset(cache, options);
  REQUIRE_FALSE(narrow.ok());
  CHECK(narrow.error().message() == cache + ": holds " + std::to_string(text->data.cols())
                                      + " features, --features says " + std::to_string(text->data.cols() - 1));
}

TEST_CASE("binary datasets: truncated, damaged and hostile files are refused, naming the file and the fault") {
  test::temp_dir dir;
  const auto svm = dir.write("a.svm", libsvm_text(3, 300));
  auto text = io::read_libsvm(svm, {});
  REQUIRE(text.ok());
  const auto good = dir.file("good.bin");
  REQUIRE(io::write_binary_dataset(good, *text, origin(svm)).ok());
  const auto bytes = slurp(good);
  const auto indices = field<std::uint64_t>(bytes, indices_at_field);
  const auto values = field<std::uint64_t>(bytes, values_at_field);
  const auto check = [&](const std::string& name, const std::string& content, const std::string& expected) {
    const auto path = dir.write(name, content);
    const auto before = test::peak_rss_bytes();
    auto r = io::read_binary_dataset(path, {});
    CHECK(test::peak_rss_bytes() - before < test::hostile_file_memory_bound);
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.error().message().find(path + ": " + expected) == 0, r.error().message());
  };
  SUBCASE("bad magic") {
    auto b = bytes;
    b[0] = 'X';
    check("magic.bin", b, "not a shardopt binary dataset");
  }
  SUBCASE("another version") {
    auto b = bytes;
    set_field<std::uint32_t>(b, 8, 9);
    check("version.bin", b, "binary dataset version 9, this shardopt reads versions 1 to 2");
  }
  SUBCASE("a damaged header") {
    auto b = bytes;
    b[rows_at] ^= 1;
    check("crc.bin", b, "the header's checksum does not match");
  }
  SUBCASE("truncated") {
    check("short.bin", bytes.substr(0, bytes.size() - 100), "truncated: the header says");
    check("header.bin", bytes.substr(0, 100), "not a shardopt binary dataset");
  }
  SUBCASE("an index out of order") {
    auto b = bytes;
    set_field<std::int32_t>(b, indices, 1 << 20);  // row 0's first index, past every column
    check("index.bin", b, "row 0: column 1048576 is outside its");
  }
  SUBCASE("a value that is not finite") {
    auto b = bytes;
    set_field<float>(b, values, std::numeric_limits<float>::quiet_NaN());
    check("nan.bin", b, "row 0: a value is not finite");
  }
  SUBCASE("a header that claims billions of rows, checksum and all") {
    auto b = bytes;
    set_field<std::int64_t>(b, rows_at, std::int64_t{1} << 40);
    reseal(b);
    check("rows.bin", b, "truncated: the labels section needs 1099511627776 entries");
  }
  SUBCASE("a header that claims more non-zeros than its starts hold") {
    auto b = bytes;
    set_field<std::int64_t>(b, nonzeros_at, field<std::int64_t>(b, nonzeros_at) - 1);
    reseal(b);
    check("nnz.bin", b, "the CSR starts run from 0 to");
  }
}

TEST_CASE("binary datasets: a value that is not finite is not written, and too large a float is not read") {
  test::temp_dir dir;
  io::raw_dataset data;
  data.source = "made.csv";
  data.data.x = model::dense_features{{1.0f, std::numeric_limits<float>::infinity()}};
  data.data.y = Eigen::VectorXd::Ones(1);
  const auto path = dir.file("inf.bin");
  auto written = io::write_binary_dataset(path, data, origin("made.csv"));
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().message() == path + ": cannot store made.csv: a value is not finite");
  CHECK_FALSE(fs::exists(path));
  const auto big = dir.write("big.svm", "1 1:1e39\n");
  auto r = io::read_libsvm(big, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message() == big + ":1: malformed pair '1:1e39': the value is too large for a float");
  const auto wide = dir.write("big.csv", "1,2\n0,-4e38\n");
  auto c = io::read_csv(wide, {});
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message() == wide + ":2: field 2: '-4e38' is too large for a float");
}

TEST_CASE("binary datasets: a changed source no longer matches the origin its cache records") {
  test::temp_dir dir;
  const auto svm = dir.write("a.svm", libsvm_text(4, 50));
  auto text = io::read_libsvm(svm, {});
  REQUIRE(text.ok());
  const auto cache = io::cache_path(svm, {}, "");
  CHECK(fs::path{cache}.parent_path() == fs::path{svm}.parent_path());
  REQUIRE(io::write_binary_dataset(cache, *text, origin(svm)).ok());
  auto recorded = io::recorded_origin(cache);
  REQUIRE(recorded.ok());
  CHECK(io::same_origin(*recorded, *io::origin_of(svm, {})));
  io::read_options other;
  other.features = 1000;
  CHECK_FALSE(io::same_origin(*recorded, *io::origin_of(svm, other)));
  CHECK(io::cache_path(svm, other, "") != cache);
  // The same size, another modification time.
  fs::last_write_time(svm, fs::last_write_time(svm) + std::chrono::seconds{5});
  CHECK_FALSE(io::same_origin(*recorded, *io::origin_of(svm, {})));
  // Another size.
  dir.write("a.svm", libsvm_text(4, 51));
  CHECK_FALSE(io::same_origin(*recorded, *io::origin_of(svm, {})));
  CHECK(fs::path{io::cache_path(svm, {}, dir.file("caches"))}.parent_path() == fs::path{dir.file("caches")});
}

TEST_CASE("binary datasets: a full disk fails naming the file and leaves no partial cache (64 KiB tmpfs)") {
  test::temp_dir dir;
  const auto svm = dir.write("a.svm", libsvm_text(5, 5000));
  auto text = io::read_libsvm(svm, {});
  REQUIRE(text.ok());
  const auto mount_point = dir / "small";
  fs::create_directory(mount_point);
  if (const auto why_not = test::mount_small_tmpfs(mount_point)) {
    MESSAGE("skipped: cannot mount a tmpfs to fill (" << *why_not << ")");
    WARN_MESSAGE(false, "full-disk test skipped");
    return;
  }
  const auto target = (mount_point / "a.bin").string();
  auto written = io::write_binary_dataset(target, *text, origin(svm));
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().message().find(target + ": cannot write: ") == 0);
  CHECK(written.error().message().find("No space left on device") != std::string::npos);
  CHECK(fs::is_empty(mount_point));
}
