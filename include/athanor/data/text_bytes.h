// TextBytesDataset: byte-level language modelling over one file or several concatenated.
//
//   #include <fstream>
//   std::ofstream("shakespeare.txt") << std::string(1000, 'a');   // any bytes: 1000 of them
//   data::TextBytesDataset text({.paths = {"shakespeare.txt"}, .seq_len = 128});
//   auto [x, y] = text.get(0);   // int64 [128] each: bytes [s, s+128) and [s+1, s+129)
//   assert(text.size() == 7 && x.shape() == Shape({128}));   // (1000 - 129) / 128 + 1 windows
//
// Window k starts at byte k * stride (stride defaults to seq_len: non-overlapping inputs); there
// are (total - seq_len - 1) / stride + 1 windows when total >= seq_len + 1, else none.
// get_batch gathers {x [B, seq_len], y [B, seq_len]} directly from the bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "athanor/data/dataset.h"

namespace ath::data {

struct TextBytesOptions {
  std::vector<std::string> paths = {};
  int64_t seq_len = 128;
  int64_t stride = 0;  // 0: seq_len
};

class TextBytesDataset : public Dataset<std::pair<Tensor, Tensor>> {
 public:
  // IOError naming a file that cannot be read; ValueError for no paths or seq_len/stride < 1.
  explicit TextBytesDataset(TextBytesOptions options);
  // The same over bytes already in memory.
  TextBytesDataset(std::vector<uint8_t> bytes, int64_t seq_len, int64_t stride = 0);

  int64_t size() const override { return count_; }
  std::pair<Tensor, Tensor> get(int64_t index) const override;
  std::string name() const override { return "TextBytesDataset"; }
  std::optional<Batch> get_batch(std::span<const int64_t> indices) const override;

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void init();

  std::vector<uint8_t> bytes_;
  int64_t seq_len_ = 0, stride_ = 0, count_ = 0;
};

}  // namespace ath::data
