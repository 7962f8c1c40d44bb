#!/usr/bin/env bash
# Tools the test suite needs beyond Python packages. Installed from Debian's packages when missing.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "Missing ${need[*]}: install them (Debian: apt-get install chromium chromium-driver)." >&2
  fi
fi
