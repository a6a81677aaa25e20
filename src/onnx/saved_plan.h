// An inference session's saved optimized plan (SessionOptions::plan_path): the graphs the session
// built, one per cache key, after the passes, with their constants (packed weights included), so
// another process loading the same model replays them without tracing or optimizing.
//
// The file is one safetensors file, written atomically. Its tensors are the graphs' constants,
// each stored once (equal bytes are shared between graphs), named "c0", "c1"...; its metadata
// holds two strings:
// - "athanor_plan": one JSON document,
//     {"format": 1,
//      "header": {...what the plan was made for: plan_header()...},
//      "tensors": {"c0": "0x1a2b3c4d", ...},          CRC-32 of each constant's bytes
//      "graphs": [{"inputs": [{"type": "float32[2,3,15,15]"},
//                             {"type": "int64[2]", "value": "<hex bytes>"}],
//                  "graph": {...plan_graph.h...}, "pairs": [...]},
//                 {"inputs": [...], "eager": "why it runs eagerly"}]}
//   with one entry per key: the inputs' types (and, for inputs whose values steer the graph,
//   their bytes), then the graph and its inter-op pairs, or why that key runs eagerly.
// - "athanor_plan_crc32": the CRC-32 of that document.
// Checksums cover every byte that matters: a flipped bit anywhere is refused, not replayed.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "athanor/graph/graph.h"
#include "athanor/onnx/session.h"

namespace ath::onnx::detail {

struct LoadedModel;

// One input's part of a session's cache key: its type ("float32[2,3]") and, when its values
// steer the graph, its bytes.
struct KeyPart {
  std::string type;
  std::optional<std::string> value;
  bool operator==(const KeyPart&) const = default;
};
// "float32[2,3]": a key part's type.
std::string key_type(DType dtype, const Shape& shape);
// The cache key those parts make.
std::string key_string(const std::vector<KeyPart>& parts);

// One cached key as a plan stores it.
struct PlanEntry {
  std::vector<KeyPart> key;
  std::optional<std::string> eager;  // set: the key runs eagerly, and why
  graph::Graph graph;                // after the passes (empty when eager)
  std::vector<int32_t> pairs;        // the inter-op schedule's paired_first
};

// What a plan must have been made for, as JSON: the athanor version and library build, the
// model (its file's size and CRC-32, and its external data's), the CPU ISA kernels use, the
// convolutions' activation layout and whether Winograd may run (ATH_CONV_WINOGRAD), oneDNN's
// version (packed weights are in its formats) and the
// session options that shape the graph (threads, optimize, disable_passes, inter_op). A plan
// whose header differs in any field is not used. The model must have been loaded with its
// checksum (load_model's `checksum`).
nlohmann::json plan_header(const LoadedModel& model, const SessionOptions& options);

// Writes the entries to `path` atomically (a temporary file renamed over it). An entry whose
// graph a plan cannot hold (graph_to_json's NotImplementedError) is left out, with a line in
// `diagnostics`. Throws an ath::Error when the file cannot be written.
void write_plan(const std::string& path, const nlohmann::json& header,
                const std::vector<const PlanEntry*>& entries,
                std::vector<std::string>& diagnostics);

// Reads a plan made for `header` and `model` and checks every graph (check_loaded_graph), its
// key against the model's inputs, and every checksum. Throws an ath::Error naming the fault
// (the header field that differs, the entry, the node) for any plan that cannot be used.
std::vector<PlanEntry> read_plan(const std::string& path, const nlohmann::json& header,
                                 const LoadedModel& model);

}  // namespace ath::onnx::detail
