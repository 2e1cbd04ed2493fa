#!/usr/bin/python3
"""The pair registry (pairs.bzl) for Python and shell: the one list of
repro/fix pairs and what each needs from the tools around it.

    python3 analysis/registry.py names              # one pair a line, in order
    python3 analysis/registry.py regen-steps        # tools/regen_all.sh's pair steps
    python3 analysis/registry.py shared-gpu-flags   # the bundle's shared_gpu_flags.txt
    python3 analysis/registry.py mps-isolated       # the bundle's pair lines of mps_isolated.txt
    python3 analysis/registry.py evidence           # tools/vs_pytorch/run_all.sh's pair entries
    python3 analysis/registry.py count-word         # "six": the citation's wording
    python3 analysis/registry.py json               # the whole registry

Beside each pair, two spec files (read here, in the registry's order):
  repro/NAME/report.json   what the report's finding says about the bug:
      templates over record fields (analysis/pick.py explains paths and
      expressions); a metric list is tried in order, the first path some
      record carries is used; no number is typed there. 'summary' gives the
      report's top table (and the suite summary's block), 'cost' the best
      fix's cost at a named shape (analysis/bench_cost.py), 'on_purpose'
      what a fix row run inexact on purpose stands for
  KIND/NAME/tables.json    the generated tables of that README: marker id
      (<!-- table:ID:begin/end -->), the committed records, and how the
      table is made ('render' names analysis/pair_render/NAME.py, else
      group_by/columns as analysis/pair_table.py's flags; 'where' picks the
      records); `python3 analysis/pair_table.py --all` rewrites them all

pairs.bzl is Starlark whose PAIR_REGISTRY is also a Python literal; it is
read with ast.literal_eval, never executed.
"""
import ast
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]
SHARED_GPU_HEADER = """\
# Pair binaries on a shared GPU: the flags that make each repro / fix binary
# fit about 60 s when its NCCL ranks share one GPU (several ranks per GPU,
# one CUDA context each, time-sliced: a world costs seconds to start and a
# collective tens of milliseconds; core/testing/README.md has the model,
# fitted to the H100 run of 2026-11-26, no MPS).
#
# Generated from the pair registry (pairs.bzl, "shared_gpu"):
# `python3 analysis/registry.py shared-gpu-flags`; edit the registry.
#
# Format: one line per pair binary, its path as in the bundle's pairs.txt,
# then the flags to add to `--backend nccl --json PATH` (none: its defaults
# fit); blank lines and lines starting with `#` are comments. Every flag is
# the binary's own (`--help`; tools/bundle/shared_gpu_flags_test checks the
# paths and flag names), and every line was run here on Gloo with those
# flags: exit 0, every record with its expected verdict (README.md).
#
# Above each line: the model's estimate at the defaults -> with the flags
# (START_S per world + PER_COLL_S x W per collective + deliberate waits;
# worlds and collectives counted on Gloo by core/testing/count_collectives.sh).
"""
KIND_FOLDER = {"repro": "repro", "fix": "fixes"}


class RegistryError(Exception):
    pass


def default_path():
    """pairs.bzl: beside analysis/ in a checkout, or in Bazel's runfiles."""
    for base in (os.path.dirname(HERE), os.path.join(HERE, "..")):
        p = os.path.join(base, "pairs.bzl")
        if os.path.exists(p):
            return p
    return os.path.join(os.path.dirname(HERE), "pairs.bzl")


def load(path=None):
    """The registry's entries, checked for the fields every consumer reads."""
    path = path or default_path()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "PAIR_REGISTRY" for t in node.targets):
            pairs = ast.literal_eval(node.value)
            break
    else:
        raise RegistryError(f"{path}: no PAIR_REGISTRY = [...]")
    seen = set()
    for p in pairs:
        for key in ("name", "seed", "judging_readmes", "regen", "shared_gpu", "stalls_nccl",
                    "evidence"):
            if key not in p:
                raise RegistryError(f"{path}: pair {p.get('name', '?')!r} lacks {key!r}")
        if p["name"] in seen:
            raise RegistryError(f"{path}: pair {p['name']!r} twice")
        seen.add(p["name"])
    return pairs


def root_of(path=None):
    """The repository (or runfiles tree) the registry file lies in."""
    return os.path.dirname(os.path.abspath(path or default_path()))


