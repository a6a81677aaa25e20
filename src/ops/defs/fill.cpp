// fill_ and the constant factories built on it.
#include "athanor/ops/fill.h"

#include <cstring>

#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"

namespace ath {

const Op<FillAttrs>& op_fill() {
  static const auto& op = define_op<FillAttrs>({
      .name = "fill",
      .kind = OpKind::Pointwise,
      .inplace = InplacePolicy::OverInput0,
      .promote_inputs = 0,
      .infer =
          [](TensorSpan in, const FillAttrs&) {
            return OutputSpec{{{in[0].shape(), in[0].dtype()}}, in[0].dtype()};
          },
      // The result does not depend on the input's values: its gradient is zero (undefined).
      .backward = [](BackwardContext&, const FillAttrs&) {},
  });
  return op;
}

Tensor& Tensor::fill_(const Scalar& value) {
  Tensor in[1] = {*this};
  return call_inplace(op_fill(), *this, TensorSpan(in), FillAttrs{.value = value});
}

Tensor& Tensor::zero_() { return fill_(0); }

namespace {
DType scalar_default_dtype(const Scalar& v) {
  switch (v.kind()) {
    case ScalarKind::Bool:
      return kBool;
    case ScalarKind::Integral:
      return kInt64;
    case ScalarKind::Floating:
      return kFloat32;
  }
  return kFloat32;
}
}  // namespace

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.type == DeviceType::CPU) {
    std::memset(t.data_ptr(), 0, t.nbytes());  // all-zero bits is 0 for every dtype
  } else {
    NoGradGuard no_grad;
    t.fill_(0);
  }
  return t;
}

Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}

Tensor full(const Shape& shape, const Scalar& value, std::optional<DType> dtype, Device device) {
  Tensor t = empty(shape, dtype.value_or(scalar_default_dtype(value)), device);
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor empty_like(const Tensor& t, std::optional<DType> dtype) {
  return empty(t.shape(), dtype.value_or(t.dtype()), t.device());
}
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype) {
  return zeros(t.shape(), dtype.value_or(t.dtype()), t.device());
}
Tensor ones_like(const Tensor& t, std::optional<DType> dtype) {
  return full(t.shape(), 1, dtype.value_or(t.dtype()), t.device());
}
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<DType> dtype) {
  return full(t.shape(), value, dtype.value_or(t.dtype()), t.device());
}

Tensor scalar_tensor(const Scalar& value, std::optional<DType> dtype) {
  return full(Shape{}, value, dtype);
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& s) {
  ATH_CHECK(numel(s) == static_cast<int64_t>(values.size()), ShapeError,
            "from_vector: {} values don't fill shape {}", values.size(), to_string(s));
  Tensor t = empty(s, cpp_to_dtype<T>());
  T* out = static_cast<T*>(t.data_ptr());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];  // vector<bool> has no data()
  return t;
}
template Tensor from_vector<bool>(const std::vector<bool>&, const Shape&);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, const Shape&);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Shape&);
template Tensor from_vector<float>(const std::vector<float>&, const Shape&);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&);
template Tensor from_vector<Half>(const std::vector<Half>&, const Shape&);
template Tensor from_vector<BFloat16>(const std::vector<BFloat16>&, const Shape&);

Tensor from_blob(void* data, const Shape& shape, DType dtype, std::function<void(void*)> deleter) {
  for (int64_t s : shape) {
    ATH_CHECK(s >= 0, ShapeError, "from_blob: negative size in shape {}", to_string(shape));
  }
  ATH_CHECK(data != nullptr || numel(shape) == 0, ValueError, "from_blob: null data pointer");
  std::size_t bytes = static_cast<std::size_t>(numel(shape)) * element_size(dtype);
  return Tensor(std::make_shared<TensorImpl>(StorageImpl::wrap(data, bytes, std::move(deleter)),
                                             shape, contiguous_strides(shape), 0, dtype));
}

Tensor from_blob_copy(const void* data, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  ATH_CHECK(data != nullptr || t.nbytes() == 0, ValueError, "from_blob_copy: null data pointer");
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), data, t.nbytes());
  return t;
}

}  // namespace ath
