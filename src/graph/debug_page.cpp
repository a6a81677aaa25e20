// The compiler's debug page (debug_page.h): plain HTML and SVG, no scripts, so it opens from
// disk in any browser.
#include "athanor/graph/debug_page.h"

#include <fmt/format.h>

#include <algorithm>

#include "athanor/core/xml_escape.h"
#include "athanor/ops/fused_pointwise.h"

namespace ath::graph {

namespace {

const char* colour(MemoryCategory c) {
  return c == MemoryCategory::Workspace ? "#e4a33a" : "#4f86c6";
}

}  // namespace

std::string memory_plan_svg(const Graph& g, const MemoryPlan& plan) {
  const double width = 900, height = 360, left = 70, top = 10, bottom = 30;
  const double nodes = std::max<double>(1, static_cast<double>(g.nodes.size()));
  const double arena = std::max<double>(1, static_cast<double>(plan.arena_bytes));
  const double x_of = (width - left - 10) / nodes, y_of = (height - top - bottom) / arena;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"monospace\" font-size=\"11\">\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f4f4f4\"/>\n",
      width, height, left, top, width - left - 10, height - top - bottom);
  for (const MemoryPlan::Buffer& b : plan.buffers) {
    const std::string what =
        b.value == kNoValue
            ? fmt::format("workspace of node {} ({})", b.first,
                          g.nodes[static_cast<std::size_t>(b.first)].op->name)
            : fmt::format("%{} ({}): nodes {}..{}{}", b.value,
                          g.nodes[static_cast<std::size_t>(b.first)].op->name, b.first, b.last,
                          b.over == kNoValue ? "" : fmt::format(", in place over %{}", b.over));
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"0.5\"><title>{}, {} bytes at offset {}</title></rect>\n",
        left + b.first * x_of, top + static_cast<double>(b.offset) * y_of,
        std::max(1.0, (b.last - b.first + 1) * x_of),
        std::max(1.0, static_cast<double>(b.bytes) * y_of), colour(b.category), xml_escape(what),
        b.bytes, b.offset);
  }
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\">node 0</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">node "
      "{}</text>\n<text x=\"2\" y=\"{}\">0 B</text><text x=\"2\" y=\"{}\">{:.1f} MB</text>\n",
      left, height - 12, width - 10, height - 12, g.nodes.size(), top + 10, height - bottom,
      arena / 1e6);
  return s + "</svg>\n";
}

std::string debug_page(const Graph& g, const PassReport& report, const MemoryPlan& plan,
                       const std::vector<std::pair<std::string, std::string>>& stages) {
  std::string s =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>athanor compiled graph"
      "</title>\n<style>body{font-family:sans-serif;margin:2em}pre{background:#f7f7f7;"
      "padding:1em;overflow:auto}td,th{padding:2px 10px;text-align:left}</style></head><body>\n"
      "<h1>Compiled graph</h1>\n<h2>Passes</h2>\n<table><tr><th>pass</th><th>changed</th>"
      "<th>nodes after</th></tr>\n";
  s += fmt::format("<tr><td>traced</td><td></td><td>{}</td></tr>\n", report.nodes_before);
  for (const auto& e : report.passes)
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", xml_escape(e.name), e.changed,
                     e.nodes_after);
  s += "</table>\n<h2>Fusion groups</h2>\n<ul>\n";
  int groups = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op != &op_fused_pointwise()) continue;
    ++groups;
    const auto* attrs = static_cast<const FusedPointwiseAttrs*>(n.attrs.get());
    s += fmt::format("<li>node {}: <code>{}</code></li>\n", k,
                     xml_escape(PointwiseProgram::decode(attrs->code).to_string()));
  }
  if (groups == 0) s += "<li>none</li>\n";
  s += "</ul>\n<h2>Memory plan</h2>\n<p>Arena use over the schedule: one rectangle per buffer "
       "(blue: activations and saved tensors, orange: kernel workspace); hover for its value."
       "</p>\n";
  s += memory_plan_svg(g, plan);
  s += "<pre>" + xml_escape(plan.report(&g)) + "</pre>\n<h2>The graph after each stage</h2>\n";
  for (const auto& [name, text] : stages)
    s += fmt::format("<details><summary>{}</summary><pre>{}</pre></details>\n", xml_escape(name),
                     xml_escape(text));
  return s + "</body></html>\n";
}

}  // namespace ath::graph
