"""The benchmark table as a picture: one bar per row, the ratio xform / JAX on a log scale.

Run from the repository root: ``python benchmarks/plot.py`` reads the results table of
``benchmarks/README.md`` and writes ``benchmarks/ratios.png``; ``python benchmarks/run.py |
python benchmarks/plot.py -`` plots a fresh run. Rows whose ratio column holds one number
(``1.04×``) are drawn, with the interval when the row gives one (``1.04× (0.98–1.10)``), and
the target as a tick; bars that meet their target are green, the others orange (gray: a
reference row without a target). Rows of other kinds (memory, warm/cold pairs) are left out.
"""

import argparse
import re
import sys

import matplotlib

matplotlib.use("Agg")  # a file, no display
import matplotlib.pyplot as plt  # noqa: E402

RATIO = re.compile(r"^\s*([0-9.]+)×(?:\s*\(([0-9.]+)[–-]([0-9.]+)\))?\s*$")
TARGET = re.compile(r"^\s*≤\s*([0-9.]+)×\s*$")


def parse_rows(text):
    """``(label, ratio, (low, high) or None, target or None)`` for each plottable row of the
    first markdown table in ``text`` whose header has a ``ratio`` column."""
    rows, columns = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            if columns is not None and rows:
                break  # the table ended
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if columns is None:
            if any(c.startswith("ratio") for c in cells):
                columns = {name.split()[0]: i for i, name in enumerate(cells)}
            continue
        if set(cells[0]) <= set("-: "):
            continue  # the header's rule
        ratio = RATIO.match(cells[columns["ratio"]]) if len(cells) == len(columns) else None
        if ratio is None:
            continue
        target = TARGET.match(cells[columns["target"]])
        interval = (float(ratio[2]), float(ratio[3])) if ratio[2] else None
        rows.append(
            (_short(cells[0]), float(ratio[1]), interval, float(target[1]) if target else None)
        )
    return rows


def _short(label, width=60):
    label = label.replace("`", "")
    return label if len(label) <= width else label[: width - 1] + "…"


def plot(rows, path):
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(rows) + 1.2))
    ys = range(len(rows))[::-1]
    for y, (_, ratio, interval, target) in zip(ys, rows, strict=True):
        color = "#999999" if target is None else "#4c9a2a" if ratio <= target else "#e07b00"
        ax.barh(y, ratio, color=color, height=0.7)
        if interval:
            ax.plot(interval, (y, y), color="black", linewidth=1)
        if target is not None:
            ax.plot((target, target), (y - 0.4, y + 0.4), color="black", linewidth=2)
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yticks(list(ys), [label for label, *_ in rows], fontsize=7)
    ax.set_xlabel("time ratio xform / JAX (log scale; < 1 is faster; black tick: target)")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "table",
        nargs="?",
        default="benchmarks/README.md",
        help="a file holding the markdown table, or - for stdin",
    )
    parser.add_argument("-o", "--output", default="benchmarks/ratios.png")
    args = parser.parse_args()
    text = sys.stdin.read() if args.table == "-" else open(args.table, encoding="utf-8").read()
    rows = parse_rows(text)
    if not rows:
        raise SystemExit(f"plot.py: no table with a ratio column in {args.table}")
    plot(rows, args.output)
    print(f"{len(rows)} rows -> {args.output}")


if __name__ == "__main__":
    main()
