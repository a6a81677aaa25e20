#include "athanor/autograd/gradcheck.h"

#include <cmath>

#include "athanor/autograd/engine.h"
#include "athanor/ops/creation.h"
#include "athanor/tensor/grad_mode.h"

namespace ath {

namespace {

// Storage offset (in elements, from data_ptr) of row-major element k of t.
int64_t strided_offset(const Tensor& t, int64_t k) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t size = t.shape()[d];
    off += (k % size) * t.strides()[d];
    k /= size;
  }
  return off;
}

std::vector<double> flat(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options) {
  GradcheckResult result;
  std::vector<std::size_t> diff;  // indices of inputs that require grad
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      ATH_CHECK(inputs[i].dtype() == kFloat64, DTypeError,
                "gradcheck: input {} requires grad but is {}, not float64", i,
                dtype_name(inputs[i].dtype()));
      diff.push_back(i);
    }
  }
  ATH_CHECK(!diff.empty(), ValueError, "gradcheck: no input requires grad");
  std::vector<Tensor> diff_inputs;
  for (std::size_t i : diff) diff_inputs.push_back(inputs[i]);

  std::vector<Tensor> outputs = fn(inputs);
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& out = outputs[o];
    if (!out.defined() || !is_floating(out.dtype())) continue;
    const int64_t n_out = out.numel();
    // analytical[j][i] = gradient of output element j w.r.t. each differentiable input.
    std::vector<std::vector<std::vector<double>>> analytical(static_cast<std::size_t>(n_out));
    for (int64_t j = 0; j < n_out; ++j) {
      std::vector<double> onehot(static_cast<std::size_t>(n_out), 0.0);
      onehot[static_cast<std::size_t>(j)] = 1.0;
      Tensor g = from_vector(onehot, out.shape()).to(out.dtype());
      std::vector<Tensor> grads;
      if (out.requires_grad()) {
        grads = grad({out}, diff_inputs, {g}, {.retain_graph = true}, /*allow_unused=*/true);
      } else {
        grads.resize(diff_inputs.size());
      }
      for (std::size_t i = 0; i < diff_inputs.size(); ++i) {
        analytical[static_cast<std::size_t>(j)].push_back(
            grads[i].defined()
                ? flat(grads[i])
                : std::vector<double>(static_cast<std::size_t>(diff_inputs[i].numel()), 0.0));
      }
    }
    // Numerical: perturb each element of each differentiable input.
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < diff_inputs.size(); ++i) {
      const Tensor& x = diff_inputs[i];
      double* base = static_cast<double*>(x.data_ptr());
      for (int64_t k = 0; k < x.numel(); ++k) {
        double* p = base + strided_offset(x, k);
        const double orig = *p;
        *p = orig + options.eps;
        std::vector<double> plus = flat(fn(inputs)[o].to(kFloat64));
        *p = orig - options.eps;
        std::vector<double> minus = flat(fn(inputs)[o].to(kFloat64));
        *p = orig;
        for (int64_t j = 0; j < n_out; ++j) {
          auto ju = static_cast<std::size_t>(j);
          double numeric = (plus[ju] - minus[ju]) / (2 * options.eps);
          double analytic = analytical[ju][i][static_cast<std::size_t>(k)];
          double err = std::abs(numeric - analytic);
          result.max_abs_error = std::max(result.max_abs_error, err);
          bool close = err <= options.atol + options.rtol * std::abs(numeric);
          if ((!close || !std::isfinite(analytic)) && result.ok) {
            result.ok = false;
            result.message = fmt::format(
                "gradcheck: output {} element {} w.r.t. input {} element {}: numerical {:.10g}, "
                "analytical {:.10g}",
                o, j, diff[i], k, numeric, analytic);
          }
        }
      }
    }
  }
  return result;
}

}  // namespace ath
