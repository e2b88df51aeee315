"""Figure WALK: how many of the scheduler's modules one WhatsApp delivery runs through.

``campaign run`` of a one-recipient WhatsApp text campaign against the embedded sandbox,
in a fresh process per run, under a profiler that notes every module of ``scheduler/``
whose functions are called (module bodies run at import are not counted; the sandbox's own
modules are, apart, since they play the service). The walk of the same delivery, file by
file, is in docs/architecture.md ("The files one WhatsApp delivery passes through").

``--repo PATH`` measures another checkout (e.g. a worktree of an older commit) with this
interpreter. One JSON line per run (``figure`` WALK, ``value`` = modules outside the
sandbox, ``sandbox`` = the sandbox's, ``packages`` = modules per package), then one with
the median. ``--quick``: 1 run (default 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CAMPAIGN = """\
name = "walk"
senders = ["s1"]
[recipients]
file = "data/r.csv"
phone_column = "telefone"
[[steps]]
type = "text"
text = "Oi {{ nome }}"
"""

#: Runs in the child process: ``campaign run`` under the profiler; prints the modules.
CHILD = textwrap.dedent("""\
    import json, sys, threading
    from pathlib import Path
    pkg = str(Path(sys.argv[1]).resolve() / "scheduler") + "/"
    sys.path.insert(0, sys.argv[1])
    seen = set()
    def note(frame, event, arg):
        if event == "call" and frame.f_code.co_name != "<module>":
            name = frame.f_code.co_filename
            if name.startswith(pkg):
                seen.add(name[len(pkg):])
    from scheduler.cli import main
    sys.argv = ["campaign", "run", "campaigns/c.toml"]
    threading.setprofile(note)
    sys.setprofile(note)
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    sys.setprofile(None)
    threading.setprofile(None)
    print(json.dumps({"exit": code, "modules": sorted(seen)}), file=sys.stderr)
    """)


def one_run(repo: Path) -> dict[str, object]:
    """One ``campaign run`` of the walk's campaign in a fresh project and process."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name in ("campaigns", "data", "templates"):
            (root / name).mkdir()
        (root / "config.toml").write_text("")
        (root / "data/r.csv").write_text("nome;telefone\nMaria;(11) 98765-4321\n")
        (root / "campaigns/c.toml").write_text(CAMPAIGN)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
        env.update(CAMPAIGN_VERIFY_GRACE_S="1", COLUMNS="120")
        done = subprocess.run([sys.executable, "-c", CHILD, str(repo)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if not last.startswith("{"):
        raise SystemExit(f"campaign run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    found = json.loads(last)
    modules = [m for m in found["modules"] if not m.startswith("sandbox/")]
    packages: dict[str, int] = {}
    for m in modules:
        top = m.split("/")[0]
        packages[top] = packages.get(top, 0) + 1
    return {"figure": "WALK", "value": len(modules), "unit": "modules",
            "sandbox": len(found["modules"]) - len(modules), "exit": found["exit"],
            "packages": dict(sorted(packages.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    values = []
    for _ in range(1 if args.quick else args.runs):
        line = one_run(args.repo.resolve())
        values.append(line["value"])
        print(json.dumps(line), flush=True)
    print(json.dumps({"figure": "WALK", "value": statistics.median(values), "unit": "modules",
                      "min": min(values), "max": max(values), "runs": len(values),
                      "repo": str(args.repo)}))


if __name__ == "__main__":
    main()
