#pragma once
// Internal to io: the archive pieces model files and checkpoints share. Not part of the interface.

#include "io/model_file.hpp"
#include "base/result.hpp"

#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/array_wrapper.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <locale>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io::detail {

/// Writes a size and then the elements.
template <class T>
void save_vector(boost::archive::text_oarchive& archive, const T* data, std::int64_t size) {
  archive << size;
  if (size > 0)
    archive << boost::serialization::make_array(data, static_cast<std::size_t>(size));
}

/// Checks a sparse vector's entries as read: as many indices as values, increasing within
/// 0..size-1. Errors: "<i> indices for <v> values", "entry <k> has index <j>, not increasing
/// within 0..<size-1>".
template <class T>
result<void> check_sparse_entries(const std::vector<std::int64_t>& indices, const std::vector<T>& values,
                                  std::int64_t size) {
  if (values.size() != indices.size())
    return fail_invalid(std::to_string(indices.size()) + " indices for " + std::to_string(values.size()) + " values");
  for (std::size_t k = 0; k < indices.size(); ++k)
    if (indices[k] < 0 || indices[k] >= size || (k > 0 && indices[k] <= indices[k - 1]))
      return fail_invalid("entry " + std::to_string(k) + " has index " + std::to_string(indices[k]) +
                          ", not increasing within 0.." + std::to_string(size - 1));
  return {};
}

/// A Boost text archive reading a file of known size, which checks every declared length (of a
/// string, of a vector) against the bytes left in the file before it allocates anything for it: in
/// this format a string of n characters takes at least n bytes and a vector of n numbers at least
/// 2n - 1, so a 15-byte file declaring a string of 3 GB is refused, not allocated. Boost's own
/// `archive >> string` would resize the string first. Reads through `stream`, which must be seekable;
/// Boost may throw archive_exception (the caller, read_archive_file, converts it).
class archive_reader {
public:
  archive_reader(std::istream& stream, std::uint64_t size) : stream_(stream), size_(size), archive_(stream) {}

  /// The file's format version (set once the header is read).
  int version() const { return version_; }
  void set_version(int version) { version_ = version; }

  /// Reads a number (or another primitive); no allocation to check.
  template <class T>
  archive_reader& operator>>(T& value) {
    archive_ >> value;
    return *this;
  }

  /// Reads a string whose declared length fits in the bytes left. Errors: "a string of <n>
  /// characters, more than the <b> bytes left in the file" (`out` untouched).
  result<void> load_string(std::string& out) {
    if (const auto declared = peek_count(); declared && declared->first > declared->second)
      return fail_invalid("a string of " + std::to_string(declared->first) + " characters, more than the " +
                  std::to_string(declared->second) + " bytes left in the file");
    archive_ >> out;  // without a count Boost throws, as for any malformed number
    return {};
  }

  /// Reads a vector whose size lies in [0, max_size] and fits in the bytes left. Errors: "a size of
  /// <n>, more than the <max> allowed", "... more than the <b> bytes left in the file hold" (`out`
  /// untouched).
  template <class Vector>
  result<void> load_vector(Vector& out, std::int64_t max_size) {
    std::int64_t size = 0;
    archive_ >> size;
    if (size < 0 || size > max_size)
      return fail_invalid("a size of " + std::to_string(size) + ", not in the allowed 0.." + std::to_string(max_size));
    const auto left = remaining();
    if (static_cast<std::uint64_t>(size) > (left + 1) / 2)
      return fail_invalid("a size of " + std::to_string(size) + ", more than the " + std::to_string(left) +
                  " bytes left in the file hold");
    out.resize(static_cast<std::size_t>(size));
    if (size > 0)
      archive_ >> boost::serialization::make_array(out.data(), static_cast<std::size_t>(size));
    return {};
  }

private:
  /// The bytes after the read position (0 when it cannot be told).
  std::uint64_t remaining() {
    const auto at = stream_.tellg();
    if (at < 0 || static_cast<std::uint64_t>(at) > size_)
      return 0;
    return size_ - static_cast<std::uint64_t>(at);
  }

  /// The count the archive reads next, and the bytes left after it; the read position is restored,
  /// so the archive then reads the count itself. nullopt when no count follows.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> peek_count() {
    const auto at = stream_.tellg();
    std::uint64_t count = 0;
    const bool read = static_cast<bool>(stream_ >> count);
    const auto left = read ? remaining() : 0;
    stream_.clear();
    stream_.seekg(at);
    if (!read)
      return std::nullopt;
    return std::pair{count, left};
  }

  std::istream& stream_;
  std::uint64_t size_;
  int version_ = 0;
  boost::archive::text_iarchive archive_;
};

/// The fields of a saved model, after the file's magic and version, through its end marker.
void write_model_fields(boost::archive::text_oarchive& archive, const saved_model& model);

/// Reads what `write_model_fields` wrote (format version 3 and later: theta dense or sparse;
/// 2: with the network architecture; version 1: a linear model); errors name `path`. Boost may
/// throw archive_exception.
result<saved_model> read_model_fields(archive_reader& archive, const std::string& path);

/// Opens `path`, checks the archive's magic and that its format version lies in [oldest, version]
/// (oldest < 0: exactly `version`) and hands the archive to `read_fields`. Missing files, foreign files (naming `what`, e.g. "model file"), other versions,
/// declared lengths larger than the file, and Boost exceptions (truncated or corrupt files) become
/// errors naming the path.
template <class T, class ReadFields>
result<T> read_archive_file(const std::string& path, const std::string& magic, int version,
                            const std::string& what, ReadFields read_fields, int oldest = -1) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return fail_not_found(path + ": no such file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec)
    return fail_runtime(path + ": cannot open: " + ec.message());
  std::ifstream stream{path, std::ios::binary};
  if (!stream)
    return fail_runtime(path + ": cannot open: " + std::strerror(errno));
  stream.imbue(std::locale::classic());
  // Every Boost text archive starts with this signature; checking it first keeps Boost from reading
  // a foreign file's first number as the signature's length.
  const std::string signature = "22 serialization::archive ";
  std::string start(signature.size(), '\0');
  if (!stream.read(start.data(), static_cast<std::streamsize>(start.size())) || start != signature)
    return fail_invalid(path + ": not a shardopt " + what);
  stream.seekg(0);
  bool header_read = false;  // a failure before it means "not one of ours"
  try {
    archive_reader archive{stream, size};
    std::string file_magic;
    int file_version = 0;
    if (!archive.load_string(file_magic).ok() || file_magic != magic)
      return fail_invalid(path + ": not a shardopt " + what);
    archive >> file_version;
    if (file_version > version || file_version < (oldest < 0 ? version : oldest))
      return fail_invalid(path + ": " + what + " format version " + std::to_string(file_version) +
                  " is not supported (this build reads " +
                  (oldest < 0 || oldest == version ? "version " + std::to_string(version)
                                                   : "versions " + std::to_string(oldest) + " to " + std::to_string(version)) +
                  ")");
    archive.set_version(file_version);
    header_read = true;
    return read_fields(archive);
  } catch (const std::exception& e) {
    return fail_invalid(path + ": " + (header_read ? "truncated or corrupt " + what : "not a shardopt " + what) + " (" +
                e.what() + ")");
  }
}

} // namespace shardopt::io::detail
