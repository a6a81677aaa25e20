// PrimitiveKey (the oneDNN primitive cache's key): equal values are equal keys with equal
// hashes, whether they fit its inline storage or spill past it; any differing value, or
// length, is another key.
#include <gtest/gtest.h>

#include "ops/kernels/cpu/common/dnnl_utils.h"

namespace ath::kernels {
namespace {

PrimitiveKey key_of(int64_t n, int64_t changed_at = -1) {
  PrimitiveKey k(PrimKind::Matmul, 2);
  for (int64_t i = 0; i < n; ++i) k.add(i == changed_at ? int64_t{-7} : i * 3 + 1);
  return k;
}

TEST(PrimitiveKey, EqualValuesAreEqualKeysInlineOrSpilled) {
  for (int64_t n : {0, 5, 46, 47, 60, 200}) {  // 2 values are the kind and thread count
    EXPECT_TRUE(key_of(n) == key_of(n)) << n;
    EXPECT_EQ(key_of(n).hash(), key_of(n).hash()) << n;
    EXPECT_FALSE(key_of(n) == key_of(n + 1)) << n;
    if (n > 0) {
      EXPECT_FALSE(key_of(n) == key_of(n, 0)) << n;      // the first value
      EXPECT_FALSE(key_of(n) == key_of(n, n - 1)) << n;  // the last (spilled past 46)
      EXPECT_NE(key_of(n).hash(), key_of(n, n - 1).hash()) << n;
    }
  }
  EXPECT_FALSE(PrimitiveKey(PrimKind::Matmul, 1) == PrimitiveKey(PrimKind::Matmul, 2));
  EXPECT_FALSE(PrimitiveKey(PrimKind::Matmul, 1) == PrimitiveKey(PrimKind::ConvFwd, 1));
}

}  // namespace
}  // namespace ath::kernels
