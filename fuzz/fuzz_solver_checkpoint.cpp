// Fuzz target: solver checkpoints (io::load_solver_checkpoint). Input: the file's bytes. A file that
// loads must also save (io::save_solver_checkpoint) and load back to the same values.

#include "same_state.hpp"
#include "scratch_dir.hpp"

#include "io/solver_checkpoint.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <system_error>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::scratch_dir dir;
  const auto path = dir.write("solver.txt", {reinterpret_cast<const char*>(data), size});
  // Sparse vectors of at most 2^20 entries in all, as a small run would allow (the default, 2^27,
  // would let a few hundred bytes of a whole file fill the fuzzer's memory with zeros).
  const io::checkpoint_limits largest{{}, std::int64_t{1} << 20};
  const auto loaded = io::load_solver_checkpoint(path, largest);
  if (!loaded)
    return 0;
  // Saved into a directory of its own (keeping all: pruning could take the new file if an older
  // input had a higher step), and removed after the check.
  const auto saved = io::save_solver_checkpoint(dir.file("saved"), *loaded, 0);
  const result<void> written = saved ? result<void>{} : result<void>{saved.error()};
  const auto reloaded =
      saved ? io::load_solver_checkpoint(*saved, largest) : result<io::solver_checkpoint>{saved.error()};
  fuzz::require_round_trip(*loaded, written, reloaded, "solver checkpoint");
  if (saved) {
    std::error_code ignored;
    std::filesystem::remove(*saved, ignored);
  }
  return 0;
}
