"""Read a run's scalar series back from TensorBoard's event files, W&B's offline run files (through wandb's own
reader, ``wandb leet inspect --json``) and an MLflow store (through ``MlflowClient``): ``{tag: [(step, value)]}``."""
from __future__ import annotations

import glob
import json
import os
import struct
import subprocess
import sys
from typing import Any

Series = dict[str, list[tuple[int, float]]]


def read_tensorboard(log_dir: str) -> Series:
    from tensorboardX.proto import event_pb2

    out: Series = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents*"))):
        with open(path, "rb") as f:
            data = f.read()
        i = 0
        events = []
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i:i + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[i + 12:i + 12 + n])
            events.append(event)
            i += 12 + n + 4
        for event in sorted(events, key=lambda e: e.wall_time):
            for v in event.summary.value:
                if v.HasField("simple_value"):
                    out.setdefault(v.tag, []).append((int(event.step), float(v.simple_value)))
    return out


def wandb_records(wandb_dir: str, run_id: str) -> list[dict[str, Any]]:
    """Every record of every offline session of run ``run_id`` under ``wandb_dir``, oldest session first."""
    wandb_cli = os.path.join(os.path.dirname(sys.executable), "wandb")
    records = []
    for run_dir in sorted(glob.glob(os.path.join(wandb_dir, f"offline-run-*-{run_id}"))):
        out = subprocess.run([wandb_cli, "leet", "inspect", "--json", os.path.join(run_dir, f"run-{run_id}.wandb")],
                             capture_output=True, text=True, timeout=120, check=True).stdout
        records += [json.loads(line) for line in out.splitlines() if line.strip()]
    return records


def read_wandb(wandb_dir: str, run_id: str) -> Series:
    from ding.utils.tracking import step_metric

    out: Series = {}
    for rec in wandb_records(wandb_dir, run_id):
        if rec.get("type") != "history":
            continue
        row = rec["history"]["item"]
        for k, v in row.items():
            if k.startswith("_") or "/" not in k:
                continue
            out.setdefault(k, []).append((int(row[step_metric(k)]), float(v)))
    return out


def wandb_run_ids(wandb_dir: str) -> set[str]:
    return {os.path.basename(d).rsplit("-", 1)[1] for d in glob.glob(os.path.join(wandb_dir, "offline-run-*"))}


def read_mlflow(tracking_uri: str, run_id: str, tags: list[str]) -> Series:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    out: Series = {}
    for tag in tags:
        history = client.get_metric_history(run_id, tag)
        out[tag] = [(int(m.step), float(m.value)) for m in sorted(history, key=lambda m: (m.timestamp, m.step))]
    return out
