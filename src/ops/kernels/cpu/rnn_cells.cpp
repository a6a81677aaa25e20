// CPU kernels for lstm_cell_pointwise, gru_cell_pointwise and their backward ops (float32,
// float64). The math is in rnn_cell_math.h; here each batch row is handed to it, rows split
// across threads.
//
// Memory contract: every kernel reads each input element once (non-contiguous inputs are first
// copied dense) and writes each output element once; outputs never alias inputs. Rows are
// independent, so results do not depend on the thread count.
#include "athanor/ops/rnn_cells.h"

#include "athanor/core/parallel.h"
#include "common/nn_common.h"
#include "common/register.h"
#include "rnn_cell_math.h"

namespace ath::kernels {
namespace {

template <class T>
const T* cptr(const Tensor& t) {
  return static_cast<const T*>(t.data_ptr());
}
template <class T>
T* mptr(Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

template <class T>
void lstm_cell_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor gates = dense(in[0]), c_prev = dense(in[1]);
  const int64_t B = c_prev.shape()[0], H = c_prev.shape()[1];
  const T *gp = cptr<T>(gates), *cp = cptr<T>(c_prev);
  T *hp = mptr<T>(out[0]), *cn = mptr<T>(out[1]), *ap = mptr<T>(out[2]);
  parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
    rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
      rnn::lstm_forward_row<T, false>(H, gp + b * 4 * H, nullptr, cp + b * H, ap + b * 4 * H,
                                      cn + b * H, hp + b * H);
    });
  });
}

template <class T>
void lstm_cell_backward_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor dh = dense(in[0]), dc = dense(in[1]), acts = dense(in[2]), c_prev = dense(in[3]),
         c = dense(in[4]);
  const int64_t B = c_prev.shape()[0], H = c_prev.shape()[1];
  const T *dhp = cptr<T>(dh), *dcp = cptr<T>(dc), *ap = cptr<T>(acts), *cpp = cptr<T>(c_prev),
          *cp = cptr<T>(c);
  T *dg = mptr<T>(out[0]), *dcprev = mptr<T>(out[1]);
  parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
    rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
      rnn::lstm_backward_row<T, false>(H, dhp + b * H, nullptr, dcp + b * H, ap + b * 4 * H,
                                       cpp + b * H, cp + b * H, dg + b * 4 * H, dcprev + b * H);
    });
  });
}

template <class T>
void gru_cell_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor xg = dense(in[0]), hg = dense(in[1]), h_prev = dense(in[2]);
  const int64_t B = h_prev.shape()[0], H = h_prev.shape()[1];
  const T *xp = cptr<T>(xg), *hgp = cptr<T>(hg), *hpp = cptr<T>(h_prev);
  T *hp = mptr<T>(out[0]), *ap = mptr<T>(out[1]);
  parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
    rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
      rnn::gru_forward_row<T, false>(H, xp + b * 3 * H, hgp + b * 3 * H, hpp + b * H,
                                     ap + b * 3 * H, nullptr, hp + b * H);
    });
  });
}

template <class T>
void gru_cell_backward_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  Tensor dh = dense(in[0]), acts = dense(in[1]), hg = dense(in[2]), h_prev = dense(in[3]);
  const int64_t B = h_prev.shape()[0], H = h_prev.shape()[1];
  const T *dhp = cptr<T>(dh), *ap = cptr<T>(acts), *hgp = cptr<T>(hg), *hpp = cptr<T>(h_prev);
  T *dx = mptr<T>(out[0]), *dhg = mptr<T>(out[1]), *dhprev = mptr<T>(out[2]);
  parallel_for(0, B, rnn::row_grain(H), [&](int64_t b0, int64_t b1) {
    rnn::for_rows(b0, b1, [&](int64_t b) ATH_RNN_LAMBDA {
      rnn::gru_backward_row<T, false>(H, dhp + b * H, nullptr, ap + b * 3 * H,
                                      hgp + b * 3 * H + 2 * H, hpp + b * H, dx + b * 3 * H,
                                      dhg + b * 3 * H, dhprev + b * H);
    });
  });
}

const bool registered = [] {
  register_cpu<float, double>(op_lstm_cell_pointwise(),
                              []<class T>() { return &lstm_cell_kernel<T>; });
  register_cpu<float, double>(op_lstm_cell_pointwise_backward(),
                              []<class T>() { return &lstm_cell_backward_kernel<T>; });
  register_cpu<float, double>(op_gru_cell_pointwise(),
                              []<class T>() { return &gru_cell_kernel<T>; });
  register_cpu<float, double>(op_gru_cell_pointwise_backward(),
                              []<class T>() { return &gru_cell_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
