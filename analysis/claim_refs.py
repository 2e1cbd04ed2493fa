"""References to claims by their stable ids (issue 71): "claim:<bug>/<slug>"
names a claim or suite result of analysis/claims.json; a positional "claim
N" / "claims N and M" is refused, since positions change when claims are
added or reordered. scan() walks the checkout's text files; results/ holds
committed records, which are never edited, so it is left out (and so is
rules_testdata/, the ledger as it stood, kept for the tests)."""
import os
import re

ID = re.compile(r"^[a-z_]+/[a-z0-9]+(?:-[a-z0-9]+)*$")
REF = re.compile(r"claim:([a-z_]+/[a-z0-9]+(?:-[a-z0-9]+)*)")
POSITIONAL = re.compile(r"(?i)\bclaims?\s+#?\d+\b")
SKIP_DIRS = {".git", "results", "rules_testdata", "third_party", "node_modules", "__pycache__"}
TEXT = (".md", ".py", ".sh", ".cc", ".h", ".bzl", ".txt", ".cff", ".yml", ".yaml", ".tex")


def problems_in(text, ids, where):
    out = [f"{where}: 'claim:{m.group(1)}' names no claim" for m in REF.finditer(text)
           if m.group(1) not in ids]
    out += [f"{where}: positional reference {m.group(0)!r} (use claim:<id>)"
            for m in POSITIONAL.finditer(text)]
    return out


def scan(root, ids):
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("bazel-")
                   and not d.startswith(".venv")]
        for name in files:
            if not (name.endswith(TEXT) or name in ("BUILD", "WORKSPACE", "run")):
                continue
            path = os.path.join(base, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            out += problems_in(text, ids, os.path.relpath(path, root))
    return out


def id_problems(doc):
    out, seen = [], set()
    for c in doc.get("claims", []) + doc.get("suite_results", []):
        i = c.get("id")
        if not isinstance(i, str) or not ID.match(i) or i.split("/")[0] != c.get("bug"):
            out.append(f"{c.get('claim', '?')[:60]!r}: no id '<bug>/<slug>' (got {i!r})")
        elif i in seen:
            out.append(f"id {i} given twice")
        seen.add(i)
    return out
