// libFuzzer target for the IDX reader (MNIST's format, raw or gzip-compressed).
//
// Properties checked on every input, under ASan + UBSan:
//   - read_idx either returns a tensor or throws ath::FormatError naming the file: any other
//     exception, a crash, an out-of-bounds read or undefined behaviour is a finding;
//   - what it returns is a contiguous uint8 tensor whose element count is the product of its dims.
#include "athanor/io/idx.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ath::fuzz::InputFile file;
  const std::string& path = file.write(data, size);
  try {
    ath::Tensor t = ath::read_idx(path);
    int64_t numel = 1;
    for (int64_t d : t.shape()) numel *= d;
    ath::fuzz::check(t.dtype() == ath::kUInt8 && t.is_contiguous() && t.numel() == numel);
  } catch (const ath::FormatError& e) {
    ath::fuzz::check(std::string(e.what()).find(path) != std::string::npos,
                     "error does not name the file:", e.what());
  }
  return 0;
}
