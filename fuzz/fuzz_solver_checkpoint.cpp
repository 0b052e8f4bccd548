// Fuzz target: solver checkpoints (io::load_solver_checkpoint). Input: the file's bytes. A file that
// loads must also save (io::save_solver_checkpoint) and load back to the same values.

#include "same_state.hpp"
#include "scratch_dir.hpp"

#include "io/solver_checkpoint.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::scratch_dir dir;
  const auto path = dir.write("solver.txt", {reinterpret_cast<const char*>(data), size});
  // Sparse vectors of at most 2^20 entries in all, as a small run would allow (the default, 2^27,
  // would let a few hundred bytes of a whole file fill the fuzzer's memory with zeros).
  const io::checkpoint_limits largest{{}, std::int64_t{1} << 20};
  const auto loaded = io::load_solver_checkpoint(path, largest);
  // A run with other settings reads it without its vectors (or refuses it as corrupt).
  const std::vector<std::pair<std::string, std::string>> other{{"--fuzz", "other"}};
  if (const auto partial = io::load_solver_checkpoint(path, io::checkpoint_limits{other, largest.sparse_entries});
      partial && !io::check_same_run(*partial, other, path) && !partial->vectors.empty()) {
    std::fprintf(stderr, "solver checkpoint: another run's was read with its vectors\n");
    std::abort();
  }
  if (!loaded)
    return 0;
  // Saved into a directory of its own (keeping all: pruning could take the new file if an older
  // input had a higher step), and removed after the check.
  const auto saved = io::save_solver_checkpoint(dir.file("saved"), *loaded, 0);
  const result<void> written = saved ? result<void>{} : result<void>{saved.error()};
  // Reloaded within what all its vectors hold: a dense vector mostly of zeros is saved sparse, and
  // then counts against the budget.
  std::int64_t entries = 0;
  for (const auto& [name, list] : loaded->vectors)
    for (const auto& vector : list)
      entries += vector.size();
  const auto reloaded = saved ? io::load_solver_checkpoint(*saved, io::checkpoint_limits{{}, entries})
                              : result<io::solver_checkpoint>{saved.error()};
  fuzz::require_round_trip(*loaded, written, reloaded, "solver checkpoint");
  if (saved) {
    std::error_code ignored;
    std::filesystem::remove(*saved, ignored);
  }
  return 0;
}
