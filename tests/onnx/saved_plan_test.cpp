// SessionOptions::plan_path: a second session loading the plan the first one saved replays its
// optimized graphs without tracing (bit-identical outputs, the same nodes and attributes); a plan
// made for another model, other options, or that is corrupt or inconsistent in any way is
// ignored with one diagnostic, and the session rebuilds and rewrites it — never a crash.
#include "onnx/saved_plan.h"

#include <athanor/athanor.h>
#include <athanor/graph/graph.h>
#include <athanor/io/checksum.h>
#include <athanor/io/safetensors.h>
#include <athanor/onnx/session.h>
#include <athanor/onnx/tensor_file.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "onnx/model_builder.h"
#include "onnx/node_conformance.h"
#include "onnx/plan_graph.h"

namespace ath::onnx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ModelBuilder;
constexpr int kF = ::onnx::TensorProto::FLOAT;

void conv(ModelBuilder& m, const std::string& x, const std::string& w, const std::string& b,
          const std::string& y) {
  auto* n = m.node("Conv", {x, w, b}, {y});
  ModelBuilder::attr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
}

// conv -> relu -> max pool -> conv -> add (residual) -> relu -> global average pool -> gemm:
// blocked_layout packs its weights and keeps the activations blocked.
std::string save_cnn(const std::string& name, uint64_t seed = 21) {
  manual_seed(seed);
  ModelBuilder m(13);
  m.input("x", kF, {"N", 3, 12, 12});
  m.initializer("w0", randn({16, 3, 3, 3}) * 0.3);
  m.initializer("b0", randn({16}) * 0.1);
  m.initializer("w1", randn({16, 16, 3, 3}) * 0.1);
  m.initializer("b1", randn({16}) * 0.1);
  m.initializer("wf", randn({4, 16}));
  m.initializer("bf", randn({4}));
  conv(m, "x", "w0", "b0", "c0");
  m.node("Relu", {"c0"}, {"r0"});
  auto* pool = m.node("MaxPool", {"r0"}, {"p0"});
  ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  ModelBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
  conv(m, "p0", "w1", "b1", "c1");
  m.node("Add", {"c1", "p0"}, {"s1"});
  m.node("Relu", {"s1"}, {"r1"});
  m.node("GlobalAveragePool", {"r1"}, {"g"});
  m.node("Flatten", {"g"}, {"f"});
  ModelBuilder::attr(m.node("Gemm", {"f", "wf", "bf"}, {"y"}), "transB", int64_t{1});
  m.output("y", kF);
  return m.save(name);
}

// (x * x + x) / 2 - x: one fused_pointwise node.
std::string save_pointwise(const std::string& name) {
  ModelBuilder m(13);
  m.input("x", kF, {"N", 8});
  m.initializer("two", full({}, 2.0));
  m.node("Mul", {"x", "x"}, {"a"});
  m.node("Add", {"a", "x"}, {"b"});
  m.node("Div", {"b", "two"}, {"c"});
  m.node("Sub", {"c", "x"}, {"y"});
  m.output("y", kF);
  return m.save(name);
}

std::string fresh_plan(const std::string& model) {
  const std::string path = (fs::path(model).parent_path() / "plan.safetensors").string();
  fs::remove(path);
  return path;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && equal(a, b);
}

