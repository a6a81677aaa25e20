// Runs the usage example of one public header (or lists them all): each is a CTest case, so a
// header whose example stops compiling fails the build and one that throws fails its test.
//
//   header_examples --list
//   header_examples athanor/nn/module.h
#include <cstdio>
#include <exception>
#include <string>

#include "athanor/core/thread_policy.h"
#include "header_example_registry.h"

ATH_SHORT_OPENMP_SPIN();

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: header_examples --list | HEADER\n");
    return 2;
  }
  std::string name = argv[1];
  if (name == "--list") {
    for (const auto& [header, run] : header_examples::all()) std::printf("%s\n", header.c_str());
    return 0;
  }
  auto found = header_examples::all().find(name);
  if (found == header_examples::all().end()) {
    std::fprintf(stderr, "header_examples: no example for %s\n", name.c_str());
    return 2;
  }
  try {
    found->second();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: the example threw: %s\n", name.c_str(), e.what());
    return 1;
  }
  std::printf("%s: example ran\n", name.c_str());
  return 0;
}
