#include "actors/wire/messages.hpp"

#include "actors/wire/node_protocol.hpp"
#include "actors/wire/ps_protocol.hpp"
#include "base/kept_store.hpp"
#include "base/spare_words.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <type_traits>

namespace shardopt::actors {

namespace {

std::atomic<std::int64_t> bytes_sent{0};
std::atomic<std::int64_t> bytes_received{0};

std::string render_error(std::uint8_t code, caf::atom_value, const caf::message& context) {
  std::string what;
  switch (static_cast<errc>(code)) {
    case errc::dimension_mismatch:
      what = "dimension mismatch";
      break;
    case errc::shard_failed:
      what = "shard failed";
      break;
    case errc::timeout:
      what = "timeout";
      break;
    case errc::bad_request:
      what = "bad request";
      break;
    case errc::training_failed:
      what = "training failed";
      break;
    case errc::refused:
      what = "refused";
      break;
  }
  if (context.match_elements<std::string>())
    what += ": " + context.get_as<std::string>(0);
  return what;
}

} // namespace

caf::error refused(std::string why) {
  return make_error(errc::refused, std::move(why));
}

refusal_reason reason_of(const caf::error& error) {
  if (!error || error.category() != error_category)
    return refusal_reason::failed;
  switch (static_cast<errc>(error.code())) {
    case errc::refused:
      return refusal_reason::refused;
    case errc::dimension_mismatch:
      return refusal_reason::invalid_data;
    case errc::bad_request:
      return refusal_reason::bad_request;
    default:
      return refusal_reason::failed;
  }
}

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<std::uint8_t>(code), error_category,
                    caf::make_message(std::move(message))};
}

std::string describe(const caf::error& error, const caf::actor_system& system) {
  if (!error)
    return "normal exit";  // CAF 0.17's category() must not be called on an empty error
  if (error.category() == error_category) {
    if (error.context().match_elements<std::string>())
      return error.context().get_as<std::string>(0);
    return render_error(error.code(), error.category(), error.context());
  }
  return system.render(error);
}

caf::error expect_bytes(caf::deserializer& f, std::uint64_t bytes, const char* what) {
  if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&f))
    if (binary->remaining() < bytes)
      return make_error(errc::dimension_mismatch,
                        "peer announced " + std::to_string(bytes) + " bytes of " + what + ", only "
                          + std::to_string(binary->remaining()) + " arrived");
  return {};
}

caf::error apply_raw_block(caf::serializer& f, const void* data, std::size_t bytes) {
  if (bytes == 0)
    return {};
  auto err = f.apply_raw(bytes, const_cast<void*>(data));
  if (!err && dynamic_cast<caf::binary_serializer*>(&f))
    bytes_sent.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  return err;
}

caf::error apply_raw_block(caf::deserializer& f, void* data, std::size_t bytes) {
  if (bytes == 0)
    return {};
  auto err = f.apply_raw(bytes, data);
  if (!err && dynamic_cast<caf::binary_deserializer*>(&f))
    bytes_received.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  return err;
}

wire_traffic wire_bytes() {
  return {bytes_sent.load(std::memory_order_relaxed), bytes_received.load(std::memory_order_relaxed)};
}

caf::error inspect(caf::serializer& f, dense_vector& x) {
  auto length = x.size();
  return caf::error::eval([&] { return f.begin_sequence(length); },
                          [&] { return apply_raw_block(f, x.data(), length * sizeof(double)); },
                          [&] { return f.end_sequence(); });
}

