"""TensorBoard's own reader on athanor's event file (issue 13; outside CI: needs PyPI's tensorboard).

Runs `athanor fit` (a small tabular model on generated data, 2 epochs) and reads the events file
of lightning_logs/version_0 with tensorboard's EventAccumulator, the code `tensorboard --logdir`
runs: every scalar of every metrics.csv row must be there at the same step, equal as float32.

    python -m venv /tmp/tb && /tmp/tb/bin/pip install tensorboard
    /tmp/tb/bin/python bench/interop/tensorboard_reads_athanor.py [build/apps/athanor]
"""
import csv
import glob
import os
import struct
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    athanor = sys.argv[1] if len(sys.argv) > 1 else "build/apps/athanor"
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "blobs.csv")
        with open(data, "w") as f:
            f.write("x0,x1,label\n")
            for i in range(240):
                label = i % 2
                f.write(f"{label * 3 + (i * 37 % 100) / 100},{label * 3 + (i * 61 % 100) / 100},{label}\n")
        subprocess.run([athanor, "fit", "--data.name=csv", f"--data.path={data}",
                        "--model.name=tabular_mlp", "--data.batch_size=16", "--trainer.max_epochs=2",
                        "--trainer.log_every_n_steps=5", f"--trainer.default_root_dir={tmp}",
                        "--trainer.enable_progress_bar=false"], check=True, stdout=subprocess.DEVNULL)
        run = os.path.join(tmp, "lightning_logs", "version_0")
        (events,) = glob.glob(os.path.join(run, "events.out.tfevents.*"))
        acc = EventAccumulator(events, size_guidance={"scalars": 0})
        acc.Reload()
        tb = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
        with open(os.path.join(run, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
        checked = 0
        for row in rows:
            step = int(row["step"])
            for key, value in row.items():
                if key == "step" or value == "":
                    continue
                got = tb.get(key, {}).get(step)
                assert got is not None, f"{key} at step {step}: not in the events file"
                assert got == f32(float(value)), f"{key} at step {step}: {got} != {value}"
                checked += 1
        print(f"tensorboard read "
              f"{sum(len(v) for v in tb.values())} scalars of {len(tb)} tags from {os.path.basename(events)}; "
              f"all {checked} values of metrics.csv's {len(rows)} rows match")


if __name__ == "__main__":
    main()
