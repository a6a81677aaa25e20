// A whole file mapped into memory, private and copy-on-write: writes through the mapping stay in
// this process and never reach the file. (Another process truncating the file while it is mapped
// makes later reads fault: that is mmap's contract, and why checkpoints are written atomically.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ath::detail {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // IOError naming the path and the reason
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  uint8_t* data() const { return data_; }  // null for an empty file
  std::size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ath::detail
