#include "apps/run/data.hpp"

#include "apps/run/dataset_cache.hpp"

#include <optional>

namespace shardopt::apps {

result<io::read_options> read_options_of(const data_options& options) {
  io::read_options read;
  auto format = io::parse_data_format(options.format);
  if (!format)
    return fail_invalid("--format: unknown format '" + options.format + "' (expected auto, csv, tsv, libsvm, idx, vw)");
  read.format = *format;
  read.label_column = options.label_column;
  if (options.header == "yes")
    read.header = true;
  else if (options.header == "no")
    read.header = false;
  else if (options.header != "auto")
    return fail_invalid("--header: expected auto, yes or no, got '" + options.header + "'");
  read.features = options.features;
  read.limit = options.limit;
  if (!(options.max_decompressed_gib >= 0))
    return fail_invalid("--max-decompressed-gib must be >= 0");
  read.max_decompressed =
    static_cast<std::uint64_t>(options.max_decompressed_gib * 1024.0 * 1024.0 * 1024.0);
  read.hashing.bits = options.hash_bits;
  read.hashing.pairs = options.pairs;
  read.hashing.categorical = options.categorical;
  read.hashing.text = options.text;
  read.hashing.word_pairs = options.word_pairs;
  const auto ends_with = [&](const char* tail) {
    const std::string t{tail};
    return options.data.size() >= t.size() && options.data.compare(options.data.size() - t.size(), t.size(), t) == 0;
  };
  const bool vw = read.format == io::data_format::vw
                  || (read.format == io::data_format::automatic && (ends_with(".vw") || ends_with(".vw.gz")));
  const bool asked = !read.hashing.pairs.empty() || !read.hashing.categorical.empty() || !read.hashing.text.empty()
                     || read.hashing.word_pairs;
  if (read.hashing.bits == 0 && (vw || asked))
    read.hashing.bits = io::default_hash_bits;
  if (auto ok = io::check_hashing(read.hashing); !ok)
    return ok.error();
  return read;
}

result<io::scale_mode> scale_mode_of(const data_options& options) {
  if (options.scale == "auto")
    return io::scale_mode::automatic;
  if (options.scale == "none")
    return io::scale_mode::none;
  return fail_invalid("--scale: expected auto or none, got '" + options.scale + "'");
}

namespace {

/// Encodes labels and applies scaling to one set, then freezes it for sharing.
result<std::shared_ptr<const model::dataset>> finish(io::raw_dataset raw,
                                                     const io::label_encoding& labels,
                                                     const io::feature_scaling& scaling) {
  if (auto ok = io::encode_labels(labels, raw); !ok)
    return ok.error();
  if (auto ok = io::apply_scaling(scaling, raw); !ok)
    return ok.error();
  return std::make_shared<const model::dataset>(std::move(raw.data));
}

/// Reads the test set named by `options` (raw), or nothing when there is none.
result<std::optional<io::raw_dataset>> read_test_set(const data_options& options,
                                                     const io::read_options& read) {
  if (options.test.empty() && !io::has_builtin_test_split(options.data))
    return std::optional<io::raw_dataset>{};
  auto test_read = read;
  test_read.limit = options.test_limit;
  test_read.features = 0;
  auto loaded = read_with_cache(options.test.empty() ? options.data : options.test, io::split::test,
                                test_read, {options.cache, options.cache_dir});
  if (!loaded)
    return loaded.error();
  return std::optional<io::raw_dataset>{std::move(*loaded)};
}

} // namespace

result<std::shared_ptr<const model::dataset>> prepare_test_data(const data_options& options,
                                                                const io::label_encoding& labels,
                                                                const io::feature_scaling& scaling,
                                                                std::int64_t features,
                                                                const std::string& train_source) {
  auto read = read_options_of(options);
  if (!read)
    return read.error();
  auto test = read_test_set(options, *read);
  if (!test)
    return test.error();
  if (!*test)
    return std::shared_ptr<const model::dataset>{};
  if (auto ok = io::match_features(**test, features, train_source); !ok)
    return ok.error();
  return finish(std::move(**test), labels, scaling);
}

namespace {

/// Fits the label encoding and the scaling on the training set, then encodes and scales both sets.
result<prepared_data> prepare(io::raw_dataset train, std::optional<io::raw_dataset> test, io::scale_mode mode,
                              bool standardize, const model::model_shape& architecture,
                              std::int64_t classes) {
  if (test)
    if (auto ok = io::check_same_features(train, *test); !ok)
      return ok.error();
  prepared_data out;
  auto labels = io::fit_labels(architecture.kind, train, classes);
  if (!labels)
    return labels.error();
  out.labels = std::move(*labels);
  auto scaling = io::fit_scaling(train, mode, standardize);
  if (!scaling)
    return scaling.error();
  out.scaling = std::move(*scaling);
  out.train_source = train.source;
  out.hashing = train.hashing;
  out.shape = model::model_shape{architecture.kind, train.data.cols(), out.labels.outputs(),
                                 architecture.hidden, architecture.act};
  auto train_data = finish(std::move(train), out.labels, out.scaling);
  if (!train_data)
    return train_data.error();
  out.train = std::move(*train_data);
  out.train_rows = out.train->rows();
  out.feature_bytes = out.train->nonzeros() * (out.train->is_sparse() ? 8 : 4);
  out.sparse = out.train->is_sparse();
  if (test) {
    out.test_source = test->source;
    auto test_data = finish(std::move(*test), out.labels, out.scaling);
    if (!test_data)
      return test_data.error();
    out.test = std::move(*test_data);
  }
  if (out.train_rows == 0)
    return fail_invalid(out.train_source + ": no training examples");
  return out;
}

} // namespace

result<prepared_data> prepare_training_data(const data_options& options,
                                            const model::model_shape& architecture,
                                            std::int64_t classes) {
  auto read = read_options_of(options);
  if (!read)
    return read.error();
  auto mode = scale_mode_of(options);
  if (!mode)
    return mode.error();
  auto train = read_with_cache(options.data, io::split::train, *read, {options.cache, options.cache_dir});
  if (!train)
    return train.error();
  // The test set is read (and its dimension checked) before any fitting, so that its errors come
  // first, as they would for a user who looks at the files in order.
  auto test = read_test_set(options, *read);
  if (!test)
    return test.error();
  return prepare(std::move(*train), std::move(*test), *mode, options.standardize, architecture, classes);
}

result<prepared_data> prepare_memory_data(memory_data data, const data_options& options,
                                          const model::model_shape& architecture, std::int64_t classes) {
  auto mode = scale_mode_of(options);
  if (!mode)
    return mode.error();
  return prepare(std::move(data.train), std::move(data.test), *mode, options.standardize, architecture,
                 classes);
}

result<io::read_options> read_options_for(const data_options& options, const io::saved_model& saved,
                                          std::string_view advice) {
  auto read = read_options_of(options);
  if (!read)
    return read.error();
  const bool given = options.hash_bits > 0 || !options.pairs.empty() || !options.categorical.empty()
                     || !options.text.empty() || options.word_pairs;
  if (given && read->hashing != saved.hashing)
    return fail_invalid("the model was trained on features hashed as " + io::summary_of(saved.hashing)
                        + "; the hashing options say " + io::summary_of(read->hashing) + " (leave them out: "
                        + std::string{advice} + ")");
  read->hashing = saved.hashing;
  return read;
}

result<std::shared_ptr<const model::dataset>> prepare_eval_data(const data_options& options,
                                                                const io::saved_model& saved) {
  auto read = read_options_for(options, saved, "eval hashes as the model says");
  if (!read)
    return read.error();
  auto raw = io::read_dataset(options.data, io::split::test, *read);
  if (!raw)
    return raw.error();
  return prepare_eval_data(std::move(*raw), saved);
}

result<std::shared_ptr<const model::dataset>> prepare_eval_data(io::raw_dataset raw,
                                                                const io::saved_model& saved) {
  if (raw.hashing != saved.hashing && raw.hashing.enabled())
    return fail_invalid(raw.source + ": its features were hashed as " + io::summary_of(raw.hashing)
                        + ", the model's as " + io::summary_of(saved.hashing));
  if (auto ok = io::match_features(raw, saved.shape.features, "the model"); !ok)
    return ok.error();
  return finish(std::move(raw), saved.labels, saved.scaling);
}

void leave_out_unused_columns(prepared_data& data) {
  data.leave_out_unused = !data.train;  // node-local: the nodes' parts (networks excepted there)
  if (!data.train || data.shape.is_network() || !data.train->is_sparse())
    return;
  auto map = io::used_columns(*data.train);
  if (!map)
    return;
  // The prepared data is this run's alone (nothing else holds it yet): renumbered in place.
  model::dataset train = data.train.use_count() == 1 ? std::move(const_cast<model::dataset&>(*data.train))
                                                     : model::dataset{*data.train};
  data.train = std::make_shared<const model::dataset>(io::compact_columns(std::move(train), *map));
  data.shape.features = static_cast<std::int64_t>(map->used.size());
  data.columns = std::move(*map);
}

Eigen::VectorXd theta_for_model(prepared_data& data, const Eigen::VectorXd& theta) {
  if (!data.columns)
    return theta;
  auto full = data.shape;
  full.features = data.columns->features;
  Eigen::VectorXd out = io::expand_theta(full, *data.columns, theta);
  data.shape = full;
  data.columns.reset();
  return out;
}

} // namespace shardopt::apps
