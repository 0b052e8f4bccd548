// Feature hashing (io/hashing.hpp) and the hashed readers (VW text, CSV with string columns): the
// hash is MurmurHash3's, rows are the sums the documented rule gives, parsing does not depend on
// threads, pieces or parts, and every kind of bad line is named by file and line.
// tests/python/test_hashing.py checks the same rows against scikit-learn's murmurhash3_32.

#include "io/binary_cache.hpp"
#include "io/hashing.hpp"
#include "io/reader_support.hpp"
#include "io/readers.hpp"
#include "io/splits.hpp"
#include "io/text_parse.hpp"
#include "io/text_source.hpp"

#include "support/files.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using namespace shardopt;

namespace {

/// A row as column -> value.
using row_map = std::map<std::uint32_t, double>;

/// The rows of a parsed (sparse) dataset.
std::vector<row_map> rows_of(const io::raw_dataset& data) {
  std::vector<row_map> out;
  const auto x = data.data.sparse();
  for (Eigen::Index r = 0; r < x.outerSize(); ++r) {
    row_map row;
    for (model::sparse_view::InnerIterator it(x, r); it; ++it)
      row[static_cast<std::uint32_t>(it.col())] = it.value();
    out.push_back(row);
  }
  return out;
}

/// Adds `value` at the column of `hash` under `bits` (what a reader does for one feature).
void put(row_map& row, std::uint32_t hash, double value, int bits) {
  row[hash & ((1u << bits) - 1)] += value;
}

io::read_options hashed(int bits) {
  io::read_options options;
  options.hashing.bits = bits;
  return options;
}

std::string error_of(const result<io::raw_dataset>& r) {
  REQUIRE_FALSE(r);
  return r.error().message();
}

} // namespace

TEST_CASE("murmur3 is MurmurHash3 x86 32-bit (reference values)") {
  // SMHasher's verification values and scikit-learn's murmurhash3_32.
  CHECK(io::murmur3("", 0) == 0u);
  CHECK(io::murmur3("", 1) == 0x514E28B7u);
  CHECK(io::murmur3("hello", 0) == 613153351u);
  CHECK(io::namespace_seed("") == 0u);
  CHECK(io::namespace_seed("a") == io::murmur3("a", 0));
}

TEST_CASE("hashed_row adds equal columns, drops zero sums, sorts") {
  io::hashed_row row;
  row.add(5, 1.0);
  row.add(5 + 16, 2.0);  // the same column under 4 bits
  row.add(3, 1.5);
  row.add(7, 1.0);
  row.add(7, -1.0);
  row.finish(4);
  REQUIRE(row.items().size() == 2);
  CHECK(row.items()[0] == std::pair<std::uint32_t, double>{3, 1.5});
  CHECK(row.items()[1] == std::pair<std::uint32_t, double>{5, 3.0});
}

TEST_CASE("VW rows: namespaces, values, weights, pairs and collisions, as the documented rule") {
  const std::string text =
    "1 |a x y:2 |b z\n"
    "-1 2.5e0 'tag |a x x |b:0.5 w:4\n"  // a weight of 1 is allowed; "2.5e0" is not 1: refused below
    "\n";
  auto options = hashed(10);
  options.hashing.pairs = {"ab"};
  auto good = io::detail::parse_vw("t.vw", "1 |a x y:2 |b z\n0 1 'tag|a x x |b:0.5 w:4\n", options);
  REQUIRE(good);
  const auto a = io::namespace_seed("a");
  const auto b = io::namespace_seed("b");
  const int bits = 10;
  std::vector<row_map> expected(2);
  put(expected[0], io::murmur3("x", a), 1, bits);
  put(expected[0], io::murmur3("y", a), 2, bits);
  put(expected[0], io::murmur3("z", b), 1, bits);
  put(expected[0], io::pair_hash(io::murmur3("x", a), io::murmur3("z", b)), 1, bits);
  put(expected[0], io::pair_hash(io::murmur3("y", a), io::murmur3("z", b)), 2, bits);
  put(expected[1], io::murmur3("x", a), 2, bits);  // a token twice adds up
  put(expected[1], io::murmur3("w", b), 2, bits);  // 4 times the namespace's weight 0.5
  put(expected[1], io::pair_hash(io::murmur3("x", a), io::murmur3("w", b)), 4, bits);
  CHECK(rows_of(*good) == expected);
  CHECK(good->data.cols() == 1024);
  CHECK(good->data.y[0] == 1.0);
  CHECK(good->data.y[1] == 0.0);
  CHECK(good->lines == std::vector<std::int64_t>{1, 2});
  CHECK(error_of(io::detail::parse_vw("t.vw", text, options)).find("t.vw:2: importance weight '2.5e0'")
        != std::string::npos);
}

