"""benchmarks/results.json: valid against its schema, and every figure in it transcribed from the
RESULTS.md section its record names (so a mistyped figure fails); the `record` helper replaces
and appends; the plots draw (skipped without matplotlib, which CI does not install)."""
import copy
import decimal
import importlib.util
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
RESULTS_MD = BENCHMARKS / "RESULTS.md"
RESULTS_JSON = BENCHMARKS / "results.json"


def load_module(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results = load_module("results")


def sections_of(markdown):
    """Heading text (without the #s) -> the text up to the next heading; lines inside fenced code
    blocks are never headings (RESULTS.md's commands have `# comment` lines)."""
    sections, heading, body, in_code = {}, None, [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            if heading is not None:
                sections[heading] = "\n".join(body)
            heading, body = line.lstrip("#").strip(), []
            assert heading not in sections, f"RESULTS.md has two sections named {heading!r}"
            continue
        body.append(line)
    sections[heading] = "\n".join(body)
    return sections


def numbers_in(text):
    """Every number written in the text, as exact decimals (4.00 and 4.0 are equal, 4.01 is not)."""
    return {decimal.Decimal(m) for m in re.findall(r"(?<![\d.])\d+(?:\.\d+)?", text)}


def figure_entries(data):
    for i, rec in enumerate(data["records"]):
        for name, value in rec["values"].items():
            yield f"record {i} ({rec['case']}, {name})", rec["section"], value
    for i, line in enumerate(data.get("lines", [])):
        yield f"line {i} ({line['label']})", line["section"], line["value"]


@pytest.fixture(scope="module")
def data():
    return json.loads(RESULTS_JSON.read_text(encoding="utf-8"))


def test_results_file_is_valid(data):
    assert results.validate(data) == []
    assert all(t.ratio in (None, "percent", "times") for t in results.TOPICS.values())


def test_every_figure_appears_in_its_results_md_section(data):
    sections = sections_of(RESULTS_MD.read_text(encoding="utf-8"))
    wrong = []
    for where, section, value in figure_entries(data):
        if section not in sections:
            wrong.append(f"{where}: no RESULTS.md section {section!r}")
        elif decimal.Decimal(str(value)) not in numbers_in(sections[section]):
            wrong.append(f"{where}: {value} is not in section {section!r}")
    assert not wrong, "\n".join(wrong)


def test_a_pair_of_figures_comes_from_one_table_row(data):
    """A case compared with one reference is one row of a RESULTS.md table (or one sentence), so
    both figures sit on one line of the section: a figure taken from a neighbouring row fails."""
    sections = sections_of(RESULTS_MD.read_text(encoding="utf-8"))
    wrong = []
    for rec in data["records"]:
        if len(rec["values"]) != 2:
            continue
        wanted = {decimal.Decimal(str(v)) for v in rec["values"].values()}
        if not any(wanted <= numbers_in(line) for line in sections[rec["section"]].splitlines()):
            wrong.append(f"{rec['case']}: {rec['values']}")
    assert not wrong, "\n".join(wrong)


def test_the_check_catches_a_mistyped_figure(data):
    sections = sections_of(RESULTS_MD.read_text(encoding="utf-8"))
    rec = data["records"][0]
    value = next(iter(rec["values"].values()))
    assert decimal.Decimal(str(value)) in numbers_in(sections[rec["section"]])
    assert decimal.Decimal(str(value)) + decimal.Decimal("0.1") not in numbers_in(sections[rec["section"]])
    assert numbers_in("4.00 µs, 8192³, 1.64 [1.51–3.67], 98.7%.") == {
        decimal.Decimal(s) for s in ("4", "8192", "1.64", "1.51", "3.67", "98.7")}


def test_the_file_is_written_as_the_helper_writes_it(data, tmp_path):
    """Records added through `record` produce the committed file byte for byte, so a script's
    re-run changes only its figures."""
    path = tmp_path / "results.json"
    for rec in data["records"]:
        fields = {k: v for k, v in rec.items() if k not in ("topic", "group", "case", "values")}
        results.record(rec["topic"], rec["group"], rec["case"], rec["values"], path=path, **fields)
    assert path.read_text(encoding="utf-8") == RESULTS_JSON.read_text(encoding="utf-8")


def test_record_replaces_the_same_case_and_appends_a_new_one(tmp_path):
    path = tmp_path / "results.json"
    common = dict(device="H100", section="s", command="python3 x.py", path=path)
    results.record("gemm", "g", "a", {"OpenCuTe": 1.0, "cuBLAS": 2.0}, **common)
    results.record("gemm", "g", "b", {"OpenCuTe": 3.0, "cuBLAS": 4.0}, **common)
    results.record("gemm", "g", "a", {"OpenCuTe": 5.0, "cuBLAS": 6.0}, session="run 2", **common)
    results.record_line("memory_bound", "g", "copy", 3350.0, **common)
    results.record_line("memory_bound", "g", "copy", 3300.0, **common)
    data = results.load(path)
    assert [(r["case"], r["values"]["OpenCuTe"]) for r in data["records"]] == [("a", 5.0), ("b", 3.0)]
    assert data["records"][0]["session"] == "run 2"
    assert [(ln["label"], ln["value"]) for ln in data["lines"]] == [("copy", 3300.0)]
    assert [g for g, _, _ in results.groups_of(data, "gemm")] == ["g"]
    assert results.groups_of(data, "attention") == []


@pytest.mark.parametrize("change, message", [
    (lambda d: d["records"][0].update(topic="gemv"), "topic 'gemv' is not one of"),
    (lambda d: d["records"][0].pop("command"), "missing ['command']"),
    (lambda d: d["records"][0].update(device=""), "device must be a non-empty string"),
    (lambda d: d["records"][0].update(values={"OpenCuTe": "668.2"}), "every value must be"),
    (lambda d: d["records"][0].update(values={}), "values must be a non-empty object"),
    (lambda d: d["records"][0].update(colour="red"), "unknown fields ['colour']"),
    (lambda d: d["records"][0].update(reference="MKL"), "reference 'MKL' must name one of the other"),
    (lambda d: d["records"].append(copy.deepcopy(d["records"][0])), "a second record for"),
    (lambda d: d.update(schema=2), "schema must be 1"),
    (lambda d: d["lines"].append({"topic": "memory_bound", "group": "g", "label": "copy", "value": -1,
                                  "device": "H100", "section": "s", "command": "c"}),
     "value must be a non-negative finite number"),
])
def test_schema_violations_are_reported(data, change, message):
    broken = copy.deepcopy(data)
    change(broken)
    errors = results.validate(broken)
    assert any(message in e for e in errors), errors
    with pytest.raises(ValueError, match=re.escape(message)):
        results.save(broken, pathlib.Path("/nonexistent/never-written.json"))


def test_plots_draw_one_png_per_topic_with_records(data, tmp_path):
    pytest.importorskip("matplotlib")
    plot = load_module("plot")
    path = tmp_path / "results.json"
    memory_group = next(r["group"] for r in data["records"] if r["topic"] == "memory_bound")
    results.save({"schema": 1, "records": [r for r in data["records"] if r["topic"] != "attention"],
                  "lines": [{"topic": "memory_bound", "group": memory_group, "label": "device copy",
                             "value": 3100.0, "device": "H100", "section": "s", "command": "c"}]}, path)
    written = plot.main(["--results", str(path), "--out", str(tmp_path / "img")])
    names = sorted(p.name for p in written)
    assert names == sorted(f"{t}.png" for t in results.TOPICS if t != "attention")
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_under_the_cases(data):
    """The ratio labels, against hand-computed values: 668.2 / 692.8 = 96.45%; Triton's 1418 ms
    over OpenCuTe's 21.4 ms = 66.3; call overhead has several references and no label."""
    pytest.importorskip("matplotlib")
    plot = load_module("plot")
    by_case = {(r["topic"], r["case"]): r for r in data["records"]}
    assert plot.ratio_text(results.TOPICS["gemm"], by_case["gemm", "fp16, cluster 1×1"]) == "96.4%"
    assert plot.ratio_text(results.TOPICS["cold_compile"], by_case["cold_compile", "run 4"]) == "66× faster"
    assert plot.ratio_text(results.TOPICS["call_overhead"], by_case["call_overhead", "3 tensors"]) == ""
    assert results.reference_of({"values": {"OpenCuTe, cold": 881.8, "OpenCuTe, disk-cache hit": 11.6}}) is None
