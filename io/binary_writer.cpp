#include "io/binary_cache.hpp"

#include "io/atomic_file.hpp"
#include "io/binary_format.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>

namespace shardopt::io {

using namespace binary_format;

namespace {

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
         && a.options.limit == b.options.limit && a.options.hashing == b.options.hashing;
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
  // The data's own hashing: it records a CSV's column names besides the options.
  const auto hashing = describe(data.hashing.enabled() ? data.hashing : options.hashing);
  if (hashing.size() > max_hashing_bytes)
    return fail_invalid(path + ": the hashing's description is longer than " + std::to_string(max_hashing_bytes) + " bytes");
  h.hashing_bytes = static_cast<std::uint32_t>(hashing.size());
  h.labels_at = aligned(sizeof(file_header) + name.size() + hashing.size());
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
  h.crc = checksum(h, name + hashing);
  return stream_file_atomically(path, [&](std::ostream& out) {
    std::uint64_t written = 0;
    put(out, &h, 1);
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    out.write(hashing.data(), static_cast<std::streamsize>(hashing.size()));
    written = sizeof h + name.size() + hashing.size();
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

std::string cache_path(const std::string& source, const read_options& options,
                       const std::string& directory) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(source, ec).lexically_normal().string();
  const std::string key = absolute + "\n" + std::to_string(static_cast<int>(options.format)) + ","
                          + std::to_string(options.label_column) + ","
                          + (options.header ? (*options.header ? "yes" : "no") : "auto") + ","
                          + std::to_string(options.features) + "," + std::to_string(options.limit)
                          + (options.hashing.enabled() ? "," + describe(options.hashing) : std::string{});
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
