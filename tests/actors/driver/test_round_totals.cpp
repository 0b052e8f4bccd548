// actors/driver/round_totals.hpp: a round's exact total. The first dense answer of a round becomes
// the total (its words taken, not copied), and any order of dense and sparse answers, the first
// dense or sparse, gives the same words; the last round's words go back to the kept buffers when
// the next round begins.

#include "actors/driver/round_totals.hpp"
#include "model/exact_sum.hpp"
#include "base/spare_words.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

namespace actors = shardopt::actors;
namespace model = shardopt::model;

namespace {

constexpr std::size_t entries = 20000;  // above the smallest kept buffer (8192 words)

/// Peer p's share: block p of three, 10 rows.
actors::peer_share share_of(std::int64_t p) {
  return actors::peer_share{{{p, 1}}, 10, "peer " + std::to_string(p)};
}

/// Peer p's reply: dense words, or (sparse) words for every third entry from p.
actors::block_sums reply_of(std::int64_t p, bool sparse) {
  std::mt19937_64 rng{static_cast<std::uint64_t>(p) + 5};
  actors::block_sums out;
  out.runs = {p, 1};
  out.values = {1.5 * static_cast<double>(p)};
  out.length = entries;
  out.count = 10;
  out.max_units = 1000;
  if (sparse) {
    auto list = std::make_shared<std::vector<std::int32_t>>();
    for (auto i = static_cast<std::size_t>(p); i < entries; i += 3)
      list->push_back(static_cast<std::int32_t>(i));
    out.entries = std::move(list);
  }
  out.words.resize(out.entries ? out.entries->size() : entries);
  for (auto& word : out.words)
    word = static_cast<std::int64_t>(rng() % 2001) - 1000;
  return out;
}

} // namespace

TEST_CASE("a round's first dense answer becomes its total, and every order of dense and sparse answers gives the same words") {
  const model::grid g = model::make_grid(std::vector<int>(entries, -30));
  shardopt::optimizer::vector_pool pool{2};
  actors::round_totals totals;
  totals.blocks = 3;
  // Reference: the three replies added to zero one by one.
  model::exact_sum reference(g);
  for (std::int64_t p = 0; p < 3; ++p)
    reference.merge(model::entry_sums{reply_of(p, p == 1).entries, reply_of(p, p == 1).words, 0});
  for (const auto& order : std::vector<std::vector<std::int64_t>>{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}}) {
    CAPTURE(order[0]);
    CAPTURE(order[1]);
    totals.begin(g, 1, pool);
    REQUIRE(totals.unset);
    const std::int64_t* first_dense = nullptr;
    bool sparse_first = false;
    for (const auto p : order) {
      auto reply = reply_of(p, p == 1);  // peer 1 answers sparsely
      if (p != 1 && !first_dense && !sparse_first)
        first_dense = reply.words.data();
      sparse_first = sparse_first || (p == 1 && !first_dense);
      REQUIRE(totals.take_share(share_of(p), std::move(reply), true, pool).ok());
    }
    REQUIRE(totals.covered().ok());
    totals.settle(pool);
    CHECK(totals.total.words() == reference.words());
    CHECK(totals.total.max_units() == 1000);
    CHECK(totals.value_sum() == 4.5);
    // Taken, not copied: the first answer's own buffer when it was dense.
    if (first_dense)
      CHECK(totals.total.words().data() == first_dense);
    else
      CHECK(sparse_first);
  }
  // The next round gives the last round's words back to the kept buffers (kept: a driver's run
  // earlier in this process turned keeping off as it let go).
  shardopt::keep_spare_words(true);
  shardopt::release_spare_words();
  totals.begin(g, 1, pool);
  CHECK(shardopt::kept_word_buffers() == 1);
  CHECK(totals.total.words().empty());
  // A round that no answer reached reads zeros once settled.
  totals.settle(pool);
  CHECK(std::all_of(totals.total.words().begin(), totals.total.words().end(), [](std::int64_t w) { return w == 0; }));
  shardopt::release_spare_words();
}

TEST_CASE("a node's reply gives its words back when it is dropped once sent, and other sums do not") {
  shardopt::keep_spare_words(true);
  shardopt::release_spare_words();
  const auto* memory = static_cast<const std::int64_t*>(nullptr);
  {
    auto reply = reply_of(0, false);
    memory = reply.words.data();
    reply.keep_words_when_dropped = true;  // what a node's group sets on the sums it replies with
    auto moved = std::move(reply);  // a move leaves nothing behind to give back twice
  }
  CHECK(shardopt::kept_word_buffers() == 1);
  CHECK(shardopt::spare_words(entries).data() == memory);  // the next pass's total takes them
  { auto plain = reply_of(1, false); }
  CHECK(shardopt::kept_word_buffers() == 0);
  shardopt::release_spare_words();
}
