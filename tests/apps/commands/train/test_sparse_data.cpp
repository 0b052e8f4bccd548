// Sparse data end to end: a generated LIBSVM set trained with Newton-CG (gradients and
// Hessian-vector products summed term by term) gives the same bits with 1 and 3 local shards, on
// 2 nodes with shipped data, on 2 nodes that map their parts of a binary dataset, and after a node
// is killed mid-run; `convert` and `train --cache` read the same data as the text.

#include "support/node_process.hpp"
#include "support/json_run.hpp"
#include "support/process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace shardopt::test;
using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// A sparse logistic set: 30,000 rows x 2^16 features, 20 non-zeros a row (seed 5).
std::string generate(const temp_dir& dir) {
  const auto path = dir.file("sparse.svm");
  const auto made = run({shardopt_binary(), "generate", "-o", path, "--rows", "30000", "--features",
                         "65536", "--nonzeros", "20", "--seed", "5", "--quiet"});
  REQUIRE(made.exit_code == 0);
  return path;
}

/// Newton-CG on `data` with `extra` options; the summary.
json train(const std::string& data, std::vector<std::string> extra, std::chrono::seconds deadline = 300s) {
  std::vector<std::string> args{"train", "--model", "logistic", "--data", data,
                                "--scale", "none", "--features", "65536", "--lambda", "1e-4",
                                "--solver", "newton-cg", "--epsilon", "1e-10", "--max-iter", "12",
                                "--json", "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_json(args, deadline);
}

void check_same_bits(const json& a, const json& b, const std::string& what) {
  INFO(what);
  CHECK(a["objective"].get<double>() == b["objective"].get<double>());
  CHECK(a["grad_norm"].get<double>() == b["grad_norm"].get<double>());
  CHECK(a["passes"] == b["passes"]);
}

std::string endpoints(const std::vector<std::unique_ptr<node_process>>& nodes) {
  std::string out;
  for (const auto& node : nodes)
    out += (out.empty() ? "" : ",") + node->endpoint();
  return out;
}

} // namespace

TEST_CASE("sparse data: 1 and 3 local shards, 2 nodes shipped or mapping a binary dataset, and a killed node give the same bits") {
  temp_dir dir;
  const auto svm = generate(dir);
  const auto bin = dir.file("sparse.bin");
  REQUIRE(run({shardopt_binary(), "convert", "--data", svm, "-o", bin, "--quiet"}).exit_code == 0);
  const auto one = train(svm, {"--shards", "1"});
  CHECK(one["hessian_products"].get<int>() > 0);
  check_same_bits(one, train(svm, {"--shards", "3"}), "3 local shards");
  check_same_bits(one, train(bin, {"--shards", "2"}), "2 local shards, binary dataset");

  std::vector<std::unique_ptr<node_process>> nodes;
  for (int i = 0; i < 2; ++i)
    nodes.push_back(std::make_unique<node_process>(std::vector<std::string>{"--data-root", dir.path().string()}));
  check_same_bits(one, train(svm, {"--shards", "4", "--nodes", endpoints(nodes)}), "2 nodes, shipped");
  // Parts of a binary dataset are whole canonical blocks, so node-local runs have the local bits too.
  check_same_bits(one, train(bin, {"--shards", "4", "--nodes", endpoints(nodes), "--data-placement", "node-local"}),
                  "2 nodes, node-local binary dataset");

  // A node killed once the run is under way: its shards are recreated, the bits do not change.
  const auto metrics = dir.file("run.jsonl");
  background_process driver{{shardopt_binary(), "train", "--model", "logistic", "--data", bin, "--scale", "none",
                             "--features", "65536", "--lambda", "1e-4", "--solver", "newton-cg", "--epsilon",
                             "1e-10", "--max-iter", "12", "--json", "--quiet", "--shards", "4", "--nodes",
                             endpoints(nodes), "--metrics", metrics}};
  REQUIRE(shardopt::test::wait_for_lines(driver, metrics, 2));
  nodes[1]->process->signal(SIGKILL);
  const auto result = driver.wait(300s);
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  const auto survived = json::parse(result.out);
  CHECK(survived["recreated_shards"].get<int>() >= 1);
  check_same_bits(one, survived, "a node killed");
}

TEST_CASE("train --cache makes a binary dataset on first use, reuses it, and makes it again when the source changes") {
  temp_dir dir;
  const auto svm = generate(dir);
  const auto text = train(svm, {"--shards", "2", "--max-iter", "3"});
  const auto cached = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--shards", "2", "--max-iter", "3", "--cache"});
    return train(svm, extra);
  };
  check_same_bits(text, cached({}), "first --cache");
  std::vector<fs::path> caches;
  for (const auto& entry : fs::directory_iterator{dir.path()})
    if (entry.path().extension() == ".shoptbin")
      caches.push_back(entry.path());
  REQUIRE(caches.size() == 1);
  const auto made = fs::last_write_time(caches[0]);
  check_same_bits(text, cached({}), "second --cache");
  CHECK(fs::last_write_time(caches[0]) == made);  // reused
  fs::last_write_time(svm, fs::last_write_time(svm) + 10s);
  check_same_bits(text, cached({}), "--cache after a change");
  CHECK(fs::last_write_time(caches[0]) != made);  // made again
  // Under --cache-dir; a directory that cannot be written costs a warning, not the run.
  check_same_bits(text, cached({"--cache-dir", dir.file("caches")}), "--cache-dir");
  CHECK(std::distance(fs::directory_iterator{dir / "caches"}, fs::directory_iterator{}) == 1);
  dir.write("blocked", "a file, not a directory");
  const auto blocked = run({shardopt_binary(), "train", "--model", "logistic", "--data", svm, "--scale", "none",
                            "--features", "65536", "--max-iter", "2", "--cache", "--cache-dir",
                            dir.file("blocked"), "--json", "--quiet"});
  CHECK(blocked.exit_code == 0);
  CHECK(blocked.err.find("could not write the cache of " + svm) != std::string::npos);
}

TEST_CASE("a damaged binary dataset given as --data fails with its name and the fault, exit code 1") {
  temp_dir dir;
  const auto svm = dir.write("tiny.svm", "1 1:1 2:2\n-1 3:1\n1 2:0.5\n");
  const auto bin = dir.file("tiny.bin");
  REQUIRE(run({shardopt_binary(), "convert", "--data", svm, "-o", bin, "--quiet"}).exit_code == 0);
  std::string bytes;
  {
    std::ifstream in{bin, std::ios::binary};
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto cut = dir.write("cut.bin", bytes.substr(0, bytes.size() - 8));
  const auto result = run({shardopt_binary(), "train", "--model", "logistic", "--data", cut});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find(cut + ": truncated") != std::string::npos);
  const auto converted = run({shardopt_binary(), "convert", "--data", dir.file("absent.svm"), "-o", bin});
  CHECK(converted.exit_code == 1);
  CHECK(converted.err.find("absent.svm: no such file") != std::string::npos);
}
