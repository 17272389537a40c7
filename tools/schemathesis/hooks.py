"""Schemathesis hooks of the project's run (tools/schemathesis/schemathesis.toml names this file).

Every generated Idempotency-Key the API would accept is replaced by one never used before in the
run. Generated keys are short and repeat ("0"), and hypothesis replays earlier scenarios' steps:
a repeated key with the same body answers the first request's stored answer (a package already
deleted, say), which the stateful checks then read as the API losing a resource, and the replays
answer differently from the first run, which ends hypothesis's stateful runs early. Replays have
tests of their own (test/integration/idempotency.test.ts); invalid keys are left to be refused.

The check `refused_only_for_data` holds operations whose 400s the configuration must allow (the
data decides some) to refusing a schema-valid body only for its data, by the message.
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


# What only the data can refuse in a body the document allows, by operation: the messages of
# those 400s. Its shape (every field's form, the checks across fields) the document states, so
# any other 400 to schema-valid data means the document and the validators disagree.
_PRICED = (
    r"Invalid packages selection"
    r"|(origin|destination)\S*: .+"  # geo: an address that names no known place
    r"|Origin and destination cannot be the same"
    r"|No tariff covers deliveries from .+"
    r"|No active fleet type can carry .+"
    r"|deliveryDate \S+ is in the past; .+"  # the bookable window, in the tariff's time zone
    r"|deliveryDate can be at most \d+ days ahead .+"
    r"|deliverySlot .+ has already ended today .+"
    r"|The declared value is above the insurable maximum .+"
)
DATA_REFUSALS = {
    "POST /api/request": re.compile(rf"(?:{_PRICED})"),
}


@schemathesis.check
def refused_only_for_data(ctx, response, case):
    """A 400 to a schema-valid body of the operations above is one of the data's refusals."""
    refusals = DATA_REFUSALS.get(case.operation.label)
    meta = case.meta
    if refusals is None or meta is None or response.status_code != 400:
        return None
    if not meta.generation.mode.is_positive:
        return None
    message = str(response.json().get("message", ""))
    if not refusals.fullmatch(message):
        raise AssertionError(
            "A body the document allows was refused for its shape, not for its data: "
            f"{message!r}. State the rule in the document (a JSON Schema keyword), or say in "
            "tools/schemathesis why it cannot be."
        )
    return None
