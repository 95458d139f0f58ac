#!/usr/bin/env bash
# The README's pictures, made by the browser tests that check those pages (so they show what podium shows):
# the dashboard of `podium serve` (tests/test_serve.py) and the HTML report (tests/test_report_sections.py).
# Each test marked docs_screenshot(NAME) saves its page's last view as docs/images/NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/images
PODIUM_DOCS_SCREENSHOTS="$PWD/docs/images" PODIUM_REQUIRE_BROWSER=1 OMP_NUM_THREADS=1 \
  python3 -m pytest -q -p no:cacheprovider -m docs_screenshot tests/test_serve.py tests/test_report_sections.py
ls -l docs/images
