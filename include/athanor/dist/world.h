// The process's communicator: dist::world() is MPI's world when the program was started by
// mpirun/mpiexec (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment) and a world of
// one process otherwise, in which MPI is never initialised and every collective is a local copy.
//
//   dist::init({.timeout = std::chrono::seconds(30)});   // optional: world() uses the defaults
//   dist::Communicator& comm = dist::world();
//   assert(comm.rank() < comm.world_size());
//   if (!dist::launched_by_mpi()) assert(comm.backend() == "single_process");
//
// MPI lives on one communication thread that athanor starts: it calls MPI_Init_thread (asking
// for MPI_THREAD_FUNNELED: no other thread ever calls MPI) and every MPI function after it, so
// compute threads never block inside MPI and OpenMP is left alone. At exit (atexit, or
// dist::finalize()) that thread fails what is still pending, frees its communicators and calls
// MPI_Finalize. After a failed collective a peer may be stalled for good, and MPI_Finalize
// waits for every rank: it then gets the communicator's timeout (at most 30 s) before the
// process ends itself (std::_Exit(1), which makes mpirun stop the job), and where a collective's
// data exchange was left running (MPI cannot cancel one), the thread calls MPI_Abort at once.
// Either way the process never hangs at exit.
#pragma once

#include "athanor/dist/communicator.h"

namespace ath::dist {

// Whether the environment says this process was started by an MPI launcher.
bool launched_by_mpi();

// Creates the world communicator with these options (the first call wins; a later call with
// different options is a ValueError). world() calls it with the defaults.
Communicator& init(const CommOptions& options = {});
Communicator& world();
// Whether init() has run.
bool initialized();
// Tears the world down now (pending calls fail, then MPI_Finalize): what atexit would do. Later
// calls on the world throw CommError. Idempotent.
void finalize();

}  // namespace ath::dist
