// The parallel text readers (io/text_parse.hpp, io/text_source.hpp): the arrays do not depend on
// the threads, pieces or buffers; the first error in the text is the one reported, with its line;
// parts of a file hold every line once; memory during a load stays near the final arrays;
// run_parallel (base/parallel.hpp) covers every index once and hands an exception back.

#include "io/reader_support.hpp"
#include "io/readers.hpp"
#include "io/text_parse.hpp"
#include "io/text_source.hpp"

#include "support/files.hpp"
#include "support/memory.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <new>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace shardopt;
using io::detail::parse_options;
using io::detail::text_source;

namespace {

/// LIBSVM text with every feature the grammar allows: signs, exponents, comments, blank lines,
/// CRLF, qid tokens and empty rows; `seed` picks it.
std::string libsvm_text(unsigned seed, int rows) {
  std::mt19937 rng{seed};
  std::string text;
  for (int r = 0; r < rows; ++r) {
    switch (rng() % 16) {
      case 0: text += "# a comment: with colons 1:2\n"; break;
      case 1: text += "\n"; break;
      default: break;
    }
    text += (rng() % 2 ? "+1" : "-1");
    if (rng() % 10 == 0)
      text += " qid:" + std::to_string(rng() % 7);
    int index = 0;
    const int count = static_cast<int>(rng() % 12);
    for (int k = 0; k < count; ++k) {
      index += 1 + static_cast<int>(rng() % 50);
      text += (rng() % 3 ? " " : "\t") + std::to_string(index) + ":";
      switch (rng() % 4) {
        case 0: text += std::to_string(static_cast<int>(rng() % 9) - 4); break;
        case 1: text += std::to_string(std::ldexp(static_cast<double>(rng() % 1000), -7)); break;
        case 2: text += std::to_string(rng() % 100) + "e-3"; break;
        default: text += "0.1"; break;
      }
    }
    if (rng() % 8 == 0)
      text += "  # trailing";
    text += rng() % 9 == 0 ? "\r\n" : "\n";
  }
  return text;
}

/// CSV text with a header, quoted and signed numbers and blank lines.
std::string csv_text(unsigned seed, int rows) {
  std::mt19937 rng{seed};
  std::string text = "label,a,b,c\n";
  for (int r = 0; r < rows; ++r) {
    if (rng() % 13 == 0)
      text += "  \n";
    text += std::to_string(rng() % 3) + "," + std::to_string(static_cast<int>(rng() % 200) - 100) + "e-2,\""
            + std::to_string(rng() % 7) + "\", +" + std::to_string(rng() % 5) + ".25\n";
  }
  return text;
}

/// Parses `text` with `how`, through buffers of `buffer` bytes.
result<io::raw_dataset> parse(bool csv, const std::string& text, const io::read_options& options,
                              parse_options how, std::size_t buffer) {
  auto source = text_source::of(text, buffer);
  return csv ? io::detail::parse_csv("t", source, options, how)
             : io::detail::parse_libsvm("t", source, options, how);
}

/// Whether two parses stored the same arrays, bit for bit.
void check_same(const io::raw_dataset& a, const io::raw_dataset& b) {
  REQUIRE(a.data.rows() == b.data.rows());
  REQUIRE(a.data.cols() == b.data.cols());
  CHECK(a.lines == b.lines);
  CHECK(a.data.y == b.data.y);
  if (a.data.is_sparse()) {
    const auto x = a.data.sparse();
    const auto y = b.data.sparse();
    REQUIRE(x.nonZeros() == y.nonZeros());
    CHECK(std::memcmp(x.outerIndexPtr(), y.outerIndexPtr(), sizeof(std::int32_t) * static_cast<std::size_t>(x.rows() + 1)) == 0);
    CHECK(std::memcmp(x.innerIndexPtr(), y.innerIndexPtr(), sizeof(std::int32_t) * static_cast<std::size_t>(x.nonZeros())) == 0);
    CHECK(std::memcmp(x.valuePtr(), y.valuePtr(), sizeof(float) * static_cast<std::size_t>(x.nonZeros())) == 0);
  } else {
    CHECK(std::memcmp(a.data.dense().data(), b.data.dense().data(),
                      sizeof(float) * static_cast<std::size_t>(a.data.rows() * a.data.cols())) == 0);
  }
}

/// The threads, pieces and buffers a parse is tried with: one thread and one piece (the serial
/// reference), and many small pieces on several threads through small buffers.
struct way {
  parse_options how;
  std::size_t buffer;
};
const std::vector<way> ways{{{1, std::size_t{1} << 30, 0}, std::size_t{1} << 30},
                            {{3, 1, 0}, 4096},
                            {{4, 64, 0}, 997},
                            {{2, 1, 0}, 61}};

} // namespace

