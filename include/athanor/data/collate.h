// Collation: turning the samples of one batch into one Batch.
//
// The default collate stacks along a new leading dim, field by field:
// - Tensor -> TensorList{stacked} (shape [B, ...]);
// - TensorList / std::pair / std::tuple of Tensors and scalars -> TensorList, one entry per
//   field (int64_t and other integers -> int64 [B], float -> float32 [B], double -> float64 [B],
//   bool -> bool [B]);
// - a scalar -> TensorList{[B]};
// - a struct with `auto fields() { return std::tie(a, b); }` whose fields are Tensors -> the
//   same struct, each field stacked (batch.as<MyStruct>()).
// Stacking copies each sample once (one memcpy when contiguous) into a preallocated output and
// drops autograd history (data carries none). Samples must agree in shape and dtype per field
// (ShapeError / DTypeError naming the sample and field otherwise).
//
// A user collate is any callable taking std::vector<Sample>&&; if it returns a Batch that is
// used as is, otherwise its result is wrapped as Batch(result, number of samples):
//
//   using Sample = std::pair<Tensor, int64_t>;   // (image, label)
//   std::vector<Sample> samples{{rand({1, 28, 28}), 3}, {rand({1, 28, 28}), 7}};
//   data::Batch b = data::default_collate(std::vector<Sample>(samples));
//   assert(b[0].shape() == Shape({2, 1, 28, 28}) && b[1].dtype() == kInt64);  // {images, labels}
//   struct MyBatch { std::vector<int64_t> labels; };
//   data::CollateFn<Sample> collate = [](std::vector<Sample>&& s) {   // LoaderOptions::collate
//     MyBatch m;
//     for (auto& [image, label] : s) m.labels.push_back(label);
//     return m;
//   };
//   assert(collate(std::move(samples)).as<MyBatch>().labels[1] == 7);   // Batch(MyBatch, 2)
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "athanor/data/batch.h"

