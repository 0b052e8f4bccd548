// Fuzz target: the IDX reader (io::read_dataset on a directory in the MNIST layout, which reads an
// images file and a labels file) and reading it in parts by record ranges (io::read_part).
//
// Input: one byte that picks the options, two bytes (big-endian) that give the length n of the
// images file, then n bytes of the images file (fewer if the input ends) and the rest is the labels
// file. The options byte, taken apart by fuzz::chooser: limit (0, 2), parts (1..3; without a limit,
// the data is also read in that many parts and the parts must hold its records).

#include "chooser.hpp"
#include "read_in_parts.hpp"
#include "scratch_dir.hpp"

#include "io/readers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3)
    return 0;
  static const fuzz::scratch_dir dir;
  fuzz::chooser pick{data[0]};
  io::read_options options;
  options.limit = pick.take(2) == 0 ? 0 : 2;
  const auto parts = static_cast<std::int64_t>(1 + pick.take(3));

  const std::string_view rest{reinterpret_cast<const char*>(data) + 3, size - 3};
  const auto images_size = std::min<std::size_t>((std::size_t{data[1]} << 8) | data[2], rest.size());
  dir.write("train-images-idx3-ubyte", rest.substr(0, images_size));
  dir.write("train-labels-idx1-ubyte", rest.substr(images_size));
  const auto whole = io::read_dataset(dir.path(), io::split::train, options);
  if (options.limit == 0)
    fuzz::read_in_parts(dir.path(), options, parts, whole);
  return 0;
}
