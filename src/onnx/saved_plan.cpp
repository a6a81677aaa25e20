#include "saved_plan.h"

#include <dnnl.h>
#include <elf.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <link.h>

#include <cstring>
#include <map>
#include <unordered_map>

#include "athanor/core/cpu_isa.h"
#include "athanor/core/error.h"
#include "athanor/core/parallel.h"
#include "athanor/io/checksum.h"
#include "athanor/io/safetensors.h"
#include "athanor/ops/conv_blocked.h"
#include "model.h"
#include "plan_graph.h"

#ifndef ATHANOR_VERSION_STRING
#define ATHANOR_VERSION_STRING "unknown"
#endif

namespace ath::onnx::detail {

using nlohmann::json;

namespace {

constexpr int kFormat = 1;
constexpr const char* kPlanKey = "athanor_plan";
constexpr const char* kPlanCrcKey = "athanor_plan_crc32";

// The GNU build ID of the loaded object holding this code (libathanor.so): two builds of one
// version whose attribute structs or kernels differ have different IDs, and a plan records the
// structs' bytes. Empty when the linker wrote none.
std::string library_build_id() {
  struct Search {
    uintptr_t address = 0;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(&library_build_id), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& s = *static_cast<Search*>(data);
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          holds = holds ||
                  (ph.p_type == PT_LOAD && s.address >= begin && s.address < begin + ph.p_memsz);
        }
        if (!holds) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, p, sizeof(note));
            const char* name = p + sizeof(note);
            const char* desc = name + ((note.n_namesz + 3) & ~3u);
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0 && desc + note.n_descsz <= end) {
              s.id = hex_encode(std::string_view(desc, note.n_descsz));
              return 1;
            }
            p = desc + ((note.n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} ({})", v->major, v->minor, v->patch, v->hash);
}

// Each constant once: the same tensor, or equal bytes (a weight packed alike for two batch
// sizes), gets one name.
class ConstantTable {
 public:
  std::string name_of(const Tensor& t) {
    if (auto it = by_impl_.find(t.impl()); it != by_impl_.end()) return it->second;
    const uint32_t crc = crc32_of(t);
    const std::string content =
        fmt::format("{}:{}:{}", crc, dtype_name(t.dtype()), to_string(t.shape()));
    std::string name;
    for (const std::string& candidate : by_content_[content]) {
      if (equal(tensors_.at(candidate), t)) name = candidate;
    }
    if (name.empty()) {
      name = fmt::format("c{}", tensors_.size());
      tensors_.insert(name, t);
      crcs_[name] = format_crc32(crc);
      by_content_[content].push_back(name);
    }
    by_impl_[t.impl()] = name;
    held_.push_back(t);  // keeps the impl alive, so its address names no other tensor
    return name;
  }
  const StateDict& tensors() const { return tensors_; }
  const json& crcs() const { return crcs_; }