TEST_CASE("text parse: the arrays are the serial ones whatever the threads, pieces and buffers") {
  for (const bool csv : {false, true}) {
    for (const unsigned seed : {1U, 2U, 3U}) {
      INFO(std::string{csv ? "csv" : "libsvm"} << ", seed " << seed);
      const auto text = csv ? csv_text(seed, 3000) : libsvm_text(seed, 3000);
      for (const std::int64_t limit : {0, 1, 1234}) {
        io::read_options options;
        options.limit = limit;
        auto reference = parse(csv, text, options, ways[0].how, ways[0].buffer);
        REQUIRE_MESSAGE(reference.ok(), reference.error().message());
        CHECK(reference->data.rows() == (limit > 0 ? limit : 3000));
        for (std::size_t w = 1; w < ways.size(); ++w) {
          INFO("way " << w << ", limit " << limit);
          auto parallel = parse(csv, text, options, ways[w].how, ways[w].buffer);
          REQUIRE_MESSAGE(parallel.ok(), parallel.error().message());
          check_same(*reference, *parallel);
        }
      }
    }
  }
}

TEST_CASE("text parse: the first error in the text is reported with its line, whichever piece finds it") {
  for (const bool csv : {false, true}) {
    const auto text = csv ? csv_text(5, 4000) : libsvm_text(5, 4000);
    std::mt19937 rng{11};
    for (int trial = 0; trial < 6; ++trial) {
      // Break two lines; the earlier one is the error.
      std::vector<std::size_t> starts{0};
      for (std::size_t i = 0; i + 1 < text.size(); ++i)
        if (text[i] == '\n')
          starts.push_back(i + 1);
      auto first = 1 + rng() % (starts.size() - 2);
      auto second = 1 + rng() % (starts.size() - 2);
      if (first > second)
        std::swap(first, second);
      if (first == second)
        continue;
      std::string broken = text;
      broken.insert(starts[second], csv ? "9,9,x,9\n" : "1 5:x\n");
      broken.insert(starts[first], csv ? "1,2\n" : "0 3:1 2:1\n");
      INFO(std::string{csv ? "csv" : "libsvm"} << ", lines " << first + 1 << " and " << second + 2);
      io::read_options options;
      auto serial = parse(csv, broken, options, ways[0].how, ways[0].buffer);
      REQUIRE_FALSE(serial.ok());
      const auto expected = "t:" + std::to_string(first + 1) + ": "
                            + (csv ? std::string{"expected 4 fields, got 2"}
                                   : std::string{"index 2 after 3: indices must increase"});
      CHECK(serial.error().message() == expected);
      for (std::size_t w = 1; w < ways.size(); ++w) {
        auto parallel = parse(csv, broken, options, ways[w].how, ways[w].buffer);
        REQUIRE_FALSE(parallel.ok());
        CHECK(parallel.error().message() == expected);
      }
      // A limit that ends before the first broken line reads cleanly.
      options.limit = 1;
      CHECK(parse(csv, broken, options, ways[1].how, ways[1].buffer).ok());
    }
  }
}

TEST_CASE("text source: parts of a file hold every line once and in order, plain and gzip") {
  test::temp_dir dir;
  for (const std::string& text : {std::string{"a\nbb\n\nccc\r\nd"}, std::string{"1\n22\n333\n"}, libsvm_text(7, 400)}) {
    for (const bool gz : {false, true}) {
      const auto path = gz ? dir.write_gz("t.gz", text) : dir.write("t.txt", text);
      for (std::int64_t parts = 1; parts <= 7; ++parts) {
        INFO("parts " << parts << (gz ? ", gzip" : ", plain"));
        std::string joined;
        for (std::int64_t part = 0; part < parts; ++part) {
          auto source = text_source::open(path, 0, part, parts, 5);
          REQUIRE_MESSAGE(source.ok(), source.error().message());
          std::string first_pass;
          for (int pass = 0; pass < 2; ++pass) {  // a rewound source gives the same buffers
            std::string lines;
            std::vector<std::size_t> sizes;
            for (;;) {
              auto next = source->next();
              REQUIRE(next.ok());
              if (next->empty())
                break;
              lines += *next;
              sizes.push_back(next->size());
            }
            if (pass == 0) {
              joined += lines;
              first_pass = lines;
            } else {
              CHECK(lines == first_pass);
            }
            REQUIRE(source->rewind().ok());
          }
        }
        CHECK(joined == text);
      }
    }
  }
}

