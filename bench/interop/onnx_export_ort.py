"""ONNX Runtime on athanor's exported workload models (bench/interop/onnx_export_ort.sh).

Reads what build/bench/export_models wrote into DIR (W2.onnx, W2_b64_input.npy,
W2_b64_output.npy, ...), runs every model in ONNX Runtime on each saved input, and prints per
model and batch size the max absolute difference from athanor's eager output and the relative
difference (max |ort - athanor| / max |athanor|). Exits 1 if a relative difference exceeds
1e-4 (or ORT rejects a model), 0 otherwise.

    /work/venv/bin/python bench/interop/onnx_export_ort.py DIR
"""
import glob
import os
import re
import sys

import numpy as np
import onnxruntime as ort

LIMIT = 1e-4


def main():
    out_dir = sys.argv[1]
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}")
    print(f"{'model':12} {'batch':>5} {'output shape':>16} {'max abs diff':>13} {'max rel diff':>13}")
    worst = 0.0
    models = sorted(glob.glob(os.path.join(out_dir, "*.onnx")))
    if not models:
        print(f"no .onnx files in {out_dir}", file=sys.stderr)
        return 1
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        input_name = session.get_inputs()[0].name
        for inp in sorted(glob.glob(os.path.join(out_dir, f"{name}_b*_input.npy")),
                          key=lambda p: int(re.search(r"_b(\d+)_", p).group(1))):
            batch = int(re.search(r"_b(\d+)_", inp).group(1))
            x = np.load(inp)
            want = np.load(inp.replace("_input.npy", "_output.npy"))
            (got,) = session.run(None, {input_name: x})
            if got.shape != want.shape:
                print(f"{name}: ORT output shape {got.shape}, athanor's {want.shape}")
                return 1
            abs_diff = float(np.max(np.abs(got.astype(np.float64) - want)))
            rel_diff = abs_diff / float(np.max(np.abs(want)))
            worst = max(worst, rel_diff)
            shape = "x".join(str(d) for d in got.shape)
            print(f"{name:12} {batch:>5} {shape:>16} {abs_diff:>13.3e} {rel_diff:>13.3e}")
    print(f"worst relative difference {worst:.3e} ({'ok' if worst <= LIMIT else 'FAIL'}: limit {LIMIT:g})")
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
