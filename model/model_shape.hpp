#pragma once

// The shape of a model and the layout of theta it fixes: the four losses, the hidden layers of a
// network, where each layer's weights and biases live in the flat vector, size limits, names for
// messages, and the initial theta.

#include "base/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <Eigen/Core>

namespace shardopt::model {

/// The four linear models. Each maps an example's features x to K scores z = W^T x + b and charges a
/// per-example loss on (z, label):
/// - `linear`:   least squares, K = 1, loss 0.5 (z - y)^2, y real.
/// - `logistic`: K = 1, loss log(1 + exp(-t z)), t = +1/-1 (the larger/smaller label value).
/// - `softmax`:  K classes, cross-entropy log-sum-exp(z) - z_y, y in 0..K-1.
/// - `svm`:      squared hinge max(0, 1 - t z)^2; binary (K = 1, t = +1/-1) or one-vs-rest over
///               K classes (t_k = +1 for the example's class, -1 otherwise), summed over classes.
enum class model_kind : std::uint8_t { linear, logistic, softmax, svm };

/// The lower-case name of a kind ("linear", "logistic", "softmax", "svm").
std::string_view to_string(model_kind kind);

/// Parses a kind's name; nullopt for anything else.
std::optional<model_kind> parse_model_kind(std::string_view name);

/// True for the kinds that predict a class (all but `linear`).
bool is_classifier(model_kind kind);

/// The activation of a network's hidden layers.
enum class activation : std::uint8_t { relu, tanh };

/// "relu" or "tanh".
std::string_view to_string(activation act);

/// Parses an activation's name; nullopt for anything else.
std::optional<activation> parse_activation(std::string_view name);

/// Where one dense layer lives in theta: its weight matrix (in x out, column-major) starts at
/// `weights`, its `out` biases at `biases` = weights + in*out.
struct layer_span {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t weights = 0;
  std::int64_t biases = 0;
};

/// The shape of a model, which fixes the layout of theta.
///
/// A model is a stack of dense layers: features -> hidden[0] -> ... -> hidden[L-1] -> outputs, with
/// `act` after every hidden layer and the output layer's scores z fed to the loss of `kind`. The
/// linear models have no hidden layer; a multilayer perceptron (`--model mlp`) has at least one.
///
/// theta is one flat vector of `dimension()` doubles, layer by layer, each layer's weights then its
/// biases: W1 (features x hidden[0], column-major), b1, W2, b2, ..., W_out (last width x outputs),
/// b_out. For a linear model that is W (features x outputs, column-major, so output k's weights are
/// theta[k*features, (k+1)*features)) then the `outputs` biases. Biases are not regularised.
struct model_shape {
  model_kind kind = model_kind::linear;  ///< the loss on the output layer's scores
  std::int64_t features = 0;
  std::int64_t outputs = 1;
  std::vector<std::int64_t> hidden;      ///< hidden layer widths; empty for the linear models
  activation act = activation::relu;     ///< of every hidden layer

  model_shape() = default;
  model_shape(model_kind kind_, std::int64_t features_, std::int64_t outputs_,
              std::vector<std::int64_t> hidden_ = {}, activation act_ = activation::relu)
    : kind(kind_), features(features_), outputs(outputs_), hidden(std::move(hidden_)), act(act_) {}

  bool is_network() const { return !hidden.empty(); }
  /// The layers in order, with their place in theta.
  std::vector<layer_span> layers() const;
  /// Entries of theta that are weights (regularised), over all layers.
  std::int64_t weight_count() const;
  std::int64_t dimension() const;
  friend bool operator==(const model_shape& a, const model_shape& b) {
    return a.kind == b.kind && a.features == b.features && a.outputs == b.outputs &&
           a.hidden == b.hidden && (a.hidden.empty() || a.act == b.act);
  }
  friend bool operator!=(const model_shape& a, const model_shape& b) { return !(a == b); }
};

/// The most parameters a driver or PS job accepts, and so the longest theta a model file can
/// hold (2^31: 16 GiB for theta alone).
constexpr std::int64_t max_parameters = std::int64_t{1} << 31;

/// 1 at every entry of theta that is a weight (what --lambda and --l1 penalise), 0 at the biases.
Eigen::VectorXd weight_mask(const model_shape& shape);

/// The entries of theta that are biases, in order (where weight_mask is 0).
std::vector<Eigen::Index> bias_entries(const model_shape& shape);

/// The largest network anyone may ask for, the same for the CLI, model files and nodes: a chunk of
/// 256 rows keeps each layer's activations (256 x width doubles) and two delta buffers, so the
/// hidden units bound an evaluation's working memory (65,536 units: about 400 MB).
constexpr std::size_t max_hidden_layers = 64;
constexpr std::int64_t max_hidden_units = 65536;  ///< the sum of the hidden widths

/// Checks that `shape`'s network is allowed; the failure (invalid) says why not ("65 hidden layers,
/// more than the 64 allowed", "a hidden layer of 0 units", "more than the 65536 hidden units
/// allowed").
result<void> check_architecture(const model_shape& shape);

/// A shape for messages: "softmax, 784 features x 10 outputs" or "mlp 784-100-10 (relu, softmax
/// output)".
std::string describe(const model_shape& shape);

/// The dimension of `shape` when every size is positive and the dimension is at most `limit`,
/// computed without overflow; nullopt otherwise.
std::optional<std::int64_t> checked_dimension(const model_shape& shape, std::int64_t limit);

/// A network's initial theta from `seed`, identical in every process and on every platform: each
/// weight matrix uniform in +-sqrt(6 / fan_in) for ReLU (He) or +-sqrt(6 / (fan_in + fan_out)) for
/// tanh (Glorot), biases zero. A linear model starts at zero (its objective is convex).
Eigen::VectorXd initial_theta(const model_shape& shape, std::uint64_t seed);

/// Whether a model's objective has the Hessian-vector products below (the linear models; not
/// networks).
bool has_hessian(const model_shape& shape);

} // namespace shardopt::model
