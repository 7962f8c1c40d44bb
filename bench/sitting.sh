#!/usr/bin/env bash
# The summary's sitting (bench/README.md, "Summary"): every issue-23 row, one after the other, on this
# checkout. Run it on a quiet machine; the campaigns are loaded the first time and reused after.
#   bash bench/sitting.sh              # imports, PST and 1M reports, compare, package, HIT load (~15 min)
#   TEN_M=1 bash bench/sitting.sh      # + the 10M report with 500 annotators (loads ~5 min once, ~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
DATABASE_URL=$PG/bench_imports $PY bench/imports.py --images 100000 --rows 100000
DATABASE_URL=$PG/bench_report $PY bench/report_scale.py --sizes 1000000 --paper paper-pst-intervention --no-csv
if [ -n "${TEN_M:-}" ]; then
  DATABASE_URL=$PG/bench_report $PY bench/report_scale.py --sizes 10000000 --paper '' --no-csv
fi
DATABASE_URL=$PG/bench_compare $PY bench/compare.py --runs 2
DATABASE_URL=$PG/bench_report $PY bench/package_build.py --sizes 1000000
DATABASE_URL=$PG/bench_load $PY bench/annotation_load.py --ns 50,200 --scenarios trivial,hit,hit-chained,one-question,one-question-chained --duration 15
