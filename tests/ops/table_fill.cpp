// Op-table rows: fill (behind fill_ and the constant factories).
#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

ATH_OP_ROWS(fill) {
  return {
      Row("fill")
          .inputs({In::randn({2, 3})})
          .call([](const Tensors& x) {
            Tensor d = x[0] * 1.0;
            d.fill_(2.5);
            return d;
          })
          .ref(unary_ref([](double) { return 2.5; })),
  };
}

}  // namespace ath::testing
