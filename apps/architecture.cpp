#include "apps/architecture.hpp"

#include <charconv>

namespace shardopt::apps {

namespace {

/// Widths beyond this are typos, not networks (one such layer over 784 inputs is 13 billion weights).
constexpr std::int64_t max_width = std::int64_t{1} << 24;

result<std::vector<std::int64_t>> parse_widths(const std::string& text) {
  std::vector<std::int64_t> widths;
  const auto bad = [&] {
    return fail("--hidden: expected layer widths like 100 or 256,128, got '" + text + "'");
  };
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    std::int64_t width = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, width);
    if (ec != std::errc{} || end != text.data() + comma || comma == at)
      return bad();
    if (width < 1 || width > max_width)
      return fail("--hidden: a layer width must be in 1.." + std::to_string(max_width) + ", got " +
                  std::to_string(width));
    widths.push_back(width);
    at = comma + 1;
  }
  return widths;
}

} // namespace

result<model::model_shape> model_architecture(const train_options& o) {
  model::model_shape shape;
  if (o.model != "mlp") {
    const auto kind = model::parse_model_kind(o.model);
    if (!kind)
      return fail("--model: unknown model '" + o.model + "' (expected linear, logistic, softmax, svm or mlp)");
    if (!o.hidden.empty())
      return fail("--hidden: only --model mlp has hidden layers");
    if (o.loss != "auto")
      return fail("--loss: only --model mlp takes --loss (a linear model's loss is its name)");
    shape.kind = *kind;
    return shape;
  }
  if (o.loss == "auto" || o.loss == "cross-entropy")
    shape.kind = model::model_kind::softmax;
  else if (o.loss == "squared")
    shape.kind = model::model_kind::linear;
  else
    return fail("--loss: expected cross-entropy or squared, got '" + o.loss + "'");
  auto widths = parse_widths(o.hidden.empty() ? std::string{"100"} : o.hidden);
  if (!widths)
    return widths.error();
  shape.hidden = std::move(*widths);
  const auto act = model::parse_activation(o.activation);
  if (!act)
    return fail("--activation: expected relu or tanh, got '" + o.activation + "'");
  shape.act = *act;
  return shape;
}

} // namespace shardopt::apps