int plan_rejections(const SessionStats& s) {
  int n = 0;
  for (const std::string& d : s.diagnostics)
    n += d.find("saved plan not used") != std::string::npos;
  return n;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The plan's JSON, edited by `fn`, written back with a checksum that matches: what the checks
// behind the checksums must catch.
void edit_plan(const std::string& path, const std::function<void(json&)>& fn) {
  SafetensorsData d = load_safetensors(path);
  json plan = json::parse(d.metadata.at("athanor_plan"));
  fn(plan);
  const std::string text = plan.dump();
  save_safetensors(path, d.tensors,
                   {{"athanor_plan", text}, {"athanor_plan_crc32", format_crc32(crc32_of(text))}});
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Every node's op, inputs, outputs and attributes, and every value's record.
void expect_same_graph(const graph::Graph& a, const graph::Graph& b) {
  EXPECT_EQ(a.to_text(), b.to_text());
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t k = 0; k < a.nodes.size(); ++k) {
    EXPECT_EQ(a.nodes[k].op, b.nodes[k].op);
    EXPECT_TRUE(a.nodes[k].op->attrs_equal(a.nodes[k].attrs.get(), b.nodes[k].attrs.get()))
        << "node " << k << " (" << a.nodes[k].op->name << ")";
  }
  ASSERT_EQ(a.values.size(), b.values.size());
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    EXPECT_EQ(a.values[v].strides, b.values[v].strides) << v;
    EXPECT_EQ(a.values[v].storage, b.values[v].storage) << v;
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (std::size_t c = 0; c < a.constants.size(); ++c)
    EXPECT_TRUE(same_bits(a.constants[c], b.constants[c])) << "constant " << c;
}

TEST(SavedPlan, SecondSessionReplaysTheCnnWithoutTracing) {
  const std::string model = save_cnn("plan_cnn");
  const std::string plan = fresh_plan(model);
  const SessionOptions options{.threads = 2, .plan_path = plan};
  const std::vector<Tensor> xs = {randn({1, 3, 12, 12}), randn({3, 3, 12, 12})};
  InferenceSession a(model, options);
  std::vector<Tensor> want;
  std::vector<std::string> graphs;
  for (const Tensor& x : xs) {
    a.run({{"x", x}});
    want.push_back(a.run({{"x", x}})[0]);  // the replay: what the optimized graph computes
    // Both convolutions run in the layout; the first, with its relu and pool, as one node.
    EXPECT_EQ(a.last_graph()->count("conv_blocked"), 1) << a.last_graph()->to_text();
    EXPECT_EQ(a.last_graph()->count("conv_relu_max_pool"), 1) << a.last_graph()->to_text();
  }
  EXPECT_EQ(a.stats().traces, 2);
  EXPECT_EQ(a.stats().plan_writes, 2);
  EXPECT_EQ(a.stats().plan_graphs_loaded, 0);
  EXPECT_TRUE(a.stats().diagnostics.empty()) << joined(a.stats().diagnostics);
  ASSERT_TRUE(fs::exists(plan));

  InferenceSession b(model, options);
  EXPECT_EQ(b.stats().plan_graphs_loaded, 2);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    a.run({{"x", xs[i]}});
    const graph::Graph* ga = a.last_graph();
    EXPECT_TRUE(same_bits(b.run({{"x", xs[i]}})[0], want[i])) << "batch " << xs[i].size(0);
    expect_same_graph(*ga, *b.last_graph());
  }
  EXPECT_EQ(b.stats().traces, 0);
  EXPECT_EQ(b.stats().replays, 2);
  EXPECT_EQ(b.stats().plan_writes, 0);  // nothing new to save
  EXPECT_TRUE(b.stats().diagnostics.empty()) << joined(b.stats().diagnostics);
}

// With inter_op the plan holds the pairs the cost model chose (whatever it chose on this
// machine), and the loading session runs the same schedule.
TEST(SavedPlan, InterOpPairsAreSaved) {
  const std::string model = save_cnn("plan_inter_op");
  const std::string plan = fresh_plan(model);
  const SessionOptions options{.threads = 2, .inter_op = true, .plan_path = plan};
  const Tensor x = randn({2, 3, 12, 12});
  InferenceSession a(model, options);
  a.run({{"x", x}});
  const Tensor want = a.run({{"x", x}})[0];
  InferenceSession b(model, options);
  EXPECT_EQ(b.stats().plan_graphs_loaded, 1);
  EXPECT_TRUE(same_bits(b.run({{"x", x}})[0], want));
  EXPECT_EQ(b.stats().traces, 0);
  expect_same_graph(*a.last_graph(), *b.last_graph());
  const json saved = json::parse(load_safetensors(plan).metadata.at("athanor_plan"));
  EXPECT_TRUE(saved["graphs"][0]["pairs"].is_array());
}

