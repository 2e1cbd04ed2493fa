"""small_batch_bn's README tables, moved from the pair's former gen_table.py
unchanged. Errors print in percent; -1 in a record means "not applicable"
("-").
  small_batch_bn          every repro record (error, reference, gap, secondary columns)
  small_batch_bn_figure1  the repro sweep: validation error against the per-rank
                          batch, one column per norm (the table behind figure1.png;
                          repro/small_batch_bn/plot_figure.py draws it)
  small_batch_bn_fix      the fix records: per setting, per fix the worst per-step error
  small_batch_bn_swing    the repro sweep: per row, each seed's largest epoch-to-epoch
                          rise of the validation error, the variant's and SyncBN's
  small_batch_bn_levers   the --levers rows (learning rate, optimizer, augmentation)
                          under the sweep's per_rank_bn row at the same batch
  small_batch_bn_bn_eval  the repro sweep's bn_eval rows (BN layers in eval mode while
                          training from epoch E): the swing from max(E, 1) on against
                          per_rank_bn's, seed by seed, and the final errors
"""


def fmt(v, digits=3):
    if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def pct(err, ci=None):
    if err is None:
        return "-"
    return f"{100 * err:.1f}" + ("" if ci is None else f" ± {100 * ci:.1f}")


def interval(gap, ci):
    return f"{100 * gap:+.1f} [{100 * (gap - ci):+.1f}, {100 * (gap + ci):+.1f}]"


