"""athanor's Trainer beside pytorch-lightning's on the same module (issue 13; outside CI).

Both train the same task for 2 epochs of 50 batches on the same generated table: `athanor fit`
(ClassificationTask on tabular_mlp, its default callbacks ModelCheckpoint(monitor=val_acc,
mode=max, save_last) and LearningRateMonitor, Adam + OneCycleLR, CSV and TensorBoard loggers),
then `test`; and a LightningModule that logs the same keys the same way with the same callbacks,
scheduler and loggers (Lightning's CSVLogger and TensorBoardLogger, the latter given version=0:
athanor's defaults share one version_N, where Lightning would number two loggers apart). Compared, with values ignored:
  - metrics.csv: the header, and the step and epoch columns row by row;
  - the directory layout under default_root_dir (event file names reduced to their prefix; the
    classes separate at once, so both keep epoch 0's checkpoint as the best);
  - hparams.yaml, as text (Lightning saves the hyperparameters athanor saved).
Prints each difference and exits 1 if there is one; athanor's report.html (its HTML report, an
addition of athanor's) is the one expected extra file.

    python -m venv /tmp/pl && /tmp/pl/bin/pip install pytorch-lightning tensorboard
    /tmp/pl/bin/python bench/interop/lightning_side_by_side.py [build/apps/athanor]
"""
import csv
import os
import subprocess
import sys
import tempfile

import pytorch_lightning as pl
import torch
import yaml
from pytorch_lightning.callbacks import LearningRateMonitor, ModelCheckpoint
from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ROWS, VAL_FRACTION, BATCH = 1000, 0.2, 16  # 800 training rows: 50 batches; 200 to validate
LOG_EVERY = 10  # five logging steps an epoch
EPOCHS = 2  # and an epoch boundary


def write_table(path):
    with open(path, "w") as f:
        f.write("x0,x1,label\n")
        for i in range(ROWS):
            label = i % 2
            f.write(f"{label * 3 + (i * 37 % 100) / 100},{label * 3 + (i * 61 % 100) / 100},{label}\n")


class Task(pl.LightningModule):
    """What athanor's ClassificationTask logs, in the same calls."""

    def __init__(self, hparams, max_lr):
        super().__init__()
        self.save_hyperparameters(hparams)
        self.max_lr = max_lr
        self.net = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        logits = self(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), on_step=False, on_epoch=True)
        return loss

    def evaluate(self, batch, prefix):
        x, y = batch
        logits = self(x)
        self.log(f"{prefix}_loss", nn.functional.cross_entropy(logits, y), prog_bar=True)
        self.log(f"{prefix}_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def validation_step(self, batch, _):
        self.evaluate(batch, "val")

    def test_step(self, batch, _):
        self.evaluate(batch, "test")

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=self.max_lr, total_steps=self.trainer.estimated_stepping_batches)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def run_lightning(root, table, hparams):
    data = [list(map(float, r[:2])) + [int(r[2])] for r in csv.reader(open(table)) if r[0] != "x0"]
    x = torch.tensor([r[:2] for r in data])
    y = torch.tensor([r[2] for r in data])
    perm = torch.randperm(ROWS, generator=torch.Generator().manual_seed(0))
    n_val = int(ROWS * VAL_FRACTION)
    train = TensorDataset(x[perm[n_val:]], y[perm[n_val:]])
    val = TensorDataset(x[perm[:n_val]], y[perm[:n_val]])
    trainer = pl.Trainer(
        max_epochs=EPOCHS, default_root_dir=root, log_every_n_steps=LOG_EVERY, accelerator="cpu",
        enable_progress_bar=False, enable_model_summary=False,
        logger=[CSVLogger(root), TensorBoardLogger(root, version=0)],
        callbacks=[ModelCheckpoint(monitor="val_acc", mode="max", save_last=True),
                   LearningRateMonitor(logging_interval="step")])
    model = Task(hparams, hparams["model"]["max_lr"])
    trainer.fit(model, DataLoader(train, batch_size=BATCH, shuffle=True),
                DataLoader(val, batch_size=256))
    trainer.test(model, DataLoader(val, batch_size=256), verbose=False)


def run_athanor(athanor, root, table):
    subprocess.run([athanor, "fit", "--data.name=csv", f"--data.path={table}",
                    "--model.name=tabular_mlp", f"--data.batch_size={BATCH}",
                    f"--data.val_fraction={VAL_FRACTION}", f"--trainer.max_epochs={EPOCHS}",
                    f"--trainer.log_every_n_steps={LOG_EVERY}",
                    f"--trainer.default_root_dir={root}", "--trainer.enable_progress_bar=false",
                    "--trainer.enable_model_summary=false"], check=True, stdout=subprocess.DEVNULL)


def layout(root):
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if "events.out.tfevents." in f:
                rel = os.path.join(os.path.dirname(rel), "events.out.tfevents.*")
            out.add(rel)
    return out


def metrics(root):
    with open(os.path.join(root, "lightning_logs", "version_0", "metrics.csv")) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    keep = [header.index(k) for k in ("epoch", "step")]
    return header, [[r[i] for i in keep] for r in rows[1:]]


def main():
    athanor = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/apps/athanor")
    diffs = []
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "table.csv")
        write_table(table)
        a_root, l_root = os.path.join(tmp, "athanor"), os.path.join(tmp, "lightning")
        run_athanor(athanor, a_root, table)
        a_dir = os.path.join(a_root, "lightning_logs", "version_0")
        hparams_text = open(os.path.join(a_dir, "hparams.yaml")).read()
        run_lightning(l_root, table, yaml.safe_load(hparams_text))
        l_dir = os.path.join(l_root, "lightning_logs", "version_0")

        a_layout, l_layout = layout(a_root), layout(l_root)
        extra = a_layout - l_layout - {"lightning_logs/version_0/report.html"}
        missing = l_layout - a_layout
        if extra or missing:
            diffs.append(f"layout: athanor only {sorted(extra)}, Lightning only {sorted(missing)}")
        (a_head, a_rows), (l_head, l_rows) = metrics(a_root), metrics(l_root)
        if a_head != l_head:
            diffs.append(f"metrics.csv header:\n  athanor   {a_head}\n  Lightning {l_head}")
        if a_rows != l_rows:
            diffs.append(f"metrics.csv epoch,step rows:\n  athanor   {a_rows}\n  Lightning {l_rows}")
        l_hparams = open(os.path.join(l_dir, "hparams.yaml")).read()
        if hparams_text != l_hparams:
            diffs.append(f"hparams.yaml:\n--- athanor\n{hparams_text}--- Lightning\n{l_hparams}")
        print(f"pytorch-lightning {pl.__version__}, torch {torch.__version__}")
        print(f"layout ({len(l_layout)} files): {sorted(l_layout)}")
        print(f"metrics.csv header: {l_head}")
        print(f"epoch,step rows: {l_rows}")
    for d in diffs:
        print("DIFFERENCE", d)
    print("no differences other than values" if not diffs else f"{len(diffs)} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
