#include "io/nodes_file.hpp"

#include <fstream>

namespace shardopt::io {

result<std::string> read_nodes_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return fail_not_found(path + ": cannot open the nodes file");
  std::string list;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (line.find_first_of(" \t,") != std::string::npos)
      return fail_invalid(path + ":" + std::to_string(number) + ": expected one host:port per line");
    list += (list.empty() ? "" : ",") + line;
  }
  if (in.bad())
    return fail_runtime(path + ": could not be read");
  return list;
}

} // namespace shardopt::io
