"""missing_set_epoch's README tables (repro and fix records): one row per
record, moved from the pair's former gen_table.py unchanged."""


def fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "%.4g" % v
    return str(v)


def cells(r):
    m, ref, c = r["measured"], r["reference"], r["config"]
    v = r["variant"]
    config = "N=%s, %s epochs x %s seeds" % (c["n"], c["epochs"], c.get("seeds"))
    if v == "no_set_epoch":
        meas = "identical positions (min) %s; epochs equal to epoch 0: %s/%s; coverage %s" % (
            fmt(m["identical_min"]), fmt(m["same_as_epoch0"]), fmt(m["epochs"]),
            fmt(m["coverage_min"]))
        refc = "identical 1.0; padding %s" % ref["padding_duplicates"]
    elif v == "per_rank_seed":
        meas = "coverage %s (min %s, max %s); duplicates %s, missed %s per epoch" % (
            fmt(m["coverage_mean"]), fmt(m["coverage_min"]), fmt(m["coverage_max"]),
            fmt(m["duplicates_mean"]), fmt(m["missed_mean"]))
        refc = "E[coverage] %s (closed form %s) +- %s" % (
            fmt(ref["expected_coverage"]), fmt(ref["closed_form"]), fmt(ref["tolerance"]))
    elif v == "no_set_epoch_training":
        config += ", batch %s" % c["batch_size"]
        meas = ("final test acc %s (diff %+.4f +- %.4f), test loss %s (diff %+.4f +- %.4f)" % (
            fmt(m["final_test_accuracy"]), m["final_accuracy_diff"], m["final_accuracy_diff_se"],
            fmt(m["final_test_loss"]), m["final_loss_diff"], m["final_loss_diff_se"]))
        refc = "with set_epoch: acc %s, loss %s" % (
            fmt(ref["final_test_accuracy"]), fmt(ref["final_test_loss"]))
    elif c.get("experiment") == "training":  # set_epoch (fix), trained
        config = "N=%s, %s epochs, batch %s, %s" % (c["n"], c["epochs"], c["batch_size"],
                                                    c["norm"].replace("_", " "))
        sc = m["step_check"]
        meas = ("%s steps on %s ranks, per step (worst): grad %s, param %s, momentum %s%s; "
                "final distance %s" % (
                    fmt(m["steps"]), fmt(m["ranks_checked"]), fmt(sc["rel_err"]["grad"]),
                    fmt(sc["rel_err"]["param"]), fmt(sc["rel_err"]["momentum"]),
                    (", running stats %s" % fmt(sc["rel_err"]["buffers"]))
                    if "buffers" in sc["rel_err"] else "", fmt(m["trajectory_rel_err"])))
        refc = "one-process step from the same state, %s steps; tol %s" % (
            fmt(ref["steps"]), fmt(ref["tolerance"]))
        v = "set_epoch (training)"
    else:  # set_epoch (fix)
        meas = ("coverage %s; duplicates %s; identical positions (max) %s; "
                "one-process order in %s/%s epochs" % (
                    fmt(m["coverage_min"]), fmt(m["duplicates_max"]), fmt(m["identical_max"]),
                    fmt(m["matches_one_process"]), fmt(m["epochs"])))
        refc = "coverage 1; duplicates = padding %s" % fmt(ref["padding_duplicates"])
    return [r["kind"], v, str(r["world_size"]), config, refc, meas, r["verdict"]]


def table(records):
    out = ["| kind | variant | W | config | reference | measured | verdict |", "|---|---|---|---|---|---|---|"]
    for r in records:
        if r["verdict"] == "error":
            out.append("| %s | %s | %s | | | error: %s | error |" % (
                r["kind"], r["variant"], r["world_size"],
                r.get("error", "").splitlines()[0] if r.get("error") else ""))
            continue
        out.append("| " + " | ".join(cells(r)) + " |")
    return "\n".join(out)


RENDERERS = {"missing_set_epoch": table}
