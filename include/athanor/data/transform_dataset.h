// TransformDataset / map: a dataset whose samples are fn(base sample).
//
//   #include "athanor/data/tensor_dataset.h"
//   #include "athanor/data/transforms.h"
//   Tensor images = rand({8, 1, 28, 28}), labels = randint(0, 10, {8});
//   auto train = std::make_shared<data::TensorDataset>(data::TensorList{images, labels});
//   auto augmented = data::map(train, [t = data::RandomHorizontalFlip(0.5)](data::TensorList s) {
//     s[0] = t(s[0]);      // transform the image, keep the label
//     return s;
//   });
//   assert(augmented->size() == 8 && augmented->get(0)[0].shape() == Shape({1, 28, 28}));
//
// fn runs inside get(), on worker threads, with data::sample_generator() set for the sample: a
// random fn stays reproducible. TransformDataset has no get_batch fast path (fn sees each sample).
#pragma once

#include <functional>
#include <memory>
#include <type_traits>

#include "athanor/data/dataset.h"

namespace ath::data {

template <class In, class Out>
class TransformDataset : public Dataset<Out> {
 public:
  TransformDataset(std::shared_ptr<const Dataset<In>> base, std::function<Out(In)> fn)
      : base_(std::move(base)), fn_(std::move(fn)) {
    ATH_CHECK(base_ != nullptr, ValueError, "TransformDataset: null dataset");
    ATH_CHECK(static_cast<bool>(fn_), ValueError, "TransformDataset: empty function");
  }

  int64_t size() const override { return base_->size(); }
  Out get(int64_t index) const override { return fn_(base_->get(index)); }
  std::string name() const override { return "TransformDataset(" + base_->name() + ")"; }

 private:
  std::shared_ptr<const Dataset<In>> base_;
  std::function<Out(In)> fn_;
};

template <class D, class F>
auto map(std::shared_ptr<D> base, F fn) {
  using In = typename D::Sample;
  using Out = std::remove_cvref_t<std::invoke_result_t<const F&, In>>;
  std::shared_ptr<const Dataset<In>> b = std::move(base);
  return std::make_shared<TransformDataset<In, Out>>(std::move(b), std::move(fn));
}

}  // namespace ath::data
