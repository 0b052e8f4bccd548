#include "apps/commands/train/architecture.hpp"

#include <charconv>

namespace shardopt::apps {

namespace {

result<std::vector<std::int64_t>> parse_widths(const std::string& text) {
  std::vector<std::int64_t> widths;
  const auto bad = [&] {
    return fail_invalid("--hidden: expected layer widths like 100 or 256,128, got '" + text + "'");
  };
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    std::int64_t width = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, width);
    if (ec != std::errc{} || end != text.data() + comma || comma == at)
      return bad();
    if (width < 1 || width > model::max_hidden_units)
      return fail_invalid("--hidden: a layer width must be in 1.." + std::to_string(model::max_hidden_units) +
                  ", got " + std::to_string(width));
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
      return fail_invalid("--model: unknown model '" + o.model + "' (expected linear, logistic, softmax, svm or mlp)");
    if (!o.hidden.empty())
      return fail_invalid("--hidden: only --model mlp has hidden layers");
    if (o.loss != "auto")
      return fail_invalid("--loss: only --model mlp takes --loss (a linear model's loss is its name)");
    if (o.activation != "relu")
      return fail_invalid("--activation: only --model mlp has hidden layers to activate");
    shape.kind = *kind;
    return shape;
  }
  if (o.loss == "auto" || o.loss == "cross-entropy")
    shape.kind = model::model_kind::softmax;
  else if (o.loss == "squared")
    shape.kind = model::model_kind::linear;
  else
    return fail_invalid("--loss: expected cross-entropy or squared, got '" + o.loss + "'");
  auto widths = parse_widths(o.hidden.empty() ? std::string{"100"} : o.hidden);
  if (!widths)
    return widths.error();
  shape.hidden = std::move(*widths);
  const auto act = model::parse_activation(o.activation);
  if (!act)
    return fail_invalid("--activation: expected relu or tanh, got '" + o.activation + "'");
  shape.act = *act;
  if (auto ok = model::check_architecture(shape); !ok)
    return ok.error().with_context("--hidden");
  return shape;
}

result<void> check_model_size(const model::model_shape& shape) {
  if (!model::checked_dimension(shape, max_parameters))
    return fail_invalid("the model (" + model::describe(shape) + ") has more than " + std::to_string(max_parameters) +
                " parameters" + (shape.is_network() ? "; use fewer or narrower --hidden layers" : ""));
  return {};
}

} // namespace shardopt::apps
