#include "control_message.h"

#include <algorithm>
#include <cstring>

namespace ath::dist::detail {

namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void set_text(ControlMessage& m, const std::string& s) {
  const std::size_t n = std::min(s.size(), sizeof(m.text) - 1);
  std::memcpy(m.text, s.data(), n);
  m.text[n] = '\0';
}
}  // namespace

ControlMessage make_header(uint64_t seq, const HeaderFields& f) {
  ControlMessage m;
  m.type = ControlType::Header;
  m.kind = static_cast<uint8_t>(f.kind);
  m.dtype = static_cast<uint8_t>(f.dtype);
  m.op = static_cast<uint8_t>(f.op);
  m.root = f.root;
  m.seq = seq;
  m.count = f.count;
  m.name_hash = fnv1a(f.name);
  set_text(m, f.name);
  return m;
}

ControlMessage make_abort(const std::string& reason) {
  ControlMessage m;
  m.type = ControlType::Abort;
  set_text(m, reason);
  return m;
}

std::string text_of(const ControlMessage& m) {
  return std::string(m.text, strnlen(m.text, sizeof(m.text)));
}

std::string describe_header(const ControlMessage& m) {
  const auto kind = static_cast<Collective>(m.kind);
  const std::string head = fmt::format("{} '{}' (call #{}", to_string(kind), text_of(m), m.seq);
  const std::string_view dtype = dtype_name(static_cast<DType>(m.dtype));
  switch (kind) {
    case Collective::Barrier:
      return head + ")";
    case Collective::Allreduce:
    case Collective::ReduceScatter:
      return fmt::format("{}, {} elements of {}, {})", head, m.count, dtype,
                         to_string(static_cast<ReduceOp>(m.op)));
    case Collective::Broadcast:
      return fmt::format("{}, {} elements of {}, from rank {})", head, m.count, dtype, m.root);
    default:
      return fmt::format("{}, {} elements of {})", head, m.count, dtype);
  }
}

std::optional<std::string> mismatch(const ControlMessage& mine, const ControlMessage& theirs) {
  if (mine.seq != theirs.seq) return std::string("call number");
  if (mine.kind != theirs.kind) return std::string("collective");
  if (mine.name_hash != theirs.name_hash) return std::string("name");
  const auto kind = static_cast<Collective>(mine.kind);
  if (kind == Collective::Barrier) return std::nullopt;
  if (mine.count != theirs.count) return std::string("element count");
  if (mine.dtype != theirs.dtype) return std::string("dtype");
  if ((kind == Collective::Allreduce || kind == Collective::ReduceScatter) && mine.op != theirs.op)
    return std::string("reduce op");
  if (kind == Collective::Broadcast && mine.root != theirs.root) return std::string("source rank");
  return std::nullopt;
}

}  // namespace ath::dist::detail