TEST_CASE("text parse: a long line that grows the buffer mid-text cuts both passes alike") {
  // Blank lines, then a line padded far past the buffer, then rows: the first pass grows the buffer
  // after handing some out; the second pass must cut the same buffers, or its counts would reserve
  // rows past what the first pass allocated.
  for (const bool csv : {false, true}) {
    std::string text = csv ? "1,2\n" : "1 2:3\n";
    text += std::string(40, '\n');
    text += (csv ? "1,2" : "1 1:2") + std::string(300, ' ') + "\n";
    for (int i = 0; i < 50; ++i)
      text += csv ? "0,4\n" : "-1 3:4\n";
    INFO(std::string{csv ? "csv" : "libsvm"});
    auto reference = parse(csv, text, {}, ways[0].how, ways[0].buffer);
    REQUIRE_MESSAGE(reference.ok(), reference.error().message());
    CHECK(reference->data.rows() == 52);
    for (const std::size_t buffer : {8, 16, 33, 100}) {
      auto small = parse(csv, text, {}, parse_options{2, 1, 0}, buffer);
      REQUIRE_MESSAGE(small.ok(), small.error().message());
      check_same(*reference, *small);
    }
  }
}

TEST_CASE("text parse: a limit reads the text only up to the buffer of its last row") {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += i % 2 ? "1 4:1\n" : "# comment\n\n-1 5:2\n";
  io::read_options options;
  options.limit = 100;
  auto limited = parse(false, text, options, parse_options{2, 1, 0}, 512);
  REQUIRE_MESSAGE(limited.ok(), limited.error().message());
  CHECK(limited->data.rows() == 100);
  auto reference = parse(false, text, options, ways[0].how, ways[0].buffer);
  REQUIRE(reference.ok());
  check_same(*reference, *limited);
}

TEST_CASE("text parse: a load's peak memory stays within 1.2x its final arrays plus its read buffer") {
  test::temp_dir dir;
  // About 30 MB of LIBSVM text, 300,000 rows of 12 non-zeros, written a row at a time so that
  // nothing the size of the file was ever held before the load.
  std::mt19937 rng{3};
  const std::int64_t rows = 300000;
  const std::int64_t per_row = 12;
  const auto path = dir.file("load.svm");
  {
    std::ofstream out{path};
    std::string line;
    for (std::int64_t r = 0; r < rows; ++r) {
      line = rng() % 2 ? "+1" : "-1";
      int index = 0;
      for (std::int64_t k = 0; k < per_row; ++k) {
        index += 1 + static_cast<int>(rng() % 9000);
        line += " " + std::to_string(index) + ":0." + std::to_string(rng() % 100000);
      }
      out << line << '\n';
    }
  }
  const auto file_bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  const auto before = test::peak_rss_bytes();
  auto data = io::read_libsvm(path, {});
  const auto after = test::peak_rss_bytes();
  REQUIRE_MESSAGE(data.ok(), data.error().message());
  CHECK(data->data.rows() == rows);
  // Final arrays: 8 bytes a non-zero; starts, labels and line numbers, 20 bytes a row.
  const auto arrays = rows * per_row * 8 + rows * 20;
  const auto buffer = std::min<std::int64_t>(file_bytes, std::int64_t{64} << 20);
  MESSAGE("peak growth " << (after - before) / 1024 << " KiB for " << arrays / 1024 << " KiB of arrays and a "
                         << buffer / 1024 << " KiB buffer");
  CHECK(after - before <= arrays * 12 / 10 + buffer);
}

TEST_CASE("run_parallel: every index once on any number of threads, and an exception from one is thrown to the caller after all stop") {
  for (const unsigned threads : {1U, 2U, 5U}) {
    CAPTURE(threads);
    std::vector<std::atomic<int>> seen(1000);
    run_parallel(seen.size(), threads, [&](std::size_t i) { ++seen[i]; });
    for (const auto& count : seen)
      CHECK(count.load() == 1);
    std::atomic<int> done{0};
    CHECK_THROWS_AS(run_parallel(1000, threads,
                                 [&](std::size_t i) {
                                   if (i == 10)
                                     throw std::bad_alloc();
                                   ++done;
                                 }),
                    std::bad_alloc);
    CHECK(done.load() < 1000);  // the work not started is left, and no thread is still running
  }
}
