#pragma once

#include "io/column_map.hpp"
#include "io/labels.hpp"
#include "io/model_file.hpp"
#include "io/readers.hpp"
#include "io/scaling.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardopt::apps {

/// Where the data comes from and how to read and scale it (options shared by train and eval).
struct data_options {
  std::string data = "fashion-mnist";
  std::string test;
  std::string format = "auto";
  int label_column = 0;
  std::string header = "auto";
  std::int64_t features = 0;
  std::int64_t limit = 0;
  std::int64_t test_limit = 0;
  std::string scale = "auto";
  bool standardize = false;
  double max_decompressed_gib = 4;  ///< gzip input: the most it may decompress to (0: no limit)
  int hash_bits = 0;                       ///< feature hashing: 2^bits columns (0: VW's 18 when hashing)
  std::vector<std::string> pairs;          ///< VW: namespace pairs crossed (VW's -q)
  std::vector<std::string> categorical;    ///< CSV: columns hashed as categories
  std::vector<std::string> text;           ///< CSV: columns of free text, words hashed
  bool word_pairs = false;                 ///< CSV text: adjacent word pairs too
  bool cache = false;               ///< read text files through binary caches (dataset_cache.hpp)
  std::string cache_dir;            ///< where caches go (empty: next to each source)
};

/// Training (and optional test) data, read, label-encoded and scaled with training statistics.
/// With node-local training data `train` is empty: the nodes hold it, and the encoding, scaling,
/// shape and row count come from their summaries.
struct prepared_data {
  std::shared_ptr<const model::dataset> train;
  std::int64_t train_rows = 0;
  std::int64_t feature_bytes = 0;  ///< what the training features take in memory (wherever they are)
  bool sparse = false;             ///< the training features are CSR rows
  std::shared_ptr<const model::dataset> test;  ///< null when there is no test set
  std::string train_source;
  std::string test_source;
  io::label_encoding labels;
  io::feature_scaling scaling;
  io::hashing_options hashing;  ///< how the training features were hashed from raw input (none: numbers)
  model::model_shape shape;
  /// Set while `train` and `shape` cover only the used columns (see `leave_out_unused_columns`).
  std::optional<io::column_map> columns;
  /// Node-local data: the nodes leave out the columns no part stores (set by
  /// `leave_out_unused_columns`, done by cluster::read_on_nodes).
  bool leave_out_unused = false;
};

/// For a full-batch solve of a linear model over sparse training data in memory: leaves out the
/// columns no training row has (io/column_map.hpp), when they are at least a quarter, and narrows
/// `shape` to the rest; `theta_for_model` puts a solution back into the full columns. Data on the
/// nodes (node-local) is marked for the nodes to do the same; dense data is left as it is.
void leave_out_unused_columns(prepared_data& data);

/// A theta of the model `data` was prepared for (all its columns) from one of the model it trains
/// now; restores `data.shape` to all the columns. Without left-out columns, theta itself.
Eigen::VectorXd theta_for_model(prepared_data& data, const Eigen::VectorXd& theta);

/// Training (and optional test) data already in memory, as read: raw labels (not yet encoded) and
/// raw features (not yet scaled). The Python module's arrays arrive this way.
struct memory_data {
  io::raw_dataset train;
  std::optional<io::raw_dataset> test;
};

/// Reads, encodes and scales the training data and its test set (`--test`, or the dataset's own
/// test split) for a model of `architecture` (its loss, hidden layers and activation; features and
/// outputs come from the data). `classes` > 0 fixes the class count.
result<prepared_data> prepare_training_data(const data_options& options,
                                            const model::model_shape& architecture, std::int64_t classes);

/// Encodes and scales data already in memory exactly as `prepare_training_data` does data it read;
/// of `options` only the scaling (--scale, --standardize) applies.
result<prepared_data> prepare_memory_data(memory_data data, const data_options& options,
                                          const model::model_shape& architecture, std::int64_t classes);

/// How `options` asks for files to be read, and for features to be scaled. Errors name the option.
/// Hashing is on for VW input (`--format vw` or a .vw file) and for CSV with --categorical or
/// --text or --hash-bits; its bits default to 18 (VW's).
result<io::read_options> read_options_of(const data_options& options);
result<io::scale_mode> scale_mode_of(const data_options& options);

/// `read_options_of`, hashing as `saved`'s training rows were: hashing options given that differ
/// contradict the model and are refused ("the model was trained on features hashed as ...; the
/// hashing options say ... (leave them out: <advice>)"); defaults (18 bits for a .vw file) give way.
result<io::read_options> read_options_for(const data_options& options, const io::saved_model& saved,
                                          std::string_view advice);

/// Reads the test set (`--test`, or the dataset's own test split; null when there is none) and
/// prepares it with a training fit made elsewhere; `train_source` names the training data in
/// dimension errors.
result<std::shared_ptr<const model::dataset>> prepare_test_data(const data_options& options,
                                                                const io::label_encoding& labels,
                                                                const io::feature_scaling& scaling,
                                                                std::int64_t features,
                                                                const std::string& train_source);

/// Reads a dataset (`options.data`) and prepares it exactly as the saved model's training data was.
result<std::shared_ptr<const model::dataset>> prepare_eval_data(const data_options& options,
                                                                const io::saved_model& saved);

/// Prepares a dataset already in memory exactly as the saved model's training data was.
result<std::shared_ptr<const model::dataset>> prepare_eval_data(io::raw_dataset raw,
                                                                const io::saved_model& saved);

} // namespace shardopt::apps
