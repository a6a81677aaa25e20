// Helpers of the whole-sequence recurrent kernels (rnn_sequence.cpp): row addressing of
// [T, B, X] / [B, T, X] tensors, dense GEMM operands per step, batch chunking, and the
// recurrent weight gradient as one GEMM.
#pragma once

#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "common/gemm.h"
#include "common/nn_common.h"

namespace ath::kernels::rnn {

// A sequence tensor [T, B, X] ([B, T, X] when batch_first) with a unit-stride X dim, its rows
// addressed through the time and batch strides.
template <class T>
struct Seq {
  Tensor tensor;  // the tensor read (a dense copy when the input's X dim was strided)
  T* base = nullptr;
  int64_t st = 0, sb = 0;

  T* row(int64_t t, int64_t b) const { return base + t * st + b * sb; }
  // The same rows starting `cols` elements in (the LSTM workspace's cell-state block).
  Seq shifted(int64_t cols) const { return {tensor, base + cols, st, sb}; }
  // Step t's [B, X] rows as a view: a GEMM operand.
  Tensor step(int64_t t, int64_t rows, int64_t x) const {
    return make_view(tensor, {rows, x}, {sb, 1}, tensor.storage_offset() + t * st);
  }
};

template <class T>
Seq<T> seq(const Tensor& t, bool batch_first) {
  Tensor d = (t.shape()[2] <= 1 || t.strides()[2] == 1) ? t : dense(t);
  const std::size_t td = batch_first ? 1 : 0, bd = 1 - td;
  return {d, static_cast<T*>(d.data_ptr()), d.strides()[td], d.strides()[bd]};
}

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

// A fresh contiguous copy (a carry buffer the kernel overwrites), made without dispatching.
inline Tensor copy_of(const Tensor& t) {
  Tensor d = dense(t), c = empty(t.shape(), t.dtype());
  std::memcpy(c.data_ptr(), d.data_ptr(), c.nbytes());
  return c;
}

// Rows [r0, r0 + n) of each step of a sequence as a GEMM operand. oneDNN runs its fast (brgemm)
// kernel only on dense rows; with batch_first a step's rows are T * X apart, and a strided
// operand sends the GEMM to a slower kernel after copying both operands (W_hh^T included) every
// step. So when the rows are strided, each row is also staged into a dense [n, X] buffer right
// after it is written (a row copy still in cache, far cheaper than the GEMM).
template <class T>
class StepRows {
 public:
  StepRows(const Seq<T>& seq, int64_t r0, int64_t n, int64_t x) : seq_(seq), r0_(r0), n_(n), x_(x) {
    if (seq.sb != x && n > 1) buf_ = empty({n, x}, seq.tensor.dtype());
  }
  // Row i (absolute row r0 + i) of step t has been written.
  void stage(int64_t t, int64_t i) const {
    if (buf_.defined()) std::memcpy(ptr<T>(buf_) + i * x_, seq_.row(t, r0_ + i), sizeof(T) * x_);
  }
  Tensor operand(int64_t t) const {
    if (buf_.defined()) return buf_;
    return make_view(seq_.tensor, {n_, x_}, {seq_.sb, 1},
                     seq_.tensor.storage_offset() + t * seq_.st + r0_ * seq_.sb);
  }

 private:
  const Seq<T>& seq_;
  int64_t r0_, n_, x_;
  Tensor buf_;
};

// Rows [r0, r0 + n) of a dense [B, X] tensor.
inline Tensor row_block(const Tensor& t, int64_t r0, int64_t n) {
  const int64_t x = t.shape()[1];
  return make_view(t, {n, x}, {x, 1}, t.storage_offset() + r0 * x);
}

// The recurrence is independent across batch rows, so the batch is cut into chunks and each
// chunk runs the whole sequence on its own: threads never wait for each other between steps
// (a wait per step is what a loaded machine punishes: a descheduled partner thread stalls
// every step). The chunking depends on B alone, so every row is computed the same way whatever
// the thread count: about 16 rows a chunk (a GEMM of fewer rows rereads W_hh for little work),
// at most 8 chunks, and an even count so that two threads get equal shares. One chunk (a batch
// under 32) runs its GEMMs and cells multi-threaded instead.
template <class F>
void for_batch_chunks(int64_t B, const F& f) {
  int64_t chunks = std::min<int64_t>(8, B / 16);
  if (chunks <= 1) {
    if (B > 0) f(int64_t{0}, B);
    return;
  }
  chunks += chunks % 2;
  const int64_t rows = (B + chunks - 1) / chunks;
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t r0 = std::min(B, c * rows);
      f(r0, std::min(B, r0 + rows) - r0);
    }
  });
}

// Processing order: step s handles time index order(s).
struct Order {
  int64_t steps;
  bool reverse;
  int64_t operator()(int64_t s) const { return reverse ? steps - 1 - s : s; }
};

// W [G, H] read as W^T [H, G] in place.
inline Tensor transposed(const Tensor& w) {
  return make_view(w, {w.shape()[1], w.shape()[0]}, {w.strides()[1], w.strides()[0]},
                   w.storage_offset());
}

template <class T>
void copy_rows(T* dst, const Seq<T>& src, int64_t t, int64_t rows, int64_t x) {
  for (int64_t b = 0; b < rows; ++b) std::memcpy(dst + b * x, src.row(t, b), sizeof(T) * x);
}

// dw [G, H] = sum over every (t, b) of dgates(t, b)^T h_prev(t, b), as one GEMM. dgates is a
// contiguous [T, B, G] ([B, T, G] when dgates_bf) tensor; h_prev(t, b) is h0's row for the
// first step processed and the previous step's output row otherwise.
template <class T>
void recurrent_weight_grad(const Tensor& dgates, bool dgates_bf, const Tensor& h0, const Seq<T>& y,
                           Order order, Tensor& dw) {
  const bool bf = dgates_bf;
  const int64_t steps = order.steps, B = h0.shape()[0], H = h0.shape()[1];
  const int64_t G = dgates.shape()[2], N = steps * B;
  if (N == 0 || H == 0 || G == 0) {
    std::memset(dw.data_ptr(), 0, dw.nbytes());
    return;
  }
  // h_prev of every row, in dgates' row order: [N, H], whose transpose the product reads in
  // place as a column-major left operand. At W3's shape that product runs as fast as the
  // row-major one on a transposed copy (321-329 against 328-333 GFLOP/s), and a row copy is
  // cheaper than a transposing gather (which took ~0.35 ms of W3's step).
  Tensor hprev = empty({N, H}, dgates.dtype());
  T* hp = ptr<T>(hprev);
  const T* h0p = ptr<T>(h0);
  parallel_for(0, N, std::max<int64_t>(1, 8192 / H), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t t = bf ? r % steps : r / B, b = bf ? r / steps : r % B;
      const T* src = t == order(0) ? h0p + b * H : y.row(order.reverse ? t + 1 : t - 1, b);
      std::memcpy(hp + r * H, src, sizeof(T) * H);
    }
  });
  Tensor dwT = empty({H, G}, dgates.dtype());
  gemm({.a = transposed(hprev),
        .b = make_view(dgates, {N, G}, {G, 1}, dgates.storage_offset()),
        .c = dwT});
  dense_into(transposed(dwT), dw);
}

}  // namespace ath::kernels::rnn
