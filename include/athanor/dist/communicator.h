// Communicator: the collectives data-parallel training is built on (all-reduce, broadcast,
// all-gather, reduce-scatter, barrier, send/recv), each asynchronous with a Work handle and a
// deadline. dist::world() is the process's communicator: MPI's world when the program was
// started by mpirun/mpiexec, a world of one process otherwise (every call then works unchanged).
//
//   #include "athanor/dist/dist.h"
//   dist::Communicator& comm = dist::world();          // rank 0 of 1 without mpirun
//   Tensor g = full({4}, static_cast<double>(comm.rank() + 1));
//   dist::Work w = comm.allreduce(g, dist::ReduceOp::Mean, "bucket0");
//   w.wait();                                          // g: the mean over ranks, on every rank
//   Tensor all = empty({comm.world_size() * 4});
//   comm.allgather(all, g, "gather_g").wait();
//   assert(all.numel() == 4 * comm.world_size());
//
// Contract of every call:
// - Collectives are numbered in submission order; every rank must submit the same collectives
//   (kind, name, element count, dtype, op/root) in the same order, as MPI requires. Each rank
//   checks the others' headers before any data moves, so a desynchronised order is an error
//   naming both sides, not a hang or a corrupt buffer.
// - A call validates its arguments at once (contiguous CPU tensor, a dtype the collective takes,
//   matching sizes, ranks in range): an ath::Error naming the collective and its name.
// - The tensors must stay untouched until the Work completes (the Work keeps them alive).
// - Deadline: CallOptions::timeout, else CommOptions::timeout (default 5 minutes), counted from
//   submission. A rank that stalls or dies makes the others fail within it with a CommError
//   naming the collective, its name and the ranks that did not take part.
// - Any failure (timeout, desync, a peer's abort, an MPI error) poisons the communicator: its
//   pending and later calls fail with the first error, and the other ranks are told.
// - Works complete in submission order (collectives; send/recv complete when their message has
//   moved). Reductions on float32, float64, int32, int64; Mean is a sum divided by the world
//   size (integers: truncated toward zero). Broadcast, all-gather and send/recv take any dtype.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "athanor/core/error.h"
#include "athanor/tensor/tensor.h"

namespace ath::dist {

enum class ReduceOp : uint8_t { Sum, Mean, Max, Min };
enum class Collective : uint8_t {
  Allreduce,
  Broadcast,
  Allgather,
  ReduceScatter,
  Barrier,
  Send,
  Recv
};
std::string_view to_string(ReduceOp op);
std::string_view to_string(Collective kind);

// A collective that failed: timed out, desynchronised, aborted by a peer, or refused by MPI.
// Bad arguments are the ordinary kinds instead (ShapeError, DTypeError, IndexError, ValueError).
class CommError : public Error {
  using Error::Error;
};

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(5);

// A communicator's settings.
struct CommOptions {
  // Deadline of every call, from its submission, unless the call sets its own.
  std::chrono::milliseconds timeout = kDefaultTimeout;
};

// Per-call settings.
struct CallOptions {
  // This call's deadline; zero takes the communicator's.
  std::chrono::milliseconds timeout{0};
};

namespace detail {
class WorkState;
}

// The handle of one asynchronous call. Copies share the call.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // Blocks until the call completes; throws its CommError if it failed. Without an argument it
  // waits at most until the call's own deadline (plus a second for the backend to name the
  // missing ranks); with one, a CommError after `timeout` if the call is still running (the
  // call keeps running: wait again or let the deadline fail it).
  void wait() const;
  void wait(std::chrono::milliseconds timeout) const;
  // True once the call succeeded, false while it runs; throws its error if it failed.
  bool test() const;
  // True once the call has finished, successfully or not (never throws).
  bool is_completed() const;
  // When the call finished (successfully or not), on the steady clock; nullopt while it runs.
  // The backend stamps it as it completes the call, so a caller polling late still learns when
  // the data exchange ended (DistributedDataParallel's timeline does).
  std::optional<std::chrono::steady_clock::time_point> completed_at() const;
  bool defined() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Rank among the processes of this machine, and how many there are.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // "mpi" or "single_process".
  virtual std::string_view backend() const = 0;
  const CommOptions& options() const { return options_; }

  // In place on `t`: the element-wise reduction over all ranks.
  virtual Work allreduce(const Tensor& t, ReduceOp op, std::string name, CallOptions call = {}) = 0;
  // `t` on every rank becomes rank `src`'s `t`.
  virtual Work broadcast(const Tensor& t, int src, std::string name, CallOptions call = {}) = 0;
  // `out` (world_size * in.numel() elements, any shape) = every rank's `in`, in rank order. `in`
  // may be this rank's slice of `out`.
  virtual Work allgather(const Tensor& out, const Tensor& in, std::string name,
                         CallOptions call = {}) = 0;
  // `out` (in.numel() / world_size elements) = this rank's slice of the reduction of `in`.
  virtual Work reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, std::string name,
                              CallOptions call = {}) = 0;
  virtual Work barrier(std::string name, CallOptions call = {}) = 0;
  // Point to point: `t` goes to rank `dst`, matched by a recv(.., src = this rank, tag) there.
  // Tags are in [0, 32767]. A send completes once its data has left this rank's buffer.
  virtual Work send(const Tensor& t, int dst, int tag, std::string name, CallOptions call = {}) = 0;
  virtual Work recv(const Tensor& t, int src, int tag, std::string name, CallOptions call = {}) = 0;

 protected:
  explicit Communicator(CommOptions options) : options_(options) {}
  // The deadline a call runs under.
  std::chrono::milliseconds timeout_of(const CallOptions& call) const {
    return call.timeout.count() > 0 ? call.timeout : options_.timeout;
  }

 private:
  CommOptions options_;
};

}  // namespace ath::dist
