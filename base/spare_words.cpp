#include "base/spare_words.hpp"

#include "base/kept_store.hpp"

#include <algorithm>
#include <mutex>

namespace shardopt {

namespace {

using store = kept_store<std::vector<std::int64_t>>;

/// Never destroyed: a buffer given back by a thread still running at exit finds it whole.
store& the_store() {
  static auto& s = *new store{kept_buffers + 1, true};
  return s;
}

/// A kept buffer for `size` words, resized to `size` (its old words kept), or an empty vector.
std::vector<std::int64_t> take_kept(std::size_t size) {
  if (size >= smallest_kept_words) {
    auto& s = the_store();
    std::vector<std::int64_t> taken;
    {
      const std::lock_guard<std::mutex> lock{s.mutex};
      // The smallest buffer that holds `size` words, unless it is over four times too large: a
      // small request must not take a large buffer a later answer needs. (A product's answer is
      // half an evaluation's with the Hessian's diagonal, so the two share buffers.)
      auto best = s.kept.end();
      for (auto it = s.kept.begin(); it != s.kept.end(); ++it)
        if (it->capacity() >= size && it->capacity() / 4 <= size
            && (best == s.kept.end() || it->capacity() < best->capacity()))
          best = it;
      if (best != s.kept.end()) {
        taken = std::move(*best);
        s.kept.erase(best);
      }
    }
    if (taken.capacity() > 0) {
      taken.resize(size);  // zeroes only words beyond its old size, in memory already mapped
      return taken;
    }
  }
  return {};
}

} // namespace

std::vector<std::int64_t> spare_words(std::size_t size) {
  auto taken = take_kept(size);
  if (taken.capacity() > 0)
    return taken;
  return std::vector<std::int64_t>(size);
}

std::vector<std::int64_t> spare_zeros(std::size_t size) {
  auto taken = take_kept(size);
  if (taken.capacity() > 0) {
    std::fill(taken.begin(), taken.end(), 0);
    return taken;
  }
  return std::vector<std::int64_t>(size);  // zeroed once, as it is made
}

void give_back_words(std::vector<std::int64_t>&& words) noexcept {
  std::vector<std::int64_t> freed = std::move(words);  // dropped outside the lock unless kept
  if (freed.capacity() < smallest_kept_words)
    return;
  auto& s = the_store();
  const std::lock_guard<std::mutex> lock{s.mutex};
  if (!s.keeping)
    return;
  s.kept.push_back(std::move(freed));  // within the capacity reserved: no allocation, no throw
  if (s.kept.size() > kept_buffers) {
    freed = std::move(s.kept.front());  // the one kept longest: a finished job's, maybe
    s.kept.erase(s.kept.begin());
  }
}

void release_spare_words() {
  the_store().release();
}

void keep_spare_words(bool on) {
  the_store().keep(on);
}

void hold_spare_words() {
  the_store().hold();
}

void let_go_spare_words() {
  the_store().let_go();
}

std::size_t kept_word_buffers() {
  return the_store().size();
}

} // namespace shardopt
