// Fuzz target: binary datasets (io::read_binary_dataset, and io::read_part as a node reads its part
// of one).
//
// Input: one byte that picks the options, then the file's bytes. The byte, taken apart by
// fuzz::chooser: reseal (0: the header's CRC-32 as it is; 1: recomputed over the header as fuzzed, so
// that inputs reach the checks past it), limit (0, 3), parts (1..4; without a limit the file is also
// read in that many parts and the parts must hold its rows). Whatever reads must also be what the
// kernels can walk: every row's columns below the column count.

#include "chooser.hpp"
#include "read_in_parts.hpp"
#include "scratch_dir.hpp"

#include "io/binary_cache.hpp"

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace shardopt;

namespace {

constexpr std::size_t header_size = 152;   // io/binary_cache.cpp's file_header
constexpr std::size_t name_bytes_at = 124;
constexpr std::size_t crc_at = 144;

void reseal(std::string& bytes) {
  if (bytes.size() < header_size)
    return;
  std::uint32_t name = 0;
  std::memcpy(&name, bytes.data() + name_bytes_at, sizeof name);
  if (name > bytes.size() - header_size)
    return;
  std::memset(bytes.data() + crc_at, 0, 4);
  const auto crc = static_cast<std::uint32_t>(
    crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(header_size + name)));
  std::memcpy(bytes.data() + crc_at, &crc, sizeof crc);
}

/// Aborts (a crash libFuzzer keeps) when a dataset that read has a column past its count.
void check_walkable(const result<io::raw_dataset>& data) {
  if (!data || !data->data.is_sparse())
    return;
  const auto x = data->data.sparse();
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    for (auto p = x.outerIndexPtr()[r]; p < x.outerIndexPtr()[r + 1]; ++p)
      if (x.innerIndexPtr()[p] < 0 || x.innerIndexPtr()[p] >= x.cols()) {
        std::fprintf(stderr, "fuzz: row %lld has column %d of %lld\n", static_cast<long long>(r),
                     x.innerIndexPtr()[p], static_cast<long long>(x.cols()));
        std::abort();
      }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  static const fuzz::scratch_dir dir;
  fuzz::chooser pick{data[0]};
  std::string bytes{reinterpret_cast<const char*>(data) + 1, size - 1};
  if (pick.take(2) == 1)
    reseal(bytes);
  io::read_options options;
  options.limit = pick.take(2) == 0 ? 0 : 3;
  const auto parts = static_cast<std::int64_t>(1 + pick.take(4));

  const auto path = dir.write("data.shoptbin", bytes);
  const auto whole = io::read_binary_dataset(path, options);
  check_walkable(whole);
  if (options.limit == 0)
    fuzz::read_in_parts(path, options, parts, whole);
  return 0;
}