namespace {

/// Vectors kept between passes: a node receives theta (and a product's v) every pass, and a
/// vector of the dimension made fresh each time comes mapped, faulted in and zeroed by the kernel
/// (134 MB at 2^24). While keeping is on (a node with drivers: keep_received_vectors), a received
/// vector's memory comes back here when its last reader drops it, and the next vector of the same
/// length takes it. Process-wide and thread-safe; a few buffers, kept until release_spare_vectors.
struct vector_store : kept_store<std::unique_ptr<Eigen::VectorXd>> {
  using kept_store::kept_store;
  std::int64_t made = 0;  // vectors made to receive into (for the tests)
};

constexpr std::size_t kept_vectors = 4;
// Above a tree slice (tree_slice_entries, 2^16): a tree node receives hundreds of slices a pass,
// which would push its joined theta and v out of four places.
constexpr std::size_t smallest_kept_vector = std::size_t{1} << 17;
constexpr std::size_t largest_kept_vector = std::size_t{1} << 27;  // doubles: 1 GiB, kept in all

/// Never destroyed: a vector dropped by a thread still running at exit finds it whole.
vector_store& the_vector_store() {
  static auto& s = *new vector_store{kept_vectors + 1, false};
  return s;
}

void give_back_vector(Eigen::VectorXd* values) noexcept {
  std::unique_ptr<Eigen::VectorXd> freed{values};  // dropped outside the lock unless kept
  const auto length = static_cast<std::size_t>(freed->size());
  if (length < smallest_kept_vector || length > largest_kept_vector)
    return;
  std::array<std::unique_ptr<Eigen::VectorXd>, kept_vectors> dropped;  // freed outside the lock too
  auto& s = the_vector_store();
  const std::lock_guard<std::mutex> lock{s.mutex};
  if (!s.keeping)
    return;
  // Beyond the count or the bytes, the ones kept longest go (a finished job's, maybe, or what a
  // peer that is no driver sent): at most 4 vectors and 1 GiB are kept, whoever sent them.
  std::size_t doubles = length;
  for (const auto& kept : s.kept)
    doubles += static_cast<std::size_t>(kept->size());
  for (std::size_t k = 0; !s.kept.empty() && (s.kept.size() + 1 > kept_vectors || doubles > largest_kept_vector);
       ++k) {
    doubles -= static_cast<std::size_t>(s.kept.front()->size());
    dropped[k] = std::move(s.kept.front());
    s.kept.erase(s.kept.begin());
  }
  s.kept.push_back(std::move(freed));  // within the capacity reserved: no allocation, no throw
}

} // namespace

/// A vector of `length` doubles for a reader that overwrites every one: a kept one of that
/// length, holding old values, or a new one. Its memory goes back to the store when its last
/// owner drops it.
std::shared_ptr<Eigen::VectorXd> kept_vector(std::size_t length) {
  std::unique_ptr<Eigen::VectorXd> taken;
  if (length >= smallest_kept_vector) {
    auto& s = the_vector_store();
    const std::lock_guard<std::mutex> lock{s.mutex};
    const auto same = std::find_if(s.kept.rbegin(), s.kept.rend(), [&](const auto& kept) {
      return static_cast<std::size_t>(kept->size()) == length;
    });
    if (same != s.kept.rend()) {
      taken = std::move(*same);
      s.kept.erase(std::next(same).base());
    } else {
      ++s.made;
    }
  }
  if (!taken)
    taken = std::make_unique<Eigen::VectorXd>(static_cast<Eigen::Index>(length));
  return {taken.release(), &give_back_vector};
}

void release_spare_vectors() {
  the_vector_store().release();
}

void keep_received_vectors(bool on) {
  the_vector_store().keep(on);
}

void hold_received_vectors() {
  the_vector_store().hold();
}

void let_go_received_vectors() {
  the_vector_store().let_go();
}

spare_vector_counts spare_vectors() {
  auto& s = the_vector_store();
  const std::lock_guard<std::mutex> lock{s.mutex};
  return {s.kept.size(), s.made};
}

caf::error inspect(caf::deserializer& f, dense_vector& x) {
  std::size_t length = 0;
  if (auto err = f.begin_sequence(length))
    return err;
  if (length > max_wire_elements)
    return make_error(errc::dimension_mismatch,
                      "peer announced a vector of " + std::to_string(length) + " doubles, more than "
                        + std::to_string(max_wire_elements));
  if (auto err = expect_bytes(f, length * sizeof(double), "vector data"))
    return err;
  auto values = kept_vector(length);  // every value is read below
  if (auto err = apply_raw_block(f, values->data(), length * sizeof(double)))
    return err;
  if (auto err = f.end_sequence())
    return err;
  x = dense_vector{std::shared_ptr<const Eigen::VectorXd>{std::move(values)}};
  return {};
}

