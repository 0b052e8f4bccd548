#pragma once

// # Shard protocol
//
// A shard actor owns one block of a dataset and answers two questions about a flat parameter
// vector theta (layout: see model::model_shape):
//
//   (eval_atom, uint64 round, dense_vector theta)
//       -> (uint64 round, double loss_sum, dense_vector grad_sum, int64 count)
//   (quality_atom, uint64 round, dense_vector theta)
//       -> (uint64 round, double correct, double squared_error, int64 count)
//
// Replies carry *sums* over the shard's examples and the example count; the driver adds shards in
// shard order, divides by the total count and adds the regulariser once. `round` is echoed so the
// driver can drop a late reply to an evaluation it has already given up on. A request whose theta
// has the wrong dimension is answered with an error (errc::dimension_mismatch), never a crash.
// A shard has a single state: it serves requests until it is told to exit or its node goes away.

#include "model/linear_model.hpp"

#include <caf/all.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace shardopt::actors {

using eval_atom = caf::atom_constant<caf::atom("eval")>;
using quality_atom = caf::atom_constant<caf::atom("quality")>;

/// The project's error category for caf::error.
constexpr caf::atom_value error_category = caf::atom("shardopt");

/// Error codes of the actors layer.
enum class errc : std::uint8_t {
  dimension_mismatch = 1,  ///< theta does not fit the shard's model
  shard_failed,            ///< a shard died or answered with an error
  timeout,                 ///< a shard did not answer in time
  bad_request,             ///< a malformed or out-of-order request (parameter servers)
  training_failed,         ///< parameter-server training stopped with an error
};

/// Makes a caf::error in the project's category whose context is a human-readable message.
caf::error make_error(errc code, std::string message);

/// Renders our errors and CAF's own as one line of text.
std::string describe(const caf::error& error, const caf::actor_system& system);

/// An immutable vector of doubles. Inside a process it is shared, never copied, between sender and
/// receivers; on the wire it travels as a length and one raw block of bytes (see the `inspect`
/// overloads), not element by element.
class dense_vector {
public:
  dense_vector() = default;

  /// Copies `values` once into shared storage.
  explicit dense_vector(const Eigen::VectorXd& values)
    : data_(std::make_shared<const Eigen::VectorXd>(values)) {}

  /// Takes shared ownership of `values` without copying.
  explicit dense_vector(std::shared_ptr<const Eigen::VectorXd> values) : data_(std::move(values)) {}

  std::size_t size() const { return data_ ? static_cast<std::size_t>(data_->size()) : 0; }
  const double* data() const { return data_ ? data_->data() : nullptr; }

  /// A read-only Eigen view of the values.
  Eigen::Map<const Eigen::VectorXd> map() const {
    return {data(), static_cast<Eigen::Index>(size())};
  }

  friend bool operator==(const dense_vector& a, const dense_vector& b) {
    return a.size() == b.size() && (a.size() == 0 || a.map() == b.map());
  }

private:
  std::shared_ptr<const Eigen::VectorXd> data_;
};

/// Largest vector a peer may announce (2^28 doubles = 2 GiB): larger headers are rejected before
/// anything is allocated.
constexpr std::size_t max_wire_elements = std::size_t{1} << 28;

/// Fails when `f` knows how many bytes it has left (a binary deserializer) and that is fewer than
/// `bytes`: lets deserialisers refuse a header that promises more than arrived before allocating.
caf::error expect_bytes(caf::deserializer& f, std::uint64_t bytes, const char* what);

/// Serialises as a sequence length and one raw copy of the bytes.
caf::error inspect(caf::serializer& f, dense_vector& x);

/// Deserialises a length (checked against `max_wire_elements`) and one raw block.
caf::error inspect(caf::deserializer& f, dense_vector& x);

/// Any other inspector (e.g. to_string) sees the type name and the length.
template <class Inspector>
std::enable_if_t<!std::is_base_of_v<caf::serializer, Inspector>
                   && !std::is_base_of_v<caf::deserializer, Inspector>,
                 typename Inspector::result_type>
inspect(Inspector& f, dense_vector& x) {
  auto length = x.size();
  return f(caf::meta::type_name("dense_vector"), length);
}

/// The typed interface of a shard actor (see the protocol above).
using shard_actor = caf::typed_actor<
  caf::replies_to<eval_atom, std::uint64_t, dense_vector>::with<std::uint64_t, double, dense_vector,
                                                                std::int64_t>,
  caf::replies_to<quality_atom, std::uint64_t, dense_vector>::with<std::uint64_t, double, double,
                                                                   std::int64_t>>;

/// Announces the project's message types and error category. Call on every config before the
/// actor system is created, in drivers and nodes alike.
void add_message_types(caf::actor_system_config& config);

} // namespace shardopt::actors
