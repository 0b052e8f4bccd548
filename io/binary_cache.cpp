#include "io/binary_cache.hpp"

#include "io/atomic_file.hpp"
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

namespace {

constexpr std::array<char, 8> magic{'S', 'H', 'O', 'P', 'T', 'B', 'I', 'N'};
constexpr std::uint32_t format_version = 1;
constexpr std::uint32_t byte_order = 0x01020304;
constexpr std::uint64_t alignment = 64;
constexpr std::uint32_t max_name_bytes = 4096;
constexpr std::uint32_t pixels_flag = 1;  // IDX pixels: scaled by 1/255 by default
constexpr std::uint32_t lines_flag = 2;   // examples came from text lines (their numbers are kept)

/// The fixed part of the header, as it lies in the file (followed by the source's name).
struct file_header {
  std::array<char, 8> magic;
  std::uint32_t version;
  std::uint32_t byte_order;
  std::uint32_t layout;  // 0: dense rows, 1: CSR
  std::uint32_t flags;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t nonzeros;
  std::uint64_t labels_at;
  std::uint64_t lines_at;
  std::uint64_t starts_at;
  std::uint64_t indices_at;
  std::uint64_t values_at;
  std::uint64_t file_bytes;
  std::uint64_t source_size;
  std::int64_t source_mtime_ns;
  std::int32_t format;
  std::int32_t label_column;
  std::int32_t header_row;  // -1: detected, 0: no, 1: yes
  std::uint32_t name_bytes;
  std::int64_t features;
  std::int64_t limit;
  std::uint32_t crc;  // CRC-32 of the header and the name, with this field zero
  std::uint32_t reserved;
};
static_assert(sizeof(file_header) == 152, "the header's layout is part of the file format");

std::uint64_t aligned(std::uint64_t at) {
  return (at + alignment - 1) / alignment * alignment;
}

std::uint32_t checksum(file_header header, std::string_view name) {
  header.crc = 0;
  auto crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(&header), sizeof header);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(name.data()), static_cast<uInt>(name.size()));
  return static_cast<std::uint32_t>(crc);
}

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
  if (h.version != format_version)
    return fail_invalid(path + ": binary dataset version " + std::to_string(h.version) + ", this shardopt reads "
                + std::to_string(format_version) + "; convert the source again");
  if (h.byte_order != byte_order)
    return fail_invalid(path + ": written on a machine of another byte order");
  if (h.name_bytes > max_name_bytes || h.name_bytes > file - sizeof(file_header))
    return fail_invalid(path + ": truncated or damaged header (a source name of " + std::to_string(h.name_bytes)
                + " bytes)");
  out.source.assign(out.map->at<char>(sizeof(file_header)), h.name_bytes);
  if (checksum(h, out.source) != h.crc)
    return fail_invalid(path + ": the header's checksum does not match: the file is damaged");
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
  const auto floor = sizeof(file_header) + h.name_bytes;
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

template <class T>
void put(std::ostream& out, const T* data, std::int64_t count) {
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(sizeof(T) * static_cast<std::size_t>(count)));
}

void pad_to(std::ostream& out, std::uint64_t& written, std::uint64_t at) {
  static const std::array<char, alignment> zeros{};
  out.write(zeros.data(), static_cast<std::streamsize>(at - written));
  written = at;
}

} // namespace

bool is_binary_dataset(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::array<char, 8> head{};
  in.read(head.data(), head.size());
  return in.gcount() == static_cast<std::streamsize>(head.size()) && head == magic;
}

result<cache_origin> origin_of(const std::string& source, const read_options& options) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0)
    return errno == ENOENT ? fail_not_found(source + ": no such file")
                           : fail_runtime(source + ": cannot look at: " + std::strerror(errno));
  cache_origin out;
  out.source = source;
  out.options = options;
  if (!S_ISDIR(st.st_mode)) {
    out.size = static_cast<std::uint64_t>(st.st_size);
    out.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  }
  return out;
}

bool same_origin(const cache_origin& a, const cache_origin& b) {
  return a.source == b.source && a.size == b.size && a.mtime_ns == b.mtime_ns
         && a.options.format == b.options.format && a.options.label_column == b.options.label_column
         && a.options.header == b.options.header && a.options.features == b.options.features
         && a.options.limit == b.options.limit;
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
  return out;
}

