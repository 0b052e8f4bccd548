// A pass costs its non-zeros: across twelve passes (evaluations with the Hessian's diagonal,
// Hessian-vector products and line values) of a Newton run over two local shards of sparse rows
// (that touch a few of 2^18 features, about half of 2^16, or nearly all of 2^15), nothing in the
// process allocates a buffer of the dimension's size: the shards' records, the driver's sums,
// the vectors requests carry and the words of the shards' answers are kept between passes. Counted by this executable's own
// malloc (glibc lets a program replace it; the replacement counts and hands over to glibc's):
// operator new, Eigen's aligned buffers and the large-buffer allocator all come through it. A node
// with drivers receives its thetas off the wire into kept memory as well (the last case).

#include "actors/driver/peers.hpp"
#include "model/block_bounds.hpp"
#include "model/block_evaluator.hpp"
#include "base/spare_words.hpp"

#include "support/problems.hpp"
#include "support/shard_set.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <random>
#include <utility>
#include <optional>
#include <vector>

namespace {

std::atomic<bool> counting{false};
std::atomic<std::size_t> threshold{0};
std::atomic<int> large{0};

void count(std::size_t bytes) {
  if (counting.load(std::memory_order_relaxed) && bytes >= threshold.load(std::memory_order_relaxed))
    large.fetch_add(1, std::memory_order_relaxed);
}

} // namespace

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);

void* malloc(std::size_t bytes) {
  count(bytes);
  return __libc_malloc(bytes);
}
void* calloc(std::size_t n, std::size_t size) {
  count(n * size);
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t bytes) {
  count(bytes);
  return __libc_realloc(p, bytes);
}
void* aligned_alloc(std::size_t alignment, std::size_t bytes) {
  count(bytes);
  return __libc_memalign(alignment, bytes);
}
void* memalign(std::size_t alignment, std::size_t bytes) {
  count(bytes);
  return __libc_memalign(alignment, bytes);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t bytes) {
  count(bytes);
  *out = __libc_memalign(alignment, bytes);
  return *out || bytes == 0 ? 0 : 12;  // ENOMEM
}
}

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using namespace std::chrono_literals;

namespace {

/// What three iterations of a Newton run (twelve passes) allocate, after two warm-up iterations,
/// over two local shards of `n` rows of 8 non-zeros among the first `used` of `d` features: the
/// allocations of half the dimension's doubles or more, and the word buffers kept at the end. The
/// fewest of three such windows in a row: a buffer given back late (its message dropped on a
/// worker after the next pass began, on a loaded machine) costs one allocation in one window,
/// while an allocation a pass makes shows in every window.
struct passes_made {
  int large = 0;
  std::size_t kept = 0;
};

passes_made twelve_passes(std::int64_t n, std::int64_t d, std::int64_t used) {
  const auto data = shardopt::test::sparse_rows(n, d, used);
  const model::model_shape shape{model::model_kind::logistic, d, 1};

  actors::runtime rt{actors::runtime_options::local(2)};
  const auto token = actors::access_token::random();
  auto set = shardopt::test::spawn_shards(rt, shape, data, {{0, n / 2}, {n / 2, n}}, token);
  auto objective = actors::make_sharded_objective(rt, shape, 1e-3, set.shards, set.shares, set.bounds, token, 30s);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  Eigen::VectorXd grad, diagonal, hv, hv2;
  std::vector<double> values;
  int passes = 0;
  // An iteration as Newton's method makes it: an evaluation with the diagonal, two products,
  // the trial's evaluation and a line between the two.
  const auto iteration = [&] {
    REQUIRE(objective.evaluate_diagonal(theta, grad, diagonal).ok());
    REQUIRE(objective.hessian_vector(grad, hv).ok());
    REQUIRE(objective.hessian_vector(hv, hv2).ok());
    theta -= 0.5 * grad;
    REQUIRE(objective.evaluate_diagonal(theta, grad, diagonal).ok());
    REQUIRE(objective.line_values({0.5}, values).ok());
    passes += 4;
  };
  for (int warm = 0; warm < 2; ++warm)  // buffers are made by the first passes
    iteration();
  threshold = static_cast<std::size_t>(d) * sizeof(double) / 2;
  int fewest = std::numeric_limits<int>::max();
  for (int window = 0; window < 3 && fewest > 0; ++window) {
    passes = 0;
    counting = true;
    while (passes < 12)
      iteration();
    counting = false;
    fewest = std::min(fewest, static_cast<int>(large.exchange(0)));
  }
  return {fewest, shardopt::kept_word_buffers()};
}

} // namespace

