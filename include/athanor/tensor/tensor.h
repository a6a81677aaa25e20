// Tensor: a cheap, refcounted handle to a TensorImpl (storage + sizes/strides/offset + dtype +
// autograd metadata). Copying a Tensor shares the data, like a PyTorch tensor in Python.
//
//   Tensor x = randn({2, 3}).requires_grad_();
//   Tensor y = (x * x).sum();
//   y.backward();
//   assert(all(eq(x.grad(), 2 * x)).item<bool>());   // x.grad() is 2 * x
//
// This header declares the op methods (x.sum(), x.view(...)) but the ops layer defines them
// (as ATen does with TensorBody.h): the tensor layer itself only manages metadata and memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "athanor/core/device.h"
#include "athanor/core/dtype.h"
#include "athanor/core/scalar.h"
#include "athanor/core/shape.h"
#include "athanor/tensor/storage.h"

namespace ath {

struct AutogradMeta;
class Node;
class Tensor;

struct TensorImpl {
  TensorImpl(std::shared_ptr<StorageImpl> storage, Shape sizes, Strides strides, int64_t offset,
             DType dtype);
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  // Recomputes is_contiguous after sizes/strides change.
  void refresh_contiguity();

  std::shared_ptr<StorageImpl> storage;
  Shape sizes;
  Strides strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  bool is_contiguous = true;
  std::unique_ptr<AutogradMeta> autograd;  // null until autograd touches the tensor
};

using GradHook = std::function<Tensor(const Tensor&)>;  // returns a replacement grad or {}
// Called with the parameter itself once its gradient has been accumulated into grad().
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->sizes; }
  const Shape& sizes() const { return impl_->sizes; }
  const Strides& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const { return impl_->offset; }
  int64_t numel() const { return ath::numel(impl_->sizes); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  std::size_t element_size() const { return ath::element_size(impl_->dtype); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
  bool is_contiguous() const { return impl_->is_contiguous; }
  bool is_floating_point() const { return is_floating(impl_->dtype); }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  bool shares_storage(const Tensor& o) const { return impl_->storage == o.impl_->storage; }

  // ---- raw data -------------------------------------------------------------------------
  // Pointer to element [0, 0, ...] (storage base + offset). Strides apply from there.
  void* data_ptr() const;
  template <class T>
  T* data() const {
    ATH_CHECK(cpp_to_dtype<T>() == dtype(), DTypeError, "data<{}>() on a {} tensor",
              dtype_name(cpp_to_dtype<T>()), dtype_name(dtype()));
    return static_cast<T*>(data_ptr());
  }
  // The single value of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  Scalar item() const;
  // A contiguous copy of the elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // Marks an in-place write (kernels writing `out` tensors call this via the dispatcher).
  void bump_version() const { impl_->storage->version.fetch_add(1, std::memory_order_relaxed); }
  uint32_t version() const { return impl_->storage->version.load(std::memory_order_relaxed); }

  // ---- autograd (defined in the autograd layer) ----------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool flag = true);
  const Tensor& requires_grad_(bool flag = true) const;
  bool is_leaf() const;
  Tensor grad() const;  // undefined until a backward pass reaches this tensor
  void set_grad(const Tensor& g) const;
  std::shared_ptr<Node> grad_fn() const;
  uint32_t output_nr() const;
  void retain_grad() const;
  bool retains_grad() const;
  // Registers a hook called with this tensor's gradient when it is computed; returning a defined
  // tensor replaces the gradient. Returns a handle for remove_hook.
  int64_t register_hook(GradHook hook) const;
  // Registers a hook on a leaf called with the leaf once backward has accumulated into its
  // grad() (PyTorch's register_post_accumulate_grad_hook): where a data-parallel wrapper starts
  // reducing a gradient, or an optimizer steps per parameter. Removed with remove_hook.
  int64_t register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const;
  void remove_hook(int64_t handle) const;
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;
  Tensor detach() const;  // shares data, no history
  Tensor& detach_();
  // Makes this tensor (and every handle sharing it) use new_data's storage, shape and dtype,
  // keeping its autograd identity (requires_grad, hooks): PyTorch's `t.data = new_data`.
  // Module::to(dtype) converts parameters with it so that layers' handles stay valid.
  void set_data(const Tensor& new_data) const;

  // ---- views (no copy; share storage) -------------------------------------------------
  Tensor view(const Shape& shape) const;     // one dim may be -1
  Tensor reshape(const Shape& shape) const;  // a view when strides allow, else a copy
  Tensor permute(const DimList& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;   // 2-D transpose
  Tensor mT() const;  // transpose of the last two dims
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start = {}, std::optional<int64_t> end = {},
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(const Shape& shape) const;  // -1 keeps a size
  Tensor expand_as(const Tensor& other) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor as_strided(const Shape& size, const Strides& stride,
                    std::optional<int64_t> storage_offset = {}) const;

  // ---- copies and conversion -----------------------------------------------------------
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;      // same tensor when the dtype already matches
  Tensor& copy_(const Tensor& src);  // broadcasts src to this shape, converts dtype
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();

  // ---- arithmetic (a representative set; every op is also a free function) ---------------
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor& div_(const Tensor& other);
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor pow(const Scalar& exponent) const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor sum() const;
  Tensor sum(const DimList& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const DimList& dims, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;

  // PyTorch-style printout (precision 4, line width 80, edges of 3 above 1000 elements), with
  // the shape and dtype always appended, then grad_fn or requires_grad as torch does:
  //   tensor([[ 1.0000, -2.5000],
  //           [ 3.0000,  4.0000]], shape=[2, 2], dtype=float32)
  //   tensor([1, 2, 3], shape=[3], dtype=int64, requires_grad=True)
  //   tensor(0.5000, shape=[], dtype=float32, grad_fn=<MulBackward>)
  //   tensor(undefined)
  // grad_fn is the op's name in PascalCase + "Backward". Suffixes wrap onto a new line past 80
  // columns, as in torch.
  std::string to_string() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);

// Allocates an uninitialised contiguous tensor from `device`'s allocator (core/allocator.h).
Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = kCPU);
// A tensor with the given sizes/strides/offset over existing storage (no checks on bounds:
// callers that take user-provided strides validate them first, see as_strided).
Tensor make_view(const Tensor& base, const Shape& sizes, const Strides& strides, int64_t offset);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

namespace detail {
// Told of every host read of a tensor's values (item(), to_vector()) while installed: how a graph
// tracer learns that the step it records branches on data a replay would not read again.
// `what` names the read. Null (the default) costs one thread-local load per read.
using HostReadObserver = void (*)(const char* what);
extern thread_local HostReadObserver t_host_read_observer;
}  // namespace detail

// ---- template definitions ---------------------------------------------------------------
template <class T>
T Tensor::item() const {
  if (detail::t_host_read_observer != nullptr) [[unlikely]]
    detail::t_host_read_observer("item()");
  ATH_CHECK(numel() == 1, ValueError, "item(): expected a tensor with one element, got shape {}",
            ath::to_string(shape()));
  ATH_CHECK(device().type == DeviceType::CPU, NotImplementedError,
            "item(): the tensor is on {}; reading it on the host needs a copy to the CPU",
            ath::to_string(device()));
  return dispatch_dtype(dtype(), [&]<class S>() -> T {
    S v = *static_cast<const S*>(data_ptr());
    if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
      return static_cast<T>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(v));
    } else {
      return static_cast<T>(v);
    }
  });
}

}  // namespace ath