def findings_specs(path=None, pairs=None):
    """{pair: its repro/NAME/report.json}, in the registry's order."""
    root = root_of(path)
    out = {}
    for p in pairs if pairs is not None else load(path):
        f = os.path.join(root, "repro", p["name"], "report.json")
        with open(f, encoding="utf-8") as fh:
            out[p["name"]] = json.load(fh)
    return out


def table_specs(path=None, pairs=None):
    """Every pair README's table specs (KIND/NAME/tables.json), each with
    its "readme", in the registry's order (repro before fixes)."""
    root = root_of(path)
    out = []
    for p in pairs if pairs is not None else load(path):
        for kind in ("repro", "fixes"):
            f = os.path.join(root, kind, p["name"], "tables.json")
            if not os.path.exists(f):
                continue
            with open(f, encoding="utf-8") as fh:
                for t in json.load(fh)["tables"]:
                    out.append(dict({"readme": f"{kind}/{p['name']}/README.md"}, **t))
    return out


def names(pairs=None):
    return [p["name"] for p in (pairs if pairs is not None else load())]


def judging_readmes(pairs=None):
    return [f"{kind}/{p['name']}/README.md" for p in (pairs if pairs is not None else load())
            for kind in p["judging_readmes"]]


def regen_steps(pairs=None):
    """[(step, timed, command)] of the pair records, the untimed first."""
    steps = []
    for p in pairs if pairs is not None else load():
        for kind, suffix, flags, timed in p["regen"]:
            step = f"{p['name']}_{kind}{suffix}"
            cmd = (f"bazel run //{KIND_FOLDER[kind]}/{p['name']} --"
                   + (f" {flags}" if flags else "") + f" --json $PWD/results/{step}.json")
            steps.append((step, timed, cmd))
    return [s for s in steps if not s[1]] + [s for s in steps if s[1]]


def shared_gpu_flags(pairs=None):
    """The text of the bundle's shared_gpu_flags.txt."""
    lines = [SHARED_GPU_HEADER]
    for p in pairs if pairs is not None else load():
        for kind in ("repro", "fix"):
            flags, why = p["shared_gpu"].get(kind, ["", ""])
            if why:
                lines.append("\n".join("# " + w for w in wrap(why, 76)))
            binary = f"{KIND_FOLDER[kind]}/{p['name']}/{p['name']}"
            lines.append(binary + (f" {flags}" if flags else ""))
    return "\n".join(lines) + "\n"


def mps_isolated(pairs=None):
    """The pair lines of the bundle's mps_isolated.txt (pattern, why)."""
    out = []
    for p in pairs if pairs is not None else load():
        for kind in ("repro", "fix"):
            why = p["stalls_nccl"].get(kind)
            if why:
                out.append((f"{KIND_FOLDER[kind]}/{p['name']}/*", why))
    return out


def evidence(pairs=None):
    """run_all.sh's entries: name|script|versions|README|table id."""
    out = []
    for p in pairs if pairs is not None else load():
        for name, script, versions, readme_kind, table in p["evidence"]:
            folder, rest = script.split("/", 1)
            out.append(f"{name}|{folder}/{p['name']}/{rest}|{versions}|"
                       f"{readme_kind}/{p['name']}/README.md|{table}")
    return out


def count_word(pairs=None):
    n = len(pairs if pairs is not None else load())
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def wrap(text, width):
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return lines + ([line] if line else [])


def main(argv):
    what = argv[0] if argv else "--help"
    path = argv[1] if len(argv) > 1 else None
    cmds = {
        "names": lambda p: "\n".join(names(p)),
        "regen-steps": lambda p: "\n".join(f"{s}|{'timed' if t else '-'}|{c}"
                                           for s, t, c in regen_steps(p)),
        "shared-gpu-flags": lambda p: shared_gpu_flags(p).rstrip("\n"),
        "mps-isolated": lambda p: "\n".join(f"{pat:<44} {why}" for pat, why in mps_isolated(p)),
        "evidence": lambda p: "\n".join(evidence(p)),
        "count-word": count_word,
        "judging-readmes": lambda p: "\n".join(judging_readmes(p)),
        "json": lambda p: json.dumps(p, indent=1),
    }
    if what in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if what not in cmds:
        print(f"registry.py: unknown command {what!r} (allowed: {', '.join(cmds)}, --help)",
              file=sys.stderr)
        return 2
    try:
        print(cmds[what](load(path)))
    except (OSError, SyntaxError, ValueError, RegistryError) as e:
        print(f"registry.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
