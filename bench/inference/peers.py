"""Times ONNX Runtime and OpenVINO on one model, the way `athanor bench --json` times athanor.

    python peers.py MODEL.onnx --batch B --threads 2 --warmup 20 --iterations 200 [--runtime ort|ov]
        [--input-npy X.npy --output-npy-prefix P]

Prints one JSON object per runtime (one line each) with p50_ms, p90_ms, p99_ms, min_ms, max_ms,
mean_ms, throughput_per_s (batch / mean latency), first_run_ms (load + optimize + first run).
ONNX Runtime: graph optimization 'all', 2 intra-op threads, 1 inter-op thread, sequential.
OpenVINO: CPU, latency hint, 2 inference threads, f32 inference precision.
"""
import argparse
import json
import time

import numpy as np


def make_input(model_path, batch, seed=0):
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    rng = np.random.default_rng(seed)
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        t = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            feeds[inp.name] = rng.standard_normal(shape, dtype=np.float32)
        elif t.elem_type == onnx.TensorProto.INT64:
            feeds[inp.name] = rng.integers(0, 8, shape, dtype=np.int64)
        else:
            raise SystemExit(f"{inp.name}: element type {t.elem_type} not handled")
    return feeds


def summarize(name, times, first_ms, batch):
    t = np.array(times) * 1e3
    return {"runtime": name, "batch": batch, "iterations": len(t),
            "first_run_ms": first_ms, "min_ms": float(t.min()), "max_ms": float(t.max()),
            "mean_ms": float(t.mean()), "p50_ms": float(np.percentile(t, 50)),
            "p90_ms": float(np.percentile(t, 90)), "p99_ms": float(np.percentile(t, 99)),
            "throughput_per_s": batch / (t.mean() / 1e3)}


def time_calls(call, warmup, iterations):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return times


def run_ort(path, feeds, args):
    import onnxruntime as ort
    t0 = time.perf_counter()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)
    first = (time.perf_counter() - t0) * 1e3
    times = time_calls(lambda: sess.run(None, feeds), args.warmup, args.iterations)
    return summarize(f"onnxruntime {ort.__version__}", times, first, args.batch), out


def run_ov(path, feeds, args):
    import openvino as ov
    t0 = time.perf_counter()
    core = ov.Core()
    compiled = core.compile_model(path, "CPU", {
        "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": args.threads,
        "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer(feeds)
    out = [res[o] for o in compiled.outputs]
    first = (time.perf_counter() - t0) * 1e3
    times = time_calls(lambda: req.infer(feeds), args.warmup, args.iterations)
    return summarize(f"openvino {ov.get_version().split('-')[0]}", times, first, args.batch), out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--runtime", choices=["ort", "ov", "both"], default="both")
    p.add_argument("--save-io", help="write input_<i>.npy and ort_output_<i>.npy to this dir")
    args = p.parse_args()
    feeds = make_input(args.model, args.batch)
    runners = {"ort": run_ort, "ov": run_ov}
    names = ["ort", "ov"] if args.runtime == "both" else [args.runtime]
    for n in names:
        result, out = runners[n](args.model, feeds, args)
        print(json.dumps(result), flush=True)
        if args.save_io and n == "ort":
            import os
            os.makedirs(args.save_io, exist_ok=True)
            for i, (k, v) in enumerate(feeds.items()):
                np.save(os.path.join(args.save_io, f"input_{i}.npy"), v)
            for i, v in enumerate(out):
                np.save(os.path.join(args.save_io, f"ort_output_{i}.npy"), v)


if __name__ == "__main__":
    main()
