// The node protocol's message types on the wire: field by field, vectors and data as raw blocks,
// every size checked against the bytes that actually arrived before anything is allocated.

#include "actors/wire/node_protocol.hpp"

#include <caf/binary_deserializer.hpp>

#include <limits>

namespace shardopt::actors {

namespace {

template <class T>
caf::error save_raw(caf::serializer& f, const T* data, std::int64_t count) {
  return apply_raw_block(f, data, static_cast<std::size_t>(count) * sizeof(T));
}

template <class T>
caf::error load_raw(caf::deserializer& f, T* data, std::int64_t count, const char* what) {
  if (count == 0)
    return {};
  const auto bytes = static_cast<std::uint64_t>(count) * sizeof(T);
  if (auto err = expect_bytes(f, bytes, what))
    return err;
  return apply_raw_block(f, data, static_cast<std::size_t>(bytes));
}

caf::error apply_vector(caf::serializer& f, Eigen::VectorXd& v) {
  dense_vector wire{v};
  return inspect(f, wire);
}

caf::error apply_vector(caf::deserializer& f, Eigen::VectorXd& v) {
  dense_vector wire;
  if (auto err = inspect(f, wire))
    return err;
  v = wire.map();
  return {};
}

caf::error apply_header(caf::serializer& f, std::optional<bool>& header) {
  std::int8_t code = header ? (*header ? 1 : 0) : -1;
  return f(code);
}

caf::error apply_header(caf::deserializer& f, std::optional<bool>& header) {
  std::int8_t code = 0;
  if (auto err = f(code))
    return err;
  header = code < 0 ? std::nullopt : std::optional<bool>{code == 1};
  return {};
}

/// The hashing travels as its description (io::describe); a node parses and checks it.
caf::error apply_hashing(caf::serializer& f, io::hashing_options& hashing) {
  auto text = io::describe(hashing);
  return f(text);
}

caf::error apply_hashing(caf::deserializer& f, io::hashing_options& hashing) {
  std::string text;
  if (auto err = f(text))
    return err;
  auto parsed = io::parse_hashing(text);
  if (!parsed)
    return caf::make_error(caf::sec::invalid_argument, parsed.error().message());
  hashing = std::move(*parsed);
  return {};
}

template <class Processor>
caf::error apply_request(Processor& f, io::part_request& r) {
  return caf::error::eval(
    [&] {
      return f(r.spec, r.options.format, r.options.label_column, r.options.features,
               r.options.limit, r.part, r.parts, r.skip, r.extra);
    },
    [&] { return apply_header(f, r.options.header); },
    [&] { return apply_hashing(f, r.options.hashing); });
}

template <class Processor>
caf::error apply_summary(Processor& f, io::part_summary& x) {
  return caf::error::eval([&] { return f(x.rows, x.cols, x.bounds.sparse, x.pixels, x.labels); },
                          [&] { return apply_hashing(f, x.hashing); },
                          [&] { return apply_vector(f, x.bounds.low); },
                          [&] { return apply_vector(f, x.bounds.high); },
                          [&] { return apply_vector(f, x.bounds.stored); });
}

/// A vector of plain values as its size and its raw bytes.
template <class T>
caf::error apply_values(caf::serializer& f, std::vector<T>& v) {
  auto size = static_cast<std::int64_t>(v.size());
  if (auto err = f(size))
    return err;
  return save_raw(f, v.data(), size);
}

template <class T>
caf::error apply_values(caf::deserializer& f, std::vector<T>& v) {
  std::int64_t size = 0;
  if (auto err = f(size))
    return err;
  if (size < 0 || size > (std::int64_t{1} << 31))
    return make_error(errc::dimension_mismatch, "a vector with an impossible size");
  if (auto err = expect_bytes(f, static_cast<std::uint64_t>(size) * sizeof(T), "vector"))
    return err;
  v.resize(static_cast<std::size_t>(size));
  return load_raw(f, v.data(), size, "vector");
}

template <class Processor>
caf::error apply_part_spec(Processor& f, part_shard_spec& x) {
  return caf::error::eval(
    [&] { return apply_request(f, x.request); },
    [&] { return f(x.shape.kind, x.shape.features, x.shape.outputs, x.shape.hidden, x.shape.act); },
    [&] { return f(x.labels.kind, x.labels.classes); },
    [&] { return f(x.scaling.factor); },
    [&] { return apply_vector(f, x.scaling.mean); },
    [&] { return apply_vector(f, x.scaling.inv_std); },
    [&] { return f(x.layout.first_block, x.layout.block_rows, x.full_features); },
    [&] { return apply_values(f, x.used); });
}

} // namespace

caf::error inspect(caf::serializer& f, part_message& x) {
  return apply_request(f, x.request);
}

caf::error inspect(caf::deserializer& f, part_message& x) {
  return apply_request(f, x.request);
}

caf::error inspect(caf::serializer& f, moments_request& x) {
  return caf::error::eval([&] { return apply_request(f, x.request); }, [&] { return f(x.grid.factor); },
                          [&] { return apply_values(f, x.grid.shift); });
}

caf::error inspect(caf::deserializer& f, moments_request& x) {
  return caf::error::eval([&] { return apply_request(f, x.request); }, [&] { return f(x.grid.factor); },
                          [&] { return apply_values(f, x.grid.shift); });
}

caf::error inspect(caf::serializer& f, moments_message& x) {
  return caf::error::eval([&] { return apply_values(f, x.moments.sum); },
                          [&] { return apply_values(f, x.moments.squares); });
}

caf::error inspect(caf::deserializer& f, moments_message& x) {
  return caf::error::eval([&] { return apply_values(f, x.moments.sum); },
                          [&] { return apply_values(f, x.moments.squares); });
}

caf::error inspect(caf::serializer& f, summary_message& x) {
  return apply_summary(f, x.summary);
}

caf::error inspect(caf::deserializer& f, summary_message& x) {
  if (auto err = apply_summary(f, x.summary))
    return err;
  // A summary sizes the driver's statistics: every vector must have one entry per feature.
  auto& s = x.summary;
  const auto d = s.cols;
  if (s.rows < 0 || d < 0 || d > (std::int64_t{1} << 31) || s.bounds.low.size() != d
      || s.bounds.high.size() != d || s.bounds.stored.size() != d)
    return make_error(errc::dimension_mismatch, "part summary with inconsistent sizes");
  s.bounds.rows = s.rows;
  return {};
}

caf::error inspect(caf::serializer& f, part_shard_spec& x) {
  return apply_part_spec(f, x);
}

caf::error inspect(caf::deserializer& f, part_shard_spec& x) {
  return apply_part_spec(f, x);
}

caf::error inspect(caf::serializer& f, data_block& x) {
  const auto& d = *x.data;
  std::uint8_t sparse = d.is_sparse() ? 1 : 0;
  std::int64_t rows = x.rows.size();
  std::int64_t cols = d.cols();
  if (auto err = f(sparse, rows, cols))
    return err;
  if (auto err = save_raw(f, d.y.data() + x.rows.begin, rows))
    return err;
  if (!sparse)
    return save_raw(f, d.dense().data() + x.rows.begin * cols, rows * cols);
  const auto& m = d.sparse();
  const auto* outer = m.outerIndexPtr() + x.rows.begin;
  const std::int64_t first = outer[0];
  std::int64_t nnz = outer[rows] - first;
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(rows) + 1);
  for (std::int64_t i = 0; i <= rows; ++i)
    offsets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(outer[i] - first);
  return caf::error::eval([&] { return f(nnz); },
                          [&] { return save_raw(f, offsets.data(), rows + 1); },
                          [&] { return save_raw(f, m.innerIndexPtr() + first, nnz); },
                          [&] { return save_raw(f, m.valuePtr() + first, nnz); });
}

