// Writing a file so that readers see either the old contents or the complete new ones, never a
// torn mix, even across a crash or power loss: the data goes to a temporary file in the same
// directory, which is fsync'ed, renamed over the destination, and the directory fsync'ed.
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
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const char* what, int err);
  void discard() noexcept;

  std::string path_, temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole file in one call.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace ath
