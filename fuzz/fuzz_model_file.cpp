// Fuzz target: model files (io::load_model). Input: the file's bytes. A file that loads must also
// save (io::save_model) and load back to the same values.

#include "same_state.hpp"
#include "scratch_dir.hpp"

#include "io/model_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardopt;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::scratch_dir dir;
  const auto path = dir.write("model.txt", {reinterpret_cast<const char*>(data), size});
  const auto loaded = io::load_model(path);
  if (!loaded)
    return 0;
  const auto again = dir.file("again.txt");
  const auto saved = io::save_model(again, *loaded);
  fuzz::require_round_trip(*loaded, saved, io::load_model(again), "model file");
  return 0;
}
