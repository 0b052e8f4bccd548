#include "io/labels.hpp"

#include "io/reader_support.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

namespace {

using model::model_kind;
using detail::format_number;

/// The most classes a multiclass model accepts; a larger label is surely not a class index.
constexpr std::int64_t max_classes = 1 << 16;

std::string kind_name(model_kind kind) { return std::string{model::to_string(kind)}; }

bool is_class_index(double value) { return value >= 0 && value == std::floor(value); }

/// Binary models: exactly two distinct label values, the smaller encoded -1, the larger +1.
result<label_encoding> fit_binary(model_kind kind, const raw_dataset& train) {
  const Eigen::VectorXd& y = train.data.y;
  double first = y(0);
  bool have_second = false;
  double second = 0;
  for (Eigen::Index i = 1; i < y.size(); ++i) {
    const double v = y(i);
    if (v == first || (have_second && v == second))
      continue;
    if (have_second)
      return fail_invalid(train.where(i) + ": label " + format_number(v) + " is a third class; a " +
                  kind_name(kind) + " model needs exactly two label values (already seen " +
                  format_number(first) + " and " + format_number(second) + ")");
    have_second = true;
    second = v;
  }
  if (!have_second)
    return fail_invalid(train.source + ": every label is " + format_number(first) + "; a " +
                kind_name(kind) + " model needs two classes");
  if (second < first)
    std::swap(first, second);
  return label_encoding{kind, {first, second}};
}

/// Multiclass models: labels are class indices 0..K-1, K = `classes` or the largest label + 1.
result<label_encoding> fit_multiclass(model_kind kind, const raw_dataset& train, std::int64_t classes) {
  const Eigen::VectorXd& y = train.data.y;
  const std::int64_t limit = classes > 0 ? classes : max_classes;
  std::vector<bool> seen;
  std::int64_t distinct = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    const double v = y(i);
    if (!is_class_index(v))
      return fail_invalid(train.where(i) + ": label " + format_number(v) + " is not a class index (" +
                  kind_name(kind) + " labels must be the integers 0, 1, 2, ...)");
    if (v >= static_cast<double>(limit))
      return fail_invalid(train.where(i) + ": label " + format_number(v) + " out of range (" +
                  (classes > 0 ? std::to_string(classes) + " classes allow 0.." +
                                     std::to_string(classes - 1)
                               : "at most " + std::to_string(max_classes) + " classes") +
                  ")");
    const auto c = static_cast<std::size_t>(v);
    if (c >= seen.size())
      seen.resize(c + 1, false);
    if (!seen[c]) {
      seen[c] = true;
      ++distinct;
    }
  }
  if (distinct < 2)
    return fail_invalid(train.source + ": every label is " + format_number(y(0)) + "; a " +
                kind_name(kind) + " model needs at least two classes");
  const std::int64_t k = classes > 0 ? classes : static_cast<std::int64_t>(seen.size());
  label_encoding encoding{kind, {}};
  for (std::int64_t c = 0; c < k; ++c)
    encoding.classes.push_back(static_cast<double>(c));
  return encoding;
}

/// True when `y` holds more than two distinct values.
bool more_than_two_values(const Eigen::VectorXd& y) {
  const double first = y(0);
  bool have_second = false;
  double second = 0;
  for (Eigen::Index i = 1; i < y.size(); ++i) {
    if (y(i) == first || (have_second && y(i) == second))
      continue;
    if (have_second)
      return true;
    have_second = true;
    second = y(i);
  }
  return false;
}

bool is_multiclass(const label_encoding& encoding) {
  return encoding.kind == model_kind::softmax ||
         (encoding.kind == model_kind::svm && encoding.classes.size() > 2);
}

} // namespace

std::int64_t label_encoding::outputs() const {
  return is_multiclass(*this) ? static_cast<std::int64_t>(classes.size()) : 1;
}

result<label_encoding> fit_labels(model_kind kind, const raw_dataset& train, std::int64_t classes) {
  if (train.data.y.size() == 0)
    return fail_invalid(train.source + ": no training examples");
  if (classes < 0 || classes == 1)
    return fail_invalid("cannot train a classifier with " + std::to_string(classes) + " classes");
  switch (kind) {
    case model_kind::linear:
      return label_encoding{kind, {}};
    case model_kind::logistic:
      if (classes > 2)
        return fail_invalid("a logistic model has two classes, not " + std::to_string(classes) +
                    " (use softmax or svm)");
      return fit_binary(kind, train);
    case model_kind::softmax:
      return fit_multiclass(kind, train, classes);
    case model_kind::svm:
      // Two label values (and no explicit class count above two) make a binary SVM.
      if (classes > 2 || (classes == 0 && more_than_two_values(train.data.y)))
        return fit_multiclass(kind, train, classes);
      return fit_binary(kind, train);
  }
  return fail_invalid("unknown model kind");
}

result<void> encode_labels(const label_encoding& encoding, raw_dataset& data) {
  const Eigen::VectorXd& y = data.data.y;
  if (encoding.kind == model_kind::linear)
    return {};
  // Encode into a copy so that a failure leaves `data` untouched.
  Eigen::VectorXd encoded(y.size());
  if (is_multiclass(encoding)) {
    const auto k = static_cast<double>(encoding.classes.size());
    const std::string known = "(the model knows 0.." + format_number(k - 1) + ")";
    for (Eigen::Index i = 0; i < y.size(); ++i) {
      if (!is_class_index(y(i)))
        return fail_invalid(data.where(i) + ": label " + format_number(y(i)) + " is not a class index " + known);
      if (y(i) >= k)
        return fail_invalid(data.where(i) + ": label " + format_number(y(i)) + " out of range " + known);
      encoded(i) = y(i);
    }
  } else {
    if (encoding.classes.size() != 2)
      return fail_invalid("a binary label encoding needs two classes, not " +
                  std::to_string(encoding.classes.size()));
    const double low = encoding.classes[0];
    const double high = encoding.classes[1];
    for (Eigen::Index i = 0; i < y.size(); ++i) {
      if (y(i) == low)
        encoded(i) = -1;
      else if (y(i) == high)
        encoded(i) = 1;
      else
        return fail_invalid(data.where(i) + ": label " + format_number(y(i)) +
                    " is not one of the two training labels (" + format_number(low) + " and " +
                    format_number(high) + ")");
    }
  }
  data.data.y = std::move(encoded);
  return {};
}

} // namespace shardopt::io
