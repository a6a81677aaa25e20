#include "safetensors_format.h"

#include <simdjson.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "athanor/core/error.h"
#include "safetensors_header.h"

namespace ath::detail {

using nlohmann::json;
using safetensors::dtype_info;

std::string quote_name(std::string_view name) {
  constexpr std::size_t kMax = 120;
  std::string q =
      json(std::string(name.substr(0, kMax))).dump(-1, ' ', false, json::error_handler_t::replace);
  if (name.size() > kMax) q += "...";
  return q;
}

SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> file, std::string_view source) {
  auto fail = [&](const std::string& what) -> FormatError {
    return FormatError(fmt::format("{}: {}", source, what));
  };
  if (file.size() < 8) {
    throw fail(fmt::format("{} bytes: too short for the 8-byte header length", file.size()));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[static_cast<std::size_t>(i)];
  // The most common wrong file is PyTorch's own format (torch.save: a zip archive, or a bare
  // pickle before PyTorch 1.6; what Lightning writes as .ckpt). Its first bytes read as an
  // impossible header length; say what it is instead. (A real header never gets here.)
  if (n > kSafetensorsMaxHeader || n > file.size() - 8) {
    const bool zip = file[0] == 'P' && file[1] == 'K' && file[2] == 3 && file[3] == 4;
    const bool pickle = file[0] == 0x80 && file[1] >= 2 && file[1] <= 5;
    if (zip || pickle) {
      throw fail(
          "this is a PyTorch checkpoint (torch.save's zip/pickle format, e.g. a Lightning .ckpt), "
          "not safetensors: convert it with tools/lightning_ckpt_to_athanor.py (see "
          "docs/trainer.md)");
    }
  }
  if (n > kSafetensorsMaxHeader) {
    throw fail(fmt::format("header length {} exceeds the {}-byte limit", n, kSafetensorsMaxHeader));
  }
  if (n > file.size() - 8) {
    throw fail(fmt::format("header length {} runs past the end of the data ({} bytes): truncated?",
                           n, file.size()));
  }
  SafetensorsHeader h;
  h.buffer_offset = 8 + n;
  h.buffer_size = file.size() - h.buffer_offset;
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  // simdjson reads up to SIMDJSON_PADDING bytes past the text (never using them): the tensor bytes
  // after the header usually provide them, else the header is copied into a padded buffer.
  const bool padded_in_place = h.buffer_size >= simdjson::SIMDJSON_PADDING;
  const simdjson::padded_string copy =
      padded_in_place ? simdjson::padded_string() : simdjson::padded_string(text, n);
  const safetensors::PaddedText padded{padded_in_place ? text : copy.data(), n};
  try {
    // Most headers are valid and take the fast reader only; the checked one names the fault.
    if (!safetensors::read_header_fast(padded, h)) {
      h.entries.clear();
      h.metadata.clear();
      safetensors::read_header_checked(padded, h);
    }
  } catch (const safetensors::HeaderFault& f) {
    throw fail(f.what);
  }
  return h;
}

SafetensorsPlan plan_safetensors(const StateDict& tensors, const SafetensorsMetadata& metadata) {
  SafetensorsPlan plan;
  for (const auto& entry : tensors) {
    const auto& [name, t] = entry;
    ATH_CHECK(name != "__metadata__", ValueError,
              "save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
    ATH_CHECK(t.defined(), ValueError, "save_safetensors: tensor {} is undefined",
              quote_name(name));
    ATH_CHECK(t.device() == kCPU, ValueError, "save_safetensors: tensor {} is not on the CPU",
              quote_name(name));
    plan.order.push_back(&entry);
  }
  // Descending dtype alignment, then name: the order the reference writer uses.
  std::sort(plan.order.begin(), plan.order.end(), [](const auto* a, const auto* b) {
    int ra = dtype_info(a->second.dtype()).rank, rb = dtype_info(b->second.dtype()).rank;
    return ra != rb ? ra > rb : a->first < b->first;
  });

  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!metadata.empty()) doc["__metadata__"] = metadata;
  for (const auto* e : plan.order) {
    const Tensor& t = e->second;
    uint64_t nbytes = t.nbytes();
    doc[e->first] = {{"dtype", dtype_info(t.dtype()).name},
                     {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                     {"data_offsets", {plan.buffer_size, plan.buffer_size + nbytes}}};
    plan.buffer_size += nbytes;
  }
  std::string text;
  try {
    text = doc.dump();  // compact, like serde_json::to_string
  } catch (const nlohmann::json::type_error&) {
    // Find the culprit for the message.
    for (const auto& [k, v] : metadata) {
      for (const std::string* s : {&k, &v}) {
        try {
          (void)nlohmann::json(*s).dump();
        } catch (const nlohmann::json::type_error&) {
          ATH_THROW(ValueError, "save_safetensors: metadata string {} is not valid UTF-8",
                    quote_name(*s));
        }
      }
    }
    for (const auto* e : plan.order) {
      try {
        (void)nlohmann::json(e->first).dump();
      } catch (const nlohmann::json::type_error&) {
        ATH_THROW(ValueError, "save_safetensors: tensor name {} is not valid UTF-8",
                  quote_name(e->first));
      }
    }
    throw;
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  plan.header.resize(8);
  for (int i = 0; i < 8; ++i) {
    plan.header[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  }
  plan.header += text;
  return plan;
}

}  // namespace ath::detail
