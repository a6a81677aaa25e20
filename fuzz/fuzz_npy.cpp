// libFuzzer target for the .npy reader (numpy.save's format).
//
// Properties checked on every input, under ASan + UBSan:
//   - read_npy either returns a tensor or throws ath::FormatError naming the file: any other
//     exception, a crash, an out-of-bounds read or undefined behaviour is a finding;
//   - what it returns is a contiguous tensor of a numpy dtype whose element count is the product
//     of its dims;
//   - what it returns re-serializes (the writer's header, src/io/npy_header.h, and the tensor's
//     bytes) into a file that reads back to the same bytes: the writer never produces a file the
//     reader rejects.
#include <cstring>

#include "athanor/io/npy.h"
#include "fuzz_input.h"
#include "io/npy_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ath::fuzz::InputFile file, again;
  const std::string& path = file.write(data, size);
  ath::Tensor t;
  try {
    t = ath::read_npy(path);
  } catch (const ath::FormatError& e) {
    ath::fuzz::check(std::string(e.what()).find(path) != std::string::npos,
                     "error does not name the file:", e.what());
    return 0;
  }
  int64_t numel = 1;
  for (int64_t d : t.shape()) numel *= d;
  ath::fuzz::check(t.is_contiguous() && t.numel() == numel && t.dtype() != ath::kBFloat16,
                   "bad tensor from read_npy");

  const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  std::string bytes = ath::detail::format_npy_header(ath::npy_descr(t.dtype()), shape);
  if (t.nbytes() > 0) bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  const std::string& path2 =
      again.write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const ath::Tensor u = ath::read_npy(path2);
  ath::fuzz::check(
      u.dtype() == t.dtype() && u.shape() == t.shape() &&
          (t.nbytes() == 0 || std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) == 0),
      "the re-serialized array reads back differently");
  return 0;
}
