#!/usr/bin/env bash
# Prepares in directory $1 a copy of this wrapper with its modules vendored, where FerretDB
# 1.24's SQLite backend is fixed so that lookups by `_id` use the `_id` index instead of
# scanning the collection; build it there with `go build -mod=vendor`.
#
# FerretDB pushes an `_id` equality down as `WHERE _ferretdb_sjson->'$._id' = ?`, but builds
# the `_id` index on `_ferretdb_sjson->"_id"`; SQLite matches index expressions as written, so
# every find, update and delete by `_id` read the whole table (measured: 34 ms at 20,000
# documents, growing linearly; `EXPLAIN QUERY PLAN` says SCAN). The fix makes the lookup
# expression the index's own (`SEARCH ... USING INDEX`). Production runs MongoDB; this only
# makes the local stand-in behave like it. Nothing of FerretDB is kept in this repository: the
# vendored file comes from the module cache and one constant is changed.
set -euo pipefail
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
cp "$here/go.mod" "$here/go.sum" "$here/main.go" "$out/"
cd "$out"
go mod vendor
file="vendor/github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata/metadata.go"
# shellcheck disable=SC2016 # the dollar is SQLite's JSON path, not the shell's
sed -i 's|IDColumn = DefaultColumn + "->'"'"'\$\._id'"'"'"|IDColumn = DefaultColumn + `->"_id"`|' "$file"
if ! grep -q 'IDColumn = DefaultColumn + `->"_id"`' "$file"; then
  echo "id-index-fix: FerretDB's IDColumn is not what this fix expects; review $file" >&2
  exit 1
fi
