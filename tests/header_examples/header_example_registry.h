// The registry the generated example sources add themselves to (see extract_examples.cpp):
// one entry per public header with a usage example, run by name from main.cpp.
#pragma once

#include <map>
#include <string>

namespace header_examples {

using Example = void (*)();

inline std::map<std::string, Example>& all() {
  static std::map<std::string, Example> examples;
  return examples;
}

inline bool add(const char* header, Example run) {
  all().emplace(header, run);
  return true;
}

}  // namespace header_examples
