"""Draws benchmarks/results.json as one PNG per topic (grouped bars, one panel per group).

    python benchmarks/plot.py --out docs/img

Each case is a cluster of bars, one per series (OpenCuTe first, then the references measured in
the same run); under its name, the ratio against the record's reference (`results.reference_of`)
in the topic's form. A topic without records draws nothing. The output depends only on the
results file and the matplotlib version (Agg backend, no timestamps in the PNG).
"""
import argparse
import decimal
import itertools
import pathlib
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import results  # noqa: E402

# OpenCuTe's series in blues, references in other hues; a topic's series keep one colour
# across its panels (assigned in order of first appearance).
OURS_COLOURS = ["#1f5fa8", "#5b9bd5", "#9cc3e6", "#2f8f9d"]
REFERENCE_COLOURS = ["#e07b28", "#7f7f7f", "#c44e52", "#8c6bb1", "#55a868", "#b8860b"]
FIGURE_WIDTH_IN = 11.0
PANEL_HEIGHT_IN = 3.6
DPI = 100
# Value labels sit on a white patch so a reference line crossing them stays readable.
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 0.3}


def decimals_of(value):
    """Decimals the figure was written with (693.0: 1, 3015: 0)."""
    return max(0, -decimal.Decimal(repr(value)).as_tuple().exponent)


def figure_text(value, decimals):
    return f"{value:.{decimals}f}"


def series_colours(records):
    colours, ours, refs = {}, itertools.cycle(OURS_COLOURS), itertools.cycle(REFERENCE_COLOURS)
    for rec in records:
        for name in rec["values"]:
            if name not in colours:
                colours[name] = next(ours) if name.startswith("OpenCuTe") else next(refs)
    return colours


def ratio_text(topic, rec):
    ref = results.reference_of(rec)
    if ref is None or topic.ratio is None:
        return ""
    ours, theirs = next(iter(rec["values"].values())), rec["values"][ref]
    if ours == 0 or theirs == 0:
        return ""
    if topic.ratio == "percent":
        return f"{100 * ours / theirs:.1f}%"
    if topic.ratio == "times":
        return f"{theirs / ours:.0f}× faster" if theirs / ours >= 10 else f"{theirs / ours:.1f}× faster"
    raise ValueError(f"unknown ratio kind {topic.ratio!r}")


def ratio_legend(topic, records):
    """One line saying what the labels under the cases mean, or "" when there are none."""
    pairs = []
    if topic.ratio is None:
        return ""
    for rec in records:
        ref = results.reference_of(rec)
        if ref is not None and (next(iter(rec["values"])), ref) not in pairs:
            pairs.append((next(iter(rec["values"])), ref))
    if not pairs:
        return ""
    ours, ref = pairs[0] if len(pairs) == 1 else ("OpenCuTe", "the reference")
    return {"percent": f"under each case: {ours} as a percentage of {ref}",
            "times": f"under each case: how many times faster {ours} is than {ref}"}[topic.ratio]


