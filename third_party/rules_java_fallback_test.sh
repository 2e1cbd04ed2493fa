#!/bin/bash
# debian_rules_java pointed at a missing folder makes the local stand-in:
# standin.txt naming the folder, and java/defs.bzl forwarding the Java rules
# that @bazel_tools//tools/jdk loads to the native ones.
#   rules_java_fallback_test.sh STANDIN_TXT DEFS_BZL
set -u
standin=$1 defs=$2 failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
grep -q "local stand-in: /nonexistent/bazel/rules/java is missing" "$standin" ||
  fail "standin.txt does not name the missing folder: $(cat "$standin")"
for rule in java_import java_runtime java_toolchain java_binary; do
  grep -q "^def $rule(\*\*kwargs):" "$defs" || fail "java/defs.bzl lacks $rule"
  grep -q "native.$rule(\*\*kwargs)" "$defs" || fail "java/defs.bzl: $rule does not forward"
done
[ "$failures" -eq 0 ] && echo PASS || echo "$failures failures"
exit $((failures > 0))
