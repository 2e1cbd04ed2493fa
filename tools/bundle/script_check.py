"""What gpu_table_test.py and gpu_section_test.py share: one list of
failures, expect() that prints each as it happens, a script run with this
Python (exit code, stdout, stderr), and the closing line and exit code."""
import subprocess
import sys

failed = []


def expect(cond, what):
    if not cond:
        failed.append(what)
        print("FAIL:", what)


def run_script(script, *args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def finish():
    print("FAILED" if failed else "PASS", len(failed))
    sys.exit(1 if failed else 0)
