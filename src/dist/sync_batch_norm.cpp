// sync_batch_norm: the group statistics (one all-gather, combined in rank order) and the
// backward node that all-reduces the two gradient sums. See sync_batch_norm.h for the design.
#include "athanor/dist/sync_batch_norm.h"

#include <cmath>
#include <memory>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/ops/accumulate_grad.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/autograd_meta.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::dist {

namespace {

// Per-channel statistics of the whole group, float64 [C] each, and the global count.
struct GroupStats {
  Tensor mean;
  Tensor var;           // biased (M2 / n): what normalizes
  Tensor unbiased_var;  // M2 / (n - 1): what the running variance moves toward
  Tensor rstd;          // 1 / sqrt(var + eps)
  double count = 0;
};

// The input as [N, C, S] (S: the product of the dims after the channel dim).
Tensor as_ncs(const Tensor& x) {
  int64_t s = 1;  // explicit, not -1: an empty batch must reshape too
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.shape()[static_cast<std::size_t>(d)];
  return x.contiguous().view({x.shape()[0], x.shape()[1], s});
}

Tensor channel_view(const Tensor& per_channel) { return per_channel.view({1, -1, 1}); }

// Chan et al.'s pairwise update, applied rank by rank in rank order: every rank runs the same
// arithmetic on the same gathered numbers, so the statistics agree bit for bit.
GroupStats gather_stats(const Tensor& x64, double eps, Communicator& comm,
                        const std::string& layer) {
  const int64_t c = x64.shape()[1];
  const double n_local = static_cast<double>(x64.shape()[0] * x64.shape()[2]);
  std::vector<double> mine(static_cast<std::size_t>(2 * c + 1), 0.0);
  if (n_local > 0) {
    Tensor mean = x64.mean({0, 2});
    Tensor m2 = (x64 - channel_view(mean)).pow(2).sum({0, 2});
    std::vector<double> mv = mean.to_vector<double>(), m2v = m2.to_vector<double>();
    std::copy(mv.begin(), mv.end(), mine.begin());
    std::copy(m2v.begin(), m2v.end(), mine.begin() + c);
  }
  mine.back() = n_local;
  const int64_t per_rank = 2 * c + 1;
  Tensor all = empty({comm.world_size() * per_rank}, kFloat64);
  comm.allgather(all, from_vector<double>(mine), layer + " statistics").wait();
  const std::vector<double> g = all.to_vector<double>();

  std::vector<double> mean(static_cast<std::size_t>(c), 0.0), m2(mean);
  double n = 0;
  for (int r = 0; r < comm.world_size(); ++r) {
    const double* rank_stats = g.data() + r * per_rank;
    const double nb = rank_stats[2 * c];
    if (nb == 0) continue;
    const double total = n + nb;
    for (int64_t k = 0; k < c; ++k) {
      const double delta = rank_stats[k] - mean[k];
      mean[k] += delta * nb / total;
      m2[k] += rank_stats[c + k] + delta * delta * n * nb / total;
    }
    n = total;
  }
  ATH_CHECK(c == 0 || n > 1, ValueError,
            "{}: expected more than 1 value per channel when training, got {} over all {} "
            "rank(s) (local input of shape {})",
            layer, n, comm.world_size(), to_string(x64.shape()));
  std::vector<double> var(static_cast<std::size_t>(c)), unbiased(var), rstd(var);
  for (int64_t k = 0; k < c; ++k) {
    var[k] = m2[k] / n;
    unbiased[k] = m2[k] / (n - 1);
    rstd[k] = 1.0 / std::sqrt(var[k] + eps);
  }
  return {from_vector<double>(mean), from_vector<double>(var), from_vector<double>(unbiased),
          from_vector<double>(rstd), n};
}

// dx, dweight, dbias of the synchronised forward. Memory: saves x (a reference, checked
// against in-place writes), weight, and the [C] statistics; each backward allocates float64
// copies of x and dy for the time of the call.
class SyncBatchNormBackward final : public Node {
 public:
  SyncBatchNormBackward(Tensor x, Tensor weight, DType bias_dtype, GroupStats stats,
                        Communicator& comm, std::string layer)
      : x_(std::move(x)),
        x_version_(x_.version()),
        weight_(std::move(weight)),
        bias_dtype_(bias_dtype),
        stats_(std::move(stats)),
        comm_(comm),
        layer_(std::move(layer)) {}

  std::string_view name() const override { return "SyncBatchNormBackward"; }

