#!/usr/bin/env bash
# Fails when a C++ source or header differs from .clang-format (clang-format
# 14, Debian 12's). Usage: format_check.sh SOURCE_DIR CLANG_FORMAT
set -euo pipefail
cd "$1"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find config exporter probes tests bench -name '*.cc' -o -name '*.h' 2>/dev/null)
fi
"$2" --dry-run --Werror "${files[@]}"
echo "format_check: ${#files[@]} files match .clang-format"
