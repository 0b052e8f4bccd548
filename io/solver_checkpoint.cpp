#include "io/solver_checkpoint.hpp"

#include "io/atomic_file.hpp"
#include "io/model_archive.hpp"

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace shardopt::io {

namespace {

// File layout, in a Boost text archive: magic, format version, the settings (count, then key and
// value strings), the solver's name, the iteration, the numbers (count, then name and IEEE bit
// pattern each), the lists (count, then name, vector count and each vector), and an end marker.
// Bit patterns carry every double exactly, NaN included. A vector (version 2) is a tag and then
// either (0) its bit patterns, or (1) its size, the increasing indices of its entries whose bits
// are not all zero, and their bit patterns: an L1 run's theta and OWL-QN's pairs are mostly
// zeros, written at a hashed dimension in the bytes of their non-zeros. Version 1 files (every
// vector dense, no tag) are still read.
const std::string solver_magic = "shardopt-solver-checkpoint";
const std::string solver_end_marker = "end";
constexpr int solver_format_version = 2;
constexpr int solver_oldest_version = 1;
constexpr std::int64_t max_entries = 1 << 16;
constexpr std::int64_t max_vectors = 1 << 20;
constexpr std::int64_t max_dimension = std::int64_t{1} << 40;

std::uint64_t bits_of(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double from_bits(std::uint64_t bits) {
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// A vector as its tag and bits: sparse when its entries with any bit set are under a fifth.
void save_bits(boost::archive::text_oarchive& archive, const Eigen::VectorXd& vector, std::vector<std::uint64_t>& bits,
               std::vector<std::int64_t>& indices) {
  const auto size = static_cast<std::int64_t>(vector.size());
  indices.clear();
  for (std::int64_t i = 0; i < size && static_cast<std::int64_t>(indices.size()) * 5 < size; ++i)
    if (bits_of(vector[i]) != 0)  // -0.0 and NaN are kept
      indices.push_back(i);
  const bool sparse = static_cast<std::int64_t>(indices.size()) * 5 < size;
  archive << (sparse ? 1 : 0);
  bits.clear();
  if (!sparse) {
    for (std::int64_t i = 0; i < size; ++i)
      bits.push_back(bits_of(vector[i]));
    detail::save_vector(archive, bits.data(), size);
    return;
  }
  for (const auto i : indices)
    bits.push_back(bits_of(vector[i]));
  archive << size;
  detail::save_vector(archive, indices.data(), static_cast<std::int64_t>(indices.size()));
  detail::save_vector(archive, bits.data(), static_cast<std::int64_t>(bits.size()));
}

/// A sparse vector as read, made into a vector once the whole file has read back.
struct sparse_bits {
  std::size_t list = 0, vector = 0;  // where in the checkpoint's lists it goes
  std::int64_t size = 0;
  std::vector<std::int64_t> indices;
  std::vector<std::uint64_t> bits;
};

/// Reads what `save_bits` wrote (a version 1 file: the dense bits alone) into `into`, or for a
/// sparse vector its entries, checked, into `sparse` (`into` to be filled from them later, as
/// `entries` says).
result<void> load_bits(detail::archive_reader& archive, Eigen::VectorXd& into, sparse_bits entries,
                       std::vector<sparse_bits>& sparse, std::int64_t& sparse_left, std::vector<std::uint64_t>& bits) {
  int tag = 0;
  if (archive.version() >= 2)
    archive >> tag;
  if (tag == 0) {
    if (auto ok = archive.load_vector(bits, max_dimension); !ok)
      return ok;
    into.resize(static_cast<Eigen::Index>(bits.size()));
    for (std::size_t i = 0; i < bits.size(); ++i)
      into[static_cast<Eigen::Index>(i)] = from_bits(bits[i]);
    return {};
  }
  if (tag != 1)
    return fail_invalid("a vector of unknown encoding " + std::to_string(tag));
  std::int64_t size = 0;
  archive >> size;
  if (size < 0 || size > sparse_left)
    return fail_invalid("a sparse vector of size " + std::to_string(size) + ", more than the " +
                        std::to_string(sparse_left) + " entries left of what this run's sparse vectors may hold");
  sparse_left -= size;
  entries.size = size;
  if (auto ok = archive.load_vector(entries.indices, size); !ok)
    return ok;
  if (auto ok = archive.load_vector(entries.bits, size); !ok)
    return ok;
  if (auto ok = detail::check_sparse_entries(entries.indices, entries.bits, size); !ok)
    return ok;
  sparse.push_back(std::move(entries));
  return {};
}

/// "^[a-z0-9-]+$": solver names become file names.
bool plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

} // namespace

std::optional<double> solver_checkpoint::number(const std::string& name) const {
  for (const auto& [key, value] : numbers)
    if (key == name)
      return value;
  return std::nullopt;
}

const std::vector<Eigen::VectorXd>* solver_checkpoint::list(const std::string& name) const {
  for (const auto& [key, value] : vectors)
    if (key == name)
      return &value;
  return nullptr;
}

std::string solver_checkpoint_name(const std::string& solver, std::int64_t iteration) {
  return detail::checkpoint_file_name(solver + "-", iteration);
}

result<std::string> save_solver_checkpoint(const std::string& directory, const solver_checkpoint& saved, int keep) {
  if (!plain_name(saved.solver))
    return fail_invalid("a checkpoint's solver name must be lower-case letters, digits and '-', not '" +
                        saved.solver + "'");
  const auto path = (std::filesystem::path{directory} / solver_checkpoint_name(saved.solver, saved.iteration)).string();
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return fail_runtime(directory + ": cannot create the checkpoint directory: " + ec.message());
  auto written = stream_file_atomically(path, [&](std::ostream& stream) {
    boost::archive::text_oarchive archive{stream};
    archive << solver_magic << solver_format_version << static_cast<std::int64_t>(saved.settings.size());
    for (const auto& [key, value] : saved.settings)
      archive << key << value;
    archive << saved.solver << saved.iteration << static_cast<std::int64_t>(saved.numbers.size());
    for (const auto& [name, value] : saved.numbers)
      archive << name << bits_of(value);
    archive << static_cast<std::int64_t>(saved.vectors.size());
    std::vector<std::uint64_t> bits;
    std::vector<std::int64_t> indices;
    for (const auto& [name, list] : saved.vectors) {
      archive << name << static_cast<std::int64_t>(list.size());
      for (const auto& vector : list)
        save_bits(archive, vector, bits, indices);
    }
    archive << solver_end_marker;
  });
  if (!written)
    return written.error();
  detail::prune_checkpoint_files(directory, saved.solver + "-", keep, saved.iteration);
  return path;
}

result<solver_checkpoint> load_solver_checkpoint(const std::string& path, const checkpoint_limits& limits) {
  return detail::read_archive_file<solver_checkpoint>(
    path, solver_magic, solver_format_version, "solver checkpoint",
    [&](detail::archive_reader& archive) -> result<solver_checkpoint> {
      const auto corrupt = [&](const std::string& what) {
        return fail_invalid(path + ": corrupt solver checkpoint: " + what);
      };
      const auto truncated = [&](const failure& why, const std::string& where) {
        return why.with_context(path + ": truncated or corrupt solver checkpoint: " + where);
      };
      solver_checkpoint saved;
      std::int64_t count = 0;
      archive >> count;
      if (count < 0 || count > max_entries)
        return corrupt("a count of " + std::to_string(count) + " settings");
      saved.settings.resize(static_cast<std::size_t>(count));
      for (auto& [key, value] : saved.settings)
        for (auto* text : {&key, &value})
          if (auto ok = archive.load_string(*text); !ok)
            return truncated(ok.error(), "settings");
      if (auto ok = archive.load_string(saved.solver); !ok)
        return truncated(ok.error(), "the solver's name");
      if (!plain_name(saved.solver))
        return corrupt("a solver named '" + saved.solver + "'");
      archive >> saved.iteration >> count;
      if (saved.iteration < 0)
        return corrupt("iteration " + std::to_string(saved.iteration));
      if (count < 0 || count > max_entries)
        return corrupt("a count of " + std::to_string(count) + " numbers");
      saved.numbers.resize(static_cast<std::size_t>(count));
      for (auto& [name, value] : saved.numbers) {
        if (auto ok = archive.load_string(name); !ok)
          return truncated(ok.error(), "numbers");
        std::uint64_t bits = 0;
        archive >> bits;
        value = from_bits(bits);
      }
      // Another run's: its settings and numbers only, for check_same_run to name the difference.
      if (!limits.settings.empty() && !check_same_run(saved, limits.settings, path))
        return saved;
      archive >> count;
      if (count < 0 || count > max_entries)
        return corrupt("a count of " + std::to_string(count) + " lists");
      saved.vectors.resize(static_cast<std::size_t>(count));
      std::vector<std::uint64_t> bits;
      std::vector<sparse_bits> sparse;
      std::int64_t sparse_left = limits.sparse_entries;
      for (std::size_t l = 0; l < saved.vectors.size(); ++l) {
        auto& [name, list] = saved.vectors[l];
        if (auto ok = archive.load_string(name); !ok)
          return truncated(ok.error(), "lists");
        std::int64_t vectors = 0;
        archive >> vectors;
        if (vectors < 0 || vectors > max_vectors)
          return corrupt("a list of " + std::to_string(vectors) + " vectors");
        for (std::int64_t v = 0; v < vectors; ++v) {
          list.emplace_back();
          if (auto ok = load_bits(archive, list.back(), sparse_bits{l, list.size() - 1, 0, {}, {}}, sparse,
                                  sparse_left, bits);
              !ok)
            return truncated(ok.error(), "list " + name);
        }
      }
      std::string end;
      if (auto ok = archive.load_string(end); !ok || end != solver_end_marker)
        return corrupt("no end marker (truncated?)");
      for (const auto& entries : sparse) {  // the whole file read back: now their zeros
        auto& vector = saved.vectors[entries.list].second[entries.vector];
        vector = Eigen::VectorXd::Zero(entries.size);
        for (std::size_t k = 0; k < entries.indices.size(); ++k)
          vector[entries.indices[k]] = from_bits(entries.bits[k]);
      }
      return saved;
    },
    solver_oldest_version);
}

result<readable<solver_checkpoint>> newest_readable_solver_checkpoint(const std::string& directory,
                                                                      const std::string& solver,
                                                                      const checkpoint_limits& limits) {
  return detail::newest_readable<solver_checkpoint>(
    directory, solver + "-", [&limits](const std::string& path) { return load_solver_checkpoint(path, limits); });
}

result<void> check_same_run(const solver_checkpoint& saved,
                            const std::vector<std::pair<std::string, std::string>>& settings,
                            const std::string& path) {
  for (const auto& [key, value] : settings) {
    const auto recorded = std::find_if(saved.settings.begin(), saved.settings.end(),
                                       [&key = key](const auto& entry) { return entry.first == key; });
    if (recorded == saved.settings.end())
      return fail_invalid(path + ": saved by another run: it does not record " + key);
    if (recorded->second != value)
      return fail_invalid(path + ": saved by another run: " + key + " was " + recorded->second + " there, is " +
                          value + " here");
  }
  // A setting recorded only when given (--no-bias) must not be dropped on resume either.
  for (const auto& [key, value] : saved.settings) {
    const auto given = std::find_if(settings.begin(), settings.end(),
                                    [&key = key](const auto& entry) { return entry.first == key; });
    if (given == settings.end())
      return fail_invalid(path + ": saved by another run: it records " + key + " " + value + ", which this run "
                          "does not have");
  }
  return {};
}

} // namespace shardopt::io
