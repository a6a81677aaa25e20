"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/.

safetensors: valid files of every dtype and a few shapes, plus broken ones near the interesting
boundaries (truncation, overlap, holes, bad dtypes, duplicate keys, bad BOOL bytes). idx: raw and
gzip image and label files, and broken ones. csv: class and float targets, odd spacing, bad
cells. config: YAML run configs with overrides (anchors and aliases included). npy: numpy.save's
bytes for every supported dtype (0-d and empty arrays, versions 2.0/3.0, big-endian, Fortran
order, old numpy's 16-byte alignment), and broken ones. Plain Python, no torch or numpy:
    python3 fuzz/make_corpus.py
The checkpoint corpus is real checkpoints, written by the fuzz target itself (see
fuzz/fuzz_checkpoint.cpp).
"""
import gzip
import json
import os
import struct

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
OUT = os.path.join(CORPUS, "safetensors")
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
    write_seeds(OUT, files)
    write_seeds(os.path.join(CORPUS, "idx"), idx_seeds())
    write_seeds(os.path.join(CORPUS, "csv"), csv_seeds())
    write_seeds(os.path.join(CORPUS, "config"), config_seeds())
    write_seeds(os.path.join(CORPUS, "npy"), npy_seeds())


def write_seeds(out, files):
    os.makedirs(out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} seeds to {out}")


def idx(dims, data=None, type_byte=0x08):
    n = 1
    for d in dims:
        n *= d
    if data is None:
        data = bytes((i * 29) % 256 for i in range(n))
    return bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


def idx_seeds():
    images = idx([2, 3, 3])
    return {
        "valid_images": images,
        "valid_labels": idx([5], bytes([0, 9, 3, 3, 1])),
        "valid_images_gz": gzip.compress(images, mtime=0),
        "valid_empty": idx([0, 28, 28]),
        "bad_magic": b"\x00\x00\x08\x00" + images[4:],
        "bad_type_float": idx([2], b"\x00" * 8, type_byte=0x0D),
        "bad_truncated": images[:-2],
        "bad_trailing": images + b"x",
        "bad_gz_truncated": gzip.compress(images, mtime=0)[:-6],
    }


def csv_seeds():
    # The first byte picks the target kind (even: class labels, odd: float values).
    class_kind, float_kind = b"\x00", b"\x01"
    return {
        "class": class_kind + b"a,b,label\n1,2,0\n3.5,-4e2,1\n\n0,0,2\n",
        "float": float_kind + b"x, y ,price\n1, 2, 3.25\n-1,1e-3,nan\n",
        "one_column": class_kind + b"label\n1\n0\n",
        "header_only": float_kind + b"a,b\n",
        "bad_cell": class_kind + b"a,b\n1,x\n",
        "bad_label": class_kind + b"a,b\n1,1e300\n2,9223372036854775807\n",
        "bad_row": float_kind + b"a,b,c\n1,2\n",
    }


def config_seeds():
    # The YAML file, then NUL-separated command-line overrides.
    def cfg(yaml_text, *args):
        return yaml_text.encode() + b"".join(b"\x00" + a.encode() for a in args)
    run = ("seed_everything: 7\n"
           "trainer:\n  max_epochs: 2\n  accumulate_grad_batches: 2\n"
           "  gradient_clip_val: 0.5\n  max_time: \"00:00:10:00\"\n"
           "  callbacks:\n  - class_path: ModelCheckpoint\n    init_args: {monitor: val_loss,"
           " filename: \"{epoch}-{val_loss:.2f}\", save_top_k: 2}\n"
           "  - class_path: EarlyStopping\n    init_args: {monitor: val_loss, patience: 3}\n"
           "model:\n  name: fashion_cnn\n  optimizer: adam\n  lr: 1.0e-3\n"
           "data:\n  name: fashion-mnist\n  batch_size: 64\n")
    return {
        "run": cfg(run),
        "run_overrides": cfg(run, "--trainer.max_epochs=5", "--model.lr", "0.01",
                             "--trainer.callbacks=[EarlyStopping]"),
        "anchors": cfg("model: &m {lr: 0.1}\ntrainer: {max_epochs: 1}\ndata: {batch_size: 8}\n"),
        "alias_cycle": cfg("model: {betas: &x [*x]}\n"),
        "empty": cfg("", "--trainer={max_epochs: 2}"),
        "section_override": cfg("trainer:\n  max_steps: 10\n", "--data.root=2024",
                                "--ckpt_path=last"),
    }


def npy(descr, shape, data, fortran=False, version=1, align=64, growth=True):
    """numpy.save's layout (format.py's _write_array_header): dict, growth spaces, padding."""
    tup = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, tup)
    if growth and shape:
        header += " " * (21 - len(str(shape[0])))
    prefix = 10 if version == 1 else 12
    pad = align - (prefix + len(header) + 1) % align
    header = header.encode() + b" " * pad + b"\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + data


def npy_seeds():
    def ramp(n, size):
        return bytes((i * 37) % 256 for i in range(n * size))
    f32 = struct.pack("<6f", *range(6))
    return {
        "valid_f4": npy("<f4", [2, 3], f32),
        "valid_f8_scalar": npy("<f8", [], struct.pack("<d", 2.5)),
        "valid_f2": npy("<f2", [4], ramp(4, 2)),
        "valid_i8": npy("<i8", [3], struct.pack("<3q", -1, 0, 1 << 40)),
        "valid_i4_fortran": npy("<i4", [2, 3], struct.pack("<6i", *range(6)), fortran=True),
        "valid_u1": npy("|u1", [2, 2, 2], ramp(8, 1)),
        "valid_b1": npy("|b1", [5], bytes([0, 1, 1, 0, 1])),
        "valid_empty": npy("<f4", [0, 4], b""),
        "valid_big_endian": npy(">f4", [3], struct.pack(">3f", 1.5, -2, 3.25)),
        "valid_v2": npy("<f4", [2, 3], f32, version=2),
        "valid_v3": npy("<f4", [2, 3], f32, version=3),
        "valid_old_align16": npy("<i8", [2], struct.pack("<2q", 7, 8), align=16, growth=False),
        "bad_truncated": npy("<f4", [2, 3], f32)[:-5],
        "bad_trailing": npy("<f4", [2, 3], f32) + b"x",
        "bad_overflow": npy("<f4", [4294967296, 4294967296], b""),
        "bad_dtype": npy("<i2", [2], b"\x00" * 4),
        "valid_bool_byte_2": npy("|b1", [2], b"\x01\x02"),
        "bad_header_length": b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'}",
    }


if __name__ == "__main__":
    main()
