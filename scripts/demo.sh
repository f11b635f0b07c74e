#!/usr/bin/env bash
# Fresh Debian 12 machine to a first result: installs what is missing, builds, and runs the main
# scenario on its built-in default backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
echo
./build/bin/rdmalab run scenarios/write-bw-64k.yaml "$@"
