"""Golden printouts: torch 1.13's own formatting of varied tensors, with athanor's suffix rule
(shape and dtype always appended, wrapped by torch's _add_suffixes) applied to torch's body.
Checked by tests/tensor/test_print.cpp. Run: /usr/bin/python3 tools/golden/print.py"""
import torch
from torch._tensor_str import _add_suffixes, _tensor_str

from common import save

NAMES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
         torch.int32: "int32", torch.bool: "bool", torch.uint8: "uint8",
         torch.float16: "float16", torch.bfloat16: "bfloat16"}


def athanor_str(t):
    prefix = "tensor("
    body = "[]" if t.numel() == 0 else _tensor_str(t, len(prefix))
    suffixes = ["shape=[" + ", ".join(str(s) for s in t.shape) + "]", "dtype=" + NAMES[t.dtype]]
    return _add_suffixes(prefix + body, suffixes, len(prefix), False)


def main():
    g = torch.Generator().manual_seed(0)
    cases = []

    def add(name, t):
        cases.append({"name": name, "attrs": {"text": athanor_str(t)}, "tensors": {"x": t}})

    add("randn_3x4", torch.randn(3, 4, generator=g))
    add("randn_wide_1d", torch.randn(37, generator=g))
    add("scaled_up", torch.randn(2, 5, generator=g) * 1e5)
    add("scaled_down", torch.randn(2, 5, generator=g) * 1e-3)
    add("mixed_range", torch.tensor([1e-6, 3.0, -2.0e3]))
    add("int_like_floats", torch.randint(-50, 50, (3, 4), generator=g).float())
    add("int_like_big_ratio", torch.tensor([1.0, 5000.0, -2.0]))
    add("float64", torch.randn(2, 3, generator=g, dtype=torch.float64))
    add("float16", torch.randn(4, generator=g).half())
    add("bfloat16", torch.randn(4, generator=g).bfloat16())
    add("int64", torch.randint(-1000, 1000, (3, 3), generator=g))
    add("int32", torch.randint(-5, 5, (2, 7), generator=g, dtype=torch.int32))
    add("uint8", torch.randint(0, 255, (5,), generator=g, dtype=torch.uint8))
    add("bool_2d", torch.randint(0, 2, (2, 3), generator=g).bool())
    add("summarized_2d", torch.randn(100, 20, generator=g))
    add("summarized_rows_only", torch.randn(400, 3, generator=g))
    add("summarized_4d", torch.randn(3, 7, 8, 9, generator=g))
    add("summarized_int", torch.randint(-9, 9, (1001,), generator=g))
    add("zero_dim", torch.tensor(-3.25))
    add("zero_dim_int", torch.tensor(42))
    add("empty_3d", torch.zeros(2, 0, 3))
    add("single_row_cols", torch.randn(1, 1, 6, generator=g))
    save("print", cases)


if __name__ == "__main__":
    main()
