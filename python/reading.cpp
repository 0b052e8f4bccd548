#include "python/reading.hpp"

#include "apps/run/data.hpp"
#include "io/hashing.hpp"
#include "io/labels.hpp"
#include "io/readers.hpp"
#include "python/errors.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

namespace shardopt::python {

py::tuple hash_text(const std::vector<std::string>& texts, const std::string& column, int bits, bool word_pairs) {
  io::hashing_options h;
  h.bits = bits;
  h.text = {column};
  h.word_pairs = word_pairs;
  if (auto ok = io::check_hashing(h); !ok)
    raise(ok.error());
  const auto seed = io::namespace_seed(column);
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int32_t> indices;
  std::vector<double> values;
  io::hashed_row row;
  for (const auto& text : texts) {
    row.clear();
    io::add_words(text, seed, word_pairs, row);
    row.finish(bits);
    for (const auto& [c, v] : row.items()) {
      indices.push_back(static_cast<std::int32_t>(c));
      values.push_back(v);
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  return py::make_tuple(py::array_t<std::int64_t>(static_cast<py::ssize_t>(indptr.size()), indptr.data()),
                        py::array_t<std::int32_t>(static_cast<py::ssize_t>(indices.size()), indices.data()),
                        py::array_t<double>(static_cast<py::ssize_t>(values.size()), values.data()));
}

py::tuple read_data(const std::string& path, const std::string& format, int label_column, const std::string& header,
                    std::int64_t limit, int hash_bits, const std::vector<std::string>& pairs,
                    const std::vector<std::string>& categorical, const std::vector<std::string>& text,
                    bool word_pairs, const std::shared_ptr<io::saved_model>& model) {
  apps::data_options o;
  o.data = path;
  o.format = format;
  o.label_column = label_column;
  o.header = header;
  o.limit = limit;
  o.hash_bits = hash_bits;
  o.pairs = pairs;
  o.categorical = categorical;
  o.text = text;
  o.word_pairs = word_pairs;
  // With a model, as eval: the model's hashing (its CSV column names too), and no other.
  auto read = value_or_raise(model ? apps::read_options_for(o, *model, "with model=, rows are hashed as the model says")
                                   : apps::read_options_of(o));
  auto raw = value_or_raise(io::read_dataset(path, io::split::train, read));
  if (model) {
    if (auto ok = io::match_features(raw, model->shape.features, "the model"); !ok)
      raise(ok.error());
    // The labels must be ones the model knows: a label column other than training's shows here.
    io::raw_dataset labels;
    labels.source = raw.source;
    labels.lines = raw.lines;
    labels.data.x = model::dense_features(raw.data.y.size(), 0);
    labels.data.y = raw.data.y;
    if (auto ok = io::encode_labels(model->labels, labels); !ok)
      raise(fail_invalid(ok.error().message() + " (with model=, label_column and header are the training's)"));
  }
  const auto& y = raw.data.y;
  py::array_t<double> labels(y.size(), y.data());
  if (raw.data.is_sparse()) {
    const auto x = raw.data.sparse();
    const auto rows = static_cast<py::ssize_t>(x.rows());
    const auto nnz = static_cast<py::ssize_t>(x.nonZeros());
    return py::make_tuple("csr", py::array_t<float>(nnz, x.valuePtr()), py::array_t<std::int32_t>(nnz, x.innerIndexPtr()),
                          py::array_t<std::int32_t>(rows + 1, x.outerIndexPtr()),
                          py::make_tuple(x.rows(), x.cols()), labels);
  }
  const auto x = raw.data.dense();
  py::array_t<float> features({static_cast<py::ssize_t>(x.rows()), static_cast<py::ssize_t>(x.cols())});
  std::copy(x.data(), x.data() + x.size(), features.mutable_data());
  return py::make_tuple("dense", features, labels);
}

} // namespace shardopt::python
