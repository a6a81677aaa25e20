// Stacking for the default collate and the datasets' gather fast paths. Memory contract: reads
// each sample (or row) once, writes each output byte once into a fresh contiguous tensor; no
// aliasing with the inputs. Plain memcpy, no op dispatch: a 128 x 784 float batch costs one
// allocation and 128 copies of 3 KB.
#include "athanor/data/collate.h"

#include <cstring>

#include "athanor/data/dataset.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"

namespace ath::data {
namespace {
Shape with_leading(int64_t n, const Shape& rest) {
  Shape s;
  s.push_back(n);
  for (int64_t d : rest) s.push_back(d);
  return s;
}

// dst (contiguous, nbytes) <- src, in row-major order.
void copy_into(char* dst, const Tensor& src, std::size_t nbytes) {
  if (nbytes == 0) return;
  if (src.is_contiguous()) {
    std::memcpy(dst, src.data_ptr(), nbytes);
  } else {
    Tensor view = from_blob(dst, src.shape(), src.dtype());
    view.copy_(src.detach());
  }
}
}  // namespace

Tensor stack_samples(const std::vector<Tensor>& samples, const std::string& field) {
  ATH_CHECK(!samples.empty(), ValueError, "collate: no samples to stack ({})", field);
  const Tensor& first = samples[0];
  ATH_CHECK(first.defined(), ValueError, "collate: {} of sample 0 is an undefined tensor", field);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const Tensor& s = samples[i];
    ATH_CHECK(s.defined(), ValueError, "collate: {} of sample {} is an undefined tensor", field, i);
    ATH_CHECK(s.shape() == first.shape(), ShapeError,
              "collate: {} of sample {} has shape {} but sample 0 has shape {}", field, i,
              s.shape(), first.shape());
    ATH_CHECK(s.dtype() == first.dtype(), DTypeError,
              "collate: {} of sample {} has dtype {} but sample 0 has dtype {}", field, i,
              dtype_name(s.dtype()), dtype_name(first.dtype()));
  }
  Tensor out =
      empty(with_leading(static_cast<int64_t>(samples.size()), first.shape()), first.dtype());
  const std::size_t nbytes = first.nbytes();
  auto* dst = static_cast<char*>(out.data_ptr());
  for (std::size_t i = 0; i < samples.size(); ++i) copy_into(dst + i * nbytes, samples[i], nbytes);
  return out;
}

Tensor gather_rows(const Tensor& t, std::span<const int64_t> indices, const std::string& dataset) {
  ATH_CHECK(t.dim() >= 1, ShapeError, "{}: cannot gather rows of a 0-dim tensor", dataset);
  const int64_t n = t.size(0);
  Shape rest(t.shape().begin() + 1, t.shape().end());
  Tensor out = empty(with_leading(static_cast<int64_t>(indices.size()), rest), t.dtype());
  const std::size_t row_bytes = static_cast<std::size_t>(numel(rest)) * t.element_size();
  auto* dst = static_cast<char*>(out.data_ptr());
  const bool contiguous = t.is_contiguous();
  const auto* src = contiguous ? static_cast<const char*>(t.data_ptr()) : nullptr;
  for (std::size_t j = 0; j < indices.size(); ++j) {
    const int64_t i = indices[j];
    check_index(i, n, dataset);
    if (contiguous) {
      std::memcpy(dst + j * row_bytes, src + static_cast<std::size_t>(i) * row_bytes, row_bytes);
    } else {
      copy_into(dst + j * row_bytes, t.select(0, i), row_bytes);
    }
  }
  return out;
}

namespace detail {
template <class T>
Tensor vector_tensor(const std::vector<T>& v, DType dtype) {
  Tensor out = empty({static_cast<int64_t>(v.size())}, dtype);
  if (!v.empty()) std::memcpy(out.data_ptr(), v.data(), v.size() * sizeof(T));
  return out;
}
Tensor scalars_to_tensor_i64(const std::vector<int64_t>& v) { return vector_tensor(v, kInt64); }
Tensor scalars_to_tensor_f32(const std::vector<float>& v) { return vector_tensor(v, kFloat32); }
Tensor scalars_to_tensor_f64(const std::vector<double>& v) { return vector_tensor(v, kFloat64); }
Tensor scalars_to_tensor_bool(const std::vector<bool>& v) {
  Tensor out = empty({static_cast<int64_t>(v.size())}, kBool);
  auto* p = static_cast<uint8_t*>(out.data_ptr());
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i] ? 1 : 0;
  return out;
}
}  // namespace detail

}  // namespace ath::data
