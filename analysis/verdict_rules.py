"""The verdict rules of the claims ledger (claims.json "_doc" states them;
//analysis:verdict_rules_test enforces them on the committed claims and
shows each rule failing on the ledger as it stood before them).

  quote      every claim of a post quotes it: "quote" holds the post's own
             words, segments joined by " … ", each found verbatim in the
             seed (runs of whitespace count as one space); a result the
             posts do not state lives in "suite_results", counted apart
  refuted    only where the claim's own setting ran: "setting" names the
             post's engine, W, trigger and PyTorch API; a refuted verdict
             (top level or per version) carries "ran" {trigger, api,
             can_produce}, and the engines and world sizes of its records
             must include the setting's (read from the records, never
             typed); otherwise "not reproduced here" or "not tested"
  coverage   a measured selection that narrows on a config.* value the
             claim does not restrict ("scope_config") is widened: a
             configuration outside it whose records fail the check is a
             counter-example, and the verdict must then be "partly" and
             name it in "counter_examples"
  strength   no top level stronger than its evidence: where every
             per-version verdict is weaker, a judged-from-code outcome may
             not be stronger than the strongest, and a measured verdict
             must say what carries it ("basis")
  computed   (issue 71) every verdict is its check's output
             (analysis/computed.py): a typed top-level or per-version
             verdict that differs from the computed one fails, words no
             check tests ("untested_words") cap it at partly, and a time or
             spread check without repeated runs, recorded load and an
             interval excluding no difference is "not resolved here"
  shown_by   a per-version text is rendered from its record by the checks'
             templates: no typed "shown_by", and no number in a template or
             a not-tested reason outside the fills
  ids        every claim and suite result has a stable id "<bug>/<slug>",
             unique; claim_refs.py holds references to them; no claim
             points at another by its place in the ledger ("next row",
             "the row above"): claim:<id>
  words      (issue 71 item 5) every measured or judged-from-code claim
             declares "tested_words" and "untested_words" (an explicit []
             when none): phrases copied verbatim from its own claim text.
             Together they cover the claim: every word of it (a run of
             letters, digits or '_'; the punctuation between phrases
             aside) lies inside a phrase of one list and not of both;
             at least one phrase is tested (else the claim is not
             tested), and untested ones carry "untested_why". Untested
             words cap the verdict (or a judged-from-code outcome) at
             partly, so confirmed or refuted with untested words fails
  code       a judged-from-code claim's outcome is what its declarations
             give (computed.code_outcome: "shows", capped by untested
             words), and "code_at" names where the code read lives, each
             "PATH" or "PATH :: TEXT" (TEXT found in it, whitespace
             runs as one space): a repository path, "torch/..." in an
             installed PyTorch (checked where one is at hand, said when
             not: unchecked_code), "seed NNN" for a post, or
             "github:OWNER/REPO/PATH" (not at hand here: said)
"""
import json
import os
import re

import glob

import claim_refs
import computed
from ledger import CHECKED, FROM_CODE, OPS, read_named, subfolder_files
from pick import Summary, get, is_number, select

STRONG = {"confirmed": 2, "refuted": 2, "partly": 1, "not reproduced here": 0, "not tested": 0}
VERSION_TOKENS = {"1.13", "2.15"}


def normalise(text):
    return re.sub(r"\s+", " ", text).strip()


def quote_problems(claim, seeds):
    """Why a claim's quote is not its post's own words ([] when it is).
    seeds: {seed number: the seed's text}, or None when not at hand."""
    q = claim.get("quote")
    if not isinstance(q, str) or not q.strip():
        return ["no 'quote': the post's own words (a sentence or a code line, verbatim)"]
    if seeds is None:
        return []
    text = seeds.get(claim.get("seed"))
    if text is None:
        return [f"seed {claim.get('seed')!r} is not among the seeds"]
    hay = normalise(text)
    return [f"quote segment not in seed {claim['seed']}: {seg[:60]!r}"
            for seg in (normalise(s) for s in q.split(" … ")) if seg and seg not in hay]


