// Writes the seed corpus of every fuzz target: a few small valid files and edge cases per target,
// in the input layout each target documents at its top (most start with an options byte). The
// model files and checkpoints come from the io save functions, so they are what the program writes.
// (The corpus also keeps files this program does not write: model files and checkpoints of format
// version 1, written before networks, named v1_*, which the loaders still read.)
//
// Usage: fuzz_make_corpus DIR   (writes DIR/<target>/<name>; the repository keeps fuzz/corpus)

#include "io/binary_cache.hpp"
#include "io/ps_checkpoint.hpp"
#include "io/readers.hpp"
#include "io/solver_checkpoint.hpp"
#include "io/model_file.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

using namespace shardopt;
namespace fs = std::filesystem;

namespace {

fs::path root;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream out{root / target / name, std::ios::binary};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + (root / target / name).string());
}

/// The options byte of a target: the choices in the order its chooser takes them, each with the
/// number of values it has (the inverse of fuzz::chooser).
std::string options(std::initializer_list<std::pair<unsigned, unsigned>> choices) {
  unsigned value = 0;
  unsigned scale = 1;
  for (const auto& [picked, count] : choices) {
    value += picked * scale;
    scale *= count;
  }
  return std::string(1, static_cast<char>(value));
}

/// `bytes` as one gzip member (zlib's deflate with a gzip wrapper).
std::string gzip(const std::string& bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END)
    throw std::runtime_error("deflate failed");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// An IDX file: big-endian magic and sizes, then the payload.
std::string idx(std::uint32_t magic, std::initializer_list<std::uint32_t> sizes, const std::string& payload) {
  std::string bytes;
  const auto word = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  word(magic);
  for (const auto size : sizes)
    word(size);
  return bytes + payload;
}

/// A fuzz_idx input: options byte, the images file's length in two bytes, images, labels.
std::string idx_input(const std::string& choice, const std::string& images, const std::string& labels) {
  const auto n = images.size();
  return choice + std::string{static_cast<char>(n >> 8), static_cast<char>(n & 0xff)} + images + labels;
}

void csv_seeds() {
  // The chooser of fuzz_csv: header (3), label column (4), features (2), limit (2), parts (4).
  const auto csv = [](unsigned header, unsigned label, unsigned features, unsigned limit, unsigned parts) {
    return options({{header, 3}, {label, 4}, {features, 2}, {limit, 2}, {parts - 1, 4}});
  };
  put("fuzz_csv", "plain", csv(0, 0, 0, 0, 1) + "1,2.5,3\n0,-1,4e2\n");
  put("fuzz_csv", "header_parts", csv(0, 0, 0, 0, 3) + "y,a,b\n1,2,3\n0,4,5\n1,6,7\n0,8,9\n");
  put("fuzz_csv", "label_last_crlf", csv(2, 1, 0, 0, 2) + "0.5,+1,\"2\",3\r\n\r\n -1e-3 ,0,1,2\r\n");
  put("fuzz_csv", "three_features_limit", csv(2, 2, 1, 1, 1) + "1,2,3,4\n5,6,7,8\n9,10,11,12\n");
  put("fuzz_csv", "no_final_newline", csv(1, 3, 0, 0, 4) + "h1,h2,h3,h4,h5,h6,h7,h8\n1,2,3,4,5,6,7,8");
  put("fuzz_csv", "ragged", csv(0, 0, 0, 0, 2) + "1,2,3\n4,5\n");
  put("fuzz_csv", "not_a_number", csv(2, 0, 0, 0, 1) + "1,2,x\n");
  put("fuzz_csv", "blank_lines", csv(0, 0, 0, 0, 4) + "\n\n \t\n1,2\n\n3,4\n\n");
  put("fuzz_csv", "empty", csv(0, 0, 0, 0, 1));
}

