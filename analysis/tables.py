"""Tables in three forms: Markdown (short cells, no JSON arrays, lines kept
under MAX_LINE), CSV (every field of every record, one column per field
path) and LaTeX booktabs."""
import csv
import textwrap

from pick import num

MAX_LINE = 300


def cell(v, width=60):
    """A value as a short one-line cell: arrays of up to 8 scalars as
    "a/b/c", longer arrays and objects as "(N values)", long text cut."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return num(v)
    if isinstance(v, list):
        if len(v) <= 8 and all(not isinstance(x, (list, dict)) for x in v):
            return "/".join(cell(x, width) for x in v)
        return f"({len(v)} values)"
    if isinstance(v, dict):
        return f"({len(v)} fields)"
    text = str(v).replace("\n", " ")
    return text if len(text) <= width else text[:width - 3] + "..."


def flatten(d, prefix=""):
    """{"a": {"b": 1}} -> {"a.b": 1} (lists stay values)."""
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def csv_cell(v):
    """CSV keeps every number whole; arrays as space-separated values."""
    if isinstance(v, list):
        return " ".join(csv_cell(x) for x in v) if all(
            not isinstance(x, (list, dict)) for x in v) else cell(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else str(v)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def para(text):
    """A Markdown paragraph wrapped at 100 columns."""
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def markdown(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    return "\n".join(out)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
        "|": r"$|$", "±": r"$\pm$", "×": r"$\times$", "≤": r"$\le$", "≥": r"$\ge$", "→": r"$\to$"}


def tex(text):
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def latex(header, rows, caption, label, widths=None):
    """A booktabs table (needs \\usepackage{booktabs}); `widths` gives p{}
    columns for long text."""
    spec = "".join(f"p{{{w}}}" if w else "l" for w in (widths or [None] * len(header)))
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             rf"\caption{{{tex(caption)}}}", rf"\label{{{label}}}",
             rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(tex(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(tex(c) for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)
