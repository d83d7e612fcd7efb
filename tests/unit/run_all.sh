#!/usr/bin/env bash
# run_all.sh — run every unit-test binary given, add up their counts, and end with
# one "N passed, N failed" line; exit non-zero if any test failed.
set -u
passed=0 failed=0 status=0
for t in "$@"; do
    out=$("$t" 2>&1) || status=1
    printf '%s\n' "$out" | grep -v '^ok  ' || true
    p=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' | tail -1)
    [ -n "$p" ] || { echo "$t: no result line (crashed?)"; failed=$((failed + 1)); status=1; continue; }
    passed=$((passed + p)); failed=$((failed + f))
done
echo "unit: $passed passed, $failed failed"
exit $status