def record_scope(recs):
    """(engines, world sizes) the records ran: suite records carry backend
    and world_size; PyTorch's carry provenance.backend and cases' world_size."""
    engines, worlds = set(), set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("world_size", "world_sizes", "worlds"):
                    for w in (x if isinstance(x, list) else [x]):
                        if isinstance(w, int) and not isinstance(w, bool):
                            worlds.add(w)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for r in recs:
        for key in ("backend", "provenance.backend"):
            if isinstance(get(r, key), str):
                engines.add(get(r, key))
        walk(r)
    return engines, worlds


def setting_problems(where, setting, ran, recs, per_version):
    """Why a refuted verdict does not stand on the claim's own setting."""
    if not isinstance(setting, dict):
        return [f"{where}: refuted without 'setting' (the post's engine, W, trigger, API)"]
    out = []
    if not isinstance(ran, dict):
        return [f"{where}: refuted without 'ran' (trigger, api, can_produce)"]
    engines, worlds = record_scope(recs)
    worlds |= set(ran.get("world_size", []) if isinstance(ran.get("world_size"), list) else [])
    engine = setting.get("engine")
    if engine != "any" and engine not in engines:
        out.append(f"{where}: refuted, but the post's engine {engine} did not run "
                   f"(records: {', '.join(sorted(engines)) or 'none named'})")
    if engine == "any" and not setting.get("engine_why"):
        out.append(f"{where}: setting engine 'any' needs 'engine_why'")
    want = setting.get("world_size")
    if want == "any" and not setting.get("world_size_why"):
        out.append(f"{where}: setting world_size 'any' needs 'world_size_why'")
    if want != "any" and not set(want or []) <= worlds:
        out.append(f"{where}: refuted, but the post's W {want} did not run "
                   f"(records: {sorted(worlds) or 'none named'})")
    if ran.get("trigger") is not True:
        out.append(f"{where}: refuted, but the post's trigger did not run")
    if ran.get("can_produce") is not True:
        out.append(f"{where}: refuted, but what ran could not have produced the claimed effect")
    api = str(ran.get("api", ""))
    if per_version and api != "pytorch":
        out.append(f"{where}: a per-version refutation runs PyTorch's API ('api': 'pytorch')")
    if not per_version and not api.startswith("suite: "):
        out.append(f"{where}: refuted on the suite's records needs 'api': 'suite: <why it "
                   "behaves as the post's PyTorch API>'")
    return out


def counter_examples(claim, recs):
    """[(key, value)] of configurations the selection narrows away whose own
    records fail the claim's check."""
    sel = claim.get("select") or {}
    op, bound = (claim.get("check") or [None, None])[:2]
    if op is None:
        return []
    metrics = claim["metric"] if isinstance(claim["metric"], list) else [claim["metric"]]
    scoped = claim.get("scope_config", {})
    out = []
    for key, want in sel.items():
        if not key.startswith("config.") or key in scoped:
            continue
        kept = want if isinstance(want, list) else [want]
        rest = {k: v for k, v in sel.items() if k != key and k != "verdict"}
        others = {json.dumps(get(r, key)) for _, r in select(recs, rest)} - {json.dumps(k) for k in kept}
        for other in sorted(others):
            group = select(recs, dict(rest, **{key: json.loads(other)}))
            for m in metrics:
                s = Summary(group, m)
                if s and s.nums:
                    if not OPS[op](s.agg(claim.get("agg", "max")), bound):
                        out.append((key, json.loads(other)))
                    break
    return out


def strength_problems(where, claim):
    pv = claim.get("pytorch")
    if not isinstance(pv, dict) or not pv:
        return []
    best = max(STRONG.get(v.get("verdict"), 0) for v in pv.values() if isinstance(v, dict))
    v = claim["verdict"]
    if v == "judged from code":
        if STRONG[claim.get("outcome", "not tested")] > best:
            return [f"{where}: judged from code with outcome {claim.get('outcome')!r}, stronger "
                    "than every per-version verdict"]
    elif STRONG.get(v, 0) > best and not claim.get("basis"):
        return [f"{where}: {v} while every per-version verdict is weaker: 'basis' must say "
                "what carries it"]
    return []


NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)*)(?![\w])")


def numbers_in(text):
    """The numbers a sentence states (versions and file names left out)."""
    text = re.sub(r"\S+\.(json|py|md)\b", " ", text)
    out = []
    for tok in NUMBER.findall(text):
        if tok in VERSION_TOKENS or tok.count(".") > 1:
            continue
        out.append(tok)
    return out


