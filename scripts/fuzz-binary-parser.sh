#!/usr/bin/env bash
# Fuzzes the legacy binary frame parser with libFuzzer: the legacy-binary target of scripts/fuzz.sh.
# Usage: scripts/fuzz-binary-parser.sh [seconds]   (default 600)
set -euo pipefail
exec "$(dirname "$0")/fuzz.sh" "${1:-600}" legacy-binary
