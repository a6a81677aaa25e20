// SyncBatchNorm: batch normalization whose training statistics span every rank of a
// communicator, as PyTorch's torch.nn.SyncBatchNorm. With N ranks each holding a share of the
// global batch, the output, the running statistics and (after DDP averages them) the parameter
// gradients equal one process's BatchNorm over the whole batch.
//
//   #include "athanor/dist/sync_batch_norm.h"
//   dist::SyncBatchNorm bn({.features = 16});   // statistics over dist::world()
//   Tensor y = bn(randn({8, 16, 4, 4}));         // [N, C, *]: any rank >= 2
//   bn.eval();
//   Tensor z = bn(randn({2, 16, 4, 4}));         // eval: running stats, no communication
//
// An existing model converts in place, keeping every parameter, buffer and name (so state
// dicts load either way); it returns how many layers it converted.
//
//   #include "athanor/dist/sync_batch_norm.h"
//   #include "athanor/nn/sequential.h"
//   nn::Sequential net;
//   net.push_back(std::make_shared<nn::BatchNorm1d>(nn::BatchNormOptions{.features = 8}));
//   assert(dist::convert_sync_batchnorm(net) == 1);
//
// Training forward, per channel (the design).
// - Each rank computes its local count n_r, mean m_r and sum of squared deviations M2_r (two
//   passes, in float64), and one all-gather (named "<layer> statistics") gives every rank all of
//   them. Every rank combines them in rank order with Chan's parallel formula, so all ranks get
//   bit-identical statistics (PyTorch gathers mean, invstd and count the same way).
// - The output is the batch_norm op in eval form, given those statistics as the "running" ones;
//   the same kernel as BatchNorm, so a world of one gives BatchNorm's numbers.
// - running_mean / running_var move as in BatchNorm, with the unbiased variance over the global
//   count (M2 / (n - 1)).
// Backward: the output's grad_fn is a node of this file (SyncBatchNormBackward), not a registry
// op, because its gradient needs a collective in the middle: it computes the local sums
// sum(dy) and sum(dy * xhat) per channel, all-reduces both (one call, "<layer> gradient sums")
// only when the input needs a gradient, and forms
// dx = weight * rstd * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n) from the global sums;
// dweight = local sum(dy * xhat) and dbias = local sum(dy), which DDP then averages like every
// other parameter gradient. This is PyTorch's SyncBatchNorm backward. It is first order only
// (no create_graph through it), and a traced/compiled step cannot record it (the compiler sees
// registry ops only): use it in eager training.
//
// In a world of one process the layer runs the ordinary batch_norm op (as PyTorch does), so it
// is BatchNorm bit for bit; sync_batch_norm() below always takes the group path. Every rank
// must run the same training forwards and backwards (the collectives pair up in order).
#pragma once

#include <string>

#include "athanor/dist/communicator.h"
#include "athanor/nn/batch_norm.h"

namespace ath::dist {

// The group path as a function: training-mode batch norm of x ([N, C, *]) with statistics over
// every rank of `comm`, updating running_mean / running_var (when defined) with `momentum` as
// batch_norm does. weight and bias may be undefined. `layer` names the caller in errors and in
// the collectives' names.
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       Communicator& comm, const std::string& layer = "sync_batch_norm");

// BatchNorm for any input [N, C, *] (rank >= 2) with synchronised training statistics.
// `comm` null means dist::world(), looked up at each forward.
class SyncBatchNorm : public nn::BatchNorm {
 public:
  explicit SyncBatchNorm(nn::BatchNormOptions options, Communicator* comm = nullptr);

 protected:
  void check_input_dim(const Tensor& x) const override;
};

// Makes every BatchNorm in `root`'s tree (root included) compute its training statistics over
// `comm` (null: dist::world()), in place: the layers keep their type, parameters, buffers and
// names, and eval is unchanged. Returns the number of layers converted. Idempotent.
int convert_sync_batchnorm(nn::Module& root, Communicator* comm = nullptr);

}  // namespace ath::dist
