// Message types on the wire, without peers: a dense_vector travels as one raw block and refuses
// truncated or absurd input; a data block or part summary that lies about its sizes is refused
// before anything is allocated.

#include "actors/wire/node_protocol.hpp"
#include "actors/wire/runtime.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace actors = shardopt::actors;

TEST_CASE("dense_vector crosses the wire as one raw block and rejects bad input") {
  actors::runtime rt{actors::runtime_options::local(1)};
  Eigen::VectorXd values(1000);
  for (int i = 0; i < 1000; ++i)
    values[i] = std::sin(i) * 1e10;
  actors::dense_vector original{values};
  std::vector<char> buffer;
  caf::binary_serializer sink{rt.system(), buffer};
  REQUIRE_FALSE(sink(original));
  // A length prefix plus exactly the raw bytes: no per-element framing.
  CHECK(buffer.size() <= 1000 * sizeof(double) + 10);
  CHECK(buffer.size() >= 1000 * sizeof(double));

  actors::dense_vector copy;
  caf::binary_deserializer source{rt.system(), buffer};
  REQUIRE_FALSE(source(copy));
  CHECK(copy == original);
  CHECK(std::memcmp(copy.data(), values.data(), sizeof(double) * 1000) == 0);

  SUBCASE("a truncated block is an error, not a crash") {
    std::vector<char> truncated(buffer.begin(), buffer.begin() + 100);
    actors::dense_vector broken;
    caf::binary_deserializer truncated_source{rt.system(), truncated};
    CHECK(truncated_source(broken));
  }
  SUBCASE("an absurd announced length is rejected before allocating") {
    std::vector<char> rogue;
    caf::binary_serializer rogue_sink{rt.system(), rogue};
    // CAF 0.17 encodes sequence lengths as 32-bit varbytes: announce nearly 2^32 doubles.
    std::size_t huge = 0xFFFFFFF0u;
    REQUIRE_FALSE(rogue_sink.begin_sequence(huge));
    actors::dense_vector broken;
    caf::binary_deserializer rogue_source{rt.system(), rogue};
    auto err = rogue_source(broken);
    REQUIRE(err);
    CHECK(actors::describe(err, rt.system()).find("peer announced a vector") != std::string::npos);
  }
}

TEST_CASE("hostile data blocks and part summaries are refused before anything is allocated") {
  actors::runtime rt{actors::runtime_options::local(1)};
  SUBCASE("a data block announcing 2^61 rows of 0 features") {
    std::vector<char> bytes;
    caf::binary_serializer sink{rt.system(), bytes};
    std::uint8_t sparse = 0;
    std::int64_t rows = (std::int64_t{1} << 61) + 1;
    std::int64_t cols = 0;
    REQUIRE_FALSE(sink(sparse, rows, cols));
    actors::data_block block;
    caf::binary_deserializer source{rt.system(), bytes};
    auto err = source(block);
    REQUIRE(err);
    CHECK(actors::describe(err, rt.system()).find("impossible shape") != std::string::npos);
  }
  SUBCASE("a part summary whose vectors do not match its feature count") {
    actors::summary_message message;
    message.summary.rows = 3;
    message.summary.cols = 4;
    message.summary.bounds.low = Eigen::VectorXd::Zero(2);  // should be 4
    message.summary.bounds.high = message.summary.bounds.stored = Eigen::VectorXd::Zero(4);
    std::vector<char> bytes;
    caf::binary_serializer sink{rt.system(), bytes};
    REQUIRE_FALSE(sink(message));
    actors::summary_message loaded;
    caf::binary_deserializer source{rt.system(), bytes};
    auto err = source(loaded);
    REQUIRE(err);
    CHECK(actors::describe(err, rt.system()).find("inconsistent sizes") != std::string::npos);
  }
}
