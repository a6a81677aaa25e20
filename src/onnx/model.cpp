#include "model.h"

#include <fstream>
#include <queue>
#include <unordered_set>

#include "athanor/core/error.h"
#include "athanor/io/checksum.h"
#include "op_table.h"
#include "tensor_proto.h"

namespace ath::onnx::detail {

namespace {

using ::onnx::NodeProto;

// A model file larger than this is refused before parsing (protobuf's own limit is 2 GiB;
// bigger weights live in external data files).
constexpr std::size_t kMaxModelBytes = std::size_t{2} << 30;

std::string node_label(const NodeProto& n, int index) {
  return n.name().empty() ? fmt::format("#{} ({})", index, n.op_type())
                          : fmt::format("'{}' ({})", n.name(), n.op_type());
}

TensorInfo info_from_value(const ::onnx::ValueInfoProto& v, const std::string& file) {
  TensorInfo info;
  info.name = v.name();
  ATH_CHECK(v.type().has_tensor_type(), NotImplementedError,
            "{}: graph input/output '{}' is not a tensor (sequences, maps and optionals are not "
            "supported)",
            file, v.name());
  const auto& tt = v.type().tensor_type();
  const std::optional<DType> dt = dtype_from_onnx(tt.elem_type());
  info.dtype_known = dt.has_value();
  if (dt) info.dtype = *dt;
  info.rank_known = tt.has_shape();
  if (tt.has_shape()) {
    ATH_CHECK(tt.shape().dim_size() <= static_cast<int>(kMaxDims), FormatError,
              "{}: '{}' has {} dims, more than athanor's {}", file, v.name(), tt.shape().dim_size(),
              kMaxDims);
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        ATH_CHECK(d.dim_value() >= 0 && d.dim_value() <= (int64_t{1} << 40), FormatError,
                  "{}: '{}' declares dimension {}", file, v.name(), d.dim_value());
        info.dims.push_back(d.dim_value());
        info.dim_names.emplace_back();
      } else {
        info.dims.push_back(-1);
        info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "?");
      }
    }
  }
  return info;
}

// The element type declared for a value, or 0 when nothing declares it.
using TypeMap = std::unordered_map<std::string, int>;

