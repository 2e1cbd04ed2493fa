#!/usr/bin/python3
"""Prints the Markdown table of small_batch_bn records (repro or fix JSON).

Usage: repro/small_batch_bn/gen_table.py results/small_batch_bn_{repro,fix}.json [more.json ...]
(one script for both kinds: the table follows the records' "kind")
Stdlib only. -1 in a record means "not applicable" and prints as "-".
"""
import json
import sys


def fmt(v, digits=3):
    if v is None or (isinstance(v, (int, float)) and v < 0):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def main(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows.extend(json.load(f))
    if not rows:
        return
    if rows[0]["kind"] == "repro":
        print("| variant | W | b/rank | accum | val acc | acc sd (pp) | acc half-range (pp) | rs err (mean / var) "
              "| rank spread L1 / L2 | reference | ref val acc | ref acc sd (pp) | ref rs err (mean / var) "
              "| ref rank spread L2 | verdict |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            m, ref, c = r["measured"], r["reference"], r["config"]
            print(f"| {r['variant']} | {r['world_size']} | {c['batch_per_rank']} | {c['accumulate']} "
                  f"| {fmt(m.get('val_acc'))} | {fmt(m.get('val_acc_sd_pp'), 2)} | {fmt(m.get('val_acc_half_range_pp'), 2)} "
                  f"| {fmt(m.get('rs_mean_err'))} / {fmt(m.get('rs_var_err'))} "
                  f"| {fmt(m.get('rank_spread1'))} / {fmt(m.get('rank_spread2'))} | {ref.get('what', '')} "
                  f"| {fmt(ref.get('val_acc'))} | {fmt(ref.get('val_acc_sd_pp'), 2)} "
                  f"| {fmt(ref.get('rs_mean_err'))} / {fmt(ref.get('rs_var_err'))} "
                  f"| {fmt(ref.get('rank_spread2'))} | {r['verdict']} |")
    else:
        print("| W | b/rank | norm | val acc | acc sd (pp) | acc half-range (pp) | rs err (mean / var) "
              "| rank spread L2 | vs one process (param / buffer rel err) | verdict |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        done = set()
        for r in rows:
            m, ref, c = r["measured"], r["reference"], r["config"]
            key = (r["world_size"], c["batch_per_rank"])
            if key not in done and "bn_val_acc" in ref:
                done.add(key)
                print(f"| {key[0]} | {key[1]} | bn (plain, for comparison) | {fmt(ref['bn_val_acc'])} "
                      f"| {fmt(ref['bn_val_acc_sd_pp'], 2)} | {fmt(ref['bn_val_acc_half_range_pp'], 2)} "
                      f"| {fmt(ref['bn_rs_mean_err'])} / {fmt(ref['bn_rs_var_err'])} "
                      f"| {fmt(ref['bn_rank_spread2'])} | | |")
            rs = f"{fmt(m.get('rs_mean_err'))} / {fmt(m.get('rs_var_err'))}"
            if "rs_mean_err_before_precise" in m:
                rs += (f" (before PreciseBN {fmt(m['rs_mean_err_before_precise'])} / "
                       f"{fmt(m['rs_var_err_before_precise'])})")
            exact = ""
            if "param_rel_err" in m:
                exact = f"{m['param_rel_err']:.2g} / {m['buffer_rel_err']:.2g}"
            print(f"| {key[0]} | {key[1]} | {r['variant']} | {fmt(m.get('val_acc'))} "
                  f"| {fmt(m.get('val_acc_sd_pp'), 2)} | {fmt(m.get('val_acc_half_range_pp'), 2)} | {rs} "
                  f"| {fmt(m.get('rank_spread2'))} | {exact} | {r['verdict']} |")


if __name__ == "__main__":
    main(sys.argv[1:])
