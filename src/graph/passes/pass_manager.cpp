#include <fmt/format.h>

#include <algorithm>

#include "athanor/core/error.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"

namespace ath::graph {

namespace {

struct NamedPass {
  std::string name;
  int (*run)(Graph&);
};

const std::vector<NamedPass>& passes() {
  // Folding first makes more nodes equal for CSE (and constants of 1 visible to simplify);
  // DCE last sweeps what the others left unused.
  static const std::vector<NamedPass> list{
      {"fold", fold_constants},
      {"simplify", simplify},
      {"cse", eliminate_common_subexpressions},
      {"fuse", fuse_pointwise},
      {"dce", eliminate_dead_code},
  };
  return list;
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const NamedPass& p : passes()) n.push_back(p.name);
    return n;
  }();
  return names;
}

PassReport run_passes(Graph& g, const PassOptions& options) {
  for (const std::string& d : options.disabled) {
    ATH_CHECK(std::find(pass_names().begin(), pass_names().end(), d) != pass_names().end(),
              ValueError, "graph passes: no pass named '{}' (passes: {})", d,
              fmt::join(pass_names(), ", "));
  }
  PassReport report;
  report.nodes_before = static_cast<int>(g.nodes.size());
  for (const NamedPass& p : passes()) {
    if (std::find(options.disabled.begin(), options.disabled.end(), p.name) !=
        options.disabled.end())
      continue;
    const int changed = p.run(g);
    if (options.verify) {
      try {
        verify(g);
      } catch (Error& e) {
        throw ValueError(fmt::format("after pass '{}': {}", p.name, e.what()));
      }
    }
    report.passes.push_back({p.name, changed, static_cast<int>(g.nodes.size())});
    if (options.after_each) options.after_each(p.name, g);
  }
  return report;
}

}  // namespace ath::graph
