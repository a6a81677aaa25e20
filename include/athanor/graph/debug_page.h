// The compiler's debug page: one HTML file per compiled graph with the pass report, the graph
// after each pass, the fusion groups and the memory plan drawn as an SVG timeline (nodes of the
// schedule across, arena offsets down; one rectangle per buffer, live from the node that makes
// it to its last reader). compile() writes it under ATH_COMPILE_DEBUG=dir
// (CompileOptions::debug_dir) as dir/graph<N>/index.html.
//
//   #include "athanor/graph/debug_page.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({64});
//   graph::Tracer tracer({x});
//   graph::Graph g = tracer.finish({exp(relu(x) * 2.0)});
//   graph::MemoryPlan plan = graph::plan_memory(g);
//   std::string svg = graph::memory_plan_svg(g, plan);
//   assert(svg.find("<rect") != std::string::npos);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/graph/memory_plan.h"
#include "athanor/graph/passes.h"

namespace ath::graph {

// The arena over the schedule, as a standalone <svg> element.
std::string memory_plan_svg(const Graph& g, const MemoryPlan& plan);

// The whole page. `stages`: {name, graph text} in order (traced, then after each pass).
std::string debug_page(const Graph& g, const PassReport& report, const MemoryPlan& plan,
                       const std::vector<std::pair<std::string, std::string>>& stages);

}  // namespace ath::graph