def in_order(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def draw_panel(ax, topic, group, records, lines, colours):
    series = in_order(name for rec in records for name in rec["values"])
    width = 0.8 / len(series)
    slot_in = FIGURE_WIDTH_IN * 0.85 / max(len(records), 1)
    many = len(series) > 3
    # JSON keeps 693.0 as a number, not as text: a figure is printed with as many decimals as the
    # most precise figure of its series from the same RESULTS.md section, as that table wrote it.
    decimals = {}
    for rec in records:
        for name, value in rec["values"].items():
            key = (name, rec["section"])
            decimals[key] = max(decimals.get(key, 0), decimals_of(value))
    tops = []
    for i, rec in enumerate(records):
        for j, name in enumerate(series):
            if name not in rec["values"]:
                continue
            value = rec["values"][name]
            x = i - 0.4 + width * (j + 0.5)
            ax.bar(x, value, width * 0.92, color=colours[name], label=name, zorder=2)
            ax.annotate(figure_text(value, decimals[name, rec["section"]]), (x, value), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7 if many else 8, rotation=90 if many else 0,
                        bbox=LABEL_BOX, zorder=3)
            tops.append(value)
    for line in lines:
        ax.axhline(line["value"], color="#333333", linestyle="--", linewidth=1, zorder=1)
        # Named beside the panel, where no bar or value label can be under it.
        label = "\n".join(textwrap.wrap(line["label"], 14))
        ax.annotate(f"{label}\n{figure_text(line['value'], decimals_of(line['value']))} {topic.unit}",
                    (1.0, line["value"]), xycoords=("axes fraction", "data"), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=8, color="#333333",
                    annotation_clip=False)
        tops.append(line["value"])
    wrap = max(10, int(slot_in * 13))
    labels = []
    for rec in records:
        label = "\n".join(textwrap.wrap(rec["case"], wrap))
        ratio = ratio_text(topic, rec)
        labels.append(f"{label}\n{ratio}" if ratio else label)
    ax.set_xticks(range(len(records)), labels, fontsize=8)
    ax.set_xlim(-0.6, len(records) - 0.4)
    if topic.log_scale:
        ax.set_yscale("log")
        ax.set_ylim(min(tops) / 2, max(tops) * (8 if many else 4))
    else:
        ax.set_ylim(0, max(tops) * (1.3 if many else 1.15))
    ax.set_ylabel(topic.axis_label, fontsize=9)
    sessions = in_order(rec.get("session", "") for rec in records)
    devices = in_order(rec["device"] for rec in records)
    subtitle = "; ".join(s for s in sessions if s)
    ax.set_title(f"{group}\n{', '.join(devices)}" + (f", {subtitle}" if subtitle else ""), fontsize=10)
    ax.set_xlabel(ratio_legend(topic, records), fontsize=8, color="#444444")
    ax.grid(axis="y", color="#dddddd", zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def draw_topic(name, data, out_dir):
    topic = results.TOPICS[name]
    groups = results.groups_of(data, name)
    records = [rec for _, recs, _ in groups for rec in recs]
    if not records:
        return None
    colours = series_colours(records)
    devices = in_order(rec["device"] for rec in records)
    fig, axes = plt.subplots(len(groups), 1, squeeze=False,
                             figsize=(FIGURE_WIDTH_IN, 1.2 + PANEL_HEIGHT_IN * len(groups)))
    for ax, (group, recs, lines) in zip(axes[:, 0], groups):
        draw_panel(ax, topic, group, recs, lines, colours)
    fig.suptitle(f"{topic.title} — {', '.join(devices)}", fontsize=13, fontweight="bold")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in colours]
    # As many legend columns as the longest name leaves room for across the figure.
    columns = max(1, min(len(colours), 4, int(FIGURE_WIDTH_IN * 13 // (max(map(len, colours)) + 6))))
    fig.legend(handles, list(colours), loc="upper center", ncol=columns, fontsize=9,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.45 / fig.get_figheight()))
    fig.text(0.99, 0.005, "figures: benchmarks/RESULTS.md (via benchmarks/results.json); "
             "python benchmarks/plot.py --out docs/img", ha="right", va="bottom", fontsize=7, color="#666666")
    legend_rows = -(-len(colours) // columns)
    top = 1 - (0.45 + 0.22 * legend_rows) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0.02, 1, top), h_pad=2.0)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.png"
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(results.DEFAULT_PATH), help="the results file to draw")
    parser.add_argument("--out", default="docs/img", help="folder for the PNGs (one per topic)")
    parser.add_argument("--topics", default=",".join(results.TOPICS), help="comma-separated topics to draw")
    args = parser.parse_args(argv)
    data = results.load(args.results)
    written = []
    for name in args.topics.split(","):
        if name not in results.TOPICS:
            parser.error(f"unknown topic {name!r} (known: {', '.join(results.TOPICS)})")
        path = draw_topic(name, data, pathlib.Path(args.out))
        if path is not None:
            print(path)
            written.append(path)
    return written


if __name__ == "__main__":
    main()
