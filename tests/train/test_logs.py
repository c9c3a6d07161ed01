"""A training run's log: one line per epoch (time, loss, accuracy, bytes fetched), no
warning repeated per worker."""

from __future__ import annotations

import re
import subprocess
import sys

from commgnn.train.summary import epoch_line


def test_epoch_line_states_time_loss_accuracy_and_bytes():
    row = {"epoch": 1, "time_s": 12.0, "time_dilation": 60.0, "train_loss": 0.81234,
           "train_acc": 0.7012, "val_acc": 0.69, "test_acc": None, "remote_bytes": 452.1e6}
    assert epoch_line(row, 3) == ("epoch 2/3: 12.00 s raw (0.200 s target, f = 60)  "
                                  "loss 0.8123  train acc 0.701  val 0.690  fetched 452.1 MB")


def test_a_run_logs_each_epoch_once_and_no_warnings(tiny_inputs, tmp_path, make_spec):
    dataset, partition = tiny_inputs
    spec = make_spec(epochs=3, eval_every=2)
    proc = subprocess.run(
        [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
         str(dataset), "--partition", str(partition), "--out", str(tmp_path / "run"),
         "--checkpoints", str(tmp_path / "ckpt")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    epochs = re.findall(r"\[worker 0\] INFO epoch (\d)/3: .* fetched [\d.]+ MB$",
                        proc.stderr, flags=re.MULTILINE)
    assert epochs == ["1", "2", "3"], proc.stderr[-3000:]
    evaluated = [ln for ln in proc.stderr.splitlines() if " epoch " in ln and " test " in ln]
    assert len(evaluated) == 2  # epoch 2 (eval_every) and the last
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
