#include "plan_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/graph/interop.h"
#include "athanor/graph/verify.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/views.h"
#include "athanor/tensor/grad_mode.h"
#include "athanor/tensor/storage.h"

namespace ath::onnx::detail {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueId;
using graph::ValueOrigin;
using graph::WriteKind;
using nlohmann::json;

namespace {

constexpr std::array<const char*, 4> kOrigins = {"argument", "state", "constant", "node"};
constexpr std::array<const char*, 3> kWrites = {"none", "into_self", "inputs"};
static_assert(static_cast<int>(ValueOrigin::Node) == 3 && static_cast<int>(WriteKind::Inputs) == 2,
              "the names above follow the enums' order");
// No real tensor comes near these; a record past them is corrupt, and the checks below may then
// multiply sizes without overflowing.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr std::size_t kMaxRank = 64;
constexpr int64_t kMaxStandInBytes = int64_t{1} << 40;

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <std::size_t N>
std::size_t index_of(const std::array<const char*, N>& names, const std::string& name,
                     const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) return i;
  ATH_THROW(FormatError, "unknown {} '{}'", what, name);
}

DType dtype_of(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (dtype_name(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  ATH_THROW(FormatError, "unknown dtype '{}'", name);
}

// A JSON number as an int32 id or slot: -1 ("none") up to `limit` - 1.
int32_t read_id(const json& j, int64_t limit, const char* what) {
  const auto v = j.get<int64_t>();
  ATH_CHECK(v >= -1 && v < limit, FormatError, "{} {} is out of range (0 to {})", what, v,
            limit - 1);
  return static_cast<int32_t>(v);
}

std::vector<ValueId> read_ids(const json& j, int64_t num_values, const char* what) {
  std::vector<ValueId> ids;
  for (const json& v : j) {
    ids.push_back(read_id(v, num_values, what));
    ATH_CHECK(ids.back() >= 0, FormatError, "{} names no value", what);
  }
  return ids;
}

DimList read_dims(const json& j, const char* what) {
  ATH_CHECK(j.is_array() && j.size() <= kMaxRank, FormatError, "a {} of {} dims", what,
            j.is_array() ? j.size() : 0);
  DimList dims;
  for (const json& d : j) {
    const auto v = d.get<int64_t>();
    ATH_CHECK(v >= -kMaxDim && v <= kMaxDim, FormatError, "{} {} is out of range", what, v);
    dims.push_back(v);
  }
  return dims;
}

Value read_value(const json& j, int64_t num_values, int64_t num_nodes) {
  Value v;
  v.origin =
      static_cast<ValueOrigin>(index_of(kOrigins, j.at("origin").get<std::string>(), "origin"));
  v.meta.dtype = dtype_of(j.at("dtype").get<std::string>());
  v.meta.shape = read_dims(j.at("shape"), "shape");
  v.strides = read_dims(j.at("strides"), "strides");
  for (const int64_t d : v.meta.shape)
    ATH_CHECK(d >= 0, FormatError, "a negative dim in shape {}", to_string(v.meta.shape));
  ATH_CHECK(v.strides.size() == v.meta.shape.size(), FormatError,
            "{} strides for a shape of rank {}", v.strides.size(), v.meta.shape.size());
  v.node = read_id(j.at("node"), num_nodes, "node");
  v.output = read_id(j.at("output"), std::numeric_limits<int32_t>::max(), "output");
  v.index = read_id(j.at("index"), std::numeric_limits<int32_t>::max(), "slot");
  v.version_of = read_id(j.at("version_of"), num_values, "version_of");
  v.storage = read_id(j.at("storage"), num_values, "storage");
  if (j.contains("name")) v.name = j.at("name").get<std::string>();
  return v;
}

// The bytes a value's elements span (its storage as far as the value reaches), or -1 past
// kMaxStandInBytes.
int64_t span_bytes(const TensorMeta& meta, const Strides& strides) {
  int64_t extent = 1;
  for (std::size_t d = 0; d < meta.shape.size(); ++d) {
    if (meta.shape[d] == 0) return 0;
    const int64_t stride = d < strides.size() ? strides[d] : 0;
    if (stride < 0) return -1;
    if (stride > 0 && meta.shape[d] - 1 > (kMaxStandInBytes - extent) / stride) return -1;
    extent += (meta.shape[d] - 1) * stride;
  }
  const int64_t bytes = extent * static_cast<int64_t>(element_size(meta.dtype));
  return bytes > kMaxStandInBytes ? -1 : bytes;
}

}  // namespace

json graph_to_json(const Graph& g, const std::function<std::string(const Tensor&)>& constant_name) {
  ATH_CHECK(g.state.empty() && g.grads.empty(), NotImplementedError,
            "a graph with state or gradient bindings (not an inference graph)");
  json values = json::array();
  for (const Value& v : g.values) {
    ATH_CHECK(v.meta.device == kCPU, NotImplementedError, "a value on {}",
              to_string(v.meta.device));
    json r = {{"origin", kOrigins[static_cast<std::size_t>(v.origin)]},
              {"dtype", std::string(dtype_name(v.meta.dtype))},
              {"shape", std::vector<int64_t>(v.meta.shape.begin(), v.meta.shape.end())},
              {"strides", std::vector<int64_t>(v.strides.begin(), v.strides.end())},
              {"node", v.node},
              {"output", v.output},
              {"index", v.index},
              {"version_of", v.version_of},
              {"storage", v.storage}};
    if (!v.name.empty()) r["name"] = v.name;
    values.push_back(std::move(r));
  }
  json nodes = json::array();
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    ATH_CHECK(!n.attr_source, NotImplementedError,
              "node {} ({}) reads its attributes from a source at every replay", k, n.op->name);
    std::string attrs;
    try {
      attrs = n.op->encode_attrs(n.attrs.get());
    } catch (Error& e) {
      e.prepend(fmt::format("node {} ({}): ", k, n.op->name));
      throw;
    }
    json writes = json::array();
    for (const auto& [from, to] : n.writes) writes.push_back({from, to});
    nodes.push_back({{"op", n.op->name},
                     {"attrs", hex(attrs)},
                     {"inputs", n.inputs},
                     {"outputs", n.outputs},
                     {"write", kWrites[static_cast<std::size_t>(n.write)]},
                     {"writes", std::move(writes)}});
  }
  json constants = json::array();
  for (const Tensor& t : g.constants) {
    ATH_CHECK(t.device() == kCPU, NotImplementedError, "a constant on {}", to_string(t.device()));
    constants.push_back(constant_name(t));
  }
  return {{"values", std::move(values)},
          {"nodes", std::move(nodes)},
          {"arguments", g.arguments},
          {"constants", std::move(constants)},
          {"outputs", g.outputs}};
}

std::string hex_encode(std::string_view bytes) { return hex(bytes); }

std::string hex_decode(std::string_view text) {
  ATH_CHECK(text.size() % 2 == 0, FormatError, "a hex string of odd length {}", text.size());
  std::string bytes(text.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    ATH_CHECK(hi >= 0 && lo >= 0, FormatError, "'{}' is not lowercase hex", text.substr(2 * i, 2));
    bytes[i] = static_cast<char>(hi * 16 + lo);
  }
  return bytes;
}

Graph graph_from_json(const json& j, const std::function<Tensor(const std::string&)>& constant) {
  Graph g;
  const json& values = j.at("values");
  const json& nodes = j.at("nodes");
  ATH_CHECK(values.is_array() && nodes.is_array(), FormatError, "values and nodes must be lists");
  const auto num_values = static_cast<int64_t>(values.size());
  const auto num_nodes = static_cast<int64_t>(nodes.size());
  ATH_CHECK(num_values < std::numeric_limits<int32_t>::max(), FormatError, "{} values", num_values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    try {
      g.values.push_back(read_value(values[i], num_values, num_nodes));
    } catch (Error& e) {
      e.prepend(fmt::format("value %{}: ", i));
      throw;
    }
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const json& r = nodes[k];
    const std::string op_name = r.at("op").get<std::string>();
    Node n;
    n.op = find_op(op_name);
    ATH_CHECK(n.op != nullptr, FormatError, "node {}: unknown op '{}'", k, op_name);
    try {
      n.attrs = n.op->decode_attrs(hex_decode(r.at("attrs").get<std::string>()));
      n.inputs = read_ids(r.at("inputs"), num_values, "input");
      n.outputs = read_ids(r.at("outputs"), num_values, "output");
      n.write =
          static_cast<WriteKind>(index_of(kWrites, r.at("write").get<std::string>(), "write kind"));
      for (const json& w : r.at("writes")) {
        ATH_CHECK(w.is_array() && w.size() == 2, FormatError, "a write is [from, to]");
        n.writes.emplace_back(read_id(w[0], num_values, "written value"),
                              read_id(w[1], num_values, "new version"));
        ATH_CHECK(n.writes.back().first >= 0 && n.writes.back().second >= 0, FormatError,
                  "a write names no value");
      }
    } catch (Error& e) {
      e.prepend(fmt::format("node {} ({}): ", k, op_name));
      throw;
    }
    g.nodes.push_back(std::move(n));
  }
  g.arguments = read_ids(j.at("arguments"), num_values, "argument");
  g.outputs = read_ids(j.at("outputs"), num_values, "graph output");
  for (const json& name : j.at("constants")) {
    const std::string key = name.get<std::string>();
    Tensor t = constant(key);
    const auto slot = static_cast<int32_t>(g.constants.size());
    // The record's layout wins: a constant recorded with strides (a transposed initializer) is
    // rebuilt with them, since the views the graph takes of it were recorded on that layout.
    auto it = std::find_if(g.values.begin(), g.values.end(), [&](const Value& v) {
      return v.origin == ValueOrigin::Constant && v.index == slot;
    });
    ATH_CHECK(it != g.values.end(), FormatError, "constant slot {} ('{}') has no value", slot, key);
    ATH_CHECK(t.shape() == it->meta.shape && t.dtype() == it->meta.dtype, FormatError,
              "constant '{}' is {}, its value %{} records {}", key,
              graph::type_string({t.shape(), t.dtype()}),
              static_cast<std::size_t>(it - g.values.begin()), graph::type_string(it->meta));
    if (t.strides() != it->strides) {
      const int64_t bytes = span_bytes(it->meta, it->strides);
      ATH_CHECK(bytes >= 0, FormatError, "constant '{}': strides {} out of range", key,
                to_string(it->strides));
      const int64_t elems = bytes / static_cast<int64_t>(element_size(t.dtype()));
      Tensor laid_out =
          as_strided(zeros({std::max<int64_t>(elems, 1)}, t.dtype()), t.shape(), it->strides);
      NoGradGuard no_grad;
      laid_out.copy_(t);
      t = laid_out;
    }
    g.constants.push_back(std::move(t));
  }
  return g;
}

void check_loaded_graph(const Graph& g, std::span<const int32_t> pairs) {
  graph::verify(g);
  const auto num_values = static_cast<ValueId>(g.values.size());
  // Buffers: every storage owner owns itself; fresh outputs own theirs, views share their
  // input's (verify checked versions and the inputs' own).
  for (ValueId v = 0; v < num_values; ++v) {
    const Value& val = g.value(v);
    ATH_CHECK(val.storage >= 0 && g.value(val.storage).storage == val.storage, FormatError,
              "%{}'s buffer %{} is not its own owner", v, val.storage);
  }
  for (ValueId a : g.arguments) {
    const Value& val = g.value(a);
    ATH_CHECK(val.strides == contiguous_strides(val.meta.shape), FormatError,
              "argument %{} is recorded with strides {}: inputs are bound contiguous", a,
              to_string(val.strides));
  }
  // Shape rules over stand-ins: one buffer, large enough for the widest input, viewed with each
  // input's metadata (strides for the views; non-view ops are given contiguous inputs, as
  // Graph::add_node_erased gives them). Nothing reads the bytes.
  int64_t widest = 1;
  for (const Value& val : g.values) {
    const int64_t bytes = span_bytes(val.meta, val.strides);
    const int64_t dense = span_bytes(val.meta, contiguous_strides(val.meta.shape));
    ATH_CHECK(bytes >= 0 && dense >= 0, FormatError, "a value {} spans too many bytes",
              graph::type_string(val.meta, val.strides));
    widest = std::max({widest, bytes, dense});
  }
  const std::shared_ptr<StorageImpl> buffer =
      StorageImpl::allocate(static_cast<std::size_t>(widest));
  NoGradGuard no_grad;
  std::vector<Tensor> stand_ins;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const bool view = n.op->kind == OpKind::View;
    try {
      stand_ins.clear();
      for (ValueId in : n.inputs) {
        const Value& val = g.value(in);
        stand_ins.emplace_back(std::make_shared<TensorImpl>(
            buffer, val.meta.shape, view ? val.strides : contiguous_strides(val.meta.shape), 0,
            val.meta.dtype));
      }
      if (view) {
        ATH_CHECK(!n.inputs.empty() && n.write == WriteKind::None, FormatError,
                  "a view without an input, or that writes");
        for (ValueId out : n.outputs)
          ATH_CHECK(g.value(out).storage == g.storage_of(n.inputs[0]), FormatError,
                    "view output %{} does not share its input's buffer", out);
      } else {
        for (ValueId out : n.outputs)
          ATH_CHECK(g.value(out).storage == out, FormatError, "output %{} does not own its buffer",
                    out);
      }
      if (n.write == WriteKind::IntoSelf) continue;  // verify matched the version to its input
      const OutputSpec spec = n.op->infer(TensorSpan(stand_ins), n.attrs.get());
      ATH_CHECK(spec.outputs.size() == n.outputs.size(), FormatError,
                "the shape rule gives {} outputs, the record {}", spec.outputs.size(),
                n.outputs.size());
      Outputs views;
      if (view) views = n.op->run(TensorSpan(stand_ins), n.attrs.get());
      ATH_CHECK(!view || views.size() == n.outputs.size(), FormatError, "the view makes {} outputs",
                views.size());
      for (std::size_t i = 0; i < n.outputs.size(); ++i) {
        const Value& val = g.value(n.outputs[i]);
        const bool same = spec.outputs[i].shape == val.meta.shape &&
                          spec.outputs[i].dtype == val.meta.dtype &&
                          (!view || views[i].strides() == val.strides);
        ATH_CHECK(same, FormatError, "output {} is {} by the shape rule, {} in the record", i,
                  graph::type_string(spec.outputs[i], view ? views[i].strides() : Strides{}),
                  graph::type_string(val.meta, view ? val.strides : Strides{}));
      }
    } catch (Error& e) {
      e.prepend(fmt::format("node {} ({}): ", k, n.op->name));
      throw;
    }
  }
  // The inter-op pairs: what the executor runs at the same time must be independent.
  int32_t next_free = 0;
  for (const int32_t first : pairs) {
    ATH_CHECK(first >= next_free && first + 1 < static_cast<int32_t>(g.nodes.size()), FormatError,
              "inter-op pair at node {} overlaps another or is out of range", first);
    const auto a = static_cast<std::size_t>(first);
    ATH_CHECK(graph::can_pair(g.nodes[a]) && graph::can_pair(g.nodes[a + 1]) &&
                  !graph::must_follow(g, first, first + 1),
              FormatError, "nodes {} and {} cannot run at the same time", first, first + 1);
    next_free = first + 2;
  }
}

}  // namespace ath::onnx::detail