namespace {

template <class T>
caf::error save_raw(caf::serializer& f, std::vector<T>& values) {
  auto length = values.size();
  return caf::error::eval([&] { return f.begin_sequence(length); },
                          [&] { return apply_raw_block(f, values.data(), length * sizeof(T)); },
                          [&] { return f.end_sequence(); });
}

template <class T>
caf::error load_raw(caf::deserializer& f, std::vector<T>& values, const char* what) {
  std::size_t length = 0;
  if (auto err = f.begin_sequence(length))
    return err;
  if (length > max_wire_elements)
    return make_error(errc::dimension_mismatch, std::string{"peer announced "} + what + " of "
                                                  + std::to_string(length) + " entries, more than "
                                                  + std::to_string(max_wire_elements));
  if (auto err = expect_bytes(f, length * sizeof(T), what))
    return err;
  if constexpr (std::is_same_v<T, std::int64_t>)
    values = shardopt::spare_words(length);  // every word is read below
  else
    values.resize(length);
  if (auto err = apply_raw_block(f, values.data(), length * sizeof(T)))
    return err;
  return f.end_sequence();
}

} // namespace

void put_sums(block_sums& out, model::entry_sums sums, std::uint64_t length) {
  out.words = std::move(sums.words);
  out.entries = std::move(sums.entries);
  out.length = length;
  out.max_units = sums.max_units;
}

bool sums_fit(const block_sums& sums) {
  if (sums.length > 2 * max_wire_elements)
    return false;
  if (!sums.entries)
    return sums.words.size() == sums.length;
  const auto& entries = *sums.entries;
  if (entries.size() != sums.words.size())
    return false;
  for (std::size_t k = 0; k < entries.size(); ++k)
    if (entries[k] < 0 || static_cast<std::uint64_t>(entries[k]) >= sums.length
        || (k > 0 && entries[k] <= entries[k - 1]))
      return false;
  return true;
}

block_sums::~block_sums() {
  if (keep_words_when_dropped)
    shardopt::give_back_words(std::move(words));
}

