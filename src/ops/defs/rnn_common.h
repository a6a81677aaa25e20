// Shape and dtype checks shared by the recurrent ops (rnn_cells.cpp, rnn_sequence.cpp).
#pragma once

#include <string_view>

#include "athanor/core/error.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/tensor/tensor.h"

namespace ath::detail {

// Every operand of a recurrent op has the first operand's floating dtype: the layers keep
// their parameters and inputs in one dtype, and a silent conversion per step would cost more
// than the step.
inline void check_rnn_dtypes(std::span<const Tensor> in, std::initializer_list<const char*> names) {
  const DType t = in[0].dtype();
  ATH_CHECK(is_floating(t), DTypeError, "expected floating tensors, got {} {}", dtype_name(t),
            *names.begin());
  auto name = names.begin();
  for (const Tensor& x : in) {
    ATH_CHECK(x.dtype() == t, DTypeError, "{} is {} but {} is {}: all operands need one dtype",
              *name, dtype_name(x.dtype()), *names.begin(), dtype_name(t));
    ++name;
  }
}

inline void check_rnn_shape(const Tensor& t, const Shape& want, const char* name) {
  ATH_CHECK(t.shape() == want, ShapeError, "expected {} of shape {}, got {}", name, to_string(want),
            to_string(t.shape()));
}

// The backward ops compute first-order gradients with fused kernels that record nothing.
inline void refuse_double_backward() {
  ATH_CHECK(!GradMode::is_enabled(), NotImplementedError,
            "double backward (create_graph=true) is not supported: the fused backward computes "
            "first-order gradients only");
}

}  // namespace ath::detail
