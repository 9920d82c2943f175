#!/usr/bin/env bash
# Writes .bazelrc.local for this checkout: Bazel runs Python with the given interpreter
# (default: the `python` on PATH, i.e. the active virtual environment) through a small
# wrapper, since Bazel resolves the venv's symlinked interpreter and loses the venv; and
# `--config=offline` replaces the three repositories a native py_test would download
# (rules_cc, rules_java, remote_coverage_tools) with the local stand-ins beside this
# script. Bazel 4 wants absolute paths for both, hence a generated file.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="$("${1:-python}" -c "import sys; print(sys.executable)")"
here="$root/tools/bazel_offline"
wrapper="$root/.bazel_python"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$python" > "$wrapper"
chmod +x "$wrapper"
cat > "$root/.bazelrc.local" <<EOF2
build --python_path=$wrapper
build:offline --override_repository=rules_cc=$here/rules_cc
build:offline --override_repository=rules_java=$here/rules_java
build:offline --override_repository=remote_coverage_tools=$here/remote_coverage_tools
EOF2
echo "wrote $root/.bazelrc.local (python: $python)"
