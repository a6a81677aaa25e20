#include "athanor/data/tensor_dataset.h"

#include "athanor/data/collate.h"

namespace ath::data {

TensorDataset::TensorDataset(TensorList tensors) : tensors_(std::move(tensors)) {
  ATH_CHECK(!tensors_.empty(), ValueError, "TensorDataset: needs at least one tensor");
  std::string shapes;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    ATH_CHECK(tensors_[i].defined(), ValueError, "TensorDataset: tensor {} is undefined", i);
    ATH_CHECK(tensors_[i].dim() >= 1, ShapeError,
              "TensorDataset: tensor {} is 0-dim; every tensor needs a first (sample) dim", i);
    shapes += (i ? ", " : "") + to_string(tensors_[i].shape());
  }
  // Data carries no autograd history: samples must not pull a graph into every batch.
  for (auto& t : tensors_) t = t.detach();
  size_ = tensors_[0].size(0);
  for (std::size_t i = 1; i < tensors_.size(); ++i) {
    ATH_CHECK(tensors_[i].size(0) == size_, ShapeError,
              "TensorDataset: tensors must share their first dim, got shapes {}", shapes);
  }
}

TensorList TensorDataset::get(int64_t index) const {
  check_index(index, size_, name());
  TensorList out;
  out.reserve(tensors_.size());
  for (const auto& t : tensors_) out.push_back(t.select(0, index));
  return out;
}

std::optional<Batch> TensorDataset::get_batch(std::span<const int64_t> indices) const {
  TensorList out;
  out.reserve(tensors_.size());
  for (const auto& t : tensors_) out.push_back(gather_rows(t, indices, name()));
  return Batch(std::move(out), static_cast<int64_t>(indices.size()));
}

}  // namespace ath::data
