#pragma once

// Runs a child process for end-to-end tests: arguments as given (no shell), stdout and stderr
// captured through files, a deadline after which the child is killed. Every process started here is
// waited for before `run` returns.

#include "support/files.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace shardopt::test {

struct process_result {
  int exit_code = -1;    ///< valid when !signaled
  bool signaled = false; ///< killed by a signal (a crash, or our deadline)
  bool timed_out = false;
  std::string out;
  std::string err;
};

/// Runs `args[0]` with `args`, waits at most `deadline`, returns exit status and output.
inline process_result run(const std::vector<std::string>& args,
                          std::chrono::seconds deadline = std::chrono::seconds{300}) {
  temp_dir io;
  const auto out_path = io / "stdout";
  const auto err_path = io / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const auto& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  process_result result;
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    result.err = "cannot start " + args[0];
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      break;
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  result.signaled = WIFSIGNALED(status);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

/// A child process running in the background, its stdout and stderr in files. The destructor kills
/// it (SIGKILL) and waits for it if it still runs, so a test never leaves a process behind.
class background_process {
public:
  explicit background_process(const std::vector<std::string>& args) : args_(args) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, (dir_ / "stdout").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_ / "stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (const auto& arg : args_)
      argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0)
      pid_ = 0;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~background_process() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  background_process(const background_process&) = delete;
  background_process& operator=(const background_process&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool running() { return pid_ > 0 && !poll_exit(); }
  std::string out() const { return slurp(dir_ / "stdout"); }
  std::string err() const { return slurp(dir_ / "stderr"); }

  /// Waits until stdout contains `text`; false on timeout or if the process ended first.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (out().find(text) != std::string::npos)
        return true;
      if (poll_exit())
        return out().find(text) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return false;
  }

  /// Sends a signal (SIGKILL to simulate a crash, SIGTERM to stop).
  void signal(int number) {
    if (running())
      ::kill(pid_, number);
  }

  /// Waits for the process to end; returns its result (timed_out if it did not end in time; it is
  /// then killed).
  process_result wait(std::chrono::milliseconds timeout) {
    process_result result;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!poll_exit()) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid_, SIGKILL);
        result.timed_out = true;
        ::waitpid(pid_, &status_, 0);
        finished_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    result.signaled = WIFSIGNALED(status_);
    result.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    result.out = out();
    result.err = err();
    return result;
  }

private:
  bool poll_exit() {
    if (finished_ || pid_ <= 0)
      return true;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_)
      finished_ = true;
    return finished_;
  }

  std::vector<std::string> args_;
  temp_dir dir_;
  pid_t pid_ = 0;
  int status_ = 0;
  bool finished_ = false;
};

/// A loopback TCP port that was free a moment ago (for host lists that need fixed ports, like
/// TensorFlow-style `--ps_hosts`; everything else should listen on port 0).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

/// Lines in a file (0 if it does not exist yet).
inline int count_lines(const std::filesystem::path& path) {
  std::ifstream in{path};
  int lines = 0;
  for (std::string line; std::getline(in, line);)
    ++lines;
  return lines;
}

/// Waits until `process` has written `lines` lines to `path` (a metrics file: training has made
/// that much progress); false if it ended first or `timeout` passed.
inline bool wait_for_lines(background_process& process, const std::filesystem::path& path, int lines,
                           std::chrono::milliseconds timeout = std::chrono::minutes{2}) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (count_lines(path) < lines && std::chrono::steady_clock::now() < until && process.running())
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  return count_lines(path) >= lines;
}

/// The path of the built `shardopt` executable.
inline std::string shardopt_binary() {
  return std::string{SHARDOPT_BINARY_DIR} + "/apps/shardopt";
}

} // namespace shardopt::test
