#!/usr/bin/env python3
"""Rows for docs/gpu.md's table "airbench94 and the presets against PyTorch on the same GPU".

    python3 tools/airbench_compare.py RUNS.tsv [--device NAME] [--date YYYY-MM-DD]

RUNS.tsv has one line per timed process (scripts/gpu_quick_check.sh's airbench step writes it):
framework, recipe, the process's wall seconds, and where its figures are —

  ringgrad  a train_cifar --out folder: its metrics.csv gives the device time (the sum of every
            epoch's train_device_seconds, CUDA events around each epoch's training, plus the last
            epoch's test_device_seconds, the final evaluation) and the last epoch's test accuracy;
  pytorch   the JSON that tools/airbench94_reference.py wrote: airbench94's own CUDA-event total
            and its final (TTA) accuracy.

Prints every run, then per recipe the table row — the median device time of each side, their
ratio (ringgrad / PyTorch), the mean accuracy of each side (n runs) — and the medians of the wall
times. A recipe that only one side ran gets "—" for the other, except a ringgrad variant named
RECIPE+SOMETHING (e.g. airbench94+graphs, the preset with --cuda-graphs), which is set against
PyTorch's runs of RECIPE.
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import sys


def ringgrad_run(out):
    path = os.path.join(out, "metrics.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path} has no epochs")
    for col in ("train_device_seconds", "test_device_seconds", "test_accuracy"):
        if col not in rows[0]:
            raise ValueError(f"{path} has no column {col} (a build before issue 40's timing?)")
    seconds = sum(float(r["train_device_seconds"]) for r in rows)
    seconds += float(rows[-1]["test_device_seconds"])
    return seconds, float(rows[-1]["test_accuracy"]), len(rows)


def pytorch_run(path):
    with open(path) as f:
        r = json.loads(f.readline())
    return float(r["device_seconds"]), float(r["accuracy"]), r.get("epochs")


def fmt(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs")
    p.add_argument("--device", default="?")
    p.add_argument("--date", default=datetime.date.today().isoformat())
    a = p.parse_args()
    runs = {}  # (recipe, framework) -> [(device s, accuracy, wall s)]
    with open(a.runs) as f:
        for line in f:
            if not line.strip():
                continue
            framework, recipe, wall, where = line.rstrip("\n").split("\t")
            try:
                s, acc, epochs = (ringgrad_run if framework == "ringgrad" else pytorch_run)(where)
            except (OSError, ValueError, KeyError) as e:
                print(f"airbench_compare: {framework} {recipe} run at {where} left out: {e}",
                      file=sys.stderr)
                continue
            runs.setdefault((recipe, framework), []).append((s, acc, float(wall)))
            print(f"run: {framework:8} {recipe:10} device {s:8.3f} s  wall {float(wall):8.2f} s  "
                  f"accuracy {100 * acc:6.2f} %  epochs {epochs}")
    recipes = sorted({r for r, _ in runs}, key=lambda r: (r != "airbench94", r))
    print("\n| date | device | recipe | ringgrad s | PyTorch s | time ratio (ringgrad / PyTorch) "
          "| ringgrad % | PyTorch % |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    walls = []
    for recipe in recipes:
        cells = {}
        for fw in ("ringgrad", "pytorch"):
            r = runs.get((recipe, fw), [])
            if not r and fw == "pytorch" and "+" in recipe:  # a ringgrad variant of the recipe
                r = runs.get((recipe.split("+")[0], fw), [])
            cells[fw] = (statistics.median(x[0] for x in r) if r else None,
                         100 * statistics.mean(x[1] for x in r) if r else None,
                         statistics.median(x[2] for x in r) if r else None, len(r))
        rg_s, pt_s = cells["ringgrad"][0], cells["pytorch"][0]
        ratio = rg_s / pt_s if rg_s is not None and pt_s else None
        n = f" (n={cells['ringgrad'][3]}/{cells['pytorch'][3]})"
        print(f"| {a.date} | {a.device} | {recipe}{n} | {fmt(rg_s)} | {fmt(pt_s)} | "
              f"{fmt(ratio) + '×' if ratio is not None else '—'} | {fmt(cells['ringgrad'][1])} | "
              f"{fmt(cells['pytorch'][1])} |")
        walls.append((recipe, cells["ringgrad"][2], cells["pytorch"][2]))
    print("\nwall time of each whole process, medians (s): "
          + "; ".join(f"{r}: ringgrad {fmt(w1, 1)}, PyTorch {fmt(w2, 1)}" for r, w1, w2 in walls))


if __name__ == "__main__":
    main()
