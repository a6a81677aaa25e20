#include "athanor/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "athanor/core/error.h"

namespace ath {
namespace {

std::string parent_dir(const std::string& path) {
  std::filesystem::path p(path);
  std::filesystem::path dir = p.parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

// Removes "<path>.tmp.<pid>.<n>" files left by writers that died mid-write (SIGKILL, power loss)
// where the file system has no O_TMPFILE, or between a commit's link and its rename:
// those whose process no longer exists. A live process's temporaries (this one's, a concurrent
// writer's, or an unrelated process that reused the PID) stay. Best effort: errors are ignored.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator it(parent_dir(path), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    long pid = 0;
    const auto [dot, perr] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (perr != std::errc() || dot == rest.data() + rest.size() || *dot != '.' || pid <= 0)
      continue;
    uint64_t n = 0;
    const auto [last, nerr] = std::from_chars(dot + 1, rest.data() + rest.size(), n);
    if (nerr != std::errc() || last != rest.data() + rest.size()) continue;  // not ours
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  ATH_CHECK(!path_.empty(), IOError, "cannot write a file with an empty path");
  remove_stale_temporaries(path_);
  // An unnamed file in the destination's directory (rename only is atomic within one file
  // system): if this process dies before commit() (SIGKILL, OOM), the kernel frees it and
  // nothing is left on disk.
  fd_ = ::open(parent_dir(path_).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ >= 0) return;
  // File systems without O_TMPFILE say EOPNOTSUPP; kernels that predate it, EISDIR or EINVAL.
  // Any other failure (no such directory, no permission) would fail a named file too.
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    fail("cannot create a temporary file for", errno);
  }
  create_named_temporary();
}

// A unique name next to the destination. O_EXCL makes a clash with a stale or concurrent
// temporary file a retry, never a share.
int AtomicFileWriter::next_temporary(int flags) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path_ = fmt::format("{}.tmp.{}.{}", path_, ::getpid(),
                             counter.fetch_add(1, std::memory_order_relaxed));
    const int rc = flags == 0 ? link_to(temp_path_)
                              : ::open(temp_path_.c_str(), flags | O_EXCL | O_CLOEXEC, 0666);
    if (rc >= 0) return rc;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  temp_path_.clear();
  return -err;
}

void AtomicFileWriter::create_named_temporary() {
  const int rc = next_temporary(O_WRONLY | O_CREAT);
  if (rc < 0) fail("cannot create a temporary file for", -rc);
  fd_ = rc;
}

// Gives the unnamed file `name`: through /proc/self/fd (any user), else AT_EMPTY_PATH (needs
// CAP_DAC_READ_SEARCH) where /proc is not mounted. 0 or -1 with errno, as link().
int AtomicFileWriter::link_to(const std::string& name) const {
  const std::string self = fmt::format("/proc/self/fd/{}", fd_);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
  if (errno == EEXIST) return -1;
  return ::linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

void AtomicFileWriter::fail(const char* what, int err) {
  discard();
  ATH_THROW(IOError, "{} '{}': {}", what, path_, std::strerror(err));
}

void AtomicFileWriter::write(const void* data, std::size_t n) {
  ATH_CHECK(fd_ >= 0 && !committed_, IOError, "write to '{}' after commit or failure", path_);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", errno);
    }
    if (w == 0) fail("cannot write", EIO);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicFileWriter::commit() {
  ATH_CHECK(fd_ >= 0 && !committed_, IOError, "commit of '{}' after commit or failure", path_);
  if (::fsync(fd_) != 0) fail("cannot sync", errno);
  // An unnamed file gets a temporary name (link cannot replace an existing file), then the
  // rename replaces the destination as for a named temporary.
  if (temp_path_.empty()) {
    const int rc = next_temporary(0);
    if (rc < 0) fail("cannot link a temporary file for", -rc);
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("cannot write", errno);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    fail("cannot rename a temporary file to", errno);
  temp_path_.clear();
  committed_ = true;
  // Makes the rename itself durable. Some file systems cannot sync a directory (EINVAL): the
  // rename is then as durable as they allow.
  std::string dir = parent_dir(path_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    ATH_THROW(IOError, "wrote '{}' but cannot open its directory to sync it: {}", path_,
              std::strerror(errno));
  }
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP) {
    ATH_THROW(IOError, "wrote '{}' but cannot sync its directory: {}", path_, std::strerror(err));
  }
}

void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace ath