void libsvm_seeds() {
  // The chooser of fuzz_libsvm: features (3: 0, 4, 100000), limit (2), parts (4).
  const auto svm = [](unsigned features, unsigned limit, unsigned parts) {
    return options({{features, 3}, {limit, 2}, {parts - 1, 4}});
  };
  put("fuzz_libsvm", "plain", svm(0, 0, 1) + "+1 1:0.5 3:2\n-1 2:1e-3\n");
  put("fuzz_libsvm", "qid_comments_parts", svm(0, 0, 3) +
      "# ranking data\n3 qid:1 1:1 2:0.5 # first\n2 qid:1 2:1\n\n1 qid:2 1:-2 4:8\n0 qid:2\n");
  put("fuzz_libsvm", "four_features", svm(1, 0, 2) + "1 1:1\t4:4\r\n0 2:2\r\n");
  put("fuzz_libsvm", "wide_limit", svm(2, 1, 1) + "1 99999:1\n0 100000:2\n1 1:3\n");
  put("fuzz_libsvm", "index_zero", svm(0, 0, 1) + "1 0:1\n");
  put("fuzz_libsvm", "out_of_order", svm(0, 0, 2) + "1 3:1 2:1\n");
  put("fuzz_libsvm", "huge_index", svm(0, 0, 1) + "1 2147483648:1\n");
  put("fuzz_libsvm", "malformed_pair", svm(1, 0, 4) + "1 1:1\n0 2-1\n1 x:2\n");
}

void idx_seeds() {
  // The chooser of fuzz_idx: limit (2), parts (3).
  const auto choice = [](unsigned limit, unsigned parts) { return options({{limit, 2}, {parts - 1, 3}}); };
  const std::string pixels{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, static_cast<char>(255)};
  const auto images = idx(0x803, {3, 2, 2}, pixels);
  const auto labels = idx(0x801, {3}, std::string{7, 0, 9});
  put("fuzz_idx", "three_images", idx_input(choice(0, 1), images, labels));
  put("fuzz_idx", "three_images_parts", idx_input(choice(0, 3), images, labels));
  put("fuzz_idx", "limit", idx_input(choice(1, 2), images, labels));
  put("fuzz_idx", "count_mismatch", idx_input(choice(0, 1), images, idx(0x801, {2}, std::string{7, 0})));
  put("fuzz_idx", "truncated_images", idx_input(choice(0, 2), images.substr(0, 20), labels));
  put("fuzz_idx", "huge_count", idx_input(choice(0, 1), idx(0x803, {0xffffffff, 28, 28}, pixels),
                                          idx(0x801, {0xffffffff}, std::string{1, 2})));
  put("fuzz_idx", "bad_magic", idx_input(choice(0, 1), idx(0x802, {3, 2, 2}, pixels), labels));
  put("fuzz_idx", "empty_images", idx_input(choice(0, 1), idx(0x803, {3, 0, 2}, ""), labels));
}