TEST_CASE("VW: the default namespace, --pairs within one namespace, default bits") {
  io::read_options options;  // bits 0: VW's default, 18
  options.hashing.pairs = {"  "};
  auto parsed = io::detail::parse_vw("t.vw", "1 | p q\n", options);
  REQUIRE(parsed);
  CHECK(parsed->data.cols() == (1 << 18));
  std::vector<row_map> expected(1);
  const auto p = io::murmur3("p", 0);
  const auto q = io::murmur3("q", 0);
  for (auto [h, v] : {std::pair{p, 1.0}, {q, 1.0}, {io::pair_hash(p, p), 1.0}, {io::pair_hash(p, q), 1.0},
                      {io::pair_hash(q, q), 1.0}})
    put(expected[0], h, v, 18);
  CHECK(rows_of(*parsed) == expected);
}

TEST_CASE("VW: each kind of bad line is named by file and line") {
  const auto options = hashed(12);
  const std::pair<const char*, const char*> cases[] = {
    {"1 |a x\n1 a x\n", "t.vw:2: no '|'"},
    {"1 |a x\nlabel |a x\n", "t.vw:2: label: expected a number, got 'label'"},
    {"1 |a x\n |a x\n", "t.vw:2: no label before '|'"},
    {"1 |a x\n\n1 |a\n", "t.vw:3: namespace 'a' has no features"},
    {"1 |a x\n1 |a x:y\n", "t.vw:2: feature 'x:y': the value is not a number"},
    {"1 |a x\n1 |a :3\n", "t.vw:2: feature ':3' has no name"},
    {"1 |a:w x\n", "t.vw:1: namespace 'a:w': its weight is not a number"},
    {"1 |a x\n1 'a 'b |a x\n", "t.vw:2: unexpected ''b' before '|'"},
    {"1 |a x:1e300\n", "t.vw:1: a feature's value"},
  };
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    CHECK(error_of(io::detail::parse_vw("t.vw", text, options)).find(message) != std::string::npos);
  }
  auto too_many = hashed(12);
  too_many.hashing.pairs = {"aa"};
  std::string wide = "1 |a";
  for (int i = 0; i < 6000; ++i)
    wide += " t" + std::to_string(i);
  CHECK(error_of(io::detail::parse_vw("t.vw", wide + "\n", too_many)).find("t.vw:1: more than 16777216 features")
        != std::string::npos);
  auto csv_options = hashed(12);
  csv_options.hashing.categorical = {"city"};
  CHECK(error_of(io::detail::parse_vw("t.vw", "1 |a x\n", csv_options)).find("--categorical and --text name CSV columns")
        != std::string::npos);
}

