#include "io/binary_cache.hpp"

#include "io/binary_format.hpp"
#include "io/partition.hpp"
#include "io/text_parse.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace shardopt::io {

std::uint32_t binary_format::checksum(file_header header, std::string_view name) {
  header.crc = 0;
  auto crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(&header), sizeof header);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(name.data()), static_cast<uInt>(name.size()));
  return static_cast<std::uint32_t>(crc);
}

namespace {

using namespace binary_format;

/// A read-only mapping of a whole file, unmapped when the last dataset that shares it goes.
class mapping {
public:
  static result<std::shared_ptr<mapping>> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return errno == ENOENT ? fail_not_found(path + ": no such file")
                             : fail_runtime(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return fail_runtime(path + ": cannot open: " + std::strerror(err));
    }
    auto out = std::shared_ptr<mapping>(new mapping);
    out->size_ = static_cast<std::size_t>(st.st_size);
    if (out->size_ > 0) {
      void* at = ::mmap(nullptr, out->size_, PROT_READ, MAP_SHARED, fd, 0);
      if (at == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        return fail_runtime(path + ": cannot map: " + std::strerror(err));
      }
      out->data_ = static_cast<const unsigned char*>(at);
    }
    ::close(fd);
    return out;
  }

  ~mapping() {
    if (data_ != nullptr)
      ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

  template <class T>
  const T* at(std::uint64_t offset) const {
    return reinterpret_cast<const T*>(data_ + offset);
  }

private:
  mapping() = default;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A mapped, checked header and where its sections are.
struct opened {
  std::shared_ptr<mapping> map;
  file_header header{};
  std::string source;
  hashing_options hashing;
};

/// Checks that `count` elements of `size` bytes at `at` lie inside the file after `floor`.
result<void> check_section(const std::string& path, const char* what, std::uint64_t at,
                           std::int64_t count, std::uint64_t size, std::uint64_t floor,
                           std::uint64_t file) {
  if (at % alignment != 0 || at < floor || at > file)
    return fail_invalid(path + ": the " + std::string{what} + " section lies outside the file or out of order");
  if (count < 0 || static_cast<std::uint64_t>(count) > (file - at) / size)
    return fail_invalid(path + ": truncated: the " + std::string{what} + " section needs "
                + std::to_string(count) + " entries, the file ends first");
  return {};
}

result<opened> open_checked(const std::string& path) {
  auto map = mapping::open(path);
  if (!map)
    return map.error();
  opened out;
  out.map = std::move(*map);
  const auto file = static_cast<std::uint64_t>(out.map->size());
  if (file < sizeof(file_header) || std::memcmp(out.map->data(), magic.data(), magic.size()) != 0)
    return fail_invalid(path + ": not a shardopt binary dataset (no SHOPTBIN magic number)");
  std::memcpy(&out.header, out.map->data(), sizeof out.header);
  const auto& h = out.header;
  if (h.version < 1 || h.version > format_version)
    return fail_invalid(path + ": binary dataset version " + std::to_string(h.version) + ", this shardopt reads "
                + "versions 1 to " + std::to_string(format_version) + "; convert the source again");
  if (h.byte_order != byte_order)
    return fail_invalid(path + ": written on a machine of another byte order");
  if (h.name_bytes > max_name_bytes || h.name_bytes > file - sizeof(file_header))
    return fail_invalid(path + ": truncated or damaged header (a source name of " + std::to_string(h.name_bytes)
                + " bytes)");
  out.source.assign(out.map->at<char>(sizeof(file_header)), h.name_bytes);
  if (h.hashing_bytes > max_hashing_bytes || h.hashing_bytes > file - sizeof(file_header) - h.name_bytes)
    return fail_invalid(path + ": truncated or damaged header (a hashing description of "
                        + std::to_string(h.hashing_bytes) + " bytes)");
  const std::string hashing{out.map->at<char>(sizeof(file_header) + h.name_bytes), h.hashing_bytes};
  if (checksum(h, out.source + hashing) != h.crc)
    return fail_invalid(path + ": the header's checksum does not match: the file is damaged");
  auto parsed = parse_hashing(hashing);
  if (!parsed)
    return parsed.error().with_context(path + ": damaged hashing description");
  out.hashing = std::move(*parsed);
  if (out.hashing.enabled() && (h.layout != 1 || h.cols != out.hashing.dimension()))
    return fail_invalid(path + ": damaged header: " + std::to_string(h.cols) + " columns, but its hashing makes "
                        + std::to_string(out.hashing.dimension()));
  if (h.file_bytes != file)
    return fail_invalid(path + ": truncated: the header says " + std::to_string(h.file_bytes) + " bytes, the file has "
                + std::to_string(file));
  if (h.layout > 1 || h.rows < 0 || h.cols < 1 || h.nonzeros < 0)
    return fail_invalid(path + ": impossible sizes in the header (" + std::to_string(h.rows) + " rows, "
                + std::to_string(h.cols) + " columns)");
  const bool sparse = h.layout == 1;
  if (sparse && (h.nonzeros > std::numeric_limits<std::int32_t>::max() || h.cols > std::numeric_limits<std::int32_t>::max()))
    return fail_invalid(path + ": more non-zero values or columns than a CSR dataset may hold");
  if (!sparse && (h.cols > 0 && h.rows > std::numeric_limits<std::int64_t>::max() / h.cols))
    return fail_invalid(path + ": impossible sizes in the header");
  const auto floor = sizeof(file_header) + h.name_bytes + h.hashing_bytes;
  auto ok = check_section(path, "labels", h.labels_at, h.rows, 8, floor, file);
  if (ok)
    ok = check_section(path, "lines", h.lines_at, h.rows, 8, h.labels_at + 8 * static_cast<std::uint64_t>(h.rows), file);
  std::uint64_t after = h.lines_at + 8 * static_cast<std::uint64_t>(h.rows);
  if (ok && sparse) {
    ok = check_section(path, "starts", h.starts_at, h.rows + 1, 4, after, file);
    after = h.starts_at + 4 * static_cast<std::uint64_t>(h.rows + 1);
    if (ok)
      ok = check_section(path, "indices", h.indices_at, h.nonzeros, 4, after, file);
    after = h.indices_at + 4 * static_cast<std::uint64_t>(h.nonzeros);
  }
  if (ok)
    ok = check_section(path, "values", h.values_at, sparse ? h.nonzeros : h.rows * h.cols, 4, after, file);
  if (!ok)
    return ok.error();
  if (sparse) {
    const auto* starts = out.map->at<std::int32_t>(h.starts_at);
    if (starts[0] != 0 || starts[h.rows] != h.nonzeros)
      return fail_invalid(path + ": the CSR starts run from " + std::to_string(starts[0]) + " to "
                  + std::to_string(starts[h.rows]) + ", not 0 to " + std::to_string(h.nonzeros));
  }
  return out;
}

/// Checks rows [begin, end) of an opened dataset in parallel; the first bad row in file order wins.
result<void> check_rows(const std::string& path, const opened& file, std::int64_t begin, std::int64_t end) {
  const auto& h = file.header;
  const auto* labels = file.map->at<double>(h.labels_at);
  const auto* values = file.map->at<float>(h.values_at);
  const bool sparse = h.layout == 1;
  const auto* starts = sparse ? file.map->at<std::int32_t>(h.starts_at) : nullptr;
  const auto* indices = sparse ? file.map->at<std::int32_t>(h.indices_at) : nullptr;
  const auto pieces = static_cast<std::size_t>(std::clamp<std::int64_t>((end - begin) / 65536, 1, 64));
  std::vector<std::string> errors(pieces);
  detail::run_parallel(pieces, detail::usable_cpus(), [&](std::size_t k) {
    const auto from = begin + (end - begin) * static_cast<std::int64_t>(k) / static_cast<std::int64_t>(pieces);
    const auto to = begin + (end - begin) * static_cast<std::int64_t>(k + 1) / static_cast<std::int64_t>(pieces);
    const auto at = [&](std::int64_t row) { return path + ": row " + std::to_string(row) + ": "; };
    for (auto row = from; row < to; ++row) {
      if (!std::isfinite(labels[row])) {
        errors[k] = at(row) + "the label is not finite";
        return;
      }
      std::int64_t first = row * h.cols;
      std::int64_t last = first + h.cols;
      if (sparse) {
        first = starts[row];
        last = starts[row + 1];
        if (first < 0 || last < first || last > h.nonzeros) {
          errors[k] = at(row) + "the CSR starts go backwards or past the values";
          return;
        }
        std::int64_t previous = -1;
        for (auto p = first; p < last; ++p) {
          if (indices[p] <= previous || indices[p] >= h.cols) {
            errors[k] = at(row) + "column " + std::to_string(indices[p]) + (indices[p] <= previous
                          ? " after " + std::to_string(previous) + ": columns must increase"
                          : " is outside its " + std::to_string(h.cols) + " columns");
            return;
          }
          previous = indices[p];
        }
      }
      for (auto p = first; p < last; ++p)
        if (!std::isfinite(values[p])) {
          errors[k] = at(row) + "a value is not finite";
          return;
        }
    }
  });
  for (const auto& error : errors)
    if (!error.empty())
      return fail_invalid(error);
  return {};
}

/// Rows [begin, end) of a checked file as a dataset sharing the mapping.
raw_dataset view_rows(const opened& file, std::int64_t begin, std::int64_t end, const read_options& options) {
  const auto& h = file.header;
  raw_dataset out;
  out.source = file.source;
  out.hashing = file.hashing;
  out.pixels = (h.flags & pixels_flag) != 0;
  const auto rows = end - begin;
  out.data.y = Eigen::Map<const Eigen::VectorXd>(file.map->at<double>(h.labels_at) + begin, rows);
  const auto* lines = file.map->at<std::int64_t>(h.lines_at) + begin;
  if ((h.flags & lines_flag) != 0)
    out.lines.assign(lines, lines + rows);
  auto* values = const_cast<float*>(file.map->at<float>(h.values_at));
  if (h.layout == 0) {
    model::shared_dense x;
    x.values = values + begin * h.cols;
    x.rows = rows;
    x.cols = h.cols;
    x.owner = file.map;
    out.data.x = std::move(x);
    return out;
  }
  // A part's starts are rebased to 0; its indices and values stay in the mapping.
  struct part_storage {
    std::shared_ptr<mapping> map;
    std::vector<std::int32_t> starts;
  };
  const auto* starts = file.map->at<std::int32_t>(h.starts_at);
  auto storage = std::make_shared<part_storage>();
  storage->map = file.map;
  storage->starts.resize(static_cast<std::size_t>(rows + 1));
  for (std::int64_t r = 0; r <= rows; ++r)
    storage->starts[static_cast<std::size_t>(r)] = starts[begin + r] - starts[begin];
  model::shared_sparse x;
  x.starts = storage->starts.data();
  x.indices = file.map->at<std::int32_t>(h.indices_at) + starts[begin];
  x.values = values + starts[begin];
  x.rows = rows;
  x.cols = std::max(h.cols, options.features);
  x.owner = std::move(storage);
  out.data.x = std::move(x);
  return out;
}

result<raw_dataset> read_rows(const std::string& path, const read_options& options,
                              std::int64_t part, std::int64_t parts) {
  auto file = open_checked(path);
  if (!file)
    return file.error();
  const auto& h = file->header;
  if (options.hashing.enabled() && options.hashing != file->hashing)
    return fail_invalid(path + ": its features were hashed as " + summary_of(file->hashing)
                        + ", not as the hashing options say (" + summary_of(options.hashing) + ")");
  if (options.features > 0 && options.features != h.cols && (h.layout == 0 || options.features < h.cols))
    return fail_invalid(path + ": holds " + std::to_string(h.cols) + " features, --features says "
                + std::to_string(options.features));
  std::int64_t rows = h.rows;
  if (options.limit > 0)
    rows = std::min(rows, options.limit);
  if (rows == 0)
    return fail_invalid(path + ": empty file (no examples)");
  const auto range = partition_blocks(rows, parts)[static_cast<std::size_t>(part)];
  if (range.size() == 0)
    return fail_invalid(path + " (part " + std::to_string(part + 1) + " of " + std::to_string(parts)
                + "): no examples; use fewer shards");
  if (auto ok = check_rows(path, *file, range.begin, range.end); !ok)
    return ok.error();
  return view_rows(*file, range.begin, range.end, options);
}

} // namespace

bool is_binary_dataset(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::array<char, 8> head{};
  in.read(head.data(), head.size());
  return in.gcount() == static_cast<std::streamsize>(head.size()) && head == magic;
}

result<cache_origin> recorded_origin(const std::string& path) {
  auto file = open_checked(path);
  if (!file)
    return file.error();
  const auto& h = file->header;
  cache_origin out;
  out.source = file->source;
  out.size = h.source_size;
  out.mtime_ns = h.source_mtime_ns;
  out.options.format = static_cast<data_format>(h.format);
  out.options.label_column = h.label_column;
  if (h.header_row >= 0)
    out.options.header = h.header_row == 1;
  out.options.features = h.features;
  out.options.limit = h.limit;
  out.options.hashing = file->hashing;
  return out;
}

result<raw_dataset> read_binary_dataset(const std::string& path, const read_options& options) {
  return read_rows(path, options, 0, 1);
}

result<raw_dataset> read_binary_part(const std::string& path, const read_options& options,
                                     std::int64_t part, std::int64_t parts) {
  if (parts < 1 || part < 0 || part >= parts)
    return fail_invalid(path + ": part " + std::to_string(part) + " of " + std::to_string(parts) + " does not exist");
  auto out = read_rows(path, options, part, parts);
  if (out)
    out->source += " (part " + std::to_string(part + 1) + " of " + std::to_string(parts) + ")";
  return out;
}

} // namespace shardopt::io
