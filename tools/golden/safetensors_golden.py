"""A tiny PyTorch MLP saved as safetensors, for tests/io/test_safetensors_golden.cpp.

Writes tests/golden/tiny_mlp.safetensors (the model's state_dict plus one small tensor of each
other dtype) and tests/golden/tiny_mlp.json (an input batch and the model's output).

Debian's python3-torch has no `safetensors` package, so the file is written here by hand with
struct + json, following the reference writer (safetensors/src/tensor.rs `prepare`) exactly:
tensors sorted by descending dtype (the reference enum's order: BOOL < U8 < I8 < F8_E5M2 <
F8_E4M3 < I16 < U16 < F16 < BF16 < I32 < U32 < F32 < F64 < I64 < U64), then by name; compact
JSON with "__metadata__" first; header padded with spaces to a multiple of 8 bytes; an 8-byte
little-endian length in front. The C++ test re-serializes the loaded file and expects the same
bytes, so any drift between this writer and athanor's shows up there.

Run: /usr/bin/python3 tools/golden/safetensors_golden.py
"""
import json
import os
import struct

import torch

from common import ROOT, save

DTYPES = {  # torch dtype -> (safetensors name, rank in the reference enum)
    torch.bool: ("BOOL", 0), torch.uint8: ("U8", 1), torch.float16: ("F16", 7),
    torch.bfloat16: ("BF16", 8), torch.int32: ("I32", 9), torch.float32: ("F32", 11),
    torch.float64: ("F64", 12), torch.int64: ("I64", 13)}


def tensor_bytes(t):
    t = t.detach().contiguous()
    # Reinterpret as bytes through uint8 (numpy has no bfloat16). x86 is little-endian.
    return t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def write_safetensors(path, tensors, metadata=None):
    items = sorted(tensors.items(), key=lambda kv: (-DTYPES[kv[1].dtype][1], kv[0]))
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in items:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, t in items:
            f.write(tensor_bytes(t))
    print(f"wrote {path}: {len(items)} tensors")


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    x = torch.randn(4, 6)
    with torch.no_grad():
        y = model(x)

    tensors = dict(model.state_dict())
    tensors.update({
        "extra.f64": torch.linspace(-1, 1, 5, dtype=torch.float64),
        "extra.bf16": torch.tensor([[0.5, -2.25], [3.0, 1e-3]], dtype=torch.bfloat16),
        "extra.f16": torch.tensor([1.5, -0.0, 65504.0], dtype=torch.float16),
        "extra.i64": torch.tensor([-(2 ** 40), 7, 0], dtype=torch.int64),
        "extra.i32": torch.tensor([[-3], [2 ** 30]], dtype=torch.int32),
        "extra.u8": torch.tensor([0, 255, 17], dtype=torch.uint8),
        "extra.bool": torch.tensor([True, False, True]),
        "extra.scalar": torch.tensor(2.5),
        "extra.empty": torch.zeros(0, 3),
    })
    write_safetensors(os.path.join(ROOT, "tests", "golden", "tiny_mlp.safetensors"), tensors,
                      {"format": "pt", "source": "tools/golden/safetensors_golden.py"})
    save("tiny_mlp", [{"name": "forward", "tensors": {"x": x, "y": y}},
                      {"name": "extras",
                       "tensors": {k: v for k, v in tensors.items() if k.startswith("extra.")}}])


if __name__ == "__main__":
    main()