TEST_CASE("hashed CSV: numbers, categories, words, word pairs, quotes, by name and by index") {
  auto options = hashed(12);
  options.hashing.categorical = {"city"};
  options.hashing.text = {"3"};  // by index
  options.hashing.word_pairs = true;
  const std::string text =
    "label,age,city,notes\n"
    "1,35,Paris,\"New York, new\"\n"
    "0,20,\"a\"\"b\",\n";
  auto parsed = io::detail::parse_hashed_csv("t.csv", text, options);
  REQUIRE(parsed);
  const int bits = 12;
  const auto city = io::namespace_seed("city");
  const auto notes = io::namespace_seed("notes");
  std::vector<row_map> expected(2);
  put(expected[0], io::murmur3("age", 0), 35, bits);
  put(expected[0], io::murmur3("Paris", city), 1, bits);
  put(expected[0], io::murmur3("new", notes), 2, bits);
  put(expected[0], io::murmur3("york", notes), 1, bits);
  put(expected[0], io::murmur3("new york", notes), 1, bits);
  put(expected[0], io::murmur3("york new", notes), 1, bits);
  put(expected[1], io::murmur3("age", 0), 20, bits);
  put(expected[1], io::murmur3("a\"b", city), 1, bits);  // "" in a quoted field is one '"'
  CHECK(rows_of(*parsed) == expected);
  CHECK(parsed->data.y[0] == 1.0);
  CHECK(parsed->lines == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("hashed CSV: without a header, columns are named by their 0-based index") {
  auto options = hashed(8);
  options.hashing.categorical = {"1"};
  auto parsed = io::detail::parse_hashed_csv("t.csv", "1,red,2.5\n0,blue,1\n", options);
  REQUIRE(parsed);
  std::vector<row_map> expected(2);
  put(expected[0], io::murmur3("red", io::namespace_seed("1")), 1, 8);
  put(expected[0], io::murmur3("2", 0), 2.5, 8);
  put(expected[1], io::murmur3("blue", io::namespace_seed("1")), 1, 8);
  put(expected[1], io::murmur3("2", 0), 1, 8);
  CHECK(rows_of(*parsed) == expected);
}

TEST_CASE("hashed CSV: each kind of bad line is named by file and line") {
  auto options = hashed(10);
  options.hashing.categorical = {"c"};
  options.hashing.text = {"t"};
  const std::string header = "y,n,c,t\n";
  const std::pair<std::string, const char*> cases[] = {
    {header + "1,2,a,b\n1,2,\"a,b\n", "t.csv:3: field 3: unterminated quote"},
    {header + "1,2,\"a\"x,b\n", "t.csv:2: field 3: text after the closing quote"},
    {header + "1,two,a,b\n", "t.csv:2: field 2 (n): expected a number, got 'two'"},
    {header + "x,2,a,b\n", "t.csv:2: field 1 (y): expected a number, got 'x'"},
    {header + "1,,a,b\n", "t.csv:2: field 2 (n): expected a number, got ''"},  // no missing numbers
    {header + "1,2,a\n", "t.csv:2: expected 4 fields, got 3"},
  };
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    CHECK(error_of(io::detail::parse_hashed_csv("t.csv", text, options)).find(message) != std::string::npos);
  }
  auto unknown = hashed(10);
  unknown.hashing.categorical = {"town"};
  CHECK(error_of(io::detail::parse_hashed_csv("t.csv", header + "1,2,a,b\n", unknown))
          .find("--categorical: no column 'town' (the header names y, n, c, t)") != std::string::npos);
  auto label = hashed(10);
  label.hashing.text = {"y"};
  CHECK(error_of(io::detail::parse_hashed_csv("t.csv", header + "1,2,a,b\n", label)).find("is the label column")
        != std::string::npos);
  std::string huge = header + "1,2,a,\"";
  huge.append(40'000'000, 'w');
  huge += " x\"\n";
  auto words = options;
  words.hashing.word_pairs = true;
  auto one_word = io::detail::parse_hashed_csv("t.csv", huge, words);  // one 40 MB word is one feature
  CHECK_MESSAGE(one_word, (one_word ? std::string{} : one_word.error().message()));
}

TEST_CASE("hashed TSV: the rows of the same CSV, commas inside fields, empty fields, in parts") {
  test::temp_dir dir;
  std::string csv = "label,city,notes,x\n";
  std::string tsv = "label\tcity\tnotes\tx\n";
  for (int r = 0; r < 500; ++r) {
    const auto city = "c" + std::to_string(r % 11);
    const auto notes = r % 5 == 0 ? std::string{} : "word" + std::to_string(r % 7) + ", other words";  // empty: no words
    const auto x = std::to_string(r % 13);
    csv += std::to_string(r % 2) + "," + city + ",\"" + notes + "\"," + x + "\n";
    tsv += std::to_string(r % 2) + "\t" + city + "\t " + notes + "\t" + x + "\n";  // blanks are trimmed
  }
  auto options = hashed(12);
  options.hashing.categorical = {"city"};
  options.hashing.text = {"notes"};
  options.hashing.word_pairs = true;
  const auto csv_path = dir.file("d.csv");
  const auto tsv_path = dir.file("d.tsv");
  test::write_file(csv_path, csv);
  test::write_file(tsv_path, tsv);
  auto expected = io::read_dataset(csv_path, io::split::train, options);
  REQUIRE(expected);
  auto whole = io::read_dataset(tsv_path, io::split::train, options);
  REQUIRE(whole);
  CHECK(rows_of(*whole) == rows_of(*expected));
  CHECK(whole->data.y == expected->data.y);
  for (std::int64_t parts : {2, 3}) {
    std::vector<row_map> joined;
    for (std::int64_t part = 0; part < parts; ++part) {
      auto piece = io::read_part({tsv_path, options, part, parts});
      REQUIRE(piece);
      for (auto& row : rows_of(*piece))
        joined.push_back(row);
    }
    CHECK(joined == rows_of(*expected));
  }
  // A quoted TSV field may hold a tab; an unterminated one is named by file and line.
  auto tsv_options = options;
  tsv_options.format = io::data_format::tsv;
  auto quoted = io::detail::parse_hashed_csv("q.tsv", "label\tcity\tnotes\tx\n1\tc1\t\"a\tb\"\t2\n", tsv_options);
  REQUIRE(quoted);
  auto unquoted = io::detail::parse_hashed_csv("q.tsv", "label\tcity\tnotes\tx\n1\tc1\ta b\t2\n", tsv_options);
  REQUIRE(unquoted);
  CHECK(rows_of(*quoted) == rows_of(*unquoted));  // a tab inside a text field separates words
  CHECK(error_of(io::detail::parse_hashed_csv("q.tsv", "label\tcity\tnotes\tx\n1\tc1\t\"a b\t2\n", tsv_options))
        == "q.tsv:2: field 3: unterminated quote (a quoted field must close on its line)");
}

TEST_CASE("hashed readers: the same rows on any threads and pieces, and in parts") {
  test::temp_dir dir;
  std::string vw;
  std::string csv = "label,city,notes,x\n";
  for (int r = 0; r < 3000; ++r) {
    vw += std::to_string(r % 2) + " |a w" + std::to_string(r % 17) + " v:" + std::to_string(r % 5)
          + " |b u" + std::to_string(r % 3) + "\n";
    if (r % 97 == 0)
      vw += "\n";
    csv += std::to_string(r % 2) + ",c" + std::to_string(r % 11) + ",\"word" + std::to_string(r % 7)
           + ", other words\"," + std::to_string(r % 13) + "\n";
  }
  auto vw_options = hashed(14);
  vw_options.hashing.pairs = {"ab"};
  auto csv_options = hashed(14);
  csv_options.hashing.categorical = {"city"};
  csv_options.hashing.text = {"notes"};
  csv_options.hashing.word_pairs = true;
  const auto vw_path = dir.file("d.vw");
  const auto csv_path = dir.file("d.csv");
  test::write_file(vw_path, vw);
  test::write_file(csv_path, csv);
  for (const auto& [path, options] : {std::pair{vw_path, vw_options}, std::pair{csv_path, csv_options}}) {
    CAPTURE(path);
    auto whole = io::read_dataset(path, io::split::train, options);
    REQUIRE(whole);
    CHECK(whole->data.rows() == 3000);
    const auto expected = rows_of(*whole);
    // Small pieces on 3 threads.
    auto source = io::detail::text_source::open(path, 0);
    REQUIRE(source);
    io::detail::parse_options how;
    how.threads = 3;
    how.piece_bytes = 512;
    auto pieces = path == vw_path ? io::detail::parse_vw(path, *source, options, how)
                                  : io::detail::parse_hashed_csv(path, *source, options, how, nullptr);
    REQUIRE(pieces);
    CHECK(rows_of(*pieces) == expected);
    // Parts, as nodes read them.
    for (std::int64_t parts : {2, 3}) {
      std::vector<row_map> joined;
      for (std::int64_t part = 0; part < parts; ++part) {
        auto piece = io::read_part({path, options, part, parts});
        REQUIRE(piece);
        CHECK(piece->data.cols() == (1 << 14));
        for (auto& row : rows_of(*piece))
          joined.push_back(row);
      }
      CHECK(joined == expected);
    }
  }
}

TEST_CASE("a binary dataset of hashed rows keeps their hashing and refuses another") {
  test::temp_dir dir;
  const auto source = dir.file("d.vw");
  test::write_file(source, "1 |a x y:2\n0 |a z\n");
  auto options = hashed(12);
  options.hashing.pairs = {"aa"};
  auto text = io::read_dataset(source, io::split::train, options);
  REQUIRE(text);
  CHECK(text->hashing == options.hashing);
  auto origin = io::origin_of(source, options);
  REQUIRE(origin);
  const auto binary = dir.file("d.shoptbin");
  REQUIRE(io::write_binary_dataset(binary, *text, *origin));
  auto back = io::read_dataset(binary, io::split::train, io::read_options{});
  REQUIRE(back);
  CHECK(back->hashing == options.hashing);
  CHECK(rows_of(*back) == rows_of(*text));
  auto recorded = io::recorded_origin(binary);
  REQUIRE(recorded);
  CHECK(io::same_origin(*recorded, *origin));
  auto other = hashed(12);
  CHECK(error_of(io::read_dataset(binary, io::split::train, other)).find("its features were hashed as 2^12 hashed columns, pairs aa")
        != std::string::npos);
  CHECK(io::cache_path(source, options, "") != io::cache_path(source, other, ""));
}

TEST_CASE("VW: a weighted namespace is counted as it is stored, so any threads and pieces read it") {
  // The bound on a row's pairs must take the namespace's letter without its weight (":2" is the
  // unnamed namespace, letter ' '): else lines of it reserve less than they store.
  std::string text;
  for (int r = 0; r < 2000; ++r)
    text += r < 800 ? "1 | x x x x x x x x\n" : "1 |:2 a b c\n";
  auto options = hashed(10);
  options.hashing.pairs = {"  "};
  for (unsigned threads : {1u, 2u, 3u}) {
    CAPTURE(threads);
    auto source = io::detail::text_source::of(text);
    io::detail::parse_options how;
    how.threads = threads;
    how.piece_bytes = 1024;
    auto parsed = io::detail::parse_vw("w.vw", source, options, how);
    REQUIRE_MESSAGE(parsed, (parsed ? std::string{} : parsed.error().message()));
    CHECK(parsed->data.rows() == 2000);
    // a, b, c and their pairs with each other and themselves: 3 + 6 columns (under 2^10, none collide
    // here: checked against the rule, not assumed).
    std::vector<row_map> expected(1);
    std::vector<std::uint32_t> h{io::murmur3("a", 0), io::murmur3("b", 0), io::murmur3("c", 0)};
    for (std::size_t i = 0; i < 3; ++i) {
      put(expected[0], h[i], 2, 10);
      for (std::size_t j = i; j < 3; ++j)
        put(expected[0], io::pair_hash(h[i], h[j]), 4, 10);
    }
    CHECK(rows_of(*parsed).back() == expected[0]);
  }
}

TEST_CASE("hashed CSV: the model's recorded columns name a header-less file's, and a different header is refused") {
  auto options = hashed(10);
  options.hashing.categorical = {"city"};
  auto trained = io::detail::parse_hashed_csv("t.csv", "y,city,n\n1,paris,2\n0,rome,3\n", options);
  REQUIRE(trained);
  CHECK(trained->hashing.columns == std::vector<std::string>{"y", "city", "n"});
  auto eval = options;
  eval.hashing = trained->hashing;
  auto headerless = io::detail::parse_hashed_csv("e.csv", "1,paris,2\n0,rome,3\n", eval);
  REQUIRE_MESSAGE(headerless, (headerless ? std::string{} : headerless.error().message()));
  CHECK(rows_of(*headerless) == rows_of(*trained));
  CHECK(error_of(io::detail::parse_hashed_csv("e.csv", "y,town,n\n1,paris,2\n", eval))
          .find("e.csv:1: the header names y,town,n, the model's data had y,city,n") != std::string::npos);
  CHECK(error_of(io::detail::parse_hashed_csv("e.csv", "1,paris\n", eval))
          .find("e.csv:1: 2 fields, but the model's data had 3 columns") != std::string::npos);
}

TEST_CASE("hashing descriptions from a file or a peer are checked: bits, types, duplicate pairs, list sizes") {
  CHECK_FALSE(io::parse_hashing(R"({"bits":18.7,"pairs":[],"categorical":[],"text":[],"word_pairs":false})"));
  CHECK_FALSE(io::parse_hashing(R"({"bits":1e300,"pairs":[],"categorical":[],"text":[],"word_pairs":false})"));
  CHECK_FALSE(io::parse_hashing(R"({"bits":true,"pairs":[],"categorical":[],"text":[],"word_pairs":false})"));
  CHECK_FALSE(io::parse_hashing(R"({"bits":18,"pairs":[],"categorical":[],"text":[],"word_pairs":1})"));
  CHECK_FALSE(io::parse_hashing(R"({"bits":18,"pairs":["ab","ab"],"categorical":[],"text":[],"word_pairs":false})"));
  std::string many = R"({"bits":18,"pairs":[)";
  for (int i = 0; i < 1100; ++i)
    many += std::string{i ? "," : ""} + "\"" + static_cast<char>('a' + i % 26) + static_cast<char>('a' + i / 26 % 26)
            + "\"";
  CHECK_FALSE(io::parse_hashing(many + R"(],"categorical":[],"text":[],"word_pairs":false})"));
  auto good = io::parse_hashing(R"({"bits":18,"pairs":["ab"],"categorical":[],"text":[],"word_pairs":false})");
  REQUIRE(good);
  CHECK(good->pairs == std::vector<std::string>{"ab"});
}
