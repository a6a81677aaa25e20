"""Converts a PyTorch Lightning .ckpt (or any torch.save'd state_dict) into an athanor checkpoint.

    /usr/bin/python3 tools/lightning_ckpt_to_athanor.py epoch=2-step=1407.ckpt model.ckpt
    athanor test --config run.yaml --ckpt_path model.ckpt

The output is an athanor weights-only checkpoint, a safetensors file: the module's weights as
"state_dict.<name>" tensors, and epoch, global_step and hyper_parameters (when the .ckpt has them)
in the "athanor.checkpoint" metadata. validate/test/predict load it; fit cannot resume from it
(Lightning's optimizer and loop states do not carry over). Parameter names must match the athanor
module's (a LightningModule's "model." prefix can be dropped with --strip-prefix model.).

Needs torch (Debian's python3-torch, or PyPI's). torch.load runs pickle code from the file:
convert only checkpoints you trust.
"""
import argparse
import json
import struct

import torch

DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL",
}


def tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: write its 16-bit patterns
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def convert(src, dst, strip_prefix=""):
    ckpt = torch.load(src, map_location="cpu")
    if isinstance(ckpt, dict) and isinstance(ckpt.get("state_dict"), dict):
        state = ckpt["state_dict"]
    elif isinstance(ckpt, dict) and all(torch.is_tensor(v) for v in ckpt.values()):
        state, ckpt = ckpt, {}
    else:
        raise SystemExit(f"{src}: neither a Lightning checkpoint nor a state_dict")
    header, buffer = {}, bytearray()
    for name in sorted(state):
        t = state[name]
        if t.dtype not in DTYPES:
            raise SystemExit(f"{src}: tensor {name} has dtype {t.dtype}, which athanor lacks")
        key = name[len(strip_prefix):] if strip_prefix and name.startswith(strip_prefix) else name
        data = tensor_bytes(t)
        header["state_dict." + key] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                                       "data_offsets": [len(buffer), len(buffer) + len(data)]}
        buffer += data
    meta = {"weights_only": True, "converted_from": "pytorch", "source": str(src)}
    for field in ("epoch", "global_step"):
        if isinstance(ckpt.get(field), int):
            meta[field] = ckpt[field]
    try:
        meta["hyper_parameters"] = json.loads(json.dumps(dict(ckpt.get("hyper_parameters", {}))))
    except (TypeError, ValueError):
        pass  # hyperparameters that are not plain JSON values are left out
    header["__metadata__"] = {"athanor.checkpoint": json.dumps(meta)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(buffer))
    return len(state)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", help="the .ckpt (torch.save) file")
    p.add_argument("dst", help="the athanor checkpoint to write")
    p.add_argument("--strip-prefix", default="", help='drop this prefix from names ("model.")')
    a = p.parse_args()
    n = convert(a.src, a.dst, a.strip_prefix)
    print(f"wrote {a.dst}: {n} tensors")


if __name__ == "__main__":
    main()
