// libFuzzer target for the CSV dataset reader.
//
// The first input byte picks the target kind (even: class labels, odd: float values); the rest
// is the file. Properties checked on every input, under ASan + UBSan:
//   - CsvDataset either loads or throws ath::FormatError / ath::KeyError (a missing column):
//     any other exception, a crash, an out-of-bounds read or undefined behaviour is a finding;
//   - a loaded dataset has one target per feature row and float32 features, and its batch path
//     (get_batch) returns the feature rows exactly.
#include <cstring>
#include <numeric>
#include <vector>

#include "athanor/data/csv_dataset.h"
#include "fuzz_input.h"

using ath::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static ath::fuzz::InputFile file;
  ath::data::CsvOptions options;
  options.path = file.write(data + 1, size - 1);
  options.target_kind = (data[0] & 1) ? ath::data::CsvTarget::Float : ath::data::CsvTarget::Class;
  try {
    ath::data::CsvDataset csv(options);
    const ath::Tensor& x = csv.features();
    const ath::Tensor& y = csv.targets();
    check(x.dim() == 2 && y.dim() == 1 && x.size(0) == y.size(0) && x.dtype() == ath::kFloat32,
          "features and targets disagree");
    check(x.size(1) == static_cast<int64_t>(csv.feature_names().size()), "feature names");
    std::vector<int64_t> all(static_cast<size_t>(csv.size()));
    std::iota(all.begin(), all.end(), 0);
    if (auto batch = csv.get_batch(all); batch && csv.size() > 0) {
      const ath::Tensor& bx = (*batch)[0];
      check(bx.nbytes() == x.nbytes() && std::memcmp(bx.data_ptr(), x.data_ptr(), x.nbytes()) == 0,
            "get_batch differs from the feature rows");
    }
  } catch (const ath::FormatError&) {
  } catch (const ath::KeyError&) {
  }
  return 0;
}