void gzip_seeds() {
  // The chooser of fuzz_gzip: compress in the harness (2: yes, no), reader (3: csv, libsvm, idx),
  // max_decompressed (3: 1 MiB, 4 KiB, 100 bytes), parts (3).
  const auto choice = [](bool compress, unsigned reader, unsigned limit, unsigned parts) {
    return options({{compress ? 0 : 1, 2}, {reader, 3}, {limit, 3}, {parts - 1, 3}});
  };
  const std::string csv = "1,2.5,3\n0,-1,4e2\n1,0,0\n";
  const std::string svm = "+1 1:0.5 3:2\n-1 2:1e-3\n";
  const std::string pixels{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, static_cast<char>(255)};
  const auto images = idx(0x803, {3, 2, 2}, pixels);
  put("fuzz_gzip", "csv_compressed", choice(true, 0, 0, 1) + csv);
  put("fuzz_gzip", "libsvm_compressed_parts", choice(true, 1, 0, 2) + svm);
  put("fuzz_gzip", "idx_compressed", choice(true, 2, 0, 1) + images);
  put("fuzz_gzip", "idx_compressed_parts", choice(true, 2, 1, 3) + images);
  put("fuzz_gzip", "csv_gzip_bytes", choice(false, 0, 0, 3) + gzip(csv));
  put("fuzz_gzip", "libsvm_gzip_bytes", choice(false, 1, 1, 1) + gzip(svm));
  put("fuzz_gzip", "idx_gzip_bytes", choice(false, 2, 0, 2) + gzip(images));
  put("fuzz_gzip", "two_members", choice(false, 0, 0, 2) + gzip("1,2\n3,4\n") + gzip("5,6\n"));
  put("fuzz_gzip", "truncated", choice(false, 0, 0, 1) + gzip(csv).substr(0, 20));
  put("fuzz_gzip", "trailing_garbage", choice(false, 1, 0, 1) + gzip(svm) + "garbage");
  put("fuzz_gzip", "plain_passthrough", choice(false, 0, 0, 1) + csv);
  std::string zeros;
  for (int i = 0; i < 20000; ++i)
    zeros += "0,0\n";
  put("fuzz_gzip", "bomb_over_limit", choice(false, 0, 1, 1) + gzip(zeros));
  put("fuzz_gzip", "idx_bomb", choice(false, 2, 2, 1) + gzip(idx(0x803, {1000, 28, 28}, std::string(784000, '\0'))));
}

io::saved_model tiny_model(model::model_kind kind, std::int64_t features, std::vector<double> classes,
                           std::vector<std::int64_t> hidden = {}) {
  io::saved_model m;
  m.labels.kind = kind;
  m.labels.classes = std::move(classes);
  m.shape = {kind, features, m.labels.outputs(), std::move(hidden), model::activation::tanh};
  m.theta = Eigen::VectorXd::LinSpaced(m.shape.dimension(), -1.5, 2.25);
  m.lambda = 1e-4;
  return m;
}

