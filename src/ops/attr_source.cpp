#include "athanor/ops/attr_source.h"

namespace ath {

namespace detail {
thread_local PendingAttrSource t_pending_attr_source;
}

const AttrSource* current_attr_source(const OpDef& op) {
  const detail::PendingAttrSource& p = detail::t_pending_attr_source;
  return p.op == &op ? p.source : nullptr;
}

}  // namespace ath