TEST(SavedPlan, FusedPointwiseGraphsReplayFromThePlan) {
  const std::string model = save_pointwise("plan_pointwise");
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({5, 8});
  InferenceSession a(model, {.plan_path = plan});
  a.run({{"x", x}});
  const Tensor want = a.run({{"x", x}})[0];
  EXPECT_EQ(a.last_graph()->count("fused_pointwise"), 1) << a.last_graph()->to_text();
  InferenceSession b(model, {.plan_path = plan});
  EXPECT_TRUE(same_bits(b.run({{"x", x}})[0], want));
  EXPECT_EQ(b.stats().traces, 0);
  EXPECT_EQ(b.last_graph()->count("fused_pointwise"), 1);
  expect_same_graph(*a.last_graph(), *b.last_graph());
}

TEST(SavedPlan, ValueKeyedAndEagerKeysAreSavedToo) {
  // Reshape's shape is an input (its value is part of the key); NonZero reads its input on the
  // host mid-run, so that model's key runs eagerly — and the plan remembers both.
  ModelBuilder m(13);
  m.input("x", kF, {2, 6});
  m.input("shape", ::onnx::TensorProto::INT64, {2});
  m.node("Reshape", {"x", "shape"}, {"r"});
  m.node("Relu", {"r"}, {"y"});
  m.output("y", kF);
  const std::string model = m.save("plan_value_keyed");
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({2, 6});
  const Tensor shape = from_vector<int64_t>({3, 4});
  InferenceSession a(model, {.plan_path = plan});
  a.run({{"x", x}, {"shape", shape}});
  InferenceSession b(model, {.plan_path = plan});
  EXPECT_EQ(b.stats().plan_graphs_loaded, 1);
  EXPECT_TRUE(same_bits(b.run({{"x", x}, {"shape", shape}})[0], relu(x).reshape({3, 4})));
  EXPECT_EQ(b.stats().traces, 0);
  EXPECT_EQ(b.run({{"x", x}, {"shape", from_vector<int64_t>({4, 3})}})[0].shape(), Shape({4, 3}));
  EXPECT_EQ(b.stats().traces, 1);  // another value: another key

  ModelBuilder nz(13);
  nz.input("x", kF, {4});
  nz.node("NonZero", {"x"}, {"y"});
  nz.output("y", ::onnx::TensorProto::INT64);
  const std::string nz_model = nz.save("plan_nonzero");
  const std::string nz_plan = fresh_plan(nz_model);
  const Tensor v = from_vector<float>({0, 1, 0, 2});
  InferenceSession c(nz_model, {.plan_path = nz_plan});
  c.run({{"x", v}});
  EXPECT_EQ(c.stats().eager_runs + c.stats().traces, 1);
  InferenceSession d(nz_model, {.plan_path = nz_plan});
  EXPECT_EQ(d.stats().plan_graphs_loaded, 1);
  EXPECT_TRUE(equal(d.run({{"x", v}})[0], from_vector<int64_t>({1, 3}).reshape({1, 2})));
  EXPECT_EQ(d.stats().traces, 0);
  EXPECT_EQ(d.stats().eager_runs, 1);
}