/// Saves through `save` into a scratch directory and returns the file's bytes.
template <class Save>
std::string saved_bytes(Save save) {
  const auto dir = fs::temp_directory_path() / ("shardopt-make-corpus-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto path = save(dir);
  std::ifstream in{path, std::ios::binary};
  std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  fs::remove_all(dir);
  return bytes;
}

std::string model_bytes(const io::saved_model& m) {
  return saved_bytes([&](const fs::path& dir) {
    const auto path = (dir / "model.txt").string();
    if (auto ok = io::save_model(path, m); !ok)
      throw std::runtime_error(ok.error().message());
    return path;
  });
}

void model_seeds() {
  auto linear = tiny_model(model::model_kind::linear, 2, {});
  put("fuzz_model_file", "linear", model_bytes(linear));
  auto logistic = tiny_model(model::model_kind::logistic, 3, {-1, 1});
  logistic.scaling.factor = 1.0 / 255;
  put("fuzz_model_file", "logistic_scaled", model_bytes(logistic));
  auto softmax = tiny_model(model::model_kind::softmax, 2, {0, 1, 2});
  softmax.scaling.mean = Eigen::Vector2d{0.5, -0.25};
  softmax.scaling.inv_std = Eigen::Vector2d{2, 4};
  put("fuzz_model_file", "softmax_standardized", model_bytes(softmax));
  put("fuzz_model_file", "svm_multiclass", model_bytes(tiny_model(model::model_kind::svm, 1, {0, 1, 2, 3})));
  put("fuzz_model_file", "mlp_two_layers", model_bytes(tiny_model(model::model_kind::softmax, 3, {0, 1, 2}, {4, 2})));
  put("fuzz_model_file", "mlp_regression", model_bytes(tiny_model(model::model_kind::linear, 2, {}, {3})));
  auto extremes = tiny_model(model::model_kind::linear, 3, {});
  extremes.theta << std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(), -0.0, 1e-300;
  put("fuzz_model_file", "extreme_values", model_bytes(extremes));
  auto sparse = tiny_model(model::model_kind::logistic, 30, {0, 1});  // an L1 model: theta stored sparse
  sparse.theta.setZero();
  sparse.theta[7] = -0.25;
  sparse.theta[30] = 0.5;
  sparse.l1 = 0.05;
  put("fuzz_model_file", "l1_sparse", model_bytes(sparse));
  auto text = model_bytes(linear);
  put("fuzz_model_file", "truncated", text.substr(0, text.size() / 2));
}

void checkpoint_seeds() {
  const auto bytes = [](const io::ps_checkpoint& state) {
    return saved_bytes([&](const fs::path& dir) {
      auto path = io::save_ps_checkpoint(dir.string(), state, 0);
      if (!path)
        throw std::runtime_error(path.error().message());
      return *path;
    });
  };
  io::ps_checkpoint adam;
  adam.step = 1234;
  adam.rule = "adam";
  adam.updates = 1234;
  adam.model = tiny_model(model::model_kind::softmax, 2, {0, 1, 2});
  const auto n = adam.model.theta.size();
  adam.slots = {Eigen::VectorXd::Constant(n, 0.125), Eigen::VectorXd::LinSpaced(n, 0, 1)};
  put("fuzz_ps_checkpoint", "adam", bytes(adam));
  io::ps_checkpoint mlp;
  mlp.step = 7;
  mlp.rule = "momentum";
  mlp.updates = 7;
  mlp.model = tiny_model(model::model_kind::logistic, 2, {-1, 1}, {3});
  mlp.slots = {Eigen::VectorXd::Constant(mlp.model.theta.size(), -0.5)};
  put("fuzz_ps_checkpoint", "mlp_momentum", bytes(mlp));
  io::ps_checkpoint sgd;
  sgd.rule = "sgd";
  sgd.model = tiny_model(model::model_kind::linear, 1, {});
  put("fuzz_ps_checkpoint", "sgd_step0", bytes(sgd));
  const auto text = bytes(adam);
  put("fuzz_ps_checkpoint", "truncated", text.substr(0, text.size() * 2 / 3));
}

void solver_seeds() {
  const auto bytes = [](const io::solver_checkpoint& saved) {
    return saved_bytes([&](const fs::path& dir) {
      auto path = io::save_solver_checkpoint(dir.string(), saved, 0);
      if (!path)
        throw std::runtime_error(path.error().message());
      return *path;
    });
  };
  // An L-BFGS run's state, as apps/commands/train/solver_checkpoints.cpp records it.
  io::solver_checkpoint saved;
  saved.settings = {{"--model", "softmax"}, {"--lambda", "0.0001"}, {"examples", "60000"}};
  saved.solver = "lbfgs";
  saved.iteration = 2;
  saved.numbers = {{"iterations", 2}, {"evaluations", 3}, {"seconds", 0.5}, {"f", 0.693}};
  saved.vectors = {{"theta", {Eigen::Vector3d{0.1, -0.2, 0.3}}},
                   {"grad", {Eigen::Vector3d{1e-3, 2e-3, -4e-3}}},
                   {"s", {Eigen::Vector3d{1, 2, 3}, Eigen::Vector3d{-1, 0, 1}}},
                   {"y", {Eigen::Vector3d{0.5, 0.5, 0.5}, Eigen::Vector3d{2, 2, 2}}},
                   {"f_history", {Eigen::Vector3d{0.9, std::numeric_limits<double>::quiet_NaN(), 0.7}}}};
  put("fuzz_solver_checkpoint", "two_pairs", bytes(saved));
  io::solver_checkpoint start;
  start.solver = "newton-cg";
  start.vectors = {{"theta", {Eigen::VectorXd::Zero(1)}}};
  put("fuzz_solver_checkpoint", "start", bytes(start));
  // An L1 run's: theta and a pair mostly zeros, written as their non-zeros.
  io::solver_checkpoint sparse;
  sparse.solver = "lbfgs";
  sparse.iteration = 4;
  Eigen::VectorXd few = Eigen::VectorXd::Zero(64);
  few[3] = -0.0;
  few[40] = 0.25;
  sparse.vectors = {{"theta", {few}}, {"s", {few, Eigen::VectorXd::Zero(64)}}};
  put("fuzz_solver_checkpoint", "sparse", bytes(sparse));
  const auto text = bytes(saved);
  put("fuzz_solver_checkpoint", "truncated", text.substr(0, text.size() / 2));
}

void toml_seeds() {
  put("fuzz_toml_config", "train", "# a run\nmodel = \"logistic\"\nlambda = 1e-4\nmax-iter = 50\n"
                                   "data = \"train.csv\"\nstandardize = true\njson = false\n");
  put("fuzz_toml_config", "ps_task", "command = \"ps-task\"\nps_hosts = \"localhost:2222\"\n"
                                     "worker_hosts = \"localhost:2223\"\njob_name = \"worker\"\n"
                                     "task_index = 0\noptimizer = \"adam\"\nlr = 0.001\n");
  put("fuzz_toml_config", "sweep", "mode = \"ps\"\nlast-step = 100\n[sweep]\nrepeat = 2\n"
                                   "grid = { lambda = [1e-3, 1e-4], lr = [0.1, 0.01] }\n"
                                   "list = [ { optimizer = \"sgd\" }, { optimizer = \"adam\" } ]\n");
  put("fuzz_toml_config", "unknown_key", "model = \"softmax\"\n\nlamda = 3\n");
  put("fuzz_toml_config", "wrong_types", "lambda = true\nshards = [1, 2]\njson = 3\n");
  put("fuzz_toml_config", "syntax_error", "model = \"softmax\nlambda = = 1\n[table\n");
  put("fuzz_toml_config", "values", "lower = -1.5e300\nupper = inf\nseed = 18446744073709551615\n"
                                    "threads = -1\n'quoted key' = 'literal'\n\"epsilon\" = 0x10\n"
                                    "date = 1979-05-27T07:32:00Z\narr = [[1, 2], [\"a\"]]\n");
}

} // namespace

