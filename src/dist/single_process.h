// The world of one process (no mpirun): every collective is complete when it returns. Sends to
// itself wait in a mailbox for the recv with the same tag, which completes on arrival, so code
// written for N ranks runs unchanged with N = 1.
#pragma once

#include <deque>
#include <map>
#include <mutex>

#include "athanor/dist/communicator.h"

namespace ath::dist::detail {

class SingleProcessCommunicator final : public Communicator {
 public:
  explicit SingleProcessCommunicator(CommOptions options) : Communicator(options) {}

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string_view backend() const override { return "single_process"; }

  Work allreduce(const Tensor& t, ReduceOp op, std::string name, CallOptions call) override;
  Work broadcast(const Tensor& t, int src, std::string name, CallOptions call) override;
  Work allgather(const Tensor& out, const Tensor& in, std::string name, CallOptions call) override;
  Work reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, std::string name,
                      CallOptions call) override;
  Work barrier(std::string name, CallOptions call) override;
  Work send(const Tensor& t, int dst, int tag, std::string name, CallOptions call) override;
  Work recv(const Tensor& t, int src, int tag, std::string name, CallOptions call) override;

 private:
  struct PendingRecv {
    Tensor t;
    std::shared_ptr<WorkState> state;
  };
  Work finished(Collective kind, std::string name, const CallOptions& call);

  std::mutex mutex_;
  std::map<int, std::deque<Tensor>> sent_;          // by tag: copies not yet received
  std::map<int, std::deque<PendingRecv>> waiting_;  // by tag: recvs posted before their send
};

}  // namespace ath::dist::detail
