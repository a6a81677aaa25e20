// Self-launch through mpirun (see athanor/cli/launch.h).
#include "athanor/cli/launch.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "athanor/core/error.h"
#include "athanor/dist/world.h"

extern char** environ;

namespace ath::cli {

std::vector<std::string> mpirun_command(const nlohmann::json& trainer,
                                        const std::vector<std::string>& arguments,
                                        const LaunchSettings& settings) {
  const int64_t devices = trainer.at("devices").get<int64_t>();
  const int64_t nodes = trainer.at("num_nodes").get<int64_t>();
  if (devices * nodes <= 1) return {};
  const nlohmann::json& hostfile = trainer.at("hostfile");
  ATH_CHECK(nodes == 1 || !hostfile.is_null(), ValueError,
            "trainer.num_nodes={} needs trainer.hostfile: an OpenMPI hostfile naming the machines",
            nodes);
  std::vector<std::string> cmd{"mpirun", "-n", std::to_string(devices * nodes)};
  if (settings.as_root) cmd.push_back("--allow-run-as-root");
  if (!hostfile.is_null()) {
    cmd.insert(cmd.end(), {"--hostfile", hostfile.get<std::string>(), "--map-by",
                           fmt::format("ppr:{}:node", devices)});
  } else {
    cmd.push_back("--oversubscribe");  // devices may exceed the slots mpirun counts
  }
  // The ranks' OpenMP threads share the machine: unbound, and a share of the cores each unless
  // the user chose a count.
  cmd.insert(cmd.end(), {"--bind-to", "none"});
  if (settings.omp_threads_set) {
    cmd.insert(cmd.end(), {"-x", "OMP_NUM_THREADS"});
  } else {
    const int64_t share = std::max<int64_t>(1, settings.cores / devices);
    cmd.insert(cmd.end(), {"-x", fmt::format("OMP_NUM_THREADS={}", share)});
  }
  cmd.push_back(settings.self);
  cmd.insert(cmd.end(), arguments.begin(), arguments.end());
  return cmd;
}

int run_command_line(const std::vector<std::string>& command) {
  ATH_CHECK(!command.empty(), ValueError, "run_command_line: no command");
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  ATH_CHECK(rc == 0, IOError, "cannot start '{}' ({}){}", command[0], std::strerror(rc),
            command[0] == "mpirun" ? ": trainer.devices > 1 starts the processes through "
                                     "OpenMPI's mpirun (Debian's openmpi-bin)"
                                   : "");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    ATH_CHECK(errno == EINTR, IOError, "waiting for '{}': {}", command[0], std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

int launch_if_needed(const nlohmann::json& config, int argc, const char* const* argv,
                     std::ostream& err) {
  if (dist::launched_by_mpi()) return -1;
  LaunchSettings settings;
  std::error_code ec;
  settings.self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || settings.self.empty()) settings.self = argv[0];
  settings.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  settings.as_root = geteuid() == 0;
  settings.omp_threads_set = std::getenv("OMP_NUM_THREADS") != nullptr;
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  const std::vector<std::string> command =
      mpirun_command(config.at("trainer"), arguments, settings);
  if (command.empty()) return -1;
  std::string line;
  for (const std::string& a : command) line += (line.empty() ? "" : " ") + a;
  err << "athanor: starting " << command[2] << " processes: " << line << "\n";
  return run_command_line(command);
}

}  // namespace ath::cli
