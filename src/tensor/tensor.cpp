#include "athanor/tensor/tensor.h"

#include <atomic>

#include "athanor/tensor/autograd_meta.h"

namespace ath {

TensorImpl::TensorImpl(std::shared_ptr<StorageImpl> storage_, Shape sizes_, Strides strides_,
                       int64_t offset_, DType dtype_)
    : storage(std::move(storage_)),
      sizes(sizes_),
      strides(strides_),
      offset(offset_),
      dtype(dtype_) {
  refresh_contiguity();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::refresh_contiguity() {
  int64_t expected = 1;
  is_contiguous = true;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;  // a size-1 dim's stride never matters
    if (strides[i] != expected) {
      is_contiguous = false;
      break;
    }
    expected *= sizes[i];
  }
  if (ath::numel(sizes) == 0) is_contiguous = true;
}

int64_t Tensor::size(int64_t d) const { return impl_->sizes[normalize_dim(d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[normalize_dim(d, dim())]; }

void* Tensor::data_ptr() const {
  return static_cast<char*>(impl_->storage->data) +
         impl_->offset * static_cast<int64_t>(ath::element_size(impl_->dtype));
}

namespace detail {
thread_local HostReadObserver t_host_read_observer = nullptr;
}

Scalar Tensor::item() const {
  if (is_floating_point()) return Scalar(item<double>());
  if (dtype() == kBool) return Scalar(item<bool>());
  return Scalar(item<int64_t>());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if (detail::t_host_read_observer != nullptr) [[unlikely]]
    detail::t_host_read_observer("to_vector()");
  ATH_CHECK(device().type == DeviceType::CPU, NotImplementedError,
            "to_vector(): the tensor is on {}; reading it on the host needs a copy to the CPU",
            ath::to_string(device()));
  std::vector<T> out;
  int64_t n = numel();
  out.reserve(static_cast<std::size_t>(n));
  if (n == 0) return out;
  dispatch_dtype(dtype(), [&]<class S>() {
    const S* base = static_cast<const S*>(data_ptr());
    const int64_t nd = dim();
    Shape index(static_cast<std::size_t>(nd), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (int64_t d = 0; d < nd; ++d) off += index[d] * impl_->strides[d];
      S v = base[off];
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        out.push_back(T(static_cast<float>(v)));
      } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
        out.push_back(static_cast<T>(static_cast<float>(v)));
      } else {
        out.push_back(static_cast<T>(v));
      }
      for (int64_t d = nd - 1; d >= 0; --d) {  // odometer increment
        if (++index[d] < impl_->sizes[d]) break;
        index[d] = 0;
      }
    }
  });
  return out;
}

template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<Half> Tensor::to_vector<Half>() const;
template std::vector<BFloat16> Tensor::to_vector<BFloat16>() const;

Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) {
    ATH_CHECK(s >= 0, ShapeError, "empty: negative size in shape {}", to_string(shape));
  }
  std::size_t bytes = static_cast<std::size_t>(ath::numel(shape)) * element_size(dtype);
  return Tensor(std::make_shared<TensorImpl>(StorageImpl::allocate(bytes, device), shape,
                                             contiguous_strides(shape), 0, dtype));
}

Tensor make_view(const Tensor& base, const Shape& sizes, const Strides& strides, int64_t offset) {
  return Tensor(
      std::make_shared<TensorImpl>(base.impl()->storage, sizes, strides, offset, base.dtype()));
}

// ---- autograd data (the engine and the dispatcher build on these) ---------------------------

Node::Node() {
  static std::atomic<uint64_t> counter{0};
  sequence_nr = counter.fetch_add(1, std::memory_order_relaxed);
}

AutogradMeta& autograd_meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_unique<AutogradMeta>();
  return *m;
}

int64_t next_hook_id() {
  static std::atomic<int64_t> id{0};
  return id.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace ath
