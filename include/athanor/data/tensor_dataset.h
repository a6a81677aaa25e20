// TensorDataset: samples are rows of N tensors that share their first dim (torch's TensorDataset).
//
//   Tensor images = rand({8, 1, 28, 28}), labels = randint(0, 10, {8});
//   data::TensorDataset ds({images, labels});   // images [N, 1, 28, 28], labels [N]
//   data::TensorList s = ds.get(3);              // {images[3], labels[3]} (views, no copy)
//   assert(ds.size() == 8 && s[0].shape() == Shape({1, 28, 28}) && s[1].dim() == 0);
//
// Its get_batch is one row gather per tensor, so a DataLoader with the default collate builds a
// batch with a memcpy per row and no per-sample tensors.
#pragma once

#include "athanor/data/dataset.h"

namespace ath::data {

class TensorDataset : public Dataset<TensorList> {
 public:
  // ValueError for no tensors or an undefined one; ShapeError for a 0-dim tensor or first dims
  // that disagree (naming each tensor's shape).
  explicit TensorDataset(TensorList tensors);

  int64_t size() const override { return size_; }
  TensorList get(int64_t index) const override;
  std::string name() const override { return "TensorDataset"; }
  std::optional<Batch> get_batch(std::span<const int64_t> indices) const override;

  const TensorList& tensors() const { return tensors_; }

 private:
  TensorList tensors_;
  int64_t size_ = 0;
};

}  // namespace ath::data