namespace ath::data {

// Stacks same-shaped, same-dtype tensors along a new dim 0 (one copy each). `field` names the
// field in errors. ValueError for no samples.
Tensor stack_samples(const std::vector<Tensor>& samples, const std::string& field = "sample");
// Rows `indices` of t (along dim 0) stacked into a new contiguous tensor: index_select with a
// memcpy per row. IndexError naming `dataset` for an index out of range.
Tensor gather_rows(const Tensor& t, std::span<const int64_t> indices, const std::string& dataset);

namespace detail {
template <class T>
struct is_tuple_like : std::false_type {};
template <class... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class T>
concept HasFields = requires(T& t) {
  t.fields();
};

template <class T>
Tensor scalars_to_tensor(const std::vector<T>& values);

// Field values across samples -> one stacked tensor.
template <class S, class Get>
Tensor collate_leaf(std::vector<S>& samples, Get get, std::size_t field) {
  using L = std::remove_cvref_t<decltype(get(samples[0]))>;
  if constexpr (std::is_same_v<L, Tensor>) {
    std::vector<Tensor> parts;
    parts.reserve(samples.size());
    for (auto& s : samples) parts.push_back(std::move(get(s)));
    return stack_samples(parts, "field " + std::to_string(field));
  } else if constexpr (std::is_arithmetic_v<L>) {
    std::vector<L> values;
    values.reserve(samples.size());
    for (auto& s : samples) values.push_back(get(s));
    return scalars_to_tensor(values);
  } else {
    static_assert(sizeof(L) == 0,
                  "default collate: fields must be Tensors or arithmetic scalars; "
                  "pass a collate function for other types");
  }
}

Tensor scalars_to_tensor_i64(const std::vector<int64_t>& v);
Tensor scalars_to_tensor_f32(const std::vector<float>& v);
Tensor scalars_to_tensor_f64(const std::vector<double>& v);
Tensor scalars_to_tensor_bool(const std::vector<bool>& v);

template <class T>
Tensor scalars_to_tensor(const std::vector<T>& values) {
  if constexpr (std::is_same_v<T, bool>) {
    return scalars_to_tensor_bool(values);
  } else if constexpr (std::is_integral_v<T>) {
    return scalars_to_tensor_i64(std::vector<int64_t>(values.begin(), values.end()));
  } else if constexpr (std::is_same_v<T, float>) {
    return scalars_to_tensor_f32(values);
  } else {
    return scalars_to_tensor_f64(std::vector<double>(values.begin(), values.end()));
  }
}
}  // namespace detail

// The default collate (see the top of this file).
template <class S>
Batch default_collate(std::vector<S>&& samples) {
  const auto n = static_cast<int64_t>(samples.size());
  if constexpr (std::is_same_v<S, Tensor>) {
    return Batch(TensorList{stack_samples(samples)}, n);
  } else if constexpr (std::is_same_v<S, TensorList>) {
    ATH_CHECK(!samples.empty(), ValueError, "default collate: no samples");
    const std::size_t fields = samples[0].size();
    for (std::size_t i = 1; i < samples.size(); ++i) {
      ATH_CHECK(samples[i].size() == fields, ShapeError,
                "default collate: sample {} has {} tensors but sample 0 has {}", i,
                samples[i].size(), fields);
    }
    TensorList out(fields);
    for (std::size_t f = 0; f < fields; ++f) {
      out[f] = detail::collate_leaf(
          samples, [f](TensorList& s) -> Tensor& { return s[f]; }, f);
    }
    return Batch(std::move(out), n);
  } else if constexpr (detail::is_tuple_like<S>::value) {
    constexpr std::size_t N = std::tuple_size_v<S>;
    TensorList out(N);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((out[I] = detail::collate_leaf(
            samples, [](S & s) -> auto& { return std::get<I>(s); }, I)),
       ...);
    }
    (std::make_index_sequence<N>{});
    return Batch(std::move(out), n);
  } else if constexpr (std::is_arithmetic_v<S>) {
    return Batch(TensorList{detail::scalars_to_tensor(samples)}, n);
  } else if constexpr (detail::HasFields<S>) {
    ATH_CHECK(!samples.empty(), ValueError, "default collate: no samples");
    S out{};
    using Fields = decltype(out.fields());
    constexpr std::size_t N = std::tuple_size_v<Fields>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto dst = out.fields();
      static_assert(
          (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, Fields>>, Tensor> && ...),
          "default collate of a struct: every field in fields() must be a Tensor");
      ((std::get<I>(dst) = detail::collate_leaf(
            samples, [](S& s) -> Tensor& { return std::get<I>(s.fields()); }, I)),
       ...);
    }
    (std::make_index_sequence<N>{});
    return Batch(std::move(out), n);
  } else {
    static_assert(sizeof(S) == 0,
                  "default collate: unsupported sample type; give the loader a collate function");
  }
}

// A collate function for samples of type S: empty (the default collate) or a user callable.
template <class S>
class CollateFn {
 public:
  CollateFn() = default;
  template <class F>
  requires std::invocable<F&, std::vector<S> &&> &&
      (!std::is_same_v<std::remove_cvref_t<F>, CollateFn>)
          CollateFn(F f) {  // NOLINT: implicit, so `.collate = [](...) {...}` works
    using R = std::invoke_result_t<F&, std::vector<S>&&>;
    if constexpr (std::is_same_v<std::remove_cvref_t<R>, Batch>) {
      fn_ = std::move(f);
    } else {
      fn_ = [f = std::move(f)](std::vector<S>&& samples) mutable {
        const auto n = static_cast<int64_t>(samples.size());
        return Batch(f(std::move(samples)), n);
      };
    }
  }

  bool is_default() const { return !fn_; }
  Batch operator()(std::vector<S>&& samples) const {
    return fn_ ? fn_(std::move(samples)) : default_collate(std::move(samples));
  }

 private:
  std::function<Batch(std::vector<S>&&)> fn_;
};

}  // namespace ath::data
