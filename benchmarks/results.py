"""Machine-readable benchmark results (`benchmarks/results.json`) and the helper that writes them.

`benchmarks/RESULTS.md` stays the record of what was measured, how and when; `results.json` holds
the figures that `benchmarks/plot.py` draws, each record naming the RESULTS.md section it comes
from, so a figure can be traced back to its command and method.

A record is one case of one comparison, with every side's figure:

    {"topic": "gemm", "group": "Hopper dense GEMMs", "case": "fp16 8192³, cluster 1×1",
     "values": {"OpenCuTe": 668.2, "cuBLAS": 692.8},
     "device": "H100 (nvidia-h100-x1)", "section": "<a RESULTS.md heading, without the #s>",
     "session": "session 7", "command": "python3 benchmarks/bench_sm90.py ..."}

The first entry of `values` is OpenCuTe's figure; the others are references measured in the
same run; series named "OpenCuTe..." are this project's. The label under a case compares the
first figure with the record's `reference`, or with its only series not named "OpenCuTe...". A group is one panel of a
topic's plot, its records' cases in file order. A topic's plot may also draw horizontal
reference lines (`lines`: a device's copy bandwidth, say), with the same provenance fields.

Benchmark scripts add their figures with `record(...)` (replacing the record of the same topic,
group and case) and `record_line(...)`. This module uses only the standard library, so the
tests that check the file run without matplotlib.
"""
import argparse
import json
import math
import pathlib
from dataclasses import dataclass

DEFAULT_PATH = pathlib.Path(__file__).resolve().parent / "results.json"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Topic:
    """What one PNG shows. `ratio` is the label under each case that has a reference (see
    `reference_of`): "percent" (OpenCuTe's figure as a percentage of the reference's, for
    throughput), "times" (how many times faster OpenCuTe is, for times) or None (no label)."""
    title: str
    unit: str
    axis_label: str
    ratio: str = None
    log_scale: bool = False


# A new topic is one entry here; plot.py draws it once records name it.
TOPICS = {
    "gemm": Topic("GEMM throughput against cuBLAS", "TFLOP/s", "TFLOP/s (higher is better)", "percent"),
    "attention": Topic("Attention throughput against PyTorch SDPA", "TFLOP/s", "TFLOP/s (higher is better)",
                       "percent"),
    "memory_bound": Topic("Memory-bound kernels: bandwidth against torch", "GB/s", "GB/s (higher is better)",
                          "percent"),
    "call_overhead": Topic("Host time per call from Python", "µs", "µs per call (lower is better)"),
    "cold_compile": Topic("Cold compile: the first compile of a fresh process", "ms",
                          "ms, log scale (lower is better)", "times", log_scale=True),
}

RECORD_FIELDS = {"topic", "group", "case", "values", "device", "section", "command"}
RECORD_OPTIONAL = {"session", "note", "reference"}
LINE_FIELDS = {"topic", "group", "label", "value", "device", "section", "command"}
LINE_OPTIONAL = {"session", "note"}


def empty():
    return {"schema": SCHEMA_VERSION, "records": [], "lines": []}


def load(path=DEFAULT_PATH):
    path = pathlib.Path(path)
    if not path.exists():
        return empty()
    data = json.loads(path.read_text(encoding="utf-8"))
    errors = validate(data)
    if errors:
        raise ValueError(f"{path}: " + "; ".join(errors))
    return data


def save(data, path=DEFAULT_PATH):
    errors = validate(data)
    if errors:
        raise ValueError("; ".join(errors))
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    pathlib.Path(path).write_text(text, encoding="utf-8")


