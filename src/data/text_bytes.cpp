#include "athanor/data/text_bytes.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "athanor/io/regular_file.h"

namespace ath::data {

TextBytesDataset::TextBytesDataset(TextBytesOptions options)
    : seq_len_(options.seq_len), stride_(options.stride) {
  ATH_CHECK(!options.paths.empty(), ValueError, "TextBytesDataset: no paths");
  for (const auto& path : options.paths) {
    require_regular_file(path, "TextBytesDataset");
    std::ifstream in(path, std::ios::binary);
    ATH_CHECK(in.good(), IOError, "TextBytesDataset: cannot open '{}': {}", path,
              std::strerror(errno));
    bytes_.insert(bytes_.end(), std::istreambuf_iterator<char>(in),
                  std::istreambuf_iterator<char>());
    ATH_CHECK(!in.bad(), IOError, "TextBytesDataset: error reading '{}'", path);
  }
  init();
}

TextBytesDataset::TextBytesDataset(std::vector<uint8_t> bytes, int64_t seq_len, int64_t stride)
    : bytes_(std::move(bytes)), seq_len_(seq_len), stride_(stride) {
  init();
}

void TextBytesDataset::init() {
  if (stride_ == 0) stride_ = seq_len_;
  ATH_CHECK(seq_len_ >= 1, ValueError, "TextBytesDataset: seq_len must be >= 1, got {}", seq_len_);
  ATH_CHECK(stride_ >= 1, ValueError, "TextBytesDataset: stride must be >= 1, got {}", stride_);
  const auto total = static_cast<int64_t>(bytes_.size());
  count_ = total >= seq_len_ + 1 ? (total - seq_len_ - 1) / stride_ + 1 : 0;
}

namespace {
void widen(const uint8_t* src, int64_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
}  // namespace

std::pair<Tensor, Tensor> TextBytesDataset::get(int64_t index) const {
  check_index(index, count_, name());
  Tensor x = empty({seq_len_}, kInt64), y = empty({seq_len_}, kInt64);
  const uint8_t* s = bytes_.data() + index * stride_;
  widen(s, x.data<int64_t>(), seq_len_);
  widen(s + 1, y.data<int64_t>(), seq_len_);
  return {x, y};
}

std::optional<Batch> TextBytesDataset::get_batch(std::span<const int64_t> indices) const {
  const auto b = static_cast<int64_t>(indices.size());
  Tensor x = empty({b, seq_len_}, kInt64), y = empty({b, seq_len_}, kInt64);
  for (int64_t j = 0; j < b; ++j) {
    const int64_t i = indices[static_cast<std::size_t>(j)];
    check_index(i, count_, name());
    const uint8_t* s = bytes_.data() + i * stride_;
    widen(s, x.data<int64_t>() + j * seq_len_, seq_len_);
    widen(s + 1, y.data<int64_t>() + j * seq_len_, seq_len_);
  }
  return Batch(TensorList{x, y}, b);
}

}  // namespace ath::data
