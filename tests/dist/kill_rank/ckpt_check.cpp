// athanor_ckpt_check: are these checkpoints whole, and do two of them hold the same tensors?
// kill_rank_fit.sh runs it after SIGKILLing a rank mid-fit, and after resuming.
//
//   athanor_ckpt_check PATH          every file under PATH (a file, or a directory searched
//                                    recursively) must load with athanor's own checkpoint
//                                    loader: complete, CRCs right; no other file may be there
//                                    (a temporary a killed writer left)
//   athanor_ckpt_check A B           A and B must both load, and hold the same tensors (names,
//                                    dtypes, shapes, bytes) and the same epoch and global step
//
// It prints one line per file and exits 0 if all is well, 1 otherwise (2: bad usage). The JSON
// metadata beyond epoch and global step is not compared (it holds paths and callback states).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/tensor/tensor.h"
#include "athanor/train/checkpoint.h"

namespace fs = std::filesystem;
using ath::train::CheckpointFile;

namespace {

// The checkpoint at `path`, or nothing (with the loader's reason printed).
std::optional<CheckpointFile> load(const std::string& path) {
  try {
    CheckpointFile ck = ath::train::load_checkpoint(path);
    std::printf("ok      %s: %zu tensors, epoch %s, global_step %s\n", path.c_str(),
                ck.tensors.size(), ck.meta.value("epoch", nlohmann::json()).dump().c_str(),
                ck.meta.value("global_step", nlohmann::json()).dump().c_str());
    return ck;
  } catch (const std::exception& e) {
    std::printf("BROKEN  %s: %s\n", path.c_str(), e.what());
    return std::nullopt;
  }
}

bool check_all(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return load(root).has_value();
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(it->path().string());
  }
  if (ec) {
    std::printf("BROKEN  %s: cannot list: %s\n", root.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(files.begin(), files.end());
  bool ok = true;
  for (const std::string& f : files) {
    if (fs::path(f).extension() != ".ckpt") {
      std::printf("LEFT    %s: not a checkpoint (a temporary left by a killed writer?)\n",
                  f.c_str());
      ok = false;
    } else {
      ok = load(f).has_value() && ok;
    }
  }
  std::printf("%zu file(s) under %s\n", files.size(), root.c_str());
  return ok;
}

bool same_bytes(const ath::Tensor& a, const ath::Tensor& b) {
  const ath::Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == cb.nbytes() && std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

bool compare(const std::string& pa, const std::string& pb) {
  const std::optional<CheckpointFile> a = load(pa), b = load(pb);
  if (!a || !b) return false;
  int differences = 0;
  auto differ = [&](const std::string& what) {
    if (++differences <= 10) std::printf("DIFFER  %s\n", what.c_str());
  };
  for (const char* key : {"epoch", "global_step"}) {
    if (a->meta.value(key, nlohmann::json()) != b->meta.value(key, nlohmann::json()))
      differ(std::string(key) + ": " + a->meta.value(key, nlohmann::json()).dump() + " vs " +
             b->meta.value(key, nlohmann::json()).dump());
  }
  for (const auto& [name, ta] : a->tensors) {
    if (!b->tensors.contains(name)) {
      differ(name + ": only in the first");
    } else if (const ath::Tensor& tb = b->tensors.at(name);
               ta.dtype() != tb.dtype() || ta.shape() != tb.shape()) {
      differ(name + ": dtype or shape");
    } else if (!same_bytes(ta, tb)) {
      differ(name + ": values");
    }
  }
  for (const auto& [name, tb] : b->tensors) {
    if (!a->tensors.contains(name)) differ(name + ": only in the second");
  }
  if (differences > 0) {
    std::printf("%d difference(s) between %s and %s\n", differences, pa.c_str(), pb.c_str());
    return false;
  }
  std::printf("identical: %zu tensors, bit for bit\n", a->tensors.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: %s PATH | %s CHECKPOINT_A CHECKPOINT_B\n", argv[0], argv[0]);
    return 2;
  }
  const bool ok = argc == 2 ? check_all(argv[1]) : compare(argv[1], argv[2]);
  return ok ? 0 : 1;
}