def _is_figure(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _check_provenance(where, entry, required, optional, errors):
    missing = required - entry.keys()
    unknown = entry.keys() - required - optional
    if missing:
        errors.append(f"{where}: missing {sorted(missing)}")
    if unknown:
        errors.append(f"{where}: unknown fields {sorted(unknown)}")
    for key in (required | optional) & entry.keys():
        if key in ("values", "value"):
            continue
        if not isinstance(entry[key], str) or not entry[key].strip():
            errors.append(f"{where}: {key} must be a non-empty string")
    if entry.get("topic") not in TOPICS:
        errors.append(f"{where}: topic {entry.get('topic')!r} is not one of {sorted(TOPICS)}")


def validate(data):
    """The schema's violations, as messages (an empty list when the data is valid)."""
    if not isinstance(data, dict):
        return ["the results file must hold a JSON object"]
    errors = []
    if data.get("schema") != SCHEMA_VERSION:
        errors.append(f"schema must be {SCHEMA_VERSION}")
    if set(data) - {"schema", "records", "lines"}:
        errors.append(f"unknown top-level fields {sorted(set(data) - {'schema', 'records', 'lines'})}")
    records, lines = data.get("records"), data.get("lines", [])
    if not isinstance(records, list) or not isinstance(lines, list):
        return errors + ["records and lines must be lists"]
    seen = set()
    for i, rec in enumerate(records):
        where = f"record {i}"
        if not isinstance(rec, dict):
            errors.append(f"{where}: not an object")
            continue
        _check_provenance(where, rec, RECORD_FIELDS, RECORD_OPTIONAL, errors)
        values = rec.get("values")
        if not isinstance(values, dict) or not values:
            errors.append(f"{where}: values must be a non-empty object of series name to figure")
        elif not all(isinstance(k, str) and k and _is_figure(v) for k, v in values.items()):
            errors.append(f"{where}: every value must be a non-negative finite number under a name")
        elif "reference" in rec and (rec["reference"] not in values or rec["reference"] == next(iter(values))):
            errors.append(f"{where}: reference {rec['reference']!r} must name one of the other values")
        key = (rec.get("topic"), rec.get("group"), rec.get("case"))
        if key in seen:
            errors.append(f"{where}: a second record for {key}")
        seen.add(key)
    for i, line in enumerate(lines):
        where = f"line {i}"
        if not isinstance(line, dict):
            errors.append(f"{where}: not an object")
            continue
        _check_provenance(where, line, LINE_FIELDS, LINE_OPTIONAL, errors)
        if not _is_figure(line.get("value")):
            errors.append(f"{where}: value must be a non-negative finite number")
    return errors


def _provenance(device, section, command, session, note):
    entry = {"device": device, "section": section, "command": command}
    if session is not None:
        entry["session"] = session
    if note is not None:
        entry["note"] = note
    return entry


def reference_of(rec):
    """The series the case's ratio label compares OpenCuTe's figure with: the record's
    `reference`, else its only series not named "OpenCuTe..." (a second OpenCuTe figure, such as
    a cache hit, is not a reference), else None."""
    if "reference" in rec:
        return rec["reference"]
    others = [name for name in rec["values"] if not name.startswith("OpenCuTe")]
    return others[0] if len(others) == 1 else None


def record(topic, group, case, values, *, device, section, command, session=None, note=None,
           reference=None, path=DEFAULT_PATH):
    """Adds one case's figures to the results file, replacing the record of the same topic, group
    and case (a re-run updates its figures in place; the plot keeps the file's order).
    `values` maps series names to figures, OpenCuTe's first; `reference` names the series the
    ratio label compares with when more than one series is not OpenCuTe's. Returns the record written."""
    data = load(path)
    rec = {"topic": topic, "group": group, "case": case, "values": dict(values)}
    rec.update(_provenance(device, section, command, session, note))
    if reference is not None:
        rec["reference"] = reference
    records = data["records"]
    for i, old in enumerate(records):
        if (old["topic"], old["group"], old["case"]) == (topic, group, case):
            records[i] = rec
            break
    else:
        records.append(rec)
    save(data, path)
    return rec


def record_line(topic, group, label, value, *, device, section, command, session=None, note=None,
                path=DEFAULT_PATH):
    """Adds a horizontal reference line (e.g. the device's copy bandwidth) to a topic's group,
    replacing the line of the same topic, group and label."""
    data = load(path)
    line = {"topic": topic, "group": group, "label": label, "value": value}
    line.update(_provenance(device, section, command, session, note))
    lines = data.setdefault("lines", [])
    for i, old in enumerate(lines):
        if (old["topic"], old["group"], old["label"]) == (topic, group, label):
            lines[i] = line
            break
    else:
        lines.append(line)
    save(data, path)
    return line


def groups_of(data, topic):
    """The topic's groups in file order, each as (group name, its records, its lines)."""
    order = []
    for entry in data["records"] + data.get("lines", []):
        if entry["topic"] == topic and entry["group"] not in order:
            order.append(entry["group"])
    return [(g,
             [r for r in data["records"] if r["topic"] == topic and r["group"] == g],
             [ln for ln in data.get("lines", []) if ln["topic"] == topic and ln["group"] == g])
            for g in order]


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check a benchmark results file against the schema.")
    parser.add_argument("path", nargs="?", default=str(DEFAULT_PATH))
    args = parser.parse_args(argv)
    data = load(args.path)
    print(f"{args.path}: {len(data['records'])} records, {len(data.get('lines', []))} lines, valid")


if __name__ == "__main__":
    main()
