#!/usr/bin/env bash
# Writes packaging/herald.1, the manual of every herald command, with swift-argument-parser's
# generate-manual plugin (from the commands' own help). Run it after changing a command's options;
# a test (ReleaseTests) fails when the page misses an option.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package generate-manual --configuration debug >/dev/null
cp .build/plugins/GenerateManual/outputs/herald/herald.1 packaging/herald.1
echo "wrote packaging/herald.1"