namespace {

/// a + b for two's-complement words, wrapping (exact while the true total fits its grid).
std::int64_t add_word(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

/// `sums` as dense words of its length.
void densify(block_sums& sums) {
  if (!sums.entries)
    return;
  auto dense = shardopt::spare_zeros(static_cast<std::size_t>(sums.length));
  const auto& entries = *sums.entries;
  for (std::size_t k = 0; k < entries.size(); ++k)
    dense[static_cast<std::size_t>(entries[k])] = sums.words[k];
  shardopt::give_back_words(std::move(sums.words));
  sums.words = std::move(dense);
  sums.entries.reset();
}

} // namespace

result<void> merge(block_sums& total, block_sums&& part) {
  if (total.length != part.length)
    return fail_invalid("sums of " + std::to_string(part.length)
                + " entries cannot be added to sums of " + std::to_string(total.length));
  if (!sums_fit(part))
    return fail_invalid("malformed sums: their entries do not fit a vector of "
                        + std::to_string(part.length));
  total.runs.insert(total.runs.end(), part.runs.begin(), part.runs.end());
  total.values.insert(total.values.end(), part.values.begin(), part.values.end());
  if (part.entries && total.entries) {
    // Both sparse: the union of their entries, dense once it is more than half of the vector.
    const auto& a = *total.entries;
    const auto& b = *part.entries;
    std::size_t both = 0;
    for (std::size_t i = 0, j = 0; i < a.size() || j < b.size(); ++both) {
      if (j == b.size() || (i < a.size() && a[i] < b[j]))
        ++i;
      else if (i == a.size() || b[j] < a[i])
        ++j;
      else
        ++i, ++j;
    }
    if (2 * both > total.length) {
      densify(total);
    } else if (both == a.size()) {  // part's entries are among total's
      for (std::size_t i = 0, j = 0; j < b.size(); ++i)
        if (a[i] == b[j])
          total.words[i] = add_word(total.words[i], part.words[j++]);
    } else {
      auto entries = std::make_shared<std::vector<std::int32_t>>();
      std::vector<std::int64_t> words;
      entries->reserve(both);
      words.reserve(both);
      for (std::size_t i = 0, j = 0; i < a.size() || j < b.size();) {
        if (j == b.size() || (i < a.size() && a[i] < b[j])) {
          entries->push_back(a[i]);
          words.push_back(total.words[i++]);
        } else if (i == a.size() || b[j] < a[i]) {
          entries->push_back(b[j]);
          words.push_back(part.words[j++]);
        } else {
          entries->push_back(a[i]);
          words.push_back(add_word(total.words[i++], part.words[j++]));
        }
      }
      total.entries = std::move(entries);
      total.words = std::move(words);
    }
  } else if (total.entries) {  // a dense part: the total becomes dense too
    densify(total);
  }
  if (!total.entries) {
    if (part.entries) {
      const auto& entries = *part.entries;
      for (std::size_t k = 0; k < entries.size(); ++k) {
        auto& word = total.words[static_cast<std::size_t>(entries[k])];
        word = add_word(word, part.words[k]);
      }
    } else {
      model::add_words(total.words.data(), part.words.data(), total.words.size());
    }
  }
  if (std::isnan(part.max_units) || part.max_units > total.max_units)
    total.max_units = part.max_units;
  total.correct += part.correct;
  total.count += part.count;
  shardopt::give_back_words(std::move(part.words));  // summed: the next pass's answers take them
  return {};
}

caf::error inspect(caf::serializer& f, block_sums& x) {
  std::uint8_t sparse = x.entries ? 1 : 0;
  static const std::vector<std::int32_t> none;
  auto& entries = x.entries ? const_cast<std::vector<std::int32_t>&>(*x.entries) : const_cast<std::vector<std::int32_t>&>(none);
  return caf::error::eval([&] { return save_raw(f, x.runs); },
                          [&] { return save_raw(f, x.values); },
                          [&] { return save_raw(f, x.words); },
                          [&] { return f(sparse); },
                          [&] { return save_raw(f, entries); },
                          [&] { return f(x.length, x.max_units, x.correct, x.count); });
}

caf::error inspect(caf::deserializer& f, block_sums& x) {
  std::uint8_t sparse = 0;
  std::vector<std::int32_t> entries;
  auto err = caf::error::eval([&] { return load_raw(f, x.runs, "block runs"); },
                              [&] { return load_raw(f, x.values, "block values"); },
                              [&] { return load_raw(f, x.words, "exact sums"); },
                              [&] { return f(sparse); },
                              [&] { return load_raw(f, entries, "the sums' entries"); },
                              [&] { return f(x.length, x.max_units, x.correct, x.count); });
  if (err)
    return err;
  if (sparse > 1 || (sparse == 0 && !entries.empty()))
    return make_error(errc::dimension_mismatch, "malformed sums: a dense answer with entries");
  x.entries = sparse ? std::make_shared<const std::vector<std::int32_t>>(std::move(entries)) : nullptr;
  return {};
}

std::pair<std::uint64_t, std::uint64_t> slice_bounds(std::uint64_t size, std::uint32_t index,
                                                     std::uint32_t count) {
  // size <= max_wire_elements (2^28) and index < count <= max_tree_slices (2^12): no overflow.
  return {size * index / count, size * (index + std::uint64_t{1}) / count};
}

exact_grid encode_grid(const std::vector<int>& exponents) {
  return exact_grid::of(model::make_grid(exponents));
}

result<void> check_grid(const exact_grid& grid) {
  if (grid.base < model::lowest_grid || grid.base > model::highest_grid)
    return fail_invalid("no grid 2^" + std::to_string(grid.base));
  if (grid.entries > 0 && (!grid.table || grid.table->size() < grid.entries))
    return fail_invalid("a grid of " + std::to_string(grid.entries) + " entries without its table");
  return {};
}

caf::error inspect(caf::serializer& f, exact_grid& x) {
  auto length = static_cast<std::size_t>(x.entries);
  return caf::error::eval([&] { return f(x.base); }, [&] { return f.begin_sequence(length); },
                          [&] { return apply_raw_block(f, x.below(), length); },
                          [&] { return f.end_sequence(); });
}

caf::error inspect(caf::deserializer& f, exact_grid& x) {
  std::vector<std::uint8_t> below;
  if (auto err = caf::error::eval([&] { return f(x.base); }, [&] { return load_raw(f, below, "grid"); }))
    return err;
  x.entries = below.size();
  x.table = std::make_shared<const std::vector<std::uint8_t>>(std::move(below));
  return {};
}

void add_message_types(caf::actor_system_config& config) {
  config.add_message_type<dense_vector>("shardopt::dense_vector");
  config.add_message_type<block_sums>("shardopt::block_sums");
  config.add_message_type<exact_grid>("shardopt::exact_grid");
  config.add_message_type<tree_slice>("shardopt::tree_slice");
  config.add_message_type<std::vector<shard_actor>>("shardopt::shard_actors");
  config.add_message_type<data_block>("shardopt::data_block");
  config.add_message_type<shard_spec>("shardopt::shard_spec");
  config.add_message_type<node_info>("shardopt::node_info");
  config.add_message_type<node_status>("shardopt::node_status");
  config.add_message_type<shard_actor>("shardopt::shard_actor");
  config.add_message_type<node_actor>("shardopt::node_actor");
  config.add_message_type<part_message>("shardopt::part_message");
  config.add_message_type<summary_message>("shardopt::summary_message");
  config.add_message_type<part_shard_spec>("shardopt::part_shard_spec");
  config.add_message_type<shard_restriction>("shardopt::shard_restriction");
  config.add_message_type<moments_request>("shardopt::moments_request");
  config.add_message_type<moments_message>("shardopt::moments_message");
  config.add_message_type<ps_config>("shardopt::ps_config");
  config.add_message_type<ps_snapshot>("shardopt::ps_snapshot");
  config.add_message_type<ps_view>("shardopt::ps_view");
  config.add_message_type<ps_stats>("shardopt::ps_stats");
  config.add_message_type<ps_actor>("shardopt::ps_actor");
  config.add_message_type<access_token>("shardopt::access_token");
  config.add_message_type<ps_hello>("shardopt::ps_hello");
  config.add_error_category(error_category, render_error);
}


namespace {

constexpr double probe_double = -0x1.23456789abcdfp-7;
constexpr float probe_float = 0x1.abcdep+3f;

} // namespace

access_token access_token::random() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    std::random_device device;  // OpenSSL seeds itself from the kernel; this is a second source
    for (auto& byte : bytes)
      byte = static_cast<unsigned char>(device());
  }
  access_token token;
  std::memcpy(&token.high, bytes, 8);
  std::memcpy(&token.low, bytes + 8, 8);
  return token;
}

access_token access_token::from_text(const std::string& text) {
  const std::string keyed = "shardopt job token:" + text;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(keyed.data(), keyed.size(), digest, &length, EVP_sha256(), nullptr);
  access_token token;
  std::memcpy(&token.high, digest, 8);
  std::memcpy(&token.low, digest + 8, 8);
  return token;
}

std::vector<char> wire_probe() {
  std::vector<char> bytes(sizeof(double) + sizeof(float));
  std::memcpy(bytes.data(), &probe_double, sizeof(double));
  std::memcpy(bytes.data() + sizeof(double), &probe_float, sizeof(float));
  return bytes;
}

result<void> check_hello(std::uint32_t version, const std::vector<char>& probe,
                         const std::string& peer) {
  if (version != protocol_version)
    return fail_invalid(peer + " speaks shardopt protocol version " + std::to_string(version)
                + ", this process speaks version " + std::to_string(protocol_version)
                + " (run the same shardopt release everywhere)");
  if (probe != wire_probe())
    return fail_invalid(peer + "'s floating-point format differs from this process's (IEEE 754 "
                       "little-endian double and float expected)");
  return {};
}

} // namespace shardopt::actors
