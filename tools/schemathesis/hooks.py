"""Schemathesis hooks of the project's run (tools/schemathesis/schemathesis.toml names this file).

Every generated Idempotency-Key the API would accept is replaced by one never used before in the
run. Generated keys are short and repeat ("0"), and hypothesis replays earlier scenarios' steps:
a repeated key with the same body answers the first request's stored answer (a package already
deleted, say), which the stateful checks then read as the API losing a resource, and the replays
answer differently from the first run, which ends hypothesis's stateful runs early. Replays have
tests of their own (test/integration/idempotency.test.ts); invalid keys are left to be refused.
"""

import itertools
import re

import schemathesis

ACCEPTED_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_fresh_keys = itertools.count(1)


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers
    if not headers:
        return
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and ACCEPTED_KEY.fullmatch(key):
        headers["Idempotency-Key"] = f"schemathesis-{next(_fresh_keys)}"
