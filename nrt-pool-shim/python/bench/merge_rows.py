"""Merges `make bench`'s per-suite rows (DIR/*.json) into one document with the machine
they were measured on: python3 merge_rows.py DIR OUT.json."""
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def memory_gib():
    try:
        for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20)
    except OSError:
        pass
    return None


def main(src, out):
    rows = []
    for f in sorted(pathlib.Path(src).glob("*.json")):
        rows.extend(json.loads(f.read_text()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    doc = {
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "cpu_model": cpu_model(), "memory_gib": memory_gib(), "system": platform.platform()},
        "date": datetime.date.today().isoformat(),
        "commit": commit.stdout.strip() or None,
        "rows": rows,
    }
    pathlib.Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    missed = [r["row"] for r in rows if r.get("met") is False]
    print(f"{out}: {len(rows)} rows, {len(missed)} below their goal")
    for name in missed:
        print(f"  MISSED: {name}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
