#pragma once
// Internal to io: the archive pieces model files and checkpoints share. Not part of the interface.

#include "io/model_file.hpp"

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
#include <ostream>
#include <string>

namespace shardopt::io::detail {

/// Writes a size and then the elements.
inline void save_vector(boost::archive::text_oarchive& archive, const double* data, std::int64_t size) {
  archive << size;
  if (size > 0)
    archive << boost::serialization::make_array(data, static_cast<std::size_t>(size));
}

/// Loads a vector whose size must lie in [0, max_size]; false (and `out` untouched) otherwise.
template <class Vector>
bool load_vector(boost::archive::text_iarchive& archive, Vector& out, std::int64_t max_size) {
  std::int64_t size = 0;
  archive >> size;
  if (size < 0 || size > max_size)
    return false;
  out.resize(static_cast<std::size_t>(size));
  if (size > 0)
    archive >> boost::serialization::make_array(out.data(), static_cast<std::size_t>(size));
  return true;
}

/// The fields of a saved model, after the file's magic and version, through its end marker.
void write_model_fields(boost::archive::text_oarchive& archive, const saved_model& model);

/// Reads what `write_model_fields` wrote; errors name `path`. Boost may throw archive_exception.
result<saved_model> read_model_fields(boost::archive::text_iarchive& archive, const std::string& path);

/// Opens `path`, checks the archive's magic and format version and hands the archive to
/// `read_fields`. Missing files, foreign files (naming `what`, e.g. "model file"), other versions
/// and Boost exceptions (truncated or corrupt files) become errors naming the path.
template <class T, class ReadFields>
result<T> read_archive_file(const std::string& path, const std::string& magic, int version,
                            const std::string& what, ReadFields read_fields) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return fail(path + ": no such file");
  std::ifstream stream{path};
  if (!stream)
    return fail(path + ": cannot open: " + std::strerror(errno));
  stream.imbue(std::locale::classic());
  bool header_read = false;  // a failure before it means "not one of ours"
  try {
    boost::archive::text_iarchive archive{stream};
    std::string file_magic;
    int file_version = 0;
    archive >> file_magic >> file_version;
    if (file_magic != magic)
      return fail(path + ": not a shardopt " + what);
    if (file_version != version)
      return fail(path + ": " + what + " format version " + std::to_string(file_version) +
                  " is not supported (this build reads version " + std::to_string(version) + ")");
    header_read = true;
    return read_fields(archive);
  } catch (const std::exception& e) {
    return fail(path + ": " + (header_read ? "truncated or corrupt " + what : "not a shardopt " + what) + " (" +
                e.what() + ")");
  }
}

} // namespace shardopt::io::detail
