// The MPI backend's Communicator: validates each call on the caller's thread (so bad arguments
// throw at once, naming the call) and hands it to the engine's thread.
#pragma once

#include "athanor/dist/communicator.h"
#include "mpi_engine.h"

namespace ath::dist::detail {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MpiEngine& engine, CommOptions options)
      : Communicator(options), engine_(engine), info_(engine.info()) {}

  int rank() const override { return info_.rank; }
  int world_size() const override { return info_.world_size; }
  int local_rank() const override { return info_.local_rank; }
  int local_size() const override { return info_.local_size; }
  std::string_view backend() const override { return "mpi"; }

  Work allreduce(const Tensor& t, ReduceOp op, std::string name, CallOptions call) override;
  Work broadcast(const Tensor& t, int src, std::string name, CallOptions call) override;
  Work allgather(const Tensor& out, const Tensor& in, std::string name, CallOptions call) override;
  Work reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op, std::string name,
                      CallOptions call) override;
  Work barrier(std::string name, CallOptions call) override;
  Work send(const Tensor& t, int dst, int tag, std::string name, CallOptions call) override;
  Work recv(const Tensor& t, int src, int tag, std::string name, CallOptions call) override;

 private:
  std::unique_ptr<Item> make_item(Collective kind, std::string name, const CallOptions& call);
  Work submit(std::unique_ptr<Item> item);
  // send and recv: the same checks and item, one direction apart.
  Work point_to_point(Collective kind, const Tensor& t, int peer, int tag, std::string name,
                      CallOptions call);

  MpiEngine& engine_;
  EngineInfo info_;
};

}  // namespace ath::dist::detail
