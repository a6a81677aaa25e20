// libFuzzer target for the ONNX loader and InferenceSession (mutated model files).
//
// Properties checked on every input, under ASan + UBSan:
//   - loading either succeeds or throws ath::FormatError naming the file (malformed protobuf,
//     dangling names, cycles, bad initializers, absurd shapes) or ath::NotImplementedError
//     (unsupported ops or types): any other exception, a crash, an out-of-bounds read or
//     undefined behaviour is a finding;
//   - a model that loads, with every input's shape known and small, runs twice (traced, then
//     replayed) on zeros, or throws an ath::Error: never anything else.
#include <memory>

#include "athanor/core/error.h"
#include "athanor/onnx/session.h"
#include "athanor/ops/creation.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ath::fuzz::InputFile file;
  const std::string& path = file.write(data, size);
  std::unique_ptr<ath::onnx::InferenceSession> session;
  try {
    session = std::make_unique<ath::onnx::InferenceSession>(path);
  } catch (const ath::FormatError& e) {
    ath::fuzz::check(std::string(e.what()).find(path) != std::string::npos,
                     "error does not name the file:", e.what());
    return 0;
  } catch (const ath::NotImplementedError&) {
    return 0;
  }
  std::vector<std::pair<std::string, ath::Tensor>> inputs;
  int64_t total = 0;
  for (const auto& in : session->inputs()) {
    if (!in.rank_known) return 0;
    ath::Shape shape;
    for (int64_t d : in.dims) shape.push_back(d < 0 ? 1 : d);
    int64_t n = 1;
    for (int64_t d : shape) n = d > 4096 ? 4097 : n * d;
    total += n;
    if (n > 4096 || total > 4096) return 0;
    inputs.emplace_back(in.name, ath::zeros(shape, in.dtype));
  }
  try {
    session->run(inputs);
    session->run(inputs);
  } catch (const ath::Error&) {
  }
  return 0;
}