 private:
  static bool equal(const Tensor& a, const Tensor& b) {
    const Tensor u = a.contiguous(), v = b.contiguous();
    return u.nbytes() == v.nbytes() && std::memcmp(u.data_ptr(), v.data_ptr(), u.nbytes()) == 0;
  }
  StateDict tensors_;
  json crcs_ = json::object();
  std::unordered_map<const TensorImpl*, std::string> by_impl_;
  std::map<std::string, std::vector<std::string>> by_content_;
  std::vector<Tensor> held_;
};

json key_json(const std::vector<KeyPart>& key) {
  json parts = json::array();
  for (const KeyPart& p : key) {
    json j = {{"type", p.type}};
    if (p.value) j["value"] = hex_encode(*p.value);
    parts.push_back(std::move(j));
  }
  return parts;
}

// The key must be one the session can make for this model, and its types those of the graph's
// arguments (the inputs whose values are not part of the key, in order).
void check_key(const PlanEntry& e, const LoadedModel& model) {
  ATH_CHECK(e.key.size() == model.inputs.size(), FormatError,
            "a key of {} inputs for a model of {}", e.key.size(), model.inputs.size());
  std::size_t argument = 0;
  for (std::size_t i = 0; i < e.key.size(); ++i) {
    ATH_CHECK(e.key[i].value.has_value() == model.value_keyed[i], FormatError,
              "input '{}' {} its value in the key", model.inputs[i].name,
              model.value_keyed[i] ? "lacks" : "has");
    if (e.eager || e.key[i].value) continue;
    ATH_CHECK(argument < e.graph.arguments.size(), FormatError,
              "the graph has {} arguments, the key more", e.graph.arguments.size());
    const std::string type = key_type(e.graph.value(e.graph.arguments[argument]).meta.dtype,
                                      e.graph.value(e.graph.arguments[argument]).meta.shape);
    ++argument;
    ATH_CHECK(type == e.key[i].type, FormatError, "input '{}' is {} in the key, {} in the graph",
              model.inputs[i].name, e.key[i].type, type);
  }
  ATH_CHECK(e.eager || argument == e.graph.arguments.size(), FormatError,
            "the graph has {} arguments, the key {}", e.graph.arguments.size(), argument);
  ATH_CHECK(e.eager || e.graph.outputs.size() == model.outputs.size(), FormatError,
            "the graph has {} outputs, the model {}", e.graph.outputs.size(), model.outputs.size());
}

PlanEntry read_entry(const json& j, const std::unordered_map<std::string, Tensor>& constants,
                     const LoadedModel& model) {
  PlanEntry e;
  for (const json& part : j.at("inputs")) {
    KeyPart p{.type = part.at("type").get<std::string>(), .value = std::nullopt};
    if (part.contains("value")) p.value = hex_decode(part.at("value").get<std::string>());
    e.key.push_back(std::move(p));
  }
  if (j.contains("eager")) {
    e.eager = j.at("eager").get<std::string>();
  } else {
    e.graph = graph_from_json(j.at("graph"), [&](const std::string& name) {
      auto it = constants.find(name);
      ATH_CHECK(it != constants.end(), FormatError, "no tensor '{}' in the plan", name);
      return it->second;
    });
    for (const json& p : j.at("pairs")) e.pairs.push_back(p.get<int32_t>());
    check_loaded_graph(e.graph, e.pairs);
  }
  check_key(e, model);
  return e;
}

// "threads: the plan says 2, this session 4" for the first field that differs.
std::string header_difference(const json& saved, const json& expected) {
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    if (!saved.is_object() || !saved.contains(it.key()))
      return fmt::format("it has no '{}'", it.key());
    if (saved.at(it.key()) != it.value())
      return fmt::format("{}: the plan says {}, this session {}", it.key(),
                         saved.at(it.key()).dump(), it.value().dump());
  }
  return "its header has other fields";
}

}  // namespace

std::string key_type(DType dtype, const Shape& shape) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ","));
}

std::string key_string(const std::vector<KeyPart>& parts) {
  std::string key;
  for (const KeyPart& p : parts) {
    key += p.type;
    if (p.value) key += "=" + *p.value;
    key += ";";
  }
  return key;
}

json plan_header(const LoadedModel& model, const SessionOptions& options) {
  ATH_CHECK(model.file_crc32.has_value(), ValueError,
            "{}: the model was loaded without its checksum", model.path.string());
  // Initializers in external files are part of the model too.
  std::string external;
  for (const auto& init : model.proto.graph().initializer()) {
    if (init.data_location() != ::onnx::TensorProto::EXTERNAL) continue;
    auto it = model.initializers.find(init.name());
    if (it != model.initializers.end())
      external += fmt::format("{}={};", init.name(), format_crc32(crc32_of(it->second)));
  }
  std::vector<std::string> disabled = options.disable_passes;
  std::sort(disabled.begin(), disabled.end());
  return {{"athanor", ATHANOR_VERSION_STRING},
          {"build_id", library_build_id()},
          {"model_bytes", model.file_bytes},
          {"model_crc32", format_crc32(*model.file_crc32)},
          {"external_data_crc32", format_crc32(crc32_of(external))},
          {"cpu_isa", std::string(cpu_isa_name(cpu_isa()))},
          {"activation_layout", static_cast<int64_t>(inference_activation_layout())},
          {"winograd", winograd_eligible(ConvAttrs{}, {16, 16, 3, 3})},
          {"onednn", onednn_version()},
          {"threads", options.threads > 0 ? options.threads : get_num_threads()},
          {"optimize", options.optimize},
          {"disable_passes", disabled},
          {"inter_op", options.inter_op}};
}

