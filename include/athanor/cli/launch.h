// Self-launch for data-parallel runs: `athanor fit --trainer.devices=2` starts the two processes
// itself, as Lightning's `devices=2` does, by running the same command again under OpenMPI's
// mpirun. Each launched process finds itself under MPI (dist::launched_by_mpi()) and trains as
// one rank of the ddp strategy; mpirun's exit status is the command's.
//
//   #include "athanor/cli/launch.h"
//   nlohmann::json trainer = {{"devices", 2}, {"num_nodes", 1}, {"hostfile", nullptr}};
//   cli::LaunchSettings s{.self = "/usr/bin/athanor", .cores = 8};
//   std::vector<std::string> cmd = cli::mpirun_command(trainer, {"fit", "--trainer.devices=2"}, s);
//   assert(cmd[0] == "mpirun" && cmd.back() == "--trainer.devices=2");
//
// Several machines: `--trainer.num_nodes=2 --trainer.hostfile=hosts` starts `devices` ranks on
// each of the hostfile's first two machines (`--map-by ppr:<devices>:node`); the program must be
// at the same path on each, as mpirun requires.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace ath::cli {

struct LaunchSettings {
  std::string self;              // this program's path (/proc/self/exe)
  int cores = 1;                 // this machine's cores: each of `devices` ranks gets a share
  bool as_root = false;          // mpirun refuses root unless told (--allow-run-as-root)
  bool omp_threads_set = false;  // OMP_NUM_THREADS is already in the environment: forwarded
};

// The mpirun command that runs `arguments` (argv after the program name) as trainer.devices x
// trainer.num_nodes ranks; empty when that is 1. ValueError when num_nodes > 1 has no hostfile.
std::vector<std::string> mpirun_command(const nlohmann::json& trainer,
                                        const std::vector<std::string>& arguments,
                                        const LaunchSettings& settings);

// Runs `command` (searching PATH for its first word), waits, and returns its exit status (128 +
// the signal when it was killed). IOError when it cannot be started (mpirun not installed: the
// message names Debian's openmpi-bin).
int run_command_line(const std::vector<std::string>& command);

// What athanor_main calls before running a config command: the exit status of the launched job,
// or -1 when this process should run the command itself (one process, or already under MPI).
int launch_if_needed(const nlohmann::json& config, int argc, const char* const* argv,
                     std::ostream& err);

}  // namespace ath::cli
