#!/usr/bin/env bash
# Checks that every C and C++ source of the project (libcollective/,
# strategies/, bench/, cases/, tests/, tools/) is formatted as .clang-format says,
# without changing any file. Exits non-zero naming each file that is not,
# with clang-format's first complaints about it. Needs clang-format 14
# (Debian's clang-format, scripts/install_deps.sh); CLANG_FORMAT overrides.
# To reformat instead:
#   git ls-files -z -- '*.h' '*.cc' '*.c' '*.cpp' | xargs -0 clang-format-14 -i
#
#   scripts/check_format.sh [FILE...]        default: every source of the tree
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
clang_format=${CLANG_FORMAT:-}
if [[ -z $clang_format ]]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null; then clang_format=$candidate; break; fi
  done
fi
if [[ -z $clang_format ]] || ! command -v "$clang_format" >/dev/null; then
  echo "check_format.sh: clang-format not found; install it (scripts/install_deps.sh)" >&2
  exit 2
fi
# Another major version formats some constructs differently: say so rather
# than report files that are fine under the version CI uses.
version=$("$clang_format" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [[ $version != 14 ]]; then
  echo "check_format.sh: warning: $clang_format is version $version; CI checks with 14" >&2
fi

if (($# > 0)); then
  files=("$@")
else
  patterns=()
  for folder in libcollective strategies bench cases tests tools; do
    for extension in h cc c cpp; do patterns+=("$folder/*.$extension"); done
  done
  mapfile -t files < <(git ls-files -- "${patterns[@]}")
fi

unformatted=()
for file in "${files[@]}"; do
  if ! report=$("$clang_format" --style=file --dry-run --Werror "$file" 2>&1); then
    unformatted+=("$file")
    printf '%s\n' "$report" | head -n 6 >&2
  fi
done
if ((${#unformatted[@]} > 0)); then
  echo "check_format.sh: ${#unformatted[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "reformat them with: $clang_format -i FILE..." >&2
  exit 1
fi
echo "check_format.sh: all ${#files[@]} files formatted"
