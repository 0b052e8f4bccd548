#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <locale>
#include <random>
#include <streambuf>
#include <string>
#include <system_error>

namespace shardopt::io {

namespace fs = std::filesystem;

namespace {

/// The errno text of `error`, thread-safe (unlike strerror).
std::string error_text(int error) { return std::system_category().message(error); }

failure cannot_write(const fs::path& target, const std::string& step, const fs::path& file, int error) {
  return fail_runtime(target.string() + ": cannot write: " + step + " " + file.string() + ": " + error_text(error));
}

/// Writes all `size` bytes at `data` to `fd`, retrying short writes and interrupted calls. Returns 0
/// or the errno of the failed write (ENOSPC, EFBIG, EIO, ...).
int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (written == 0)  // a regular file never does this for size > 0; do not spin
      return EIO;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return 0;
}

/// A stream buffer writing to a file descriptor through `write_all`; the first failure sticks (every
/// later write fails too) and is kept in `error()`. Does not own the descriptor.
class fd_output_buffer : public std::streambuf {
public:
  explicit fd_output_buffer(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  /// 0, or the errno of the first failed write.
  int error() const { return error_; }

protected:
  int_type overflow(int_type ch) override {
    if (sync() != 0)
      return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  int sync() override {
    if (error_ == 0)
      error_ = write_all(fd_, pbase(), static_cast<std::size_t>(pptr() - pbase()));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0 ? 0 : -1;
  }

private:
  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_{};
};

/// An open temporary file next to the target.
struct temporary_file {
  fs::path path;
  int fd = -1;
};

/// Closes and removes the temporary file (after a failure).
void discard(temporary_file& file) {
  if (file.fd >= 0)
    ::close(file.fd);
  file.fd = -1;
  ::unlink(file.path.c_str());
}

/// 64 random bits for temporary names, from the system's entropy source when it has one.
std::uint64_t random_bits() {
  thread_local std::mt19937_64 engine = [] {
    std::uint64_t seed = static_cast<std::uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    try {
      seed ^= (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    } catch (const std::exception&) {  // no entropy device: the clock and the pid still differ
    }
    return std::mt19937_64{seed ^ static_cast<std::uint64_t>(::getpid())};
  }();
  return engine();
}

/// Creates ".<name>.tmp-<pid>-<random>" next to `target` with O_EXCL, so no two writers (threads or
/// processes) ever share one. mkstemp would do the same but creates files with mode 0600, and reading
/// the umask to correct that means changing it, which races with other threads; open(2) with 0666
/// applies the umask itself.
result<temporary_file> create_temporary(const fs::path& target) {
  const auto name = target.filename().string();
  if (name.empty() || name == "." || name == "..")
    return fail_runtime(target.string() + ": cannot write: not a file name");
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path{"."};
  for (int attempt = 0;; ++attempt) {
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%016llx", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(random_bits()));
    temporary_file file{directory / ("." + name + suffix)};
    file.fd = ::open(file.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (file.fd >= 0)
      return file;
    const int error = errno;
    if ((error != EEXIST && error != EINTR) || attempt == 100)
      return cannot_write(target, "creating", file.path, error);
  }
}

/// Flushes, closes and renames `file` over `target`, then flushes the directory. The temporary file
/// is removed on failure up to the rename.
result<void> commit(const fs::path& target, temporary_file& file) {
  if (::fsync(file.fd) != 0) {
    const int error = errno;
    discard(file);
    return cannot_write(target, "flushing", file.path, error);
  }
  // close(2) may report a failed write-back (NFS); the descriptor is released either way.
  const int closed = ::close(file.fd);
  const int close_error = errno;
  file.fd = -1;
  if (closed != 0 && close_error != EINTR) {
    discard(file);
    return cannot_write(target, "closing", file.path, close_error);
  }
  if (::rename(file.path.c_str(), target.c_str()) != 0) {
    const int error = errno;
    discard(file);
    return cannot_write(target, "renaming", file.path, error);
  }
  // The new file is in place; flushing its directory makes the rename durable. Some filesystems
  // cannot flush a directory (EINVAL): there is nothing more to do on those.
  const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path{"."};
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0)
    return cannot_write(target, "opening the directory", directory, errno);
  const int synced = ::fsync(dir_fd);
  const int sync_error = errno;
  ::close(dir_fd);
  if (synced != 0 && sync_error != EINVAL)
    return cannot_write(target, "flushing the directory", directory, sync_error);
  return {};
}

} // namespace

result<void> write_file_atomically(const fs::path& path, std::string_view bytes) {
  try {
    auto file = create_temporary(path);
    if (!file)
      return file.error();
    if (const int error = write_all(file->fd, bytes.data(), bytes.size()); error != 0) {
      discard(*file);
      return cannot_write(path, "writing", file->path, error);
    }
    return commit(path, *file);
  } catch (const std::exception& e) {  // only allocation failures can get here
    return fail_runtime(path.string() + ": cannot write: " + e.what());
  }
}

result<void> stream_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  try {
    auto file = create_temporary(path);
    if (!file)
      return file.error();
    fd_output_buffer buffer{file->fd};
    std::ostream stream{&buffer};
    stream.imbue(std::locale::classic());
    std::string thrown;
    try {
      write(stream);
      stream.flush();
    } catch (const std::exception& e) {
      thrown = e.what();
    } catch (...) {
      thrown = "unknown exception";
    }
    // A disk error is the cause of whatever else went wrong after it; report it first.
    if (buffer.error() != 0) {
      discard(*file);
      return cannot_write(path, "writing", file->path, buffer.error());
    }
    if (!thrown.empty() || !stream) {
      discard(*file);
      return fail_runtime(path.string() + ": cannot write: " + (thrown.empty() ? "the stream failed" : thrown));
    }
    return commit(path, *file);
  } catch (const std::exception& e) {  // only allocation failures can get here
    return fail_runtime(path.string() + ": cannot write: " + e.what());
  }
}

} // namespace shardopt::io
