#include "athanor/cli/app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <new>
#include <system_error>

#include "athanor/cli/athanor_schema.h"
#include "athanor/cli/config.h"
#include "athanor/cli/export.h"
#include "athanor/cli/inspect.h"
#include "athanor/cli/launch.h"
#include "athanor/cli/run.h"
#include "athanor/dist/world.h"
#include "athanor/train/checkpoint.h"
#include "onnx_commands.h"

namespace ath::cli {
namespace {

struct ConfigCommand {
  CLI::App* app = nullptr;
  std::vector<std::string> files;
  std::string print_config;
};

constexpr const char* kConfigHelp =
    "\nConfig keys (override with --key=value or --key value; values are YAML):\n";

// The exit status of a command that failed. One rank of a multi-process run ends its process
// at once, without MPI_Finalize: mpirun then stops every rank, instead of the others waiting
// in their next collective until its deadline.
int end_rank(int status, std::ostream& err) {
  if (dist::initialized() && dist::world().world_size() > 1) {
    err.flush();
    std::cout.flush();
    std::_Exit(status);
  }
  return status;
}

// A standard library exception in words a user can act on (std::bad_alloc's what() is only
// "std::bad_alloc"; a thread that cannot start says only "Resource temporarily unavailable").
std::string describe(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return "out of memory (a size in the config may be too large: batch_size, model sizes, "
           "num_workers)";
  }
  if (const auto* s = dynamic_cast<const std::system_error*>(&e)) {
    return fmt::format("the system refused a resource ({}; too many num_workers?)", s->what());
  }
  return e.what();
}

}  // namespace

int athanor_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const Schema schema = athanor_schema();
  CLI::App app{"athanor: train, evaluate and inspect models from a config", "athanor"};
  app.set_version_flag("--version", std::string("athanor ") + athanor_version());
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::simple);

  const std::pair<const char*, const char*> commands[] = {
      {"fit", "Train a model (ckpt_path resumes)"},
      {"validate", "Run one validation epoch"},
      {"test", "Run one test epoch"},
      {"predict", "Run predictions"}};
  std::vector<ConfigCommand> config_commands(std::size(commands));
  for (std::size_t i = 0; i < std::size(commands); ++i) {
    ConfigCommand& c = config_commands[i];
    c.app = app.add_subcommand(commands[i].first, commands[i].second);
    c.app->allow_extras();
    c.app
        ->add_option("--config", c.files,
                     "A YAML config; repeat to merge several (later files win). Without one, "
                     "the built-in run is used")
        ->allow_extra_args(false)
        ->type_name("FILE");
    c.app
        ->add_option("--print_config", c.print_config,
                     "Print the resolved config as YAML and exit (=comments adds descriptions)")
        ->expected(0, 1)
        ->type_name("[comments]");
    c.app->footer(kConfigHelp + schema.help_text());
  }
  std::string inspect_path;
  CLI::App* inspect = app.add_subcommand("inspect",
                                         "Show the tensors and metadata of a safetensors file or "
                                         "checkpoint");
  inspect->add_option("file", inspect_path, "The file")->required();
  ExportCommand export_command(app);
  detail::OnnxCommands onnx_commands;  // run, bench
  detail::add_onnx_commands(app, onnx_commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "athanor: error: " << e.what() << "\nRun 'athanor --help' for usage.\n";
    return 2;
  }

  if (inspect->parsed()) return inspect_file(inspect_path, out, err);
  if (export_command.parsed()) return export_command.run(out, err);
  if (const int status = detail::run_onnx_commands(onnx_commands, out, err); status >= 0)
    return status;
  for (ConfigCommand& c : config_commands) {
    if (!c.app->parsed()) continue;
    nlohmann::json config;
    try {
      const std::vector<Override> overrides = parse_overrides(c.app->remaining());
      config = resolve_config(schema, default_config_yaml(), c.files, overrides);
    } catch (const Error& e) {
      err << "athanor: error: " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {  // std::bad_alloc and the like: never terminate
      err << "athanor: error: reading the config: " << describe(e) << "\n";
      return 2;
    }
    if (c.app->count("--print_config") > 0) {
      if (!c.print_config.empty() && c.print_config != "comments") {
        err << "athanor: error: --print_config takes no value or 'comments', got '"
            << c.print_config << "'\n";
        return 2;
      }
      out << to_yaml(schema, config, c.print_config == "comments");
      return 0;
    }
    // One mapping (docs/cli.md): 2 when athanor refused the input — every ath::Error names the
    // config key, file, checkpoint or value at fault (a config value a constructor rejects, a
    // checkpoint for another model, corrupt data) — and 1 when the run itself failed (a
    // non-finite loss under detect_anomaly, out of memory, a system failure).
    try {
      // trainer.devices x num_nodes > 1: this process starts the ranks through mpirun and
      // returns their exit status; each rank runs the command itself.
      if (c.app->get_name() == "fit") {
        const int launched = launch_if_needed(config, argc, argv, err);
        if (launched >= 0) return launched;
      }
      return run_command(c.app->get_name(), config, out);
    } catch (const AutogradError& e) {  // training went wrong, not its input
      err << "athanor: error: " << e.what() << "\n";
      return end_rank(1, err);
    } catch (const Error& e) {
      err << "athanor: error: " << e.what() << "\n";
      return end_rank(2, err);
    } catch (const std::exception& e) {  // std::bad_alloc, std::system_error, ...
      err << "athanor: error: running '" << c.app->get_name() << "': " << describe(e) << "\n";
      return end_rank(1, err);
    }
  }
  err << "athanor: error: no subcommand\n";
  return 2;
}

}  // namespace ath::cli
