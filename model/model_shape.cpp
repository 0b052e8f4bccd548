#include "model/model_shape.hpp"
#include "model/restriction.hpp"

#include <cmath>
#include <random>

namespace shardopt::model {

std::string_view to_string(model_kind kind) {
  switch (kind) {
    case model_kind::linear:
      return "linear";
    case model_kind::logistic:
      return "logistic";
    case model_kind::softmax:
      return "softmax";
    case model_kind::svm:
      return "svm";
  }
  return "unknown";
}

std::optional<model_kind> parse_model_kind(std::string_view name) {
  for (auto kind : {model_kind::linear, model_kind::logistic, model_kind::softmax, model_kind::svm})
    if (to_string(kind) == name)
      return kind;
  return std::nullopt;
}

bool is_classifier(model_kind kind) {
  return kind != model_kind::linear;
}

std::string_view to_string(activation act) {
  return act == activation::relu ? "relu" : "tanh";
}

std::optional<activation> parse_activation(std::string_view name) {
  for (auto act : {activation::relu, activation::tanh})
    if (to_string(act) == name)
      return act;
  return std::nullopt;
}

std::vector<layer_span> model_shape::layers() const {
  std::vector<layer_span> out;
  std::int64_t in = features;
  std::int64_t at = 0;
  for (std::size_t l = 0; l <= hidden.size(); ++l) {
    const std::int64_t width = l < hidden.size() ? hidden[l] : outputs;
    out.push_back({in, width, at, at + in * width});
    at += in * width + width;
    in = width;
  }
  return out;
}

std::int64_t model_shape::weight_count() const {
  std::int64_t count = 0;
  for (const auto& layer : layers())
    count += layer.in * layer.out;
  return count;
}

Eigen::VectorXd weight_mask(const model_shape& shape) {
  Eigen::VectorXd mask = Eigen::VectorXd::Zero(shape.dimension());
  for (const auto& layer : shape.layers())
    mask.segment(layer.weights, layer.in * layer.out).setOnes();
  return mask;
}

std::vector<std::int64_t> features_of_entries(const model_shape& shape, const std::vector<Eigen::Index>& wanted) {
  std::vector<char> weighed(static_cast<std::size_t>(shape.features), 0);
  const auto weights = shape.features * shape.outputs;
  for (const auto i : wanted)
    if (i < weights)
      weighed[static_cast<std::size_t>(i % shape.features)] = 1;
  std::vector<std::int64_t> out;
  for (std::int64_t j = 0; j < shape.features; ++j)
    if (weighed[static_cast<std::size_t>(j)])
      out.push_back(j);
  return out;
}

std::vector<Eigen::Index> entries_of_features(const model_shape& shape, const std::vector<std::int64_t>& features) {
  std::vector<Eigen::Index> out;
  out.reserve(features.size() * static_cast<std::size_t>(shape.outputs) + static_cast<std::size_t>(shape.outputs));
  for (std::int64_t k = 0; k < shape.outputs; ++k)
    for (const auto j : features)
      out.push_back(k * shape.features + j);
  for (std::int64_t k = 0; k < shape.outputs; ++k)
    out.push_back(shape.outputs * shape.features + k);
  return out;
}

std::vector<Eigen::Index> bias_entries(const model_shape& shape) {
  std::vector<Eigen::Index> entries;
  for (const auto& layer : shape.layers())
    for (std::int64_t k = 0; k < layer.out; ++k)
      entries.push_back(static_cast<Eigen::Index>(layer.biases + k));
  return entries;
}

std::int64_t model_shape::dimension() const {
  const auto all = layers();
  return all.back().biases + all.back().out;
}

std::string describe(const model_shape& shape) {
  if (!shape.is_network())
    return std::string{to_string(shape.kind)} + ", " + std::to_string(shape.features) + " features x " +
           std::to_string(shape.outputs) + " outputs";
  std::string widths = std::to_string(shape.features);
  for (const auto width : shape.hidden)
    widths += "-" + std::to_string(width);
  widths += "-" + std::to_string(shape.outputs);
  return "mlp " + widths + " (" + std::string{to_string(shape.act)} + ", " +
         std::string{to_string(shape.kind)} + " output)";
}

result<void> check_architecture(const model_shape& shape) {
  if (shape.hidden.size() > max_hidden_layers)
    return fail_invalid(std::to_string(shape.hidden.size()) + " hidden layers, more than the " +
                        std::to_string(max_hidden_layers) + " allowed");
  std::int64_t units = 0;
  for (const auto width : shape.hidden) {
    if (width < 1)
      return fail_invalid("a hidden layer of " + std::to_string(width) + " units");
    if (width > max_hidden_units || (units += width) > max_hidden_units)
      return fail_invalid("more than the " + std::to_string(max_hidden_units) + " hidden units allowed");
  }
  if (static_cast<std::uint8_t>(shape.act) > static_cast<std::uint8_t>(activation::tanh))
    return fail_invalid("an unknown activation");
  return {};
}

std::optional<std::int64_t> checked_dimension(const model_shape& shape, std::int64_t limit) {
  if (shape.features <= 0 || shape.outputs <= 0 || limit <= 0)
    return std::nullopt;
  std::int64_t total = 0;
  std::int64_t in = shape.features;
  for (std::size_t l = 0; l <= shape.hidden.size(); ++l) {
    const std::int64_t width = l < shape.hidden.size() ? shape.hidden[l] : shape.outputs;
    // in * width + width <= limit - total, without overflow.
    if (width <= 0 || in > limit || width > limit || in + 1 > (limit - total) / width)
      return std::nullopt;
    total += (in + 1) * width;
    in = width;
  }
  return total;
}

Eigen::VectorXd initial_theta(const model_shape& shape, std::uint64_t seed) {
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  if (!shape.is_network())
    return theta;
  // mt19937_64's output is fixed by the standard; 53 of its bits make a uniform double exactly,
  // without the library's distributions (whose algorithms vary between implementations).
  std::mt19937_64 bits{seed};
  for (const auto& layer : shape.layers()) {
    const double fan = shape.act == activation::relu ? static_cast<double>(layer.in)
                                                      : static_cast<double>(layer.in + layer.out);
    const double bound = std::sqrt(6.0 / fan);
    for (std::int64_t i = 0; i < layer.in * layer.out; ++i) {
      const double u = static_cast<double>(bits() >> 11) * 0x1.0p-53;  // [0, 1)
      theta[layer.weights + i] = (2 * u - 1) * bound;
    }
  }
  return theta;
}

bool has_hessian(const model_shape& shape) {
  return !shape.is_network();
}

} // namespace shardopt::model