TEST(SavedPlan, AnotherModelFileInvalidatesThePlan) {
  const std::string model = save_cnn("plan_model_changed", 21);
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({2, 3, 12, 12});
  InferenceSession(model, {.plan_path = plan}).run({{"x", x}});
  save_cnn("plan_model_changed", 22);  // same graph, other weights, same path
  InferenceSession b(model, {.plan_path = plan});
  EXPECT_EQ(b.stats().plan_graphs_loaded, 0);
  ASSERT_EQ(plan_rejections(b.stats()), 1) << joined(b.stats().diagnostics);
  EXPECT_NE(b.stats().diagnostics[0].find("model_crc32"), std::string::npos)
      << b.stats().diagnostics[0];
  const Tensor y = b.run({{"x", x}})[0];
  EXPECT_EQ(b.stats().traces, 1);
  EXPECT_EQ(b.stats().plan_writes, 1);  // rewritten for the new model
  InferenceSession c(model, {.plan_path = plan});
  EXPECT_EQ(c.stats().plan_graphs_loaded, 1);
  EXPECT_TRUE(allclose(c.run({{"x", x}})[0], y, {.rtol = 1e-5, .atol = 1e-5}));
  EXPECT_EQ(c.stats().traces, 0);
}

TEST(SavedPlan, OtherOptionsInvalidateThePlan) {
  const std::string model = save_cnn("plan_options");
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({1, 3, 12, 12});
  InferenceSession(model, {.threads = 2, .plan_path = plan}).run({{"x", x}});
  const std::string saved = read_bytes(plan);
  const std::vector<std::pair<SessionOptions, std::string>> others = {
      {{.threads = 1, .plan_path = plan}, "threads"},
      {{.threads = 2, .optimize = false, .plan_path = plan}, "optimize"},
      {{.threads = 2, .disable_passes = {"fuse"}, .plan_path = plan}, "disable_passes"},
      {{.threads = 2, .inter_op = true, .plan_path = plan}, "inter_op"},
  };
  for (const auto& [options, field] : others) {
    write_bytes(plan, saved);
    InferenceSession s(model, options);
    EXPECT_EQ(s.stats().plan_graphs_loaded, 0) << field;
    ASSERT_EQ(plan_rejections(s.stats()), 1) << field;
    EXPECT_NE(s.stats().diagnostics[0].find(field), std::string::npos) << s.stats().diagnostics[0];
  }
  write_bytes(plan, saved);
  InferenceSession same(model, {.threads = 2, .arena = false, .plan_path = plan});  // no matter
  EXPECT_EQ(same.stats().plan_graphs_loaded, 1);
}

TEST(SavedPlan, CorruptFilesAreIgnoredWithADiagnostic) {
  const std::string model = save_cnn("plan_corrupt");
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({2, 3, 12, 12});
  InferenceSession a(model, {.plan_path = plan});
  a.run({{"x", x}});
  const Tensor want = a.run({{"x", x}})[0];
  const std::string good = read_bytes(plan);
  std::vector<std::string> corrupt = {"", good.substr(0, 7), good.substr(0, good.size() / 2),
                                      good.substr(0, good.size() - 1), good + "x"};
  // A flipped bit in the length, the header, its JSON, every tensor's bytes.
  for (std::size_t at = 0; at < good.size(); at += std::max<std::size_t>(good.size() / 97, 1)) {
    corrupt.push_back(good);
    corrupt.back()[at] = static_cast<char>(corrupt.back()[at] ^ 0x10);
  }
  for (std::size_t i = 0; i < corrupt.size(); ++i) {
    write_bytes(plan, corrupt[i]);
    InferenceSession s(model, {.plan_path = plan});
    EXPECT_EQ(s.stats().plan_graphs_loaded, 0) << "case " << i;
    EXPECT_EQ(plan_rejections(s.stats()), 1) << "case " << i << "\n"
                                             << joined(s.stats().diagnostics);
    EXPECT_TRUE(allclose(s.run({{"x", x}})[0], want, {.rtol = 1e-5, .atol = 1e-5}));
    EXPECT_EQ(s.stats().traces, 1);
  }
  // The last session rewrote a good plan.
  InferenceSession again(model, {.plan_path = plan});
  EXPECT_EQ(again.stats().plan_graphs_loaded, 1);
}

