// The results box of validate() and test(), laid out as Lightning's plain-text one.
#include "results_table.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace ath::train::detail {
namespace {

std::string rstrip(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

// "{:^w}{:^w}" as Python's str.format centres (the odd space goes right, as fmt's does).
std::string row(const std::string& a, const std::string& b, int w) {
  return rstrip(fmt::format("{:^{}}{:^{}}", a, w, b, w));
}

}  // namespace

std::string results_table(const Metrics& metrics, const std::string& stage, int width) {
  const std::string header = "DataLoader 0";
  std::size_t longest = header.size();
  for (const auto& [name, value] : metrics) longest = std::max(longest, name.size());
  const int col = std::min(std::max<int>(static_cast<int>(longest), 25), width / 2);
  std::string title = stage + " metric";  // Python's str.capitalize(): first letter up
  title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
  std::string bar;
  for (int i = 0; i < width; ++i) bar += "─";
  std::vector<std::string> lines = {bar, row(title, header, col), bar};
  const std::size_t half = static_cast<std::size_t>(width / 2);
  for (const auto& [name, value] : metrics) {
    const std::string v = fmt::format("{}", value);  // shortest round trip, like Python's str()
    std::string rest = name;
    while (rest.size() > half) {  // a name longer than half the width wraps
      lines.push_back(row(rest.substr(0, half), v, col));
      rest = rest.substr(half);
    }
    lines.push_back(row(rest, v, col));
  }
  lines.push_back(bar);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

int terminal_columns() {
  if (const char* env = std::getenv("COLUMNS")) {
    const int c = std::atoi(env);
    if (c > 0) return c;
  }
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 120;
}

}  // namespace ath::train::detail
