#!/usr/bin/env bash
# Prepares an A/B of the working tree against a base revision, for
# toolchain/ab-bench.sh on a GPU machine (which gets no .git): writes into
# DIR (default .ab, ignored by git; carry it to the machine) the base's
# version of every file that differs between BASE and the working tree
# (committed or not), and lists the files the base lacks (added since BASE,
# untracked ones too) in DIR/absent.
# Usage: toolchain/ab-prepare.sh BASE [DIR]     e.g. toolchain/ab-prepare.sh HEAD~2
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BASE [DIR]   (BASE: a commit, e.g. HEAD~1)" >&2
  exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
rev=$(git rev-parse --verify --quiet "$1^{commit}") || {
  echo "ab-prepare: '$1' is not a commit" >&2
  exit 2
}
dir=${2:-.ab}
rm -rf "$dir"
mkdir -p "$dir/base"
: >"$dir/absent"
n=0
while IFS= read -r f; do
  if git cat-file -e "$rev:$f" 2>/dev/null; then
    mkdir -p "$dir/base/$(dirname "$f")"
    git show "$rev:$f" >"$dir/base/$f"
  else
    echo "$f" >>"$dir/absent"
  fi
  n=$((n + 1))
done < <(
  git diff --name-only --no-renames "$rev" --
  git ls-files --others --exclude-standard | grep -v "^${dir#./}/" || true
)
echo "$rev" >"$dir/REV"
echo "ab-prepare: $n files differ from ${rev:0:12} ($(wc -l <"$dir/absent") not in it) -> $dir"
