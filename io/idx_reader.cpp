#include "io/partition.hpp"
#include "io/reader_support.hpp"
#include "io/readers.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace shardopt::io {

namespace {

// IDX format (LeCun et al., http://yann.lecun.com/exdb/mnist/): a big-endian 32-bit magic number
// (0x0000 08 <dimensions>, 08 = unsigned bytes), one big-endian 32-bit size per dimension, then the
// data in row-major order.
constexpr std::uint32_t images_magic = 0x00000803;
constexpr std::uint32_t labels_magic = 0x00000801;

std::uint32_t big_endian(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

std::string hex(std::uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%08x", value);
  return buffer;
}

/// The header of an IDX file: its dimensions.
struct idx_header {
  std::vector<std::uint64_t> sizes;
};

/// Reads the magic number and `dimensions` sizes; `what` names the kind of file in messages.
result<idx_header> read_header(detail::gz_input& input, std::uint32_t magic, std::size_t dimensions,
                               const char* what) {
  std::array<unsigned char, 16> bytes{};
  const std::uint64_t wanted = 4 * (dimensions + 1);
  auto got = input.read(bytes.data(), wanted);
  if (!got)
    return got.error();
  if (got.value() >= 4 && big_endian(bytes.data()) != magic)
    return fail_invalid(input.path() + ": bad magic " + hex(big_endian(bytes.data())) + ", expected " +
                hex(magic) + " (IDX " + what + ")");
  if (got.value() < wanted)
    return fail_invalid(input.path() + ": truncated: expected a " + std::to_string(wanted) +
                "-byte IDX header, got " + std::to_string(got.value()) + " bytes");
  idx_header header;
  for (std::size_t d = 0; d < dimensions; ++d)
    header.sizes.push_back(big_endian(bytes.data() + 4 * (d + 1)));
  return header;
}

/// Reads exactly `size` payload bytes; `what` names the data in the truncation message. The buffer
/// grows with the data actually read (doubling from 1 MiB), so a header claiming more than a
/// compressed file holds costs what the file holds, not what the header claims.
result<std::vector<unsigned char>> read_payload(detail::gz_input& input, std::uint64_t size,
                                                const char* what) {
  constexpr std::uint64_t first_chunk = std::uint64_t{1} << 20;
  std::vector<unsigned char> bytes;
  std::uint64_t used = 0;
  while (used < size) {
    const auto wanted = std::min(size, std::max(first_chunk, 2 * used));
    bytes.resize(static_cast<std::size_t>(wanted));
    auto got = input.read(bytes.data() + used, wanted - used);
    if (!got)
      return got.error();
    used += got.value();
    if (used < wanted)
      return fail_invalid(input.path() + ": truncated: expected " + std::to_string(size) + " bytes of " + what +
                  " data, got " + std::to_string(used));
  }
  return bytes;
}

/// For plain (uncompressed) files, checks that the header's claim of `records` records of `record`
/// bytes after a header of `header` bytes fits in the file, before anything is allocated for them.
/// (records * record < 2^63: counts are below 2^32 and records below 2^31 bytes.)
result<void> check_fits(const detail::gz_input& input, std::uint64_t header, std::uint64_t records,
                        std::uint64_t record, const char* what) {
  if (input.compressed())
    return {};
  const auto available = input.file_size() > header ? input.file_size() - header : 0;
  if (records > available / record)
    return fail_invalid(input.path() + ": truncated: expected " + std::to_string(records * record) + " bytes of " +
                what + " data, got " + std::to_string(available));
  return {};
}

} // namespace

result<raw_dataset> read_idx(const std::string& images_path, const std::string& labels_path,
                             const read_options& options) {
  return detail::read_idx_range(images_path, labels_path, options, 0, 1);
}

result<raw_dataset> detail::read_idx_range(const std::string& images_path,
                                           const std::string& labels_path,
                                           const read_options& options, std::int64_t part,
                                           std::int64_t parts) {
  // Headers first, so that a count mismatch is reported before any payload is read.
  auto images = detail::gz_input::open(images_path, options.max_decompressed);
  if (!images)
    return images.error();
  auto labels = detail::gz_input::open(labels_path, options.max_decompressed);
  if (!labels)
    return labels.error();
  auto image_header = read_header(images.value(), images_magic, 3, "images");
  if (!image_header)
    return image_header.error();
  auto label_header = read_header(labels.value(), labels_magic, 1, "labels");
  if (!label_header)
    return label_header.error();

  const std::uint64_t count = image_header->sizes[0];
  const std::uint64_t height = image_header->sizes[1];
  const std::uint64_t width = image_header->sizes[2];
  if (label_header->sizes[0] != count)
    return fail_invalid(images_path + " has " + std::to_string(count) + " images but " + labels_path +
                " has " + std::to_string(label_header->sizes[0]) + " labels");
  if (height == 0 || width == 0)
    return fail_invalid(images_path + ": images of " + std::to_string(height) + " x " +
                std::to_string(width) + " pixels are empty");
  // Both sizes are below 2^32, so the pixel count fits, and a cap on it keeps count * pixels exact.
  const std::uint64_t pixels = height * width;
  if (pixels > (std::uint64_t{1} << 31))
    return fail_invalid(images_path + ": images of " + std::to_string(height) + " x " +
                std::to_string(width) + " pixels are too large");
  const std::uint64_t total =
      options.limit > 0 ? std::min(count, static_cast<std::uint64_t>(options.limit)) : count;
  // Parts of whole canonical blocks, as local shards are: the same rows, so the same sums.
  const auto range = partition_blocks(static_cast<std::int64_t>(total), parts)[static_cast<std::size_t>(part)];
  const auto first = static_cast<std::uint64_t>(range.begin);
  const auto rows = static_cast<std::uint64_t>(range.size());
  if (rows == 0)
    return fail_invalid(images_path + ": no images");
  // Plain files must hold what their headers declare; compressed ones are read as far as they go.
  if (auto fits = check_fits(images.value(), 16, first + rows, pixels, "image"); !fits)
    return fits.error();
  if (auto fits = check_fits(labels.value(), 8, first + rows, 1, "label"); !fits)
    return fits.error();
  // Records before the range are read past, never kept.
  if (auto ok = images->skip(first * pixels); !ok)
    return ok.error();
  if (auto ok = labels->skip(first); !ok)
    return ok.error();

  // One read per payload, then a single conversion to float.
  auto image_bytes = read_payload(images.value(), rows * pixels, "image");
  if (!image_bytes)
    return image_bytes.error();
  auto label_bytes = read_payload(labels.value(), rows, "label");
  if (!label_bytes)
    return label_bytes.error();

  using byte_matrix =
      Eigen::Matrix<unsigned char, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using byte_vector = Eigen::Matrix<unsigned char, Eigen::Dynamic, 1>;
  const auto n = static_cast<Eigen::Index>(rows);
  raw_dataset out;
  out.data.x = model::dense_features{
      Eigen::Map<const byte_matrix>(image_bytes->data(), n, static_cast<Eigen::Index>(pixels))
          .cast<float>()};
  out.data.y = Eigen::Map<const byte_vector>(label_bytes->data(), n).cast<double>();
  out.source = labels_path;
  if (parts > 1)
    out.source += " (records " + std::to_string(first) + "-" + std::to_string(first + rows) + ")";
  out.pixels = true;
  return out;
}

} // namespace shardopt::io
