// Fuzz target: gzip-compressed input to the readers (zlib behind io::detail::gz_input, the bound
// read_options::max_decompressed, and the CSV, LIBSVM and IDX readers on what comes out).
//
// Input: one byte that picks the options, then the payload. The byte, taken apart by
// fuzz::chooser:
// - whether the harness compresses the payload (even bytes: valid gzip of arbitrary data) or
//   writes it as it is to the ".gz" file (odd bytes: arbitrary, corrupt or truncated gzip, or
//   plain data that zlib passes through);
// - the reader: CSV ("data.csv.gz"), LIBSVM ("data.libsvm.gz"), or IDX images
//   ("train-images-idx3-ubyte.gz", beside a labels file the harness writes, compressed, with the
//   count the images header declares and at most 4096 labels);
// - max_decompressed: 1 MiB, 4 KiB or 100 bytes (small limits, so that a gzip bomb costs what the
//   limit allows and libFuzzer's memory limit flags anything beyond it);
// - parts (1..3): the data is also read in that many parts and the parts must hold its rows.

#include "chooser.hpp"
#include "read_in_parts.hpp"
#include "scratch_dir.hpp"

#include "io/readers.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace shardopt;

namespace {

/// An IDX labels file (magic 0x801) declaring `count` labels and holding at most 4096 of them.
std::string labels_file(std::uint32_t count) {
  std::string bytes{'\0', '\0', '\x08', '\x01'};
  for (int shift = 24; shift >= 0; shift -= 8)
    bytes.push_back(static_cast<char>((count >> shift) & 0xff));
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(count, 4096); ++i)
    bytes.push_back(static_cast<char>(i % 10));
  return bytes;
}

/// The record count in the header of the IDX images file at `path` (bytes 4..7 of its data,
/// decompressed if it is gzip), 0 when the data is shorter.
std::uint32_t declared_count(const std::string& path) {
  unsigned char header[8] = {};
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    return 0;
  const int got = gzread(file, header, sizeof header);
  gzclose(file);
  if (got != static_cast<int>(sizeof header))
    return 0;
  return (std::uint32_t{header[4]} << 24) | (std::uint32_t{header[5]} << 16) |
         (std::uint32_t{header[6]} << 8) | std::uint32_t{header[7]};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  static const fuzz::scratch_dir dir;
  fuzz::chooser pick{data[0]};
  const bool compress = pick.take(2) == 0;
  const unsigned reader = pick.take(3);
  const std::uint64_t limits[] = {std::uint64_t{1} << 20, 4096, 100};
  io::read_options options;
  options.max_decompressed = limits[pick.take(3)];
  const auto parts = static_cast<std::int64_t>(1 + pick.take(3));

  const std::string_view payload{reinterpret_cast<const char*>(data) + 1, size - 1};
  const auto write = [&](const std::string& name) {
    return compress ? dir.write_gzip(name, payload) : dir.write(name, payload);
  };
  std::string spec;
  if (reader == 2) {
    const auto images = write("train-images-idx3-ubyte.gz");
    dir.write_gzip("train-labels-idx1-ubyte.gz", labels_file(declared_count(images)));
    spec = dir.path();
  } else {
    spec = write(reader == 0 ? "data.csv.gz" : "data.libsvm.gz");
  }
  const auto whole = io::read_dataset(spec, io::split::train, options);
  fuzz::read_in_parts(spec, options, parts, whole);
  return 0;
}
