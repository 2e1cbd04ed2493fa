"""Both engines of the raw unequal all_gather gather the same values.

    raw_inputs_test.py RAW_INPUTS_BINARY RAW_INPUTS_JSON UNEQUAL_ALL_GATHER_PY

1. The committed raw_inputs.json is byte for byte what our C++ generator
   (//repro/wrong_all_gather:raw_inputs, the RankShare every raw_unequal
   rank calls) writes now: a change to the generator fails here until the
   file is made again.
2. PyTorch's script (unequal_all_gather.py) loads from it exactly the C++
   doubles, their float32 rounding (Python's own rounding agrees, and
   torch's where torch imports), and the labels; its shares are ours.
3. The one-process AUC of those values, computed here from scratch, is the
   one our metrics wrote (0.8476 at N = 1003): the like-for-like number.
4. torchmetrics_auroc.py (and torchmetrics_step_epoch.py, which imports
   its samples) gathers the same values, where torch imports.
"""
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

BINARY, COMMITTED, SCRIPT = sys.argv[1:4]
del sys.argv[1:4]


def load_script(path=SCRIPT, name="unequal_all_gather"):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def auc(labels, scores):
    """ROC AUC as P(score_pos > score_neg) + P(tie) / 2 (midranks)."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    pos = sum(labels)
    neg = len(labels) - pos
    rank_sum = sum(r for r, l in zip(ranks, labels) if l == 1)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class RawInputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.made = os.path.join(cls.tmp, "raw_inputs.json")
        subprocess.run([BINARY, "--out", cls.made], check=True)
        cls.mod = load_script()
        cls.inputs = cls.mod.load_inputs(COMMITTED)
        with open(cls.made) as f:
            cls.cpp = json.load(f)

    def test_committed_file_is_what_the_generator_writes(self):
        with open(self.made, "rb") as a, open(COMMITTED, "rb") as b:
            self.assertEqual(a.read(), b.read(),
                             "raw_inputs.json is stale: bazel run //repro/wrong_all_gather:"
                             "raw_inputs -- --out $PWD/repro/wrong_all_gather/raw_inputs.json")

    def test_python_loads_the_cpp_values_exactly(self):
        rows = self.cpp["samples"]
        self.assertEqual(self.inputs["n"], 1003)
        self.assertEqual(len(rows), 1003)
        cpp_scores = [float.fromhex(r[1]) for r in rows]
        self.assertEqual(self.inputs["scores"], cpp_scores)
        self.assertEqual([s.hex() for s in self.inputs["scores"]],
                         [float.fromhex(r[1]).hex() for r in rows])
        self.assertEqual(self.inputs["labels"], [r[3] for r in rows])
        self.assertEqual(set(self.inputs["labels"]), {0, 1})

    def test_float32_rounding_is_ours(self):
        cpp32 = [float.fromhex(r[2]) for r in self.cpp["samples"]]
        self.assertEqual(self.inputs["scores_float32"], cpp32)
        self.assertEqual([float32(s) for s in self.inputs["scores"]], cpp32)
        # At least one score changes when rounded: float32 is a real choice.
        self.assertNotEqual(self.inputs["scores"], cpp32)

    def test_torch_rounds_as_ours_where_torch_imports(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch here; the script checks this at its start anyway")
        self.assertIsNone(self.mod.check_rounding(self.inputs))

    def test_torchmetrics_scripts_gather_the_same_samples(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch here")
        sys.path.insert(0, os.path.dirname(os.path.abspath(SCRIPT)))
        tm = load_script(os.path.join(os.path.dirname(SCRIPT), "torchmetrics_auroc.py"), "torchmetrics_auroc")
        scores, labels = tm.samples()
        self.assertEqual(scores.tolist(), self.inputs["scores"])
        self.assertEqual(labels.tolist(), self.inputs["labels"])
        self.assertEqual(tm.N, self.inputs["n"])

    def test_one_process_auc_is_the_same(self):
        ours = self.inputs["one_process"]["float64"]["auc"]
        self.assertAlmostEqual(ours, 0.8476, places=4)
        self.assertAlmostEqual(auc(self.inputs["labels"], self.inputs["scores"]), ours, places=12)
        self.assertAlmostEqual(auc(self.inputs["labels"], self.inputs["scores_float32"]),
                               self.inputs["one_process"]["float32"]["auc"], places=12)

    def test_shares_are_our_strided_shares(self):
        n = self.inputs["n"]
        for w in (2, 4):
            shares = [self.mod.share(n, w, r) for r in range(w)]
            self.assertEqual(sorted(i for s in shares for i in s), list(range(n)))
            for r, s in enumerate(shares):
                self.assertEqual(s, list(range(r, n, w)))
        self.assertEqual([len(self.mod.share(n, 2, r)) for r in range(2)], [502, 501])

    def test_a_changed_or_shuffled_file_is_refused_or_differs(self):
        with open(COMMITTED) as f:
            doc = json.load(f)
        doc["samples"][0], doc["samples"][1] = doc["samples"][1], doc["samples"][0]
        bad = os.path.join(self.tmp, "shuffled.json")
        with open(bad, "w") as f:
            json.dump(doc, f)
        with self.assertRaises(ValueError):
            self.mod.load_inputs(bad)
        doc["samples"][0], doc["samples"][1] = doc["samples"][1], doc["samples"][0]
        x = float.fromhex(doc["samples"][5][1])
        doc["samples"][5][1] = (x + x * 2.0 ** -52).hex()  # one ulp up
        changed = os.path.join(self.tmp, "changed.json")
        with open(changed, "w") as f:
            json.dump(doc, f)
        self.assertNotEqual(self.mod.load_inputs(changed)["scores"], self.inputs["scores"])


if __name__ == "__main__":
    unittest.main()
