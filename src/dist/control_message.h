// The out-of-band messages the MPI backend exchanges on its control communicator: before a
// collective moves data, every rank sends every other rank a header {call number, kind, name,
// element count, dtype, op or root}; a rank that fails sends an abort with its reason. Per peer
// they form one ordered stream (one tag, posted in order), so call #k's header is the k-th
// message and an abort arrives after every header its sender sent before failing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "athanor/dist/communicator.h"

namespace ath::dist::detail {

enum class ControlType : uint32_t { Header = 1, Abort = 2 };

struct ControlMessage {
  ControlType type = ControlType::Header;
  uint8_t kind = 0;   // Collective
  uint8_t dtype = 0;  // DType
  uint8_t op = 0;     // ReduceOp
  uint8_t unused = 0;
  int32_t root = -1;  // broadcast's src
  int32_t unused2 = 0;
  uint64_t seq = 0;  // the call number on the sending rank
  int64_t count = 0;
  uint64_t name_hash = 0;
  char text[472] = {};  // the name (header) or the reason (abort), truncated, NUL-terminated
};
// 512 bytes: far below every transport's eager limit, so a send completes locally at once.
static_assert(sizeof(ControlMessage) == 512);

struct HeaderFields {
  Collective kind;
  const std::string& name;
  int64_t count;
  DType dtype;
  ReduceOp op;
  int root;
};

ControlMessage make_header(uint64_t seq, const HeaderFields& f);
ControlMessage make_abort(const std::string& reason);
std::string text_of(const ControlMessage& m);
// "allreduce 'bucket0' (call #3, 1024 elements of float32, sum)"
std::string describe_header(const ControlMessage& m);
// Empty when the two describe the same call; else what differs.
std::optional<std::string> mismatch(const ControlMessage& mine, const ControlMessage& theirs);

}  // namespace ath::dist::detail
