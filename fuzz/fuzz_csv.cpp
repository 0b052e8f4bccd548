// Fuzz target: the CSV reader (io::read_csv) and reading a CSV file in parts (io::read_part).
//
// Input: one byte that picks the options, then the file's bytes. The byte, taken apart by
// fuzz::chooser: header (auto, yes, no), label column (0, -1, 1, 7), features (0, 3), limit (0, 2),
// parts (1..4; without a limit, the file is also read in that many parts and the parts must hold
// its rows), separator (comma; tab, as `--format tsv`, for bytes from 192: taken last, so that every
// byte's earlier choices are what they were before it was added).

#include "chooser.hpp"
#include "read_in_parts.hpp"
#include "scratch_dir.hpp"

#include "io/readers.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  static const fuzz::scratch_dir dir;
  fuzz::chooser pick{data[0]};
  io::read_options options;
  const std::optional<bool> headers[] = {std::nullopt, true, false};
  options.header = headers[pick.take(3)];
  const int label_columns[] = {0, -1, 1, 7};
  options.label_column = label_columns[pick.take(4)];
  options.features = pick.take(2) == 0 ? 0 : 3;
  options.limit = pick.take(2) == 0 ? 0 : 2;
  const auto parts = static_cast<std::int64_t>(1 + pick.take(4));
  if (pick.take(2) == 1)
    options.format = io::data_format::tsv;

  const auto path = dir.write("data.csv", {reinterpret_cast<const char*>(data) + 1, size - 1});
  const auto whole = io::read_csv(path, options);
  if (options.limit == 0)
    fuzz::read_in_parts(path, options, parts, whole);
  return 0;
}
