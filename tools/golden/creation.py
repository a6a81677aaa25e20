"""Golden values for arange and linspace: torch 1.13's sizes (ceil((end - start) / step)) and
element values, which depend on the accumulate type and on linspace's two-sided formula.
Checked by tests/ops/test_indexing_shaping.cpp. Run: /usr/bin/python3 tools/golden/creation.py"""
import torch

from common import save


def main():
    cases = []
    for start, end, step, dtype in [(0, 1, 0.1, None), (-1, 1, 0.3, None), (0, 0.9, 0.3, None),
                                    (1, 2.5, 0.5, None), (10, -3, -0.7, None),
                                    (0.5, 100.25, 1.5, torch.float64), (3, 20, 4, None),
                                    (20, 3, -4, None), (-5, 5, 3, torch.int32),
                                    (0, 7.5, 2.5, torch.int64), (0, 3, 0.3, torch.float16),
                                    (1e6, 1e6 + 3, 0.5, None)]:
        t = torch.arange(start, end, step, dtype=dtype)
        cases.append({"name": f"arange_{start}_{end}_{step}_{t.dtype}",
                      "attrs": {"op": "arange", "start": start, "end": end, "step": step,
                                "float_args": any(isinstance(v, float) for v in (start, end, step))},
                      "tensors": {"out": t}})
    for start, end, steps, dtype in [(0, 1, 7, torch.float32), (-3.3, 8.1, 11, torch.float32),
                                     (1e-3, 1e3, 50, torch.float32), (0, 1, 13, torch.float64),
                                     (5, -5, 6, torch.float32), (0, 10, 4, torch.int64),
                                     (-7, 7, 9, torch.int32), (0, 1, 10, torch.float16),
                                     (0, 1, 10, torch.bfloat16), (2, 2, 1, torch.float32)]:
        t = torch.linspace(start, end, steps, dtype=dtype)
        cases.append({"name": f"linspace_{start}_{end}_{steps}_{dtype}",
                      "attrs": {"op": "linspace", "start": start, "end": end, "steps": steps},
                      "tensors": {"out": t}})
    save("creation", cases)


if __name__ == "__main__":
    main()