caf::error inspect(caf::deserializer& f, data_block& x) {
  std::uint8_t sparse = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  if (auto err = f(sparse, rows, cols))
    return err;
  // Bounded one by one, so that no byte count below can overflow.
  constexpr std::int64_t limit = std::int64_t{1} << 40;
  if (rows < 0 || cols < 0 || sparse > 1 || rows > limit || cols > limit
      || (cols > 0 && rows > limit / cols))
    return make_error(errc::dimension_mismatch, "data block with an impossible shape");
  auto d = std::make_shared<model::dataset>();
  if (auto err = expect_bytes(f, static_cast<std::uint64_t>(rows) * sizeof(double), "labels"))
    return err;
  d->y.resize(rows);
  if (auto err = load_raw(f, d->y.data(), rows, "labels"))
    return err;
  if (!sparse) {
    if (auto err = expect_bytes(f, static_cast<std::uint64_t>(rows * cols) * sizeof(float), "features"))
      return err;
    model::dense_features features(rows, cols);
    if (auto err = load_raw(f, features.data(), rows * cols, "features"))
      return err;
    d->x = std::move(features);
  } else {
    std::int64_t nnz = 0;
    if (auto err = f(nnz))
      return err;
    if (nnz < 0 || nnz > std::numeric_limits<std::int32_t>::max())
      return make_error(errc::dimension_mismatch, "data block with an impossible non-zero count");
    const auto bytes = static_cast<std::uint64_t>(rows + 1) * 4 + static_cast<std::uint64_t>(nnz) * 8;
    if (auto err = expect_bytes(f, bytes, "sparse features"))
      return err;
    model::sparse_features m(rows, cols);
    m.resizeNonZeros(nnz);
    if (auto err = caf::error::eval(
          [&] { return load_raw(f, m.outerIndexPtr(), rows + 1, "row offsets"); },
          [&] { return load_raw(f, m.innerIndexPtr(), nnz, "column indices"); },
          [&] { return load_raw(f, m.valuePtr(), nnz, "values"); }))
      return err;
    // Refuse offsets or indices that would read outside the arrays.
    const auto* outer = m.outerIndexPtr();
    if (outer[0] != 0 || outer[rows] != nnz)
      return make_error(errc::dimension_mismatch, "data block with inconsistent row offsets");
    for (std::int64_t i = 0; i < rows; ++i)
      if (outer[i] > outer[i + 1])
        return make_error(errc::dimension_mismatch, "data block with decreasing row offsets");
    const auto* inner = m.innerIndexPtr();
    for (std::int64_t k = 0; k < nnz; ++k)
      if (inner[k] < 0 || inner[k] >= cols)
        return make_error(errc::dimension_mismatch, "data block with a column index out of range");
    d->x = std::move(m);
  }
  x.rows = model::row_range{0, rows};
  x.data = std::move(d);
  return {};
}

} // namespace shardopt::actors