TEST_CASE("twelve passes of a Newton run over sparse shards allocate no buffer of the dimension's size anywhere in the process") {
  SUBCASE("rows that touch a few of 2^18 features: the shards' answers are small") {
    CHECK(twelve_passes(20000, std::int64_t{1} << 18, 4000).large == 0);
  }
  SUBCASE("rows that touch about half of 2^16 features: each shard numbers them, its answer holds a "
          "word per touched feature, in buffers the driver gives back once summed") {
    const std::int64_t n = 12000, d = std::int64_t{1} << 16;
    const model::block_evaluator half{{model::model_kind::logistic, d, 1}, shardopt::test::sparse_rows(n, d, d), {0, n / 2},
                                      model::block_rows_for(n)};
    REQUIRE(half.renumbered());  // more than a third untouched
    const auto made = twelve_passes(n, d, d);
    CHECK(made.large == 0);
    CHECK(made.kept >= 2);
    CHECK(shardopt::kept_word_buffers() == 0);  // released with the run's objective
  }
  SUBCASE("rows that touch nearly all of 2^15 features: each shard keeps every feature and answers "
          "densely, and the driver's total is the first answer it takes") {
    const std::int64_t n = 40000, d = std::int64_t{1} << 15;
    const model::block_evaluator half{{model::model_kind::logistic, d, 1}, shardopt::test::sparse_rows(n, d, d), {0, n / 2},
                                      model::block_rows_for(n)};
    REQUIRE_FALSE(half.renumbered());
    REQUIRE(half.touched_features() < d);  // some untouched features among the kept ones
    const auto made = twelve_passes(n, d, d);
    CHECK(made.large == 0);
    CHECK(made.kept >= 2);
  }
  // The count sees such allocations, whatever makes them: a vector and an Eigen vector of the
  // dimension are two.
  threshold = (std::size_t{1} << 18) * sizeof(double) / 2;
  counting = true;
  { std::vector<double> dimension_sized(std::size_t{1} << 18); }
  { Eigen::VectorXd dimension_sized(std::int64_t{1} << 18); }
  counting = false;
  CHECK(large.exchange(0) == 2);
}

TEST_CASE("kept word buffers full of stale words change no bit of an evaluation, its diagonal, a product or a line") {
  // Shards that renumber the features they touch (about half of 2^16) and shards that keep every
  // one (nearly all of 2^15 touched) and answer densely.
  for (const auto& [n, d] : std::vector<std::pair<std::int64_t, std::int64_t>>{
         {12000, std::int64_t{1} << 16}, {40000, std::int64_t{1} << 15}}) {
    CAPTURE(d);
    const auto data = shardopt::test::sparse_rows(n, d, d);
    const model::model_shape shape{model::model_kind::logistic, d, 1};
    const model::block_evaluator half{shape, data, {0, n / 2}, model::block_rows_for(n)};
    REQUIRE(half.renumbered() == (d == std::int64_t{1} << 16));
    struct results {
      Eigen::VectorXd grad, diagonal, hv;
      double f = 0;
      std::vector<double> line;
    };
    const auto run = [&] {
      actors::runtime rt{actors::runtime_options::local(2)};
      const auto token = actors::access_token::random();
      auto set = shardopt::test::spawn_shards(rt, shape, data, {{0, n / 2}, {n / 2, n}}, token);
      auto objective = actors::make_sharded_objective(rt, shape, 1e-3, set.shards, set.shares, set.bounds, token, 30s);
      results r;
      Eigen::VectorXd theta = Eigen::VectorXd::Constant(shape.dimension(), 0.01);
      REQUIRE(objective.evaluate_diagonal(theta, r.grad, r.diagonal).ok());
      theta -= 0.5 * r.grad;
      auto f = objective.evaluate_diagonal(theta, r.grad, r.diagonal);
      REQUIRE(f.ok());
      r.f = *f;
      REQUIRE(objective.hessian_vector(r.grad, r.hv).ok());
      REQUIRE(objective.line_values({0.25, 0.5}, r.line).ok());
      return r;
    };
    const auto clean = run();
    // Every kept buffer the answers could take, each word set to a pattern no sum holds (held
    // here: the clean run's end freed what it kept, and keeps none after; let go however the
    // case ends).
    struct held_words {
      held_words() { shardopt::hold_spare_words(); }
      ~held_words() { shardopt::let_go_spare_words(); }
    };
    std::optional<held_words> holding{std::in_place};
    for (std::size_t i = 0; i < shardopt::kept_buffers; ++i) {
      std::vector<std::int64_t> junk(static_cast<std::size_t>(2 * d + 2) + 97 * i, std::int64_t{0x5a5a5a5a5a5a5a5a});
      shardopt::give_back_words(std::move(junk));
    }
    REQUIRE(shardopt::kept_word_buffers() == shardopt::kept_buffers);
    const auto stale = run();
    holding.reset();
    CHECK(stale.f == clean.f);
    CHECK(stale.grad == clean.grad);
    CHECK(stale.diagonal == clean.diagonal);
    CHECK(stale.hv == clean.hv);
    CHECK(stale.line == clean.line);
  }
}

