"""drop_last_hang's README tables (repro and fix records): one row per
record, moved from the pair's former gen_table.py unchanged."""


def steps(v):
    return "[" + ",".join(str(x) for x in v) + "]"


def cells(r):
    m, ref, c = r["measured"], r["reference"], r["config"]
    config = "%s, N=%s, B=%s" % (c["sharding"], c["n"], c["batch_size"])
    if r["kind"] == "repro":
        config += ", deadline %gs" % c["collective_deadline_s"]
        if c.get("early_ranks") == "exit":
            config += ", early ranks exit"
        if c["collective_deadline_s"] >= 3600:
            config += " (none), launcher timeout %gs" % c["world_deadline_s"]
        refc = "steps %s: %s" % (steps(ref["steps_per_rank"]), ref["expected"])
        if "steps_with_drop_last" in ref:
            refc += "; with drop_last %s" % steps(ref["steps_with_drop_last"])
        if r["verdict"] in ("control", "control_failed"):
            meas = "all finished; collectives %s; exit %s" % (
                steps(m["collectives_per_rank"]), m["launcher_exit_code"])
        elif "timed_out" in m:
            meas = "hang: finished %s, rank(s) %s stuck; killed at %.2fs; exit %s; left %s" % (
                m["finished_ranks"], m["extra_step_ranks"], m["world_elapsed_s"],
                m["launcher_exit_code"], m["processes_left"])
        elif "error" in m:
            meas = ("%s error on rank %d at step %d = allreduce #%d after %.2fs; "
                    "finished %s; exit %s; left %s" % (
                        m["error"], m["failed_rank"], m["blocked_step"], m["blocked_seq"],
                        m["detect_s"], m["finished_ranks"], m["launcher_exit_code"],
                        m["processes_left"]))
            if m.get("verdict"):
                meas += "; desync verdict: %s" % m["verdict"]
        else:
            meas = "no failure report: %s" % m.get("rank_exits", "")
    else:
        if c.get("empty_rank"):
            config += " (last rank empty)"
        refc = "without fix %s; one-process steps %d; tol %g" % (
            steps(ref["steps_without_fix"]), ref["steps"], ref["tolerance"])
        if "expected_grad_rel_err" in ref:
            refc += "; expected grad err 1 - %d/%d = %.3g" % (
                ref["contributors_min"], r["world_size"], ref["expected_grad_rel_err"])
        sc = m["step_check"]
        meas = ("steps %d; collectives %s; min contributors %d; per step (worst of %d rank-steps): "
                "grad %.3g, param %.3g, momentum %.3g; final distance %.2g" % (
                    m["steps"], steps([int(x) for x in m["collectives_per_rank"]]),
                    m["contributors_min"], sc["steps_checked"], sc["rel_err"]["grad"],
                    sc["rel_err"]["param"], sc["rel_err"]["momentum"], m["trajectory_rel_err"]))
    verdict = r["verdict"]
    if "expected_verdict" in r:
        verdict += " (expected)" if r["expected_verdict"] == verdict else (
            " (expected %s)" % r["expected_verdict"])
    return [r["kind"], r["variant"], str(r["world_size"]), config, refc, meas, verdict]


def table(records):
    out = ["| kind | variant | W | config | reference | measured | verdict |", "|---|---|---|---|---|---|---|"]
    for r in records:
        if r["verdict"] == "error":
            err = r.get("error", "")
            out.append("| %s | %s | %s | | | error: %s | error |" % (
                r["kind"], r["variant"], r["world_size"], err.splitlines()[0] if err else ""))
            continue
        out.append("| " + " | ".join(cells(r)) + " |")
    return "\n".join(out)


RENDERERS = {"drop_last_hang": table}
