"""Writes the seed corpus for fuzz_safetensors into fuzz/corpus/safetensors/.

Valid files of every dtype and a few shapes, plus broken ones near the interesting boundaries
(truncation, overlap, holes, bad dtypes, duplicate keys, bad BOOL bytes). Plain Python, no torch:
    python3 fuzz/make_corpus.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")
SIZES = {"BOOL": 1, "U8": 1, "F16": 2, "BF16": 2, "I32": 4, "F32": 4, "F64": 8, "I64": 8}


def raw(header_text, buffer=b"", pad=True):
    text = header_text.encode("utf-8")
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + buffer


def build(tensors, metadata=None):
    """tensors: list of (name, dtype, shape); data is a byte ramp (BOOL: 0/1)."""
    header, buf = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = SIZES[dtype]
        for s in shape:
            n *= s
        data = bytes((i % 2) if dtype == "BOOL" else (i * 37) % 256 for i in range(n))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(buf), len(buf) + n]}
        buf += data
    return raw(json.dumps(header, separators=(",", ":")), buf)


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {
        "valid_empty": build([]),
        "valid_metadata_only": build([], {"format": "pt"}),
        "valid_every_dtype": build([(f"t.{d}", d, [2, 3]) for d in
                                    ["I64", "F64", "F32", "I32", "BF16", "F16", "U8", "BOOL"]]),
        "valid_mlp": build([("0.bias", "F32", [5]), ("0.weight", "F32", [5, 6]),
                            ("2.bias", "F32", [3]), ("2.weight", "F32", [3, 5])],
                           {"format": "pt", "note": "seed"}),
        "valid_scalar_and_empty": build([("s", "F64", []), ("e", "F32", [0, 4]), ("z", "U8", [0])]),
        "valid_unpadded": raw('{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}', b"abc",
                              pad=False),
        "valid_odd_offset": raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                '"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}',
                                b"\x07\x00\x00\x80\x3f"),
        "bad_truncated": build([("w", "F32", [4])])[:-3],
        "bad_overlap": raw('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                           '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"xyz"),
        "bad_hole": raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy"),
        "bad_dtype_i8": raw('{"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}', b"x"),
        "bad_duplicate": raw('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                             '"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy"),
        "bad_bool_byte": raw('{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02"),
        "bad_overflow": raw('{"a":{"dtype":"U8","shape":[4294967296,4294967296],'
                            '"data_offsets":[0,0]}}'),
        "bad_header_length": struct.pack("<Q", 1 << 40) + b"{}",
    }
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} seeds to {OUT}")


if __name__ == "__main__":
    main()
