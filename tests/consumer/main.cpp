// Built against an installed athanor by tests/consumer/run.sh.
#include <athanor/athanor.h>

#include <iostream>

int main() {
  ath::Tensor x = ath::from_vector<float>({1, 2, 3}).requires_grad_();
  ath::Tensor y = (x * x).sum();
  y.backward();
  std::vector<float> g = x.grad().to_vector<float>();
  bool ok = g == std::vector<float>{2, 4, 6};
  std::cout << (ok ? "consumer ok" : "consumer: wrong gradient") << "\n";
  return ok ? 0 : 1;
}
