#include "io/readers.hpp"
#include "io/reader_support.hpp"
#include "io/binary_cache.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace shardopt::io {

namespace fs = std::filesystem;

namespace {

/// Where Debian's dataset-fashion-mnist package installs the data.
constexpr const char* fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

/// The existing one of `dir/name` and `dir/name.gz`, or an error naming both.
result<std::string> find_idx_file(const std::string& dir, const std::string& name) {
  const fs::path plain = fs::path{dir} / name;
  const fs::path packed = fs::path{dir} / (name + ".gz");
  if (path_exists(plain))
    return plain.string();
  if (path_exists(packed))
    return packed.string();
  return fail_not_found(dir + ": neither " + name + " nor " + name + ".gz found (expected the MNIST layout)");
}

/// The images and labels files of the `which` split of a directory in the MNIST layout.
result<std::pair<std::string, std::string>> mnist_dir_files(const std::string& dir, split which) {
  const std::string prefix = which == split::train ? "train" : "t10k";
  auto images = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  if (!images)
    return images.error();
  auto labels = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  if (!labels)
    return labels.error();
  return std::pair{images.value(), labels.value()};
}

/// The lower-case extension of `path`, looking through a final ".gz".
std::string extension_of(const std::string& path) {
  fs::path p{path};
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".gz")
    return extension_of(p.replace_extension().string());
  return ext;
}

} // namespace

std::optional<data_format> parse_data_format(const std::string& name) {
  if (name == "auto")
    return data_format::automatic;
  if (name == "csv")
    return data_format::csv;
  if (name == "tsv")
    return data_format::tsv;
  if (name == "libsvm" || name == "svmlight")
    return data_format::libsvm;
  if (name == "idx")
    return data_format::idx;
  if (name == "vw")
    return data_format::vw;
  return std::nullopt;
}

result<std::pair<std::string, std::string>> detail::mnist_files(const std::string& spec, split which) {
  const bool named = spec == "fashion-mnist";
  const std::string dir = named ? fashion_mnist_dir : spec;
  if (named && !is_directory(dir))
    return fail_not_found(spec + ": " + dir + " not found (install the dataset-fashion-mnist package)");
  return mnist_dir_files(dir, which);
}

result<data_format> detail::file_format(const std::string& spec, const read_options& options) {
  // A single file: CSV or LIBSVM, by the format asked for or else by extension.
  if (!path_exists(spec))
    return fail_not_found(spec + ": no such file");
  if (options.format != data_format::automatic)
    return options.format;
  const std::string ext = extension_of(spec);
  if (ext == ".csv")
    return data_format::csv;
  if (ext == ".tsv")
    return data_format::tsv;
  if (ext == ".svm" || ext == ".libsvm" || ext == ".svmlight" || ext == ".txt")
    return data_format::libsvm;
  if (ext == ".vw")
    return data_format::vw;
  return fail_invalid("cannot tell the format of " + spec + "; pass --format csv|tsv|libsvm|vw");
}

std::string raw_dataset::where(std::int64_t row) const {
  if (row >= 0 && row < static_cast<std::int64_t>(lines.size()))
    return source + ":" + std::to_string(lines[static_cast<std::size_t>(row)]);
  return source + ": record " + std::to_string(row);
}

result<raw_dataset> read_dataset(const std::string& spec, split which, const read_options& options) {
  // Named datasets and directories hold IDX files in the MNIST layout.
  if (has_builtin_test_split(spec)) {
    if (options.format != data_format::automatic && options.format != data_format::idx)
      return fail_invalid(spec + ": a dataset directory holds IDX files; its format cannot be csv, tsv, libsvm or vw");
    auto files = detail::mnist_files(spec, which);
    if (!files)
      return files.error();
    return read_idx(files->first, files->second, options);
  }

  if (is_binary_dataset(spec))
    return read_binary_dataset(spec, options);
  auto format = detail::file_format(spec, options);
  if (!format)
    return format.error();
  switch (*format) {
    case data_format::csv:
    case data_format::tsv: {
      auto csv = options;
      csv.format = *format;  // the separator, for a format told by the extension
      return read_csv(spec, csv);
    }
    case data_format::libsvm:
      if (options.hashing.enabled())
        return fail_invalid(spec + ": LIBSVM input is numbers already; hashing (--hash-bits) is for VW and CSV");
      return read_libsvm(spec, options);
    case data_format::vw:
      return read_vw(spec, options);
    default:
      return fail_invalid(spec + ": IDX data is read from a directory in the MNIST layout, not a single file");
  }
}

result<void> match_features(raw_dataset& data, std::int64_t features, const std::string& reference) {
  const std::int64_t have = data.data.cols();
  if (have == features)
    return {};
  // A LIBSVM file lacks the columns past its largest index: padding with zero columns is exact.
  if (have < features && data.data.is_sparse()) {
    data.data.widen(features);
    return {};
  }
  return fail_invalid("dimension mismatch: " + reference + " has " + std::to_string(features) +
              " features, " + data.source + " has " + std::to_string(have));
}

result<void> check_same_features(const raw_dataset& train, raw_dataset& test) {
  return match_features(test, train.data.cols(), train.source);
}

bool has_builtin_test_split(const std::string& spec) {
  return spec == "fashion-mnist" || is_directory(spec);
}

} // namespace shardopt::io
