// Argument checks shared by every backend: each throws the ordinary ath::Error kind with a
// message that starts "<collective> '<name>': ", so a bad call is reported the same way on a
// world of one process as under mpirun, before anything is queued.
#pragma once

#include <string>

#include "athanor/dist/communicator.h"

namespace ath::dist::detail {

// "allreduce 'bucket0'"
std::string describe(Collective kind, const std::string& name);

// A defined, contiguous CPU tensor; `reduce`: of a dtype the reductions take.
void check_tensor(const Tensor& t, Collective kind, const std::string& name, const char* arg,
                  bool reduce);
void check_rank(int r, int world_size, Collective kind, const std::string& name, const char* arg);
void check_tag(int tag, Collective kind, const std::string& name);
// out.numel() == world_size * in.numel(), same dtype; in and out overlap only as this rank's
// slice (returns true then: the backend gathers in place).
bool check_allgather(const Tensor& out, const Tensor& in, int world_size, int rank,
                     const std::string& name);
void check_reduce_scatter(const Tensor& out, const Tensor& in, int world_size,
                          const std::string& name);

// Every call, before it is queued: while a step is traced for compile() (graph/tracer.h), a
// communication call fails the trace — the graph holds registry ops only, so a replay would
// skip it (SyncBatchNorm's collectives, say); the step then runs eagerly, with a diagnostic
// naming the call. Hooks that communicate on the step's behalf (DDP's bucket all-reduces)
// pause the tracer's observer first, and are not reported.
void note_communication(Collective kind, const std::string& name);

// Mean = sum / world_size, in place (integers truncate toward zero).
void divide_by(const Tensor& t, int world_size);

}  // namespace ath::dist::detail
