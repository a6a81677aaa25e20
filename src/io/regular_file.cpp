#include "athanor/io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "athanor/core/error.h"

namespace ath {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

[[noreturn]] void fail(const std::string& path, std::string_view what, const char* why) {
  if (what.empty()) ATH_THROW(IOError, "cannot read '{}': {}", path, why);
  ATH_THROW(IOError, "{}: cannot read '{}': {}", what, path, why);
}

}  // namespace

int open_regular_file(const std::string& path, std::string_view what) {
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer. It changes
  // nothing for regular files, which are all this returns.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, what, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, what, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, what, kind_of(st.st_mode));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string regular_file_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  return S_ISREG(st.st_mode) ? "" : kind_of(st.st_mode);
}

void require_regular_file(const std::string& path, std::string_view what) {
  const std::string problem = regular_file_problem(path);
  if (!problem.empty()) fail(path, what, problem.c_str());
}

}  // namespace ath