/// Binary datasets converted from small CSV and LIBSVM texts: options byte (reseal, limit, parts).
void binary_seeds() {
  const auto scratch = fs::temp_directory_path() / ("shardopt-corpus-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const std::pair<const char*, const char*> texts[] = {
    {"sparse.svm", "+1 1:0.5 3:2\n-1 2:1.5\n0\n2 3:-4 7:1\n"},
    {"dense.csv", "1,2.5,3\n0,-1,400\n1,0,0\n"},
  };
  for (const auto& [name, text] : texts) {
    const auto source = (scratch / name).string();
    std::ofstream{source} << text;
    auto data = io::read_dataset(source, io::split::train, {});
    if (!data)
      throw std::runtime_error(data.error().message());
    const auto path = (scratch / (std::string{name} + ".bin")).string();
    auto origin = io::origin_of(source, {});
    if (!origin)
      throw std::runtime_error(origin.error().message());
    if (auto ok = io::write_binary_dataset(path, *data, *origin); !ok)
      throw std::runtime_error(ok.error().message());
    std::ifstream in{path, std::ios::binary};
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    put("fuzz_binary_dataset", std::string{name} + "_whole", options({{0, 2}, {0, 2}, {0, 4}}) + bytes);
    put("fuzz_binary_dataset", std::string{name} + "_resealed_parts", options({{1, 2}, {0, 2}, {2, 4}}) + bytes);
    put("fuzz_binary_dataset", std::string{name} + "_limit", options({{0, 2}, {1, 2}, {0, 4}}) + bytes);
  }
  fs::remove_all(scratch);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    root = argv[1];
    csv_seeds();
    libsvm_seeds();
    idx_seeds();
    gzip_seeds();
    model_seeds();
    checkpoint_seeds();
    solver_seeds();
    toml_seeds();
    binary_seeds();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_make_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
