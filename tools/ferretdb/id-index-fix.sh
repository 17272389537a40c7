#!/usr/bin/env bash
# Prepares in directory $1 a copy of this wrapper with its modules vendored, where FerretDB
# 1.24's SQLite and PostgreSQL backends are fixed so that lookups by `_id` use the `_id` index
# instead of scanning the collection; build it there with `go build -mod=vendor`.
#
# FerretDB pushes an `_id` equality down as `WHERE _ferretdb_sjson->'$._id' = ?`, but builds
# the `_id` index on `_ferretdb_sjson->"_id"`; SQLite matches index expressions as written, so
# every find, update and delete by `_id` read the whole table (measured: 34 ms at 20,000
# documents, growing linearly; `EXPLAIN QUERY PLAN` says SCAN). The fix makes the lookup
# expression the index's own (`SEARCH ... USING INDEX`). Production runs MongoDB; this only
# makes the local stand-in behave like it.
#
# The PostgreSQL backend indexes `_id` as `_jsonb->'_id'` (btree) but filters every equality as
# `_jsonb->$1 @> $2`, the field name a parameter and `@>` an operator no btree serves: a find by
# `_id` read the whole table (217 ms at 100,000 documents, `Seq Scan`). For `_id` alone, which
# is never an array, equality and containment agree, so the fix filters a string or ObjectId
# `_id` as `_jsonb->'_id' = $n`, the expression its updates and deletes already use
# (`Index Scan`). Other fields keep `@>`: an array field must still match one of its elements.
#
# Nothing of FerretDB is kept in this repository: the vendored files come from the module cache
# and are changed here.
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

file="vendor/github.com/FerretDB/FerretDB/internal/backends/postgresql/query.go"
# The `_id` clause goes right after top-level operators are skipped, before the generic one.
perl -0pi -e 's|(\n\t\tif strings\.HasPrefix\(rootKey, "\$"\) \{\n\t\t\tcontinue\n\t\t\}\n)|$1\n\t\tif rootKey == "_id" { // waybill: id-index-fix\n\t\t\tswitch v := rootVal.(type) {\n\t\t\tcase string, types.ObjectID:\n\t\t\t\tfilters = append(filters, fmt.Sprintf("%s = %s", metadata.IDColumn, p.Next()))\n\t\t\t\targs = append(args, string(must.NotFail(sjson.MarshalSingleValue(v))))\n\n\t\t\t\tcontinue\n\t\t\t}\n\t\t}\n|' "$file"
if [ "$(grep -c 'waybill: id-index-fix' "$file")" != 1 ]; then
  echo "id-index-fix: FerretDB's PostgreSQL filter is not what this fix expects; review $file" >&2
  exit 1
fi