// Edits behind valid checksums: the graph checks catch what a checksum cannot.
TEST(SavedPlan, InconsistentGraphsAreRefusedByTheChecks) {
  const std::string model = save_cnn("plan_inconsistent");
  const std::string plan = fresh_plan(model);
  const Tensor x = randn({2, 3, 12, 12});
  InferenceSession a(model, {.plan_path = plan});
  a.run({{"x", x}});
  const graph::Graph& g = *a.last_graph();
  // Two nodes the second of which reads the first: they may not run as an inter-op pair.
  int32_t dependent = -1;
  for (std::size_t k = 0; k + 1 < g.nodes.size() && dependent < 0; ++k) {
    for (graph::ValueId in : g.nodes[k + 1].inputs)
      if (!g.nodes[k].outputs.empty() && in == g.nodes[k].outputs[0])
        dependent = static_cast<int32_t>(k);
  }
  ASSERT_GE(dependent, 0);
  // The first conv_blocked node's output value.
  int64_t conv_out = -1;
  for (const graph::Node& n : g.nodes)
    if (conv_out < 0 && n.op->name == "conv_blocked") conv_out = n.outputs[0];
  const std::string good = read_bytes(plan);
  const std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"unknown op", [](json& p) { p["graphs"][0]["graph"]["nodes"][0]["op"] = "no_such_op"; }},
      {"value id out of range",
       [](json& p) { p["graphs"][0]["graph"]["nodes"][0]["inputs"][0] = 99999; }},
      {"negative value id", [](json& p) { p["graphs"][0]["graph"]["outputs"][0] = -7; }},
      {"attribute bytes cut short",
       [](json& p) {
         auto& attrs = p["graphs"][0]["graph"]["nodes"][0]["attrs"];
         const std::string s = attrs.get<std::string>();
         attrs = s.substr(0, s.size() - 2);
       }},
      {"attribute bytes not hex",
       [](json& p) { p["graphs"][0]["graph"]["nodes"][0]["attrs"] = "zz"; }},
      {"shape rule disagrees",
       [&](json& p) { p["graphs"][0]["graph"]["values"][conv_out]["shape"][1] = 5; }},
      {"dtype unknown", [&](json& p) { p["graphs"][0]["graph"]["values"][0]["dtype"] = "f128"; }},
      {"overlapping pairs",
       [](json& p) {
         p["graphs"][0]["pairs"] = {0, 1};
       }},
      {"dependent pair", [&](json& p) { p["graphs"][0]["pairs"] = {dependent}; }},
      {"key of another shape",
       [](json& p) { p["graphs"][0]["inputs"][0]["type"] = "float32[9,3,12,12]"; }},
      {"missing tensor", [](json& p) { p["graphs"][0]["graph"]["constants"][0] = "nope"; }},
      {"tensor checksum", [](json& p) { p["tensors"]["c0"] = "0x00000000"; }},
      {"not an object", [](json& p) { p["graphs"] = 3; }},
      {"another format", [](json& p) { p["format"] = 2; }},
  };
  for (const auto& [what, edit] : edits) {
    write_bytes(plan, good);
    edit_plan(plan, edit);
    InferenceSession s(model, {.plan_path = plan});
    EXPECT_EQ(s.stats().plan_graphs_loaded, 0) << what;
    EXPECT_EQ(plan_rejections(s.stats()), 1) << what << "\n" << joined(s.stats().diagnostics);
    if (!s.stats().diagnostics.empty())
      std::printf("%s: %s\n", what.c_str(), s.stats().diagnostics[0].c_str());
    EXPECT_EQ(s.run({{"x", x}})[0].shape(), Shape({2, 4})) << what;
  }
  // Not JSON at all, with a matching checksum.
  write_bytes(plan, good);
  SafetensorsData d = load_safetensors(plan);
  save_safetensors(plan, d.tensors,
                   {{"athanor_plan", "{"}, {"athanor_plan_crc32", format_crc32(crc32_of("{"))}});
  InferenceSession s(model, {.plan_path = plan});
  EXPECT_EQ(plan_rejections(s.stats()), 1) << joined(s.stats().diagnostics);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor u = a.contiguous(), v = b.contiguous();
  return std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) == 0;  // NaNs included
}

