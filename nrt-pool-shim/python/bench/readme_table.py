"""Writes the README's performance table from one `make bench` run (target/bench.json):
python3 readme_table.py BENCH.json README.md. The table lies between the markers
`<!-- bench:begin -->` and `<!-- bench:end -->`; nothing else in the README changes."""
import json
import pathlib
import sys

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def human(s):
    if s < 1e-6:
        return f"{s * 1e9:.2f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def value(r, side):
    """A row's median and spread for `side` ("ours", "baseline"), in the row's unit."""
    if "ours_bytes" in r:
        return f"{r['ours_bytes']} B" if side == "ours" else f"{r['limit_bytes']} B (limit)"
    t = r[side]
    if "unit" in r:
        k, u = r["scale"], r["unit"]
        return f"{t['median_s'] * k:.2f} {u} ({t['min_s'] * k:.2f}..{t['max_s'] * k:.2f})"
    return f"{human(t['median_s'])} ({human(t['min_s'])}..{human(t['max_s'])})"


def table(doc):
    m = doc["machine"]
    lines = [
        f"One `make bench` run: {doc.get('date', '?')}, commit {doc.get('commit') or '?'}, "
        f"{m.get('cpus')} CPUs ({m.get('cpu_model') or m.get('processor')}), "
        f"{m.get('memory_gib', '?')} GiB, {m.get('system')}. Ratios are baseline / ours (above 1: "
        f"faster than the baseline); each row is the median of repeats with min..max.",
        "",
        "| row | ours | baseline | ratio | goal | |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        met = {True: "met", False: "**MISSED**", None: ""}[r.get("met")]
        lines.append(f"| {r['row']} | {value(r, 'ours')} | {value(r, 'baseline')} | {r['ratio']:.3f}x | "
                     f"{r.get('goal', '-')} | {met} |")
    return "\n".join(lines)


def main(bench, readme):
    doc = json.loads(pathlib.Path(bench).read_text())
    text = pathlib.Path(readme).read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{readme}: no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    pathlib.Path(readme).write_text(f"{head}{BEGIN}\n{table(doc)}\n{END}{tail}")
    print(f"{readme}: performance table from {bench} ({len(doc['rows'])} rows)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
