// Fuzz target: the hashed text readers (io/hashing.hpp): Vowpal Wabbit's format (io::read_vw) and
// CSV with categorical and text columns (io::read_csv with hashing), whole and in parts
// (io::read_part).
//
// Input: one byte that picks the options, then the file's bytes. The byte, taken apart by
// fuzz::chooser: the format (VW, hashed CSV), bits (4, 18), pairs or word pairs (off, on), limit
// (0, 2), parts (1..4; without a limit, the file is also read in that many parts and the parts
// must hold its rows), and for CSV the separator (comma, or tab: TSV; taken last, so that every
// byte's earlier choices are what they were before it was added).

#include "chooser.hpp"
#include "read_in_parts.hpp"
#include "scratch_dir.hpp"

#include "io/readers.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  static const fuzz::scratch_dir dir;
  fuzz::chooser pick{data[0]};
  const bool vw = pick.take(2) == 0;
  io::read_options options;
  options.hashing.bits = pick.take(2) == 0 ? 4 : 18;
  const bool paired = pick.take(2) == 1;
  if (vw) {
    options.format = io::data_format::vw;
    if (paired)
      options.hashing.pairs = {"ab", "  ", "aa"};
  } else {
    options.format = io::data_format::csv;
    options.hashing.categorical = {"1"};
    options.hashing.text = {"2"};
    options.hashing.word_pairs = paired;
  }
  options.limit = pick.take(2) == 0 ? 0 : 2;
  const auto parts = static_cast<std::int64_t>(1 + pick.take(4));
  if (!vw && pick.take(2) == 1)
    options.format = io::data_format::tsv;

  const char* name = vw ? "data.vw" : options.format == io::data_format::tsv ? "data.tsv" : "data.csv";
  const auto path = dir.write(name, {reinterpret_cast<const char*>(data) + 1, size - 1});
  const auto whole = io::read_dataset(path, io::split::train, options);
  if (options.limit == 0)
    fuzz::read_in_parts(path, options, parts, whole);
  return 0;
}