// Every ONNX node test the session runs: its optimized graph goes through a plan and back, and
// the loading session replays it without tracing, to the same bits. What the checks of a read
// plan must never do is refuse a graph the passes made.
TEST(SavedPlan, EveryNodeTestGraphReplaysFromAPlan) {
  const fs::path suite = fs::path(ATH_ONNX_TESTDATA) / "node";
  ASSERT_TRUE(fs::is_directory(suite)) << suite;
  const fs::path plan = fs::temp_directory_path() / "athanor_onnx_node_plan.safetensors";
  int graphs = 0, eager = 0;
  for (const fs::path& dir : testing::list_tests(suite)) {
    const std::string model = (dir / "model.onnx").string();
    const fs::path data = dir / "test_data_set_0";
    std::vector<std::pair<std::string, Tensor>> inputs;
    std::vector<Tensor> want;
    try {
      fs::remove(plan);
      InferenceSession a(model, {.plan_path = plan.string()});
      for (int i = 0; fs::exists(data / fmt::format("input_{}.pb", i)); ++i) {
        NamedTensor t = read_tensor_file((data / fmt::format("input_{}.pb", i)).string());
        inputs.emplace_back(t.name.empty() ? a.inputs().at(i).name : t.name, t.tensor);
      }
      a.run(inputs);
      want = a.run(inputs);  // the replay (or the eager run again)
      if (a.stats().plan_writes != 1) continue;
    } catch (const std::exception&) {
      continue;  // unsupported, or failing: the conformance test's business
    }
    SCOPED_TRACE(dir.filename().string());
    InferenceSession b(model, {.plan_path = plan.string()});
    EXPECT_EQ(b.stats().plan_graphs_loaded, 1) << joined(b.stats().diagnostics);
    const std::vector<Tensor> got = b.run(inputs);
    EXPECT_EQ(b.stats().traces, 0);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bytes(got[i], want[i])) << i;
    (b.stats().eager_runs > 0 ? eager : graphs)++;
  }
  std::printf("%d node-test graphs and %d eager keys replayed from plans\n", graphs, eager);
  EXPECT_GT(graphs, 500);
}

TEST(SavedPlan, GraphsAPlanCannotHoldAreLeftOutWithADiagnostic) {
  // An attribute source (an optimizer's live learning rate) is read at every replay: not data.
  graph::Graph g;
  const graph::ValueId x = g.add_argument({{3}, kFloat32});
  g.outputs.push_back(g.add_node(op_neg(), NoAttrs{}, {x})[0]);
  g.nodes[0].attr_source = [] { return std::shared_ptr<const void>(std::make_shared<NoAttrs>()); };
  EXPECT_THROW(detail::graph_to_json(g, [](const Tensor&) { return std::string("c"); }),
               NotImplementedError);
  // write_plan leaves such a graph out, says so, and saves the others.
  detail::PlanEntry sourced{.key = {{.type = "float32[3]"}}, .graph = g};
  g.nodes[0].attr_source = {};
  detail::PlanEntry plain{.key = {{.type = "float32[3]"}}, .graph = g};
  const std::string path = (fs::temp_directory_path() / "athanor_plan_left_out.plan").string();
  std::vector<std::string> notes;
  detail::write_plan(path, json::object(), {&sourced, &plain}, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("attributes from a source"), std::string::npos) << notes[0];
  const json plan = json::parse(load_safetensors(path).metadata.at("athanor_plan"));
  EXPECT_EQ(plan["graphs"].size(), 1u);

  const json j = detail::graph_to_json(g, [](const Tensor&) { return std::string("c"); });
  const graph::Graph back = detail::graph_from_json(j, [](const std::string&) { return Tensor(); });
  detail::check_loaded_graph(back, {});
  EXPECT_EQ(back.to_text(), g.to_text());
}

}  // namespace
}  // namespace ath::onnx