result<void> write_binary_dataset(const std::string& path, const raw_dataset& data,
                                  const cache_origin& origin) {
  const auto& known = origin;
  const auto& options = origin.options;
  const auto& x = data.data;
  const float* all_values = x.is_sparse() ? x.sparse().valuePtr() : x.dense().data();
  for (std::int64_t i = 0; i < x.nonzeros(); ++i)
    if (!std::isfinite(all_values[i]))
      return fail_invalid(path + ": cannot store " + data.source + ": a value is not finite");
  const bool sparse = x.is_sparse();
  file_header h{};
  h.magic = magic;
  h.version = format_version;
  h.byte_order = byte_order;
  h.layout = sparse ? 1 : 0;
  h.flags = (data.pixels ? pixels_flag : 0) | (data.lines.empty() ? 0 : lines_flag);
  h.rows = x.rows();
  h.cols = x.cols();
  h.nonzeros = x.nonzeros();
  const std::string name = data.source.substr(0, max_name_bytes);
  h.name_bytes = static_cast<std::uint32_t>(name.size());
  h.labels_at = aligned(sizeof(file_header) + name.size());
  h.lines_at = aligned(h.labels_at + 8 * static_cast<std::uint64_t>(h.rows));
  std::uint64_t after = h.lines_at + 8 * static_cast<std::uint64_t>(h.rows);
  if (sparse) {
    h.starts_at = aligned(after);
    h.indices_at = aligned(h.starts_at + 4 * static_cast<std::uint64_t>(h.rows + 1));
    after = h.indices_at + 4 * static_cast<std::uint64_t>(h.nonzeros);
  }
  h.values_at = aligned(after);
  h.file_bytes = h.values_at + 4 * static_cast<std::uint64_t>(h.nonzeros);
  h.source_size = known.size;
  h.source_mtime_ns = known.mtime_ns;
  h.format = static_cast<std::int32_t>(options.format);
  h.label_column = options.label_column;
  h.header_row = options.header ? (*options.header ? 1 : 0) : -1;
  h.features = options.features;
  h.limit = options.limit;
  h.crc = checksum(h, name);
  return stream_file_atomically(path, [&](std::ostream& out) {
    std::uint64_t written = 0;
    put(out, &h, 1);
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    written = sizeof h + name.size();
    pad_to(out, written, h.labels_at);
    put(out, x.y.data(), h.rows);
    written += 8 * static_cast<std::uint64_t>(h.rows);
    pad_to(out, written, h.lines_at);
    if (static_cast<std::int64_t>(data.lines.size()) == h.rows) {
      put(out, data.lines.data(), h.rows);
    } else {
      const std::vector<std::int64_t> zeros(static_cast<std::size_t>(h.rows), 0);
      put(out, zeros.data(), h.rows);
    }
    written += 8 * static_cast<std::uint64_t>(h.rows);
    if (sparse) {
      const auto view = x.sparse();
      pad_to(out, written, h.starts_at);
      put(out, view.outerIndexPtr(), h.rows + 1);
      written += 4 * static_cast<std::uint64_t>(h.rows + 1);
      pad_to(out, written, h.indices_at);
      put(out, view.innerIndexPtr(), h.nonzeros);
      written += 4 * static_cast<std::uint64_t>(h.nonzeros);
      pad_to(out, written, h.values_at);
      put(out, view.valuePtr(), h.nonzeros);
    } else {
      pad_to(out, written, h.values_at);
      put(out, x.dense().data(), h.nonzeros);
    }
  });
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

std::string cache_path(const std::string& source, const read_options& options,
                       const std::string& directory) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(source, ec).lexically_normal().string();
  const std::string key = absolute + "\n" + std::to_string(static_cast<int>(options.format)) + ","
                          + std::to_string(options.label_column) + ","
                          + (options.header ? (*options.header ? "yes" : "no") : "auto") + ","
                          + std::to_string(options.features) + "," + std::to_string(options.limit);
  const auto crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(key.data()),
                         static_cast<uInt>(key.size()));
  char digest[9];
  std::snprintf(digest, sizeof digest, "%08lx", static_cast<unsigned long>(crc));
  const auto name = std::filesystem::path{source}.filename().string() + "." + digest + ".shoptbin";
  if (directory.empty())
    return (std::filesystem::path{source}.parent_path() / name).string();
  return (std::filesystem::path{directory} / name).string();
}

} // namespace shardopt::io