void write_plan(const std::string& path, const json& header,
                const std::vector<const PlanEntry*>& entries,
                std::vector<std::string>& diagnostics) {
  ConstantTable constants;
  json graphs = json::array();
  for (const PlanEntry* e : entries) {
    json j = {{"inputs", key_json(e->key)}};
    if (e->eager) {
      j["eager"] = *e->eager;
    } else {
      try {
        j["graph"] = graph_to_json(e->graph, [&](const Tensor& t) { return constants.name_of(t); });
      } catch (const NotImplementedError& err) {
        diagnostics.push_back(fmt::format("{}: the graph for inputs {} is not saved: {}", path,
                                          key_json(e->key).dump(), err.what()));
        continue;
      }
      j["pairs"] = e->pairs;
    }
    graphs.push_back(std::move(j));
  }
  const json plan = {{"format", kFormat},
                     {"header", header},
                     {"tensors", constants.crcs()},
                     {"graphs", std::move(graphs)}};
  const std::string text = plan.dump();
  save_safetensors(path, constants.tensors(),
                   {{kPlanKey, text}, {kPlanCrcKey, format_crc32(crc32_of(text))}});
}

std::vector<PlanEntry> read_plan(const std::string& path, const json& header,
                                 const LoadedModel& model) {
  try {
    const SafetensorsFile file(path);
    const SafetensorsMetadata& meta = file.metadata();
    auto text = meta.find(kPlanKey);
    auto crc = meta.find(kPlanCrcKey);
    ATH_CHECK(text != meta.end() && crc != meta.end(), FormatError,
              "not an athanor plan (no '{}' metadata)", kPlanKey);
    const std::optional<uint32_t> want = parse_crc32(crc->second);
    ATH_CHECK(want && *want == crc32_of(text->second), FormatError,
              "the plan's description fails its checksum");
    const json plan = json::parse(text->second);
    ATH_CHECK(plan.at("format") == kFormat, FormatError, "format {} (this build reads {})",
              plan.at("format").dump(), kFormat);
    ATH_CHECK(plan.at("header") == header, FormatError, "made for another setting: {}",
              header_difference(plan.at("header"), header));
    std::unordered_map<std::string, Tensor> constants;
    const json& tensors = plan.at("tensors");
    ATH_CHECK(tensors.is_object(), FormatError, "'tensors' must be an object");
    for (auto it = tensors.begin(); it != tensors.end(); ++it) {
      const std::string& name = it.key();
      const Tensor t = file.get(name);
      const std::optional<uint32_t> t_crc = parse_crc32(it.value().get<std::string>());
      ATH_CHECK(t_crc && *t_crc == crc32_of(t), FormatError, "tensor '{}' fails its checksum",
                name);
      // An owned copy: aligned for the kernels, and independent of the file's mapping.
      constants.emplace(name, t.clone());
    }
    std::vector<PlanEntry> entries;
    const json& graphs = plan.at("graphs");
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      try {
        entries.push_back(read_entry(graphs[i], constants, model));
      } catch (Error& e) {
        e.prepend(fmt::format("graph {}: ", i));
        throw;
      }
    }
    return entries;
  } catch (const json::exception& e) {
    ATH_THROW(FormatError, "{}: {}", path, e.what());
  } catch (Error& e) {
    e.prepend(path + ": ");
    throw;
  }
}

}  // namespace ath::onnx::detail
