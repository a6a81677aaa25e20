// Batch: one collated batch of any type, type-erased so the Trainer, callbacks and loggers can
// pass it around without knowing what the user's collate function builds.
//
//   Tensor images = rand({64, 1, 28, 28}), labels = randint(0, 10, {64});
//   data::Batch b(data::TensorList{images, labels}, 64);  // what the default collate makes
//   const Tensor& x = b[0];                              // tensor-list batches index directly
//   struct MyBatch { Tensor images, labels; };
//   data::Batch c(MyBatch{images, labels}, /*size=*/64);
//   auto& mine = c.as<MyBatch>();                        // any other type by its name
//   assert(b.size() == 64);                              // samples in the batch
//
// `size` is the number of samples collated, known to the loader whatever the batch type; the
// Trainer weights epoch means by it (Lightning has to guess it from the first tensor).
#pragma once

#include <any>
#include <cstdint>
#include <utility>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/tensor/tensor.h"

namespace ath::data {

using TensorList = std::vector<Tensor>;

class Batch {
 public:
  Batch() = default;
  template <class T>
  Batch(T value, int64_t size) : value_(std::move(value)), size_(size) {}

  bool has_value() const { return value_.has_value(); }
  int64_t size() const { return size_; }

  // The held value; DTypeError naming both types when the batch holds something else.
  template <class T>
  const T& as() const {
    const T* p = std::any_cast<T>(&value_);
    ATH_CHECK(p != nullptr, DTypeError, "Batch::as: the batch holds {}, not {}", held_type_name(),
              typeid(T).name());
    return *p;
  }
  template <class T>
  T& as() {
    return const_cast<T&>(std::as_const(*this).as<T>());
  }
  template <class T>
  bool holds() const {
    return std::any_cast<T>(&value_) != nullptr;
  }

  // Element i of a TensorList batch (the default collate of tuples/vectors of tensors).
  const Tensor& operator[](std::size_t i) const {
    const auto& list = as<TensorList>();
    ATH_CHECK(i < list.size(), IndexError, "Batch: index {} out of range for a batch of {} fields",
              i, list.size());
    return list[i];
  }

 private:
  const char* held_type_name() const {
    return value_.has_value() ? value_.type().name() : "nothing";
  }

  std::any value_;
  int64_t size_ = 0;
};

}  // namespace ath::data
