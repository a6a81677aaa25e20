// c = a @ b (+ bias or + a per-call addend) for a run of products that share the right operand b
// and the shape of a: the recurrent weight that every time step of an RNN multiplies by
// (rnn_sequence.cpp).
//
//   const RepeatedGemm step(rows, w.t(), /*bias=*/{}, steps);  // packs w^T once
//   for (t...) step(h_prev[t], gates[t]);                       // each call reads the copy
//
// oneDNN's brgemm kernel reads its right operand in a blocked layout of its own; given a plain
// one, it re-packs the whole operand into that layout at every call. At a step's shape the
// repacking costs as much as the product: [16, 256] x [256, 1024] ran at 118 GFLOP/s with a
// row-major b (1024 floats a row: 4 KiB apart, so the repacking's loads also alias in L1) and
// 110 transposed, against 185-190 packed once (one thread, AVX-512 host); on AVX2 (gemm:jit)
// 62 transposed, 93 packed. Packing costs about one call, so it is used from kMinCalls calls on.
//
// Memory contract: the constructor reads b once into a packed copy (the operand's size,
// allocated from athanor's allocator) and keeps it until destruction; each call reads a, the
// packed copy and bias or addend, and writes every element of c once. Float32 only packs; other
// dtypes, and multi-threaded calls where oneDNN has no brgemm kernel (its gemm:jit fallback may
// split K across threads, so sums would depend on the thread count), run gemm() with b as given.
#pragma once

#include <memory>

#include "athanor/tensor/tensor.h"

namespace ath::kernels {

struct PackedEntry;

class RepeatedGemm {
 public:
  // Below this many calls, packing costs more than it saves: callers pass their call count.
  static constexpr int64_t kMinCalls = 4;

  // rows: a's row count in every call; b [K, N] (any strides); bias [N] or undefined; calls: how
  // many products will run (packs only from kMinCalls on); with_addend: every call adds a
  // matrix of its own (the GRU backward's direct gradient), not with a bias. Built on the
  // thread that runs it.
  RepeatedGemm(int64_t rows, const Tensor& b, const Tensor& bias, int64_t calls,
               bool with_addend = false);
  // c = a @ b (+ bias) (+ addend): a [rows, K] with unit-stride rows, c [rows, N] contiguous
  // (not aliasing a), addend [rows, N] contiguous, given exactly when with_addend.
  void operator()(const Tensor& a, const Tensor& c, const Tensor& addend = {}) const;

 private:
  Tensor b_, bias_;
  std::shared_ptr<const PackedEntry> entry_;  // null: run gemm()
  Tensor packed_;                             // b in entry_->weights' layout
  int threads_ = 0;                           // what entry_ was built for (1 or the current)
  bool with_addend_ = false;
};

}  // namespace ath::kernels
