#pragma once

// Equality of what the model-file and checkpoint loaders return, for the round trips the fuzz
// targets check (load, save, load again: the same values).

#include "io/ps_checkpoint.hpp"
#include "io/solver_checkpoint.hpp"
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

template <class T>
bool same(const std::pair<std::string, T>& a, const std::pair<std::string, T>& b);

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

inline bool same(const io::ps_checkpoint& a, const io::ps_checkpoint& b) {
  return a.step == b.step && a.rule == b.rule && same(a.slots, b.slots) && a.updates == b.updates &&
         same(a.model, b.model);
}

/// The same name and the same value or values, by `same` above.
template <class T>
bool same(const std::pair<std::string, T>& a, const std::pair<std::string, T>& b) {
  return a.first == b.first && same(a.second, b.second);
}

inline bool same(const io::solver_checkpoint& a, const io::solver_checkpoint& b) {
  return same(a.settings, b.settings) && a.solver == b.solver && a.iteration == b.iteration &&
         same(a.numbers, b.numbers) && same(a.vectors, b.vectors);
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