  GradList apply(GradList&& grads) override {
    ATH_CHECK(x_.defined(), AutogradError,
              "{}: trying to backward through the graph a second time (its saved tensors were "
              "freed); pass retain_graph=true to the first backward",
              layer_);
    ATH_CHECK(x_.version() == x_version_, AutogradError,
              "{}: the input saved for the backward was modified by an in-place operation", layer_);
    NoGradGuard no_grad;  // first order only (see the header)
    const Tensor x64 = as_ncs(x_).to(kFloat64);
    const Tensor dy64 = grads[0].defined() ? as_ncs(grads[0]).to(kFloat64) : zeros_like(x64);
    const Tensor rstd = channel_view(stats_.rstd);
    const Tensor xhat = (x64 - channel_view(stats_.mean)) * rstd;
    const Tensor sum_dy = dy64.sum({0, 2});
    const Tensor sum_dy_xhat = (dy64 * xhat).sum({0, 2});

    GradList out(3);
    if (next_edges[0].valid()) {
      const int64_t c = sum_dy.numel();
      std::vector<double> sums = sum_dy.to_vector<double>();
      const std::vector<double> s2 = sum_dy_xhat.to_vector<double>();
      sums.insert(sums.end(), s2.begin(), s2.end());
      Tensor global = from_vector<double>(sums);
      comm_.allreduce(global, ReduceOp::Sum, layer_ + " gradient sums").wait();
      const double n = stats_.count;
      Tensor scale = weight_.defined() ? stats_.rstd * weight_.detach().to(kFloat64) : stats_.rstd;
      Tensor dx = (dy64 - channel_view(global.narrow(0, 0, c)) / n -
                   xhat * channel_view(global.narrow(0, c, c)) / n) *
                  channel_view(scale);
      out[0] = dx.to(x_.dtype()).view(x_.shape());
    }
    if (next_edges[1].valid()) out[1] = sum_dy_xhat.to(weight_.dtype());
    if (next_edges[2].valid()) out[2] = sum_dy.to(bias_dtype_);
    return out;
  }

  void release_saved() override {
    x_ = Tensor();
    weight_ = Tensor();
  }

 private:
  Tensor x_;
  uint32_t x_version_;
  Tensor weight_;
  DType bias_dtype_;
  GroupStats stats_;
  Communicator& comm_;
  std::string layer_;
};

void check_channel_param(const Tensor& t, int64_t c, const char* what, const std::string& layer,
                         const Tensor& x) {
  if (!t.defined()) return;
  ATH_CHECK(t.dim() == 1 && t.shape()[0] == c, ShapeError,
            "{}: expected {} of shape [{}] for input of shape {}, got {}", layer, what, c,
            to_string(x.shape()), to_string(t.shape()));
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       Communicator& comm, const std::string& layer) {
  ATH_CHECK(x.dim() >= 2, ShapeError, "{}: expected input of shape [N, C, *], got shape {}", layer,
            to_string(x.shape()));
  ATH_CHECK(is_floating(x.dtype()), DTypeError, "{}: expected a floating input, got {}", layer,
            dtype_name(x.dtype()));
  const int64_t c = x.shape()[1];
  check_channel_param(running_mean, c, "running_mean", layer, x);
  check_channel_param(running_var, c, "running_var", layer, x);
  check_channel_param(weight, c, "weight", layer, x);
  check_channel_param(bias, c, "bias", layer, x);
  ATH_CHECK(running_mean.defined() == running_var.defined(), ValueError,
            "{}: running_mean and running_var must be given together", layer);

  GroupStats stats = gather_stats(as_ncs(x.detach()).to(kFloat64), eps, comm, layer);
  const DType stat_dtype = x.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor y;
  {
    // The eval form of the op normalizes with the statistics it is given: here the group's.
    NoGradGuard no_grad;
    y = batch_norm(x.detach(), stats.mean.to(stat_dtype), stats.var.to(stat_dtype),
                   weight.defined() ? weight.detach() : Tensor(),
                   bias.defined() ? bias.detach() : Tensor(), /*training=*/false, 0.0, eps);
    if (running_mean.defined() && stats.count > 0) {
      Tensor rm = running_mean, rv = running_var;
      rm.mul_(1.0 - momentum).add_(stats.mean.to(rm.dtype()), momentum);
      rv.mul_(1.0 - momentum).add_(stats.unbiased_var.to(rv.dtype()), momentum);
    }
  }
  const bool track = GradMode::is_enabled() &&
                     (x.requires_grad() || (weight.defined() && weight.requires_grad()) ||
                      (bias.defined() && bias.requires_grad()));
  if (!track) return y;
  auto node = std::make_shared<SyncBatchNormBackward>(
      x, weight, bias.defined() ? bias.dtype() : x.dtype(), std::move(stats), comm, layer);
  node->next_edges = {gradient_edge(x), weight.defined() ? gradient_edge(weight) : Edge{},
                      bias.defined() ? gradient_edge(bias) : Edge{}};
  node->output_meta.push_back({y.shape(), y.dtype()});
  AutogradMeta& m = autograd_meta(y);
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = 0;
  return y;
}

}  // namespace ath::dist
