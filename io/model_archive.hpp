#pragma once
// Internal to io: the archive pieces model files and checkpoints share. Not part of the interface.

#include "io/model_file.hpp"

#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/array_wrapper.hpp>

#include <cstdint>
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

/// Writes through `write` to `path`.tmp (C locale), flushes, closes and renames it over `path`, so a
/// crash never leaves a half-written file; errors say which `what` could not be saved where.
result<void> write_atomically(const std::string& path, const std::string& what,
                              const std::function<void(std::ostream&)>& write);

} // namespace shardopt::io::detail
