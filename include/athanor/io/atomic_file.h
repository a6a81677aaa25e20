// Writing a file so that readers see either the old contents or the complete new ones, never a
// torn mix, even across a crash or power loss: the data goes to a temporary file in the same
// directory, which is fsync'ed, renamed over the destination, and the directory fsync'ed. The
// temporary file is unnamed (O_TMPFILE) until commit() links it, so a writer killed mid-write
// (SIGKILL) leaves nothing behind; where the file system lacks O_TMPFILE it is a named
// "<path>.tmp.<pid>.<n>", which the next writer of the same path removes once its process is gone.
//
//   std::string header = "my tensor format, v1\n";
//   Tensor tensor = randn({4, 3});
//   AtomicFileWriter out("model.bin");
//   out.write(header.data(), header.size());
//   out.write(tensor.data_ptr(), tensor.nbytes());
//   out.commit();                 // without commit (an exception), the temporary file is removed
//
// Every failure is an ath::IOError naming the destination and the system's reason; until commit()
// returns the destination is untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ath {

class AtomicFileWriter {
 public:
  // Creates the temporary file (mode 0666 minus the umask, like a plain create).
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();  // removes the temporary file unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, std::size_t n);
  // fsync, rename over the destination, fsync the directory.
  void commit();

  const std::string& path() const { return path_; }
  // The temporary file's name: "" while it has none (an O_TMPFILE file until commit()).
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const char* what, int err);
  int next_temporary(int flags);  // a fd (open flags) or 0 (flags == 0: link_to); -errno
  void create_named_temporary();
  int link_to(const std::string& name) const;
  void discard() noexcept;

  std::string path_, temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole file in one call.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace ath
