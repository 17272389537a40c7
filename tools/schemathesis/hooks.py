"""Schemathesis hooks of the project's run (tools/schemathesis/schemathesis.toml names this file).

Every generated Idempotency-Key the API would accept is replaced by one never used before in the
run. Generated keys are short and repeat ("0"), and hypothesis replays earlier scenarios' steps:
a repeated key with the same body answers the first request's stored answer (a package already
deleted, say), which the stateful checks then read as the API losing a resource, and the replays
answer differently from the first run, which ends hypothesis's stateful runs early. Replays have
tests of their own (test/integration/idempotency.test.ts); invalid keys are left to be refused.

The key is replaced where it is generated (`map_headers`), not in the request about to be sent:
schemathesis counts a value changed after generation as one a link supplied, and its check that
a created resource stays available (ST302) judges only requests whose every parameter came from
a link. A package edit (`POST /api/package` with `packageId`) carrying a generated key is not
one: its answer may be a replay of the key's first. Rewritten before the call, the key made it
look like one, and an edit of a package the scenario had deleted (404, as it should be) was
reported as a lost package. `before_call` still renews the keys of the coverage phase, which
sends values of its own without these hooks.

The check `refused_only_for_data` holds operations whose 400s the configuration must allow (the
data decides some) to refusing a schema-valid body only for its data, by the message.
"""

import itertools
import re

import schemathesis

ACCEPTED_KEY = re.compile(r"[\x21-\x7e]{1,255}")
FRESH_KEY = re.compile(r"schemathesis-\d+")
_fresh_keys = itertools.count(1)


def _renew_key(headers):
    """Gives an accepted Idempotency-Key not minted here a fresh value, in place."""
    if not headers:
        return headers
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and ACCEPTED_KEY.fullmatch(key) and not FRESH_KEY.fullmatch(key):
        headers["Idempotency-Key"] = f"schemathesis-{next(_fresh_keys)}"
    return headers


@schemathesis.hook
def map_headers(context, headers):
    return _renew_key(headers)


@schemathesis.hook
def before_call(context, case, kwargs):
    _renew_key(case.headers)


# What only the data can refuse in a body the document allows, by operation: the messages of
# those 400s (a name quoted in them may hold any character, line breaks too). Its shape (every field's form, the checks across fields) the document states, so
# any other 400 to schema-valid data means the document and the validators disagree.
# Phone numbers of the right form that no numbering plan has: the document states the form as a
# pattern and the plans in words (the phones dictionary keeps generated data valid; the coverage
# phase sends values of its own).
_PHONES = (
    r"Validation failed: \S+ must be a valid phone number in E\.164 form, like \+\d+"
    r"(?:; \S+ must be a valid phone number in E\.164 form, like \+\d+)*"
)
_PRICED = (
    rf"{_PHONES}"
    r"|Invalid packages selection"
    r"|(origin|destination)\S*: .+"  # geo: an address that names no known place
    r"|Origin and destination cannot be the same"
    r"|No tariff covers deliveries from .+"
    r"|No active fleet type can carry .+"
    r"|deliveryDate \S+ is in the past; .+"  # the bookable window, in the tariff's time zone
    r"|deliveryDate can be at most \d+ days ahead .+"
    r"|deliverySlot .+ has already ended today .+"
    r"|The declared value is above the insurable maximum .+"
)
# What geo alone refuses in a route: an address that names no known place (or no saved address
# of the caller's), origin and destination in one H3 cell.
_ROUTED = (
    rf"{_PHONES}"
    r"|(origin|destination)\S*: .+"
    r"|Origin and destination cannot be the same"
)
# A place the gazetteer does not know (geo.findArea), as a courier rule's `from`, `to` or country.
_PLACE = r'(Country|State|LGA or city) ".*" not found.*'
DATA_REFUSALS = {
    "POST /api/route": re.compile(_ROUTED, re.DOTALL),
    # Priced as a request's packages are, by the same function: the same refusals.
    "POST /api/pricing": re.compile(rf"(?:{_PRICED})", re.DOTALL),
    "POST /api/request": re.compile(rf"(?:{_PRICED})", re.DOTALL),
    "POST /admin/pricing/courier-rules": re.compile(_PLACE, re.DOTALL),
    "PATCH /admin/pricing/courier-rules/{ruleId}": re.compile(_PLACE, re.DOTALL),
    # Where the URL points (its addresses, resolved now) and the endpoints already kept.
    "POST /api/webhooks": re.compile(
        r"url .+|You already have \d+ webhook endpoints .+", re.DOTALL
    ),
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