TypeMap declared_types(const ::onnx::GraphProto& g) {
  TypeMap types;
  auto add = [&](const ::onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
      types[v.name()] = v.type().tensor_type().elem_type();
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  return types;
}

// Fills in the element types of values nothing declares, where the op makes them evident: most
// ops keep input 0's type; shape ops give int64, comparisons bool, Cast its `to`. Values of ops
// the importer does not know stay unknown. Used for the load-time type check and its messages.
void infer_types(const LoadedModel& m, TypeMap& types) {
  static const std::unordered_set<std::string> to_int64 = {"Shape", "Size", "ArgMax", "ArgMin",
                                                           "NonZero"};
  static const std::unordered_set<std::string> to_bool = {
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
      "And",   "Or",   "Xor",         "IsNaN",   "IsInf"};
  const OpTable& table = op_table();
  for (const NodeProto* n : m.order) {
    if (!table.contains(n->op_type())) continue;
    int type = 0;
    if (to_int64.contains(n->op_type())) {
      type = ::onnx::TensorProto::INT64;
    } else if (to_bool.contains(n->op_type())) {
      type = ::onnx::TensorProto::BOOL;
    } else if (n->op_type() == "Cast") {
      for (const auto& a : n->attribute()) {
        if (a.name() == "to") type = static_cast<int>(a.i());
      }
    } else if (n->op_type() == "Constant" || n->op_type() == "ConstantOfShape" ||
               n->op_type() == "EyeLike") {
      continue;  // the type is an attribute's; left to the run
    } else {
      // The input whose type the output takes: 0 for most ops.
      const int from = n->op_type() == "Where" || n->op_type() == "CastLike" ? 1
                       : n->op_type() == "OneHot"                            ? 2
                                                                             : 0;
      auto it = from < n->input_size() ? types.find(n->input(from)) : types.end();
      if (it != types.end()) type = it->second;
    }
    if (n->output_size() > 0 && !n->output(0).empty() && type != 0)
      types.emplace(n->output(0), type);
    if (n->op_type() == "TopK" && n->output_size() > 1)
      types.emplace(n->output(1), ::onnx::TensorProto::INT64);  // the indices
  }
}

// Every node whose op, opset or element types the importer does not support.
void check_supported(const LoadedModel& m, const TypeMap& types) {
  std::vector<std::string> problems;
  const OpTable& table = op_table();
  for (const NodeProto* n : m.order) {
    int type = 0;
    std::string type_name = "?";
    const bool by_output = n->input_size() == 0 || n->input(0).empty();
    const std::string& probe = by_output ? (n->output_size() > 0 ? n->output(0) : "") : n->input(0);
    if (auto it = types.find(probe); it != types.end()) {
      type = it->second;
      type_name = onnx_type_name(type);
    }
    // Every declared type the node touches must be one athanor holds.
    std::string bad_type;
    for (const auto& name : n->input()) {
      auto it = types.find(name);
      if (it != types.end() && !dtype_from_onnx(it->second)) bad_type = onnx_type_name(it->second);
    }
    for (const auto& name : n->output()) {
      auto it = types.find(name);
      if (it != types.end() && !dtype_from_onnx(it->second)) bad_type = onnx_type_name(it->second);
    }
    const bool default_domain = n->domain().empty() || n->domain() == "ai.onnx";
    const auto op = default_domain ? table.find(n->op_type()) : table.end();
    std::string why;
    if (!default_domain) {
      why = fmt::format("domain '{}'", n->domain());
    } else if (op == table.end()) {
      why = "op";
    } else if (m.opset < op->second.min_opset || m.opset > kMaxOpset) {
      why = fmt::format("opset (supported: {} to {})", op->second.min_opset, kMaxOpset);
    } else if (!bad_type.empty()) {
      type_name = bad_type;
      why = "element type";
    } else if (type != 0 && (op->second.types & type_bit(type)) == 0) {
      why = "element type";
    }
    if (!why.empty()) {
      // The opset of the node's own domain (a training or ML op names its domain's version).
      int64_t opset = m.opset;
      if (!default_domain) {
        opset = 0;
        for (const auto& o : m.proto.opset_import()) {
          if (o.domain() == n->domain()) opset = o.version();
        }
      }
      problems.push_back(fmt::format("{}(opset {}) {} node '{}' [{}]", n->op_type(), opset,
                                     type_name, n->name(), why));
    }
  }
  if (!problems.empty()) {
    std::string msg = fmt::format("{}: {} unsupported node(s):", m.path.string(), problems.size());
    for (const auto& p : problems) msg += "\n  " + p;
    throw NotImplementedError(msg);
  }
}

// Orders the nodes so that each runs after the producers of its inputs; FormatError for a value
// read but never defined, one defined twice, and a cycle.
void order_nodes(LoadedModel& m, const std::unordered_set<std::string>& available) {
  const auto& g = m.proto.graph();
  const std::string file = m.path.string();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      ATH_CHECK(!available.contains(o) && producer.emplace(o, i).second, FormatError,
                "{}: node {} defines '{}', which is already defined", file,
                node_label(g.node(i), i), o);
    }
  }
  std::vector<int> pending(static_cast<std::size_t>(g.node_size()), 0);
  std::vector<std::vector<int>> readers(static_cast<std::size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    const NodeProto& n = g.node(i);
    ATH_CHECK(!n.op_type().empty(), FormatError, "{}: node {} has no op type", file,
              node_label(n, i));
    for (const auto& a : n.attribute()) {
      ATH_CHECK(!a.has_g() && a.graphs_size() == 0, NotImplementedError,
                "{}: node {} has a subgraph attribute '{}' (control flow is not supported)", file,
                node_label(n, i), a.name());
    }
    for (const auto& in : n.input()) {
      if (in.empty() || available.contains(in)) continue;
      auto it = producer.find(in);
      ATH_CHECK(it != producer.end(), FormatError,
                "{}: node {} reads '{}', which no node, graph input or initializer defines", file,
                node_label(n, i), in);
      ++pending[static_cast<std::size_t>(i)];
      readers[static_cast<std::size_t>(it->second)].push_back(i);
    }
  }
  std::queue<int> ready;
  for (int i = 0; i < g.node_size(); ++i) {
    if (pending[static_cast<std::size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop();
    m.order.push_back(&g.node(i));
    for (int r : readers[static_cast<std::size_t>(i)]) {
      if (--pending[static_cast<std::size_t>(r)] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(m.order.size()) != g.node_size()) {
    for (int i = 0; i < g.node_size(); ++i) {
      ATH_CHECK(pending[static_cast<std::size_t>(i)] == 0, FormatError,
                "{}: the graph has a cycle through node {}", file, node_label(g.node(i), i));
    }
  }
  for (const auto& o : g.output()) {
    ATH_CHECK(available.contains(o.name()) || producer.contains(o.name()), FormatError,
              "{}: graph output '{}' is not defined by any node, input or initializer", file,
              o.name());
  }
}

// Marks the graph inputs whose values reach a host-read input of some node (not through
// Shape/Size, which read only the shape).
void find_value_keyed(LoadedModel& m) {
  const OpTable& table = op_table();
  std::unordered_map<std::string, const NodeProto*> producer;
  for (const NodeProto* n : m.order) {
    for (const auto& o : n->output()) producer[o] = n;
  }
  std::unordered_set<std::string> keyed;
  std::vector<std::string> stack;
  for (const NodeProto* n : m.order) {
    auto op = table.find(n->op_type());
    if (op == table.end()) continue;
    for (int i = 0; i < n->input_size() && i < 32; ++i) {
      if ((op->second.host_inputs >> i) & 1u) stack.push_back(n->input(i));
    }
  }
  std::unordered_set<std::string> seen;
  while (!stack.empty()) {
    std::string v = std::move(stack.back());
    stack.pop_back();
    if (v.empty() || !seen.insert(v).second) continue;
    auto it = producer.find(v);
    if (it == producer.end()) {
      keyed.insert(v);
      continue;
    }
    const std::string& type = it->second->op_type();
    if (type == "Shape" || type == "Size") continue;
    for (const auto& in : it->second->input()) stack.push_back(in);
  }
  for (const auto& in : m.inputs) m.value_keyed.push_back(keyed.contains(in.name));
}

std::unique_ptr<LoadedModel> check_and_index(std::unique_ptr<LoadedModel> m) {
  const std::string file = m->path.string();
  const auto& proto = m->proto;
  ATH_CHECK(proto.has_graph(), FormatError, "{}: the model has no graph", file);
  bool found = false;
  for (const auto& o : proto.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      ATH_CHECK(o.version() > 0 && o.version() < 1000, FormatError,
                "{}: opset_import version {} is out of range", file, o.version());
      m->opset = static_cast<int>(o.version());
      found = true;
    }
  }
  const auto& g = proto.graph();
  // Without a version of the default domain, only nodes of other domains may appear (and those
  // are reported as unsupported below).
  for (const auto& n : g.node()) {
    ATH_CHECK(found || !(n.domain().empty() || n.domain() == "ai.onnx"), FormatError,
              "{}: node '{}' ({}) is in the default domain, but opset_import names no version "
              "of it",
              file, n.name(), n.op_type());
  }
  std::unordered_set<std::string> available;
  for (const auto& t : g.initializer()) {
    ATH_CHECK(!t.name().empty() && available.insert(t.name()).second, FormatError,
              "{}: initializer '{}' is unnamed or defined twice", file, t.name());
    ATH_CHECK(t.has_data_type() && t.data_type() != 0, FormatError,
              "{}: initializer '{}' has no element type", file, t.name());
  }
  ATH_CHECK(g.sparse_initializer_size() == 0, NotImplementedError,
            "{}: sparse initializers are not supported", file);
  for (const auto& v : g.input()) {
    if (available.contains(v.name())) continue;  // an initializer's (overridable) declaration
    ATH_CHECK(!v.name().empty(), FormatError, "{}: a graph input has no name", file);
    m->inputs.push_back(info_from_value(v, file));
    ATH_CHECK(m->inputs.back().dtype_known, NotImplementedError,
              "{}: graph input '{}' has element type {}, which athanor does not support", file,
              v.name(), onnx_type_name(v.type().tensor_type().elem_type()));
    available.insert(v.name());
  }
  for (const auto& v : g.output()) {
    if (!v.has_type()) {  // an output without a declared type: known after the first run
      m->outputs.push_back({.name = v.name(),
                            .dtype = kFloat32,
                            .dtype_known = false,
                            .dims = {},
                            .dim_names = {},
                            .rank_known = false});
      continue;
    }
    m->outputs.push_back(info_from_value(v, file));
  }
  order_nodes(*m, available);
  TypeMap types = declared_types(g);
  infer_types(*m, types);
  check_supported(*m, types);
  for (const auto& t : g.initializer()) {
    m->initializers.emplace(
        t.name(),
        tensor_from_proto(t, m->dir, fmt::format("{}: initializer '{}'", file, t.name())));
  }
  find_value_keyed(*m);
  return m;
}

}  // namespace

std::unique_ptr<LoadedModel> load_model_from_bytes(const void* data, std::size_t size,
                                                   const std::string& name,
                                                   const std::filesystem::path& dir) {
  auto m = std::make_unique<LoadedModel>();
  m->path = name;
  m->dir = dir;
  ATH_CHECK(size <= kMaxModelBytes && size <= static_cast<std::size_t>(INT32_MAX), FormatError,
            "{}: {} bytes, over the 2 GiB a protobuf can hold (keep weights as external data)",
            name, size);
  ATH_CHECK(m->proto.ParseFromArray(data, static_cast<int>(size)), FormatError,
            "{}: not an ONNX model (the protobuf does not parse)", name);
  return check_and_index(std::move(m));
}

std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path, bool checksum) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  ATH_CHECK(in.good(), IOError, "{}: cannot open the model file", path.string());
  // One read of the known size: a byte-at-a-time stream copy of a 45 MB model took ~0.1 s.
  const std::streamoff size = in.tellg();
  ATH_CHECK(size >= 0, IOError, "{}: cannot read the model file's size", path.string());
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ATH_CHECK(in.gcount() == static_cast<std::streamsize>(bytes.size()), IOError,
            "{}: cannot read the model file", path.string());
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  auto model = load_model_from_bytes(bytes.data(), bytes.size(), path.string(), dir);
  model->file_bytes = bytes.size();
  if (checksum) model->file_crc32 = crc32_of(bytes);
  return model;
}

}  // namespace ath::onnx::detail