def repro_all(rows):
    out = ["| variant | task | protocol | b/rank | accum | val error % (± 95%) | reference | ref val error % "
           "| gap pp [95% interval] | train error % (mine / ref) | rank spread L1 / L2 | rs err (mean / var) "
           "| seeds | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, ref, c = r["measured"], r["reference"], r["config"]
        if "val_error" not in m:
            out.append(f"| {r['variant']} | {c.get('task')} | | {c.get('batch_per_rank')} | | | | | | | | | "
                       f"| {r['verdict']}: {r.get('error', '')} |")
            continue
        ref_what = ref.get("what", "")
        if ref.get("computed_by") == "one_process":
            ref_what += " (one process)"
        out.append(
            f"| {r['variant']} | {c['task']} | {c.get('protocol', '')} | {c['batch_per_rank']} | {c['accumulate']} "
            f"| {pct(m['val_error'], m['val_error_ci95'])} | {ref_what} "
            f"| {pct(ref['val_error'], ref['val_error_ci95'])} "
            f"| {interval(m['val_error_gap'], m['val_error_gap_ci95'])} "
            f"| {pct(m['train_error'])} / {pct(ref['train_error'])} "
            f"| {fmt(m.get('rank_spread1'))} / {fmt(m.get('rank_spread2'))} "
            f"| {fmt(m.get('rs_mean_err'))} / {fmt(m.get('rs_var_err'))} | {m['seeds']} | {r['verdict']} |")
    return out


def figure1_series(rows):
    """{batch: {norm: (err, ci)}} from the digits rows of the current protocol."""
    by_b = {}
    for r in rows:
        c, m, ref = r["config"], r["measured"], r["reference"]
        if (c.get("task") != "digits" or c.get("accumulate") != 1 or "val_error" not in m
                or r["variant"] not in ("per_rank_bn", "group_norm", "precise_bn")):
            continue  # bn_eval (seed 003's debug step) is not a norm of the figure
        d = by_b.setdefault(c["batch_per_rank"], {})
        name = {"per_rank_bn": "per-rank BN", "group_norm": "GroupNorm", "precise_bn": "PreciseBN"}[r["variant"]]
        d[name] = (m["val_error"], m["val_error_ci95"])
        d["SyncBN"] = (ref["val_error"], ref["val_error_ci95"])
        if r["variant"] == "per_rank_bn":
            d["gap"] = (m["val_error_gap"], m["val_error_gap_ci95"])
            d["global"] = c["global_batch"]
            d["seeds"] = m["seeds"]
    return dict(sorted(by_b.items()))


def repro_figure1(rows):
    out = ["| per-rank batch | global batch | per-rank BN | SyncBN | GroupNorm | PreciseBN "
           "| per-rank BN − SyncBN, pp [95% interval] | seeds |",
           "|---|---|---|---|---|---|---|---|"]
    for b, d in figure1_series(rows).items():
        cells = [pct(*d[k]) if k in d else "-" for k in ("per-rank BN", "SyncBN", "GroupNorm", "PreciseBN")]
        gap = interval(*d["gap"]) if "gap" in d else "-"
        out.append(f"| {b} | {d.get('global', '')} | " + " | ".join(cells) + f" | {gap} | {d.get('seeds', '')} |")
    return out


def fix_all(rows):
    """One row per setting; per fix the worst per-step error and the verdict.
    A tracker case (config.source) is its own row, its source beside its
    batches (and PreciseBN's per-rank batch counts where they differ)."""
    settings = {}
    for r in rows:
        key = (tuple(r["config"]["batches"]), r["config"].get("source", ""))
        settings.setdefault(key, {})[r["variant"]] = r
    out = ["| W | per-rank batches | sync_bn: worst rel err (grad / param / running stats) | collectives per step "
           "| trajectory_rel_err (info) | group_norm: worst rel err (grad / param) | trajectory_rel_err (info) "
           "| precise_bn: worst rel err of the statistics | rs err shrink (info) | steps | verdicts |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]

    def g(r, k, digits=2):
        v = r["measured"].get(k) if r else None
        return "-" if v is None else f"{v:.{digits}g}"

    for (batches, source), d in settings.items():
        s, gn, pb = d.get("sync_bn"), d.get("group_norm"), d.get("precise_bn")
        label = ",".join(map(str, batches))
        counts = pb["config"].get("precise_batches") if pb else None
        if isinstance(counts, list):
            label += f"; PreciseBN batches {','.join(map(str, counts))}"
        if source:
            label += f" ({source})"
        verdicts = ", ".join(f"{v}: {d[v]['verdict']}" for v in ("sync_bn", "group_norm", "precise_bn") if v in d)
        if all(d[v]["verdict"] == "exact" for v in d):
            verdicts = "all exact"
        steps = next(iter(d.values()))["config"]["steps"]
        out.append(
            f"| {len(batches)} | {label} "
            f"| {g(s, 'grad_rel_err')} / {g(s, 'param_rel_err')} / {g(s, 'running_stats_rel_err')} "
            f"| {g(s, 'collectives_per_step', 3)} | {g(s, 'trajectory_rel_err')} "
            f"| {g(gn, 'grad_rel_err')} / {g(gn, 'param_rel_err')} | {g(gn, 'trajectory_rel_err')} "
            f"| {g(pb, 'precise_running_stats_rel_err')} | {g(pb, 'rs_err_shrink')} | {steps} | {verdicts} |")
    return out


def rises(side):
    """'2.2, 8.0 (mean 4.0)': each seed's largest rise, in pp, and their mean."""
    r = side.get("val_error_max_rises")
    if not r:
        return "-"
    return ", ".join(f"{100 * x:.1f}" for x in r) + f" (mean {100 * side['val_error_mean_max_rise']:.1f})"


def repro_swing(rows):
    out = ["| variant | task | protocol | b/rank | accum | epochs | largest rise per seed, pp (variant) "
           "| the same for its reference | reference | mean ratio variant / reference |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, ref, c = r["measured"], r["reference"], r["config"]
        if "val_error_max_rises" not in m:
            continue
        ratio = (m["val_error_mean_max_rise"] / ref["val_error_mean_max_rise"]
                 if ref.get("val_error_mean_max_rise") else None)
        out.append(f"| {r['variant']} | {c['task']} | {c.get('protocol', '')} | {c['batch_per_rank']} "
                   f"| {c['accumulate']} | {c.get('epochs', '')} | {rises(m)} | {rises(ref)} | {ref.get('what', '')} "
                   f"| {'-' if ratio is None else f'{ratio:.2f}'} |")
    return out


def repro_bn_eval(rows):
    out = ["| BN in eval mode from epoch | b/rank | largest rise per seed from that epoch on, pp: bn_eval "
           "| per_rank_bn | per_rank_bn − bn_eval, pp [95% interval] | final val error %: bn_eval "
           "| per_rank_bn | SyncBN | bn_eval − per_rank_bn, pp [95% interval] | seeds | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, ref, c = r["measured"], r["reference"], r["config"]
        if r["variant"] != "bn_eval" or "swing_cut" not in m:
            continue

        def seeds(key):
            return ", ".join(f"{100 * x:.1f}" for x in m[key])
        out.append(f"| {c['bn_eval_from_epoch']} (rises from {m['swing_from_epoch']}) | {c['batch_per_rank']} "
                   f"| {seeds('val_error_max_rises_from')} | {seeds('per_rank_bn_max_rises_from')} "
                   f"| {interval(m['swing_cut'], m['swing_cut_ci95'])} "
                   f"| {pct(m['val_error'], m['val_error_ci95'])} | {pct(m['per_rank_bn_val_error'])} "
                   f"| {pct(ref['val_error'], ref['val_error_ci95'])} "
                   f"| {interval(m['val_error_minus_per_rank_bn'], m['val_error_minus_per_rank_bn_ci95'])} "
                   f"| {m['seeds']} | {r['verdict']} |")
    return out


def repro_levers(rows):
    """The lever rows (--levers), under the sweep's per_rank_bn row at the
    same per-rank batch (no lever) for comparison."""
    levers = [r for r in rows if r["variant"] == "lever"]
    batches = {r["config"]["batch_per_rank"] for r in levers}
    base = [r for r in rows if r["variant"] == "per_rank_bn" and r["config"].get("task") == "digits"
            and r["config"].get("accumulate") == 1 and r["config"]["batch_per_rank"] in batches]
    out = ["| lever | b/rank | peak lr | optimizer | training noise | per-rank BN val error % | SyncBN val error % "
           "| gap pp [95% interval] | train error % (per-rank BN / SyncBN) | seeds | verdict |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in base + levers:
        m, ref, c = r["measured"], r["reference"], r["config"]
        if "val_error" not in m:
            out.append(f"| {c.get('lever', 'none')} | {c['batch_per_rank']} | | | | | | | | | "
                       f"{r['verdict']}: {r.get('error', '')} |")
            continue
        noise = "drawn once" if c.get("fresh_noise") is False else "fresh every epoch"
        lever = c.get("lever", "none (the sweep's per_rank_bn row)")
        # Records without "optimizer" (the sweep's, older levers) trained with SGD.
        opt = ("Adam (betas 0.9, 0.999)" if c.get("optimizer") == "adam"
               else f"SGD, momentum {c.get('momentum', 0.9):g}")
        out.append(f"| {lever} | {c['batch_per_rank']} "
                   f"| {c['peak_lr']:g} | {opt} | {noise} "
                   f"| {pct(m['val_error'], m['val_error_ci95'])} | {pct(ref['val_error'], ref['val_error_ci95'])} "
                   f"| {interval(m['val_error_gap'], m['val_error_gap_ci95'])} "
                   f"| {pct(m['train_error'])} / {pct(ref['train_error'])} | {m['seeds']} | {r['verdict']} |")
    return out


RENDERERS = {
    "small_batch_bn": lambda rows: "\n".join(repro_all(rows)),
    "small_batch_bn_figure1": lambda rows: "\n".join(repro_figure1(rows)),
    "small_batch_bn_fix": lambda rows: "\n".join(fix_all(rows)),
    "small_batch_bn_swing": lambda rows: "\n".join(repro_swing(rows)),
    "small_batch_bn_bn_eval": lambda rows: "\n".join(repro_bn_eval(rows)),
    "small_batch_bn_levers": lambda rows: "\n".join(repro_levers(rows)),
}
