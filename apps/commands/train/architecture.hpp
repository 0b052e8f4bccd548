#pragma once

#include "apps/commands/train/train.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

namespace shardopt::apps {

/// The model `--model`, `--hidden`, `--activation` and `--loss` ask for, as a shape whose features and
/// outputs are still unknown (the data fixes them): the loss on the output layer's scores, the hidden
/// layer widths and their activation. `--model mlp` is a network with a softmax output
/// (`--loss cross-entropy`, the default) or one linear output with squared error (`--loss squared`),
/// hidden layers `--hidden` (default 100). Errors name the option and what it accepts.
result<model::model_shape> model_architecture(const train_options& options);

/// The most parameters a driver or PS job accepts (model::max_parameters).
using model::max_parameters;

/// Checks that a model sized by its data fits in `max_parameters`; the error names the shape.
result<void> check_model_size(const model::model_shape& shape);

} // namespace shardopt::apps
