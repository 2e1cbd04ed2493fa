#!/usr/bin/env bash
# Runs //tools:metrics on good files (values must match scikit-learn's
# golden values to 1e-12, whether the rows come in one file or split in
# per-rank files) and on bad files (exit 2, message naming file and line).
set -u
metrics="$1"
golden="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Rows and sklearn values of one golden case -> CSV file(s).
case_rows() {  # NAME -> "score label" rows on stdout
  awk -v name="$1" '$1 == "case" { on = ($2 == name); next }
    on && $1 == "end" { exit } on && $1 ~ /^[-0-9.]/ { print $1 "," $2 }' "$golden"
}
case_value() {  # NAME KEY -> sklearn value
  awk -v name="$1" -v key="$2" '$1 == "case" { on = ($2 == name); next }
    on && $1 == key { print $2; exit }' "$golden"
}

for name in random_1000 ties_2000 imbalanced_3000; do
  rows="$tmp/$name.rows"
  case_rows "$name" > "$rows"
  { echo "score,label"; cat "$rows"; } > "$tmp/$name.csv"
  # Three "rank" files, the middle one with swapped columns and CRLF endings.
  total=$(wc -l < "$rows"); third=$((total / 3))
  { echo "score,label"; head -n "$third" "$rows"; } > "$tmp/$name.r0.csv"
  { printf 'label,score\r\n'; sed -n "$((third + 1)),$((2 * third))p" "$rows" |
      awk -F, '{ printf "%s,%s\r\n", $2, $1 }'; } > "$tmp/$name.r1.csv"
  { echo "score,label"; tail -n "+$((2 * third + 1))" "$rows"; } > "$tmp/$name.r2.csv"
  one=$("$metrics" --csv "$tmp/$name.csv") || fail "$name: exit $?"
  split=$("$metrics" --csv "$tmp/$name.r0.csv" --csv="$tmp/$name.r1.csv" --csv "$tmp/$name.r2.csv") ||
    fail "$name split: exit $?"
  [[ "$one" == "$split" ]] || fail "$name: one file '$one' != split files '$split'"
  [[ "$one" =~ ^auc=([^ ]+)\ ap=([^ ]+)\ n=([0-9]+)$ ]] || { fail "$name: bad output '$one'"; continue; }
  auc=${BASH_REMATCH[1]} ap=${BASH_REMATCH[2]} n=${BASH_REMATCH[3]}
  [[ "$n" == "$total" ]] || fail "$name: n=$n, want $total"
  awk -v a="$auc" -v b="$(case_value "$name" auc)" -v c="$ap" -v d="$(case_value "$name" ap)" \
    'function abs(x) { return x < 0 ? -x : x }
     BEGIN { exit !(abs(a - b) <= 1e-12 && abs(c - d) <= 1e-12) }' ||
    fail "$name: auc=$auc ap=$ap vs sklearn $(case_value "$name" auc) $(case_value "$name" ap)"
  echo "$name: $one"
done

"$metrics" --help | grep -q "usage: metrics" || fail "--help prints no usage"

expect_error() {  # EXPECTED_SUBSTRING ARGS...
  local want="$1"; shift
  local err rc
  err=$("$metrics" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc == 2 ]] || fail "exit $rc (want 2) for: $*"
  [[ "$err" == *"$want"* ]] || fail "stderr for '$*' lacks '$want': $err"
}

printf 'score,label\n0.5,1\n0.2,3\n' > "$tmp/bad_label.csv"
printf 'score,label\n0.5,1\nabc,0\n' > "$tmp/bad_score.csv"
printf 'score,target\n0.5,1\n' > "$tmp/no_label.csv"
printf 'score,label\n' > "$tmp/header_only.csv"
: > "$tmp/empty.csv"
printf 'score,label\n0.5,1\n0.7,1\n' > "$tmp/one_class.csv"
printf 'score,label\n0.5\n' > "$tmp/short.csv"

expect_error "$tmp/bad_label.csv:3: label must be 0 or 1, got '3'" --csv "$tmp/bad_label.csv"
expect_error "$tmp/bad_score.csv:3: score is not a finite number: 'abc'" --csv "$tmp/bad_score.csv"
expect_error "$tmp/no_label.csv:1: header must name the columns 'score' and 'label' (missing 'label')" \
  --csv "$tmp/no_label.csv"
expect_error "$tmp/header_only.csv:1: no data rows after the header" --csv "$tmp/header_only.csv"
expect_error "$tmp/empty.csv:1: empty file" --csv "$tmp/empty.csv"
expect_error "$tmp/short.csv:2: expected 2 fields, got 1" --csv "$tmp/short.csv"
expect_error "Only one class present in y_true. ROC AUC score is not defined in that case." \
  --csv "$tmp/one_class.csv"
expect_error "$tmp/missing.csv: cannot open file" --csv "$tmp/missing.csv"
expect_error "$tmp/bad_label.csv:3" --csv "$tmp/random_1000.csv" --csv "$tmp/bad_label.csv"
expect_error "at least one --csv FILE is required" 
expect_error "unknown argument '--json'" --json x
expect_error "--csv needs a value" --csv

if [[ $failures -ne 0 ]]; then echo "$failures failure(s)"; exit 1; fi
echo "all metrics CLI checks passed"
