// Shared pieces of the libFuzzer targets.
//
// InputFile: the readers under test take paths (they stat, open non-blocking, mmap or gzread
// them), so each input is written into one memory-backed file (memfd_create) and handed over as
// /proc/self/fd/N: the real code path, with no disk traffic between runs.
//
// check(): a property that must hold; a failed one prints what and traps, and libFuzzer saves the
// input.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ath::fuzz {

inline void check(bool ok, const char* what = "", std::string_view detail = {}) {
  if (!ok) {
    std::fprintf(stderr, "property failed: %s %.*s\n", what, static_cast<int>(detail.size()),
                 detail.data());
    __builtin_trap();
  }
}

class InputFile {
 public:
  InputFile() : fd_(::memfd_create("athanor-fuzz-input", 0)) {
    check(fd_ >= 0);
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Replaces the file's contents with `data` and returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    check(::ftruncate(fd_, 0) == 0);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      check(n > 0);
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ath::fuzz
