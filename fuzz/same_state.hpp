#pragma once

// Equality of what the model-file and checkpoint loaders return, for the round trips the fuzz
// targets check (load, save, load again: the same values).

#include "io/checkpoint.hpp"
#include "io/lbfgs_checkpoint.hpp"
#include "io/model_file.hpp"

#include <Eigen/Core>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::fuzz {

/// Same size and the same bits in every entry.
inline bool same(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0);
}

/// The same bits.
inline bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// The same texts.
inline bool same(const std::pair<std::string, std::string>& a, const std::pair<std::string, std::string>& b) {
  return a == b;
}

/// Every element the same, by `same` above.
template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i]))
      return false;
  return true;
}

inline bool same(const io::saved_model& a, const io::saved_model& b) {
  return a.shape == b.shape && a.shape.act == b.shape.act && same(a.theta, b.theta) && a.labels.kind == b.labels.kind &&
         same(a.labels.classes, b.labels.classes) && same(a.scaling.factor, b.scaling.factor) &&
         same(a.scaling.mean, b.scaling.mean) && same(a.scaling.inv_std, b.scaling.inv_std) &&
         same(a.lambda, b.lambda);
}

inline bool same(const io::checkpoint& a, const io::checkpoint& b) {
  return a.step == b.step && a.rule == b.rule && same(a.slots, b.slots) && a.updates == b.updates &&
         same(a.model, b.model);
}

inline bool same(const io::lbfgs_checkpoint& a, const io::lbfgs_checkpoint& b) {
  const auto& s = a.state;
  const auto& t = b.state;
  return same(a.settings, b.settings) && s.iterations == t.iterations && s.evaluations == t.evaluations &&
         same(s.seconds, t.seconds) && same(s.f, t.f) && same(s.theta, t.theta) && same(s.grad, t.grad) &&
         same(s.s, t.s) && same(s.y, t.y) && same(s.f_history, t.f_history);
}

/// Aborts with `what` and the failure's message unless `reloaded` holds a value equal to `loaded`:
/// what a loader accepts must save and load back unchanged.
template <class T>
void require_round_trip(const T& loaded, const result<void>& saved, const result<T>& reloaded, const char* what) {
  const char* problem = !saved               ? saved.error().message().c_str()
                        : !reloaded          ? reloaded.error().message().c_str()
                        : !same(loaded, *reloaded) ? "the values differ"
                                             : nullptr;
  if (problem == nullptr)
    return;
  std::fprintf(stderr, "fuzz: a %s that loads does not round-trip: %s\n", what, problem);
  std::abort();
}

} // namespace shardopt::fuzz
