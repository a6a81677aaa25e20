// CPU kernels for convolution and convolution_backward_weight: make operands contiguous NCHW,
// then run the few-channel kernels (float32 first layers: conv_kernels.h), oneDNN (float32,
// bfloat16), the direct loops (float64, or a geometry oneDNN rejects), or float16 through
// float32. Memory contract: reads the inputs, writes the
// outputs once (a transposed convolution's bias is added in a second pass over its output).
#include "athanor/ops/conv.h"

#include "athanor/ops/activations.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/epilogue.h"
#include "common/dnnl_utils.h"
#include "common/register.h"
#include "conv_kernels.h"

namespace ath::kernels {

namespace {

bool is_dnnl_type(DType t) { return dnnl_supports(t); }

void add_channel_bias(const Tensor& out, const Tensor& bias) {
  const int64_t n = out.shape()[0], c = out.shape()[1], plane = out.shape()[2] * out.shape()[3];
  dispatch_dtype(out.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      T* y = static_cast<T*>(out.data_ptr());
      const T* b = static_cast<const T*>(bias.data_ptr());
      for (int64_t i = 0; i < n * c; ++i) {
        const compute_t<T> bv = static_cast<compute_t<T>>(b[i % c]);
        for (int64_t j = 0; j < plane; ++j)
          y[i * plane + j] = static_cast<T>(static_cast<compute_t<T>>(y[i * plane + j]) + bv);
      }
    }
  });
}

// float16 (and bfloat16 when oneDNN refuses) compute in float32 on copies.
Tensor as_f32(const Tensor& t) { return t.dtype() == kFloat32 ? t : t.to(kFloat32); }

void forward(const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y,
             const ConvGeometry& g) {
  if (conv_forward_few_channels(x, w, b, y, g)) return;
  if (is_dnnl_type(y.dtype()) && conv_forward_dnnl(x, w, b, y, g)) return;
  if (y.dtype() == kFloat32 || y.dtype() == kFloat64) return conv_forward_direct(x, w, b, y, g);
  Tensor yf = empty(y.shape(), kFloat32), bf = b ? as_f32(*b) : Tensor();
  forward(as_f32(x), as_f32(w), b ? &bf : nullptr, yf, g);
  Tensor(y).copy_(yf);
}

void backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx, const ConvGeometry& g) {
  if (is_dnnl_type(dx.dtype()) && conv_backward_data_dnnl(dy, w, dx, g)) return;
  if (dx.dtype() == kFloat32 || dx.dtype() == kFloat64)
    return conv_backward_data_direct(dy, w, dx, g);
  Tensor dxf = empty(dx.shape(), kFloat32);
  backward_data(as_f32(dy), as_f32(w), dxf, g);
  Tensor(dx).copy_(dxf);
}

void backward_weights(const Tensor& x, const Tensor& dy, const Tensor& dw, const Tensor* db,
                      const ConvGeometry& g) {
  if (conv_backward_weights_few_channels(x, dy, dw, db, g)) return;
  if (is_dnnl_type(dw.dtype()) && conv_backward_weights_dnnl(x, dy, dw, db, g)) return;
  if (dw.dtype() == kFloat32 || dw.dtype() == kFloat64)
    return conv_backward_weights_direct(x, dy, dw, db, g);
  Tensor dwf = empty(dw.shape(), kFloat32), dbf = db ? empty(db->shape(), kFloat32) : Tensor();
  backward_weights(as_f32(x), as_f32(dy), dwf, db ? &dbf : nullptr, g);
  Tensor(dw).copy_(dwf);
  if (db) Tensor(*db).copy_(dbf);
}

void convolution_into(TensorSpan in, std::span<Tensor> out, const ConvAttrs& a, bool relu) {
  const Tensor& y = out[0];
  if (y.numel() == 0) return;
  Tensor x = in[0].contiguous(), w = in[1].contiguous();
  Tensor b = in.size() == 3 ? in[2].contiguous() : Tensor();
  if (x.numel() == 0 || w.numel() == 0) {  // an empty sum: only the bias remains
    Tensor(y).zero_();
    if (b.defined()) add_channel_bias(y, b);
    if (relu) Tensor(y).copy_(ath::relu(y));
    return;
  }
  if (!a.transposed) {
    ConvGeometry g = make_geometry(x.shape(), w.shape(), y.shape(), a);
    g.relu = relu;
    forward(x, w, b.defined() ? &b : nullptr, y, g);
  } else {
    backward_data(x, w, y, make_geometry(y.shape(), w.shape(), x.shape(), a));
    if (b.defined()) add_channel_bias(y, b);
  }
}

void convolution_kernel(TensorSpan in, std::span<Tensor> out, const ConvAttrs& a) {
  convolution_into(in, out, a, false);
}
void convolution_relu_kernel(TensorSpan in, std::span<Tensor> out, const ConvAttrs& a) {
  convolution_into(in, out, a, true);
}

void weight_grad_kernel(TensorSpan in, std::span<Tensor> out, const ConvWeightGradAttrs& a) {
  const Tensor &dw = out[0], &db = out[1];
  Tensor x = in[0].contiguous(), dy = in[1].contiguous();
  if (x.numel() == 0 || dy.numel() == 0) {
    Tensor(dw).zero_();
    if (a.with_bias) Tensor(db).zero_();
    return;
  }
  if (dw.numel() == 0) return;
  backward_weights(x, dy, dw, a.with_bias ? &db : nullptr,
                   make_geometry(x.shape(), dw.shape(), dy.shape(), a.geometry));
}

const bool registered = [] {
  register_cpu<float, double, BFloat16, Half>(op_convolution(),
                                              []<class T>() { return &convolution_kernel; });
  register_cpu<float, double, BFloat16, Half>(op_convolution_relu(),
                                              []<class T>() { return &convolution_relu_kernel; });
  register_cpu<float, double, BFloat16, Half>(op_convolution_backward_weight(),
                                              []<class T>() { return &weight_grad_kernel; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels
