#!/bin/sh
# Installed by the OFFLINE STUB of crane's buildPackage instead of a real binary.
echo "stub @NAME@ called with: $*"
echo "BINJGB_SRC at build time was: @BINJGB_SRC@"

# `@NAME@ schema --all --out DIR` writes one <name>.schema.json per schema into
# DIR. The stub "generates" the *.schema.json committed in the source it was
# built from, so the schemas-up-to-date check can run its diff.
if [ "${1-}" = schema ]; then
  if [ "$#" -ne 4 ] || [ "$2" != --all ] || [ "$3" != --out ] || [ -z "$4" ]; then
    echo "stub @NAME@: usage: @NAME@ schema --all --out DIR" >&2
    exit 2
  fi
  mkdir -p "$4"
  for f in "@SRC@"/schemas/*.schema.json; do
    if [ -f "$f" ]; then cp "$f" "$4/"; fi
  done
fi