TEST_CASE("a node receives theta every pass into kept memory: twelve vectors of the dimension off the wire allocate none") {
  // Vectors received as a node's shards receive theta and a product's v, through the inspect
  // overload a node's connection uses, two held at a time (a request's theta and v, or the next
  // request's arriving while the last is read) and the older dropped.
  actors::runtime rt{actors::runtime_options::local(1)};
  const std::int64_t d = std::int64_t{1} << 18;
  std::vector<char> bytes;
  const auto values_of = [&](double seed) {
    Eigen::VectorXd theta(d);
    for (std::int64_t j = 0; j < d; ++j)
      theta[j] = seed + static_cast<double>(j % 977) * 0.5;
    return theta;
  };
  const auto send = [&](double seed) {
    bytes.clear();
    caf::binary_serializer sink{rt.system(), bytes};
    REQUIRE_FALSE(sink(actors::dense_vector{values_of(seed)}));
  };
  std::vector<actors::dense_vector> held;
  const auto receive = [&] {
    actors::dense_vector theta;
    caf::binary_deserializer source{rt.system(), bytes};
    REQUIRE_FALSE(source(theta));
    held.push_back(theta);
    if (held.size() > 2)
      held.erase(held.begin());
  };
  SUBCASE("a node with drivers keeps them") {
    actors::keep_received_vectors(true);
    for (int warm = 0; warm < 3; ++warm) {
      send(warm);
      receive();
    }
    const auto made = actors::spare_vectors().made;
    std::vector<std::vector<char>> sent;
    for (int pass = 0; pass < 12; ++pass) {  // serialised first: the sender's buffers are not counted
      send(100.0 * pass);
      sent.push_back(bytes);
    }
    threshold = static_cast<std::size_t>(d) * sizeof(double) / 2;
    counting = true;
    for (int pass = 0; pass < 12; ++pass) {
      bytes.swap(sent[static_cast<std::size_t>(pass)]);
      receive();
    }
    counting = false;
    CHECK(large.exchange(0) == 0);
    CHECK(actors::spare_vectors().made == made);
    // Every value of the vectors still held is the one sent, not a kept vector's old one.
    REQUIRE(held.size() == 2);
    CHECK(held[0].map() == values_of(100.0 * 10));
    CHECK(held[1].map() == values_of(100.0 * 11));
    held.clear();
    CHECK(actors::spare_vectors().kept >= 1);
    actors::keep_received_vectors(false);  // the node's last driver left
    actors::release_spare_vectors();
    CHECK(actors::spare_vectors().kept == 0);
  }
  SUBCASE("a driver (or a node without drivers) keeps none") {
    actors::keep_received_vectors(false);
    for (int pass = 0; pass < 4; ++pass) {
      send(pass);
      receive();
    }
    held.clear();
    CHECK(actors::spare_vectors().kept == 0);
  }
}

TEST_CASE("a node keeps at most four received vectors, the ones dropped last") {
  actors::runtime rt{actors::runtime_options::local(1)};
  actors::keep_received_vectors(true);
  actors::release_spare_vectors();
  // A vector of 2^17 + k entries, all `value`, sent and received.
  const auto round_trip = [&](std::int64_t k, double value) {
    std::vector<char> bytes;
    caf::binary_serializer sink{rt.system(), bytes};
    REQUIRE_FALSE(sink(actors::dense_vector{Eigen::VectorXd::Constant((std::int64_t{1} << 17) + k, value)}));
    actors::dense_vector received;
    caf::binary_deserializer source{rt.system(), bytes};
    REQUIRE_FALSE(source(received));
    return received;
  };
  std::vector<actors::dense_vector> held;
  for (std::int64_t k = 0; k < 6; ++k)
    held.push_back(round_trip(k, 1.0));
  for (auto& vector : held)  // dropped in order: the last four stay
    vector = actors::dense_vector{};
  CHECK(actors::spare_vectors().kept == 4);
  const auto made = actors::spare_vectors().made;
  for (std::int64_t k : {5, 2})  // lengths kept: no vector made
    CHECK(round_trip(k, 2.0).map() == Eigen::VectorXd::Constant((std::int64_t{1} << 17) + k, 2.0));
  CHECK(actors::spare_vectors().made == made);
  actors::keep_received_vectors(false);
  actors::release_spare_vectors();
}