def record_numbers(doc):
    """Every number a record holds: its values, inside strings too, and the
    lengths of its lists (a count such as '8 of 8')."""
    nums = []

    def walk(v):
        if isinstance(v, bool):
            return
        if is_number(v):
            nums.append(float(v))
        elif isinstance(v, str):
            nums.extend(float(t) for t in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", v))
        elif isinstance(v, dict):
            nums.append(float(len(v)))
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            nums.append(float(len(v)))
            for x in v:
                walk(x)
    walk(doc)
    return nums


def found(tok, nums):
    digits = len(tok.split(".")[1]) if "." in tok else 0
    x = float(tok)
    for v in nums:
        for s in (v, -v, v * 100):
            if round(s, digits) == x or (digits == 0 and abs(s - x) < 0.5 and s == int(s)):
                return True
    return False


def shown_by_problems(where, claim, root):
    """Typed per-version texts, and numbers typed into a template or a
    not-tested reason (a number may come only from a template's fill)."""
    out = []
    for version, entry in (claim.get("pytorch") or {}).items():
        if not isinstance(entry, dict):
            continue
        if "shown_by" in entry:
            out.append(f"{where}: {version}: a typed 'shown_by': it is rendered from the record "
                       "by the checks' 'says' templates")
        for spec in entry.get("checks", []):
            typed = computed.literal_numbers(spec.get("says", ""))
            if typed:
                out.append(f"{where}: {version}: template states {', '.join(typed)} outside its fills")
        typed = numbers_in(entry.get("reason", ""))
        if typed:
            out.append(f"{where}: {version}: reason states {', '.join(typed)}: not tested, no number")
    return out


def computed_problems(where, claim, recs, named, root, counter):
    """A typed verdict that is not what its checks give on the records."""
    out = []
    top = computed.top_verdict(claim, recs, named, counter)
    if top is not None and top != claim.get("verdict"):
        out.append(f"{where}: verdict {claim.get('verdict')!r}, but its check gives {top!r}")
    if claim.get("untested_words") and claim.get("verdict") in ("confirmed", "refuted"):
        out.append(f"{where}: {claim['verdict']} with untested words: at most partly")
    if claim.get("untested_words") and claim.get("verdict") == FROM_CODE and \
            claim.get("outcome") in ("confirmed", "refuted"):
        out.append(f"{where}: outcome {claim['outcome']} with untested words: at most partly")
    for version, entry in (claim.get("pytorch") or {}).items():
        if not isinstance(entry, dict):
            continue
        rec = per_version_records(entry, root)
        if entry.get("record") and not rec:
            out.append(f"{where}: {version}: cannot read {entry['record']}")
            continue
        got, _ = computed.version_verdict(claim, entry, rec[0] if rec else None)
        if got != entry.get("verdict"):
            out.append(f"{where}: {version}: verdict {entry.get('verdict')!r}, but its checks give "
                       f"{got!r}")
        if entry.get("verdict") != "not tested" and not entry.get("checks"):
            out.append(f"{where}: {version}: {entry.get('verdict')} without checks")
    return out


WORD = re.compile(r"\w+")
ROW_POSITIONAL = re.compile(r"(?i)\b(?:next|previous|last|first|following) rows?\b|\brows? (?:above|below)\b")


def phrase_spans(text, phrases):
    """[(start, end)] of every occurrence of each phrase in text."""
    out = []
    for p in phrases:
        i = text.find(p) if p else -1
        while i >= 0:
            out.append((i, i + len(p)))
            i = text.find(p, i + 1)
    return out


def word_problems(where, claim, need):
    """Why a claim's tested and untested words do not cover its claim
    text (need: a measured or judged-from-code claim, which must declare
    both lists)."""
    text = claim.get("claim", "")
    lists = {k: claim.get(k) for k in ("tested_words", "untested_words")}
    out = []
    for key, phrases in lists.items():
        if phrases is None:
            if need:
                out.append(f"{where}: no '{key}' (verbatim phrases of the claim; [] when none)")
            continue
        if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
            out.append(f"{where}: '{key}' must be a list of phrases of the claim")
            lists[key] = []
            continue
        for p in phrases:
            if p not in text:
                out.append(f"{where}: {key} phrase {p[:60]!r} is not in the claim's words")
    if not need and not any(lists.values()):
        return out
    tested, untested = (phrase_spans(text, [p for p in lists[k] or [] if isinstance(p, str)])
                        for k in ("tested_words", "untested_words"))
    runs, both, run = [], [], []
    for m in WORD.finditer(text):  # runs of consecutive uncovered words
        inside = [any(a <= m.start() and m.end() <= b for a, b in spans) for spans in (tested, untested)]
        if not any(inside):
            run.append(m)
            continue
        if all(inside):
            both.append(m.group(0))
        if run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    for r in runs:
        out.append(f"{where}: {text[r[0].start():r[-1].end()]!r} is in neither tested_words nor "
                   "untested_words")
    if both:
        out.append(f"{where}: tested and untested at once: {', '.join(dict.fromkeys(both))}")
    if need and not lists["tested_words"]:
        out.append(f"{where}: no tested words: a claim whose check tests none of its words is "
                   "'not tested'")
    if lists["untested_words"] and not claim.get("untested_why"):
        out.append(f"{where}: untested words without 'untested_why' (why no check tests them)")
    return out


def torch_roots(root):
    """Installed PyTorch package folders at hand: $DDP_PITFALLS_TORCH
    (':'-separated), Debian's 1.13, the checkout's 2.15 venv."""
    cands = [p for p in os.environ.get("DDP_PITFALLS_TORCH", "").split(":") if p]
    cands += ["/usr/lib/python3/dist-packages/torch"]
    cands += sorted(glob.glob(os.path.join(root, ".venv-torch*", "lib", "python3*", "site-packages", "torch")))
    return [p for p in dict.fromkeys(cands) if os.path.isdir(p)]


def code_places(claim, root, seeds, torches):
    """[(entry, problem or None, checked: bool)] for each of code_at."""
    out = []
    for entry in claim.get("code_at") or []:
        path, _, want = (str(entry).partition(" :: "))
        path, want = path.strip(), normalise(want)
        if path.startswith("github:"):
            out.append((entry, None, False))
            continue
        m = re.match(r"^seed (\d{3})$", path)
        if m:
            if seeds is None:
                out.append((entry, None, False))
                continue
            texts = [seeds.get(m.group(1))]
            if texts[0] is None:
                out.append((entry, f"seed {m.group(1)} is not among the seeds", True))
                continue
        elif path.startswith("torch/"):
            if not torches:
                out.append((entry, None, False))
                continue
            texts = []
            for t in torches:
                f = os.path.join(os.path.dirname(t), path)
                if not os.path.isfile(f):
                    out.append((entry, f"{path} is not in the PyTorch at {t}", True))
                    break
                with open(f, encoding="utf-8", errors="replace") as fh:
                    texts.append(fh.read())
            else:
                pass
            if len(texts) != len(torches):
                continue
        else:
            f = os.path.join(root, path)
            if not os.path.isfile(f):
                out.append((entry, f"{path} is not in the repository", True))
                continue
            with open(f, encoding="utf-8", errors="replace") as fh:
                texts = [fh.read()]
        missing = [t for t in texts if want and want not in normalise(t)]
        out.append((entry, f"{path} does not hold {want[:60]!r}" if missing else None, True))
    return out


def code_problems(where, claim, root, seeds):
    """A judged-from-code claim whose outcome its declarations do not
    give, or whose code_at names nothing that is there."""
    if claim.get("verdict") != FROM_CODE:
        return []
    out = []
    got = computed.code_outcome(claim)
    if claim.get("outcome") != got:
        out.append(f"{where}: outcome {claim.get('outcome')!r}, but its declarations give {got!r} "
                   "('shows', capped at partly by untested words)")
    if not claim.get("code_at"):
        out.append(f"{where}: judged from code without 'code_at' (where the code read lives)")
    out += [f"{where}: code_at: {p}" for _, p, _ in code_places(claim, root, seeds, torch_roots(root)) if p]
    return out


def unchecked_code(doc, root, seeds):
    """The code_at entries that could not be checked here (no PyTorch, no
    seeds, or another repository), to be said."""
    return [(c.get("id"), e) for c in doc.get("claims", [])
            for e, _, checked in code_places(c, root, seeds, torch_roots(root)) if not checked]


def row_references(where, claim):
    """A claim pointing at another by its place in the ledger."""
    hits = []

    def walk(v):
        if isinstance(v, str):
            hits.extend(m.group(0) for m in ROW_POSITIONAL.finditer(v))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(claim)
    return [f"{where}: positional reference {h!r} (use claim:<id>)" for h in dict.fromkeys(hits)]


def per_version_records(entry, root):
    try:
        with open(os.path.join(root, entry["record"])) as f:
            return [json.load(f)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def claim_problems(i, claim, recs, named, root, seeds):
    where = f"claim:{claim.get('id', i)} ({claim.get('claim', '?')[:60]!r})"
    out = [f"{where}: {p}" for p in quote_problems(claim, seeds)]
    v = claim.get("verdict")
    if v == "refuted":
        out += setting_problems(where, claim.get("setting"), claim.get("ran"),
                                [r for _, r in pool(claim, recs, named)], per_version=False)
    for version, entry in (claim.get("pytorch") or {}).items():
        if isinstance(entry, dict) and entry.get("verdict") == "refuted":
            out += setting_problems(f"{where}: {version}", claim.get("setting"), entry.get("ran"),
                                    per_version_records(entry, root), per_version=True)
    found_ce = []
    if v in ("confirmed", "refuted", "partly") and claim.get("select"):
        found_ce = counter_examples(claim, pool(claim, recs, named, selected=False))
        if found_ce and v != "partly":
            out.append(f"{where}: {v}, but the suite's own records hold counter-examples outside "
                       f"its selection: {found_ce} (the verdict is then 'partly', named in "
                       "'counter_examples')")
        for key, val in found_ce:
            if str(val) not in str(claim.get("counter_examples", "")):
                out.append(f"{where}: counter-example {key} = {val} not named in 'counter_examples'")
    out += strength_problems(where, claim)
    out += shown_by_problems(where, claim, root)
    out += computed_problems(where, claim, recs, named, root, found_ce)
    out += word_problems(where, claim, need=v in CHECKED + (FROM_CODE,))
    out += code_problems(where, claim, root, seeds)
    out += row_references(where, claim)
    return out


def pool(claim, recs, named, selected=True):
    """The records a claim's selection reads (a GPU run's files it names, or
    the tables' records); selected=False: the whole pool it picks from."""
    src = named if subfolder_files(claim.get("select")) else recs
    return select(src, claim["select"]) if selected and claim.get("select") else src


def problems(doc, recs, root, seeds, named=()):
    """Every rule a claims document breaks: recs are (path, record) of the
    results folder's tables, named those of GPU-run files claims name, root
    the repository (per-version record paths are relative to it), seeds
    {seed: text} or None."""
    out = claim_refs.id_problems(doc)
    for i, c in enumerate(doc.get("claims", [])):
        out += claim_problems(i, c, recs, named, root, seeds)
    for i, r in enumerate(doc.get("suite_results", [])):
        where = f"claim:{r.get('id', i)} ({r.get('claim', '?')[:60]!r})"
        out += computed_problems(where, r, recs, named, root, ())
        out += word_problems(where, r, need=r.get("verdict") in CHECKED)
        out += row_references(where, r)
        if r.get("quote"):
            out.append(f"suite result {i}: a result that quotes a post belongs in 'claims'")
    return out


def read_list(path):
    """A result file's records (a list), or none for any other JSON."""
    with open(path) as f:
        d = json.load(f)
    return d if isinstance(d, list) else []


def file_problems(path, recs, root, seeds, results_dir):
    """(document, problems) of the claims file at path: recs the tables'
    records, the GPU-run files its claims name read from results_dir."""
    with open(path) as f:
        doc = json.load(f)
    named, _ = read_named(doc["claims"] + doc.get("suite_results", []), results_dir, read_list)
    return doc, problems(doc, recs, root, seeds, named)


def load_seeds(folder):
    """{seed number: text} from a folder of NNN_*.txt, or None if absent."""
    if not folder or not os.path.isdir(folder):
        return None
    out = {}
    for name in sorted(os.listdir(folder)):
        m = re.match(r"^(\d{3})_.*\.txt$", name)
        if m:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out[m.group(1)] = f.read()
    return out or None
