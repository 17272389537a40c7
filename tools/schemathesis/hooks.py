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

`flatmap_path_parameters` makes a generated `deliveryId` one of the deliveries the run's seed
created (WAYBILL_ST_DELIVERY_IDS) half the time, so that the delivery routes answer real ones;
`flatmap_body` does the same for the packages of a quote or request (WAYBILL_ST_PACKAGE_IDS) and
the courier of a quote, request or courier rule (WAYBILL_ST_COURIER_IDS).
"""

import itertools
import os
import re

import schemathesis
from hypothesis import strategies as st

ACCEPTED_KEY = re.compile(r"[\x21-\x7e]{1,255}")
FRESH_KEY = re.compile(r"schemathesis-\d+-\d+")
# The generated requests run as parts in processes of their own (scripts/schemathesis-run.ts),
# for one user: each part mints keys under its own number, so two never send the same key.
_PART = os.environ.get("WAYBILL_ST_PART", "0")
_fresh_keys = itertools.count(1)


def _renew_key(headers):
    """Gives an accepted Idempotency-Key not minted here a fresh value, in place."""
    if not headers:
        return headers
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and ACCEPTED_KEY.fullmatch(key) and not FRESH_KEY.fullmatch(key):
        headers["Idempotency-Key"] = f"schemathesis-{_PART}-{next(_fresh_keys)}"
    return headers


@schemathesis.hook
def map_headers(context, headers):
    return _renew_key(headers)


@schemathesis.hook
def before_call(context, case, kwargs):
    _renew_key(case.headers)


# The deliveries scripts/schemathesis-run.ts seeded: a `deliveryId` generated for a path is one of
# them half the time, so that the delivery routes (read, cancel, fail, proofs) answer deliveries
# that exist rather than 404 alone. Only a well-formed id is swapped for another (a malformed one
# is the point of a negative case); an id a link supplies is not generated, and stays.
def _seeded(name):
    return tuple(i for i in os.environ.get(name, "").split(",") if i)


SEEDED_DELIVERIES = _seeded("WAYBILL_ST_DELIVERY_IDS")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _is_id(value):
    return isinstance(value, str) and UUID.fullmatch(value) is not None


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    generated = (path_parameters or {}).get("deliveryId")
    if not SEEDED_DELIVERIES or not _is_id(generated):
        return st.just(path_parameters)
    seeded = st.sampled_from(SEEDED_DELIVERIES).map(lambda d: {**path_parameters, "deliveryId": d})
    return st.one_of(st.just(path_parameters), seeded)


# Free packages and the courier the seed made: a generated body names them half the time, so that
# a quote or request gets past "Invalid packages selection" (which every random id meets first)
# and a courier rule or SPECIFIC quote or request past the courier directory. Ids are swapped one
# for one, a repeated id for the same seeded one and each array kept to its length, so that a
# negative case stays as invalid as it was generated (a repeated id, too many, a malformed one).
SEEDED_PACKAGES = _seeded("WAYBILL_ST_PACKAGE_IDS")
SEEDED_COURIERS = _seeded("WAYBILL_ST_COURIER_IDS")
SEEDED_FIELDS = {
    "POST /api/pricing": {
        "packagesId": SEEDED_PACKAGES,
        "courierId": SEEDED_COURIERS,
        "courierProfileId": SEEDED_COURIERS,
    },
    "POST /api/request": {
        "packagesId": SEEDED_PACKAGES,
        "courierId": SEEDED_COURIERS,
        "courierProfileId": SEEDED_COURIERS,
    },
    "POST /admin/pricing/courier-rules": {"courierId": SEEDED_COURIERS},
}


def _seeded_ids(generated, seeded):
    """A strategy of seeded ids to stand for `generated` (an id, or a list of them); else None."""
    if _is_id(generated):
        return st.sampled_from(seeded) if seeded else None
    if not isinstance(generated, list) or not generated or not all(map(_is_id, generated)):
        return None
    distinct = list(dict.fromkeys(generated))
    if len(distinct) > len(seeded):
        return None
    return st.permutations(seeded).map(
        lambda order: [order[distinct.index(i)] for i in generated]
    )


@schemathesis.hook
def flatmap_body(context, body):
    fields = SEEDED_FIELDS.get(context.operation.label if context.operation else None)
    if not fields or not isinstance(body, dict):
        return st.just(body)
    swaps = {}
    for field, seeded in fields.items():
        ids = _seeded_ids(body.get(field), seeded)
        if ids is not None:
            swaps[field] = st.one_of(st.just(body[field]), ids)
    if not swaps:
        return st.just(body)
    return st.fixed_dictionaries(swaps).map(lambda chosen: {**body, **chosen})


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
# What geo alone refuses in a route: an address that names no known place (or no saved address
# of the caller's), origin and destination in one H3 cell.
_ROUTED = (
    rf"{_PHONES}"
    r"|(origin|destination)\S*: .+"
    r"|Origin and destination cannot be the same"
)
# A quote or request: its route's refusals, then its packages', its tariff's and its schedule's.
# Priced as a request's packages are, by the same function: the same refusals.
_PRICED = re.compile(
    rf"(?:{_ROUTED}"
    r"|Invalid packages selection"
    r"|No tariff covers deliveries from .+"
    r"|No active fleet type can carry .+"
    r"|deliveryDate \S+ is in the past; .+"  # the bookable window, in the tariff's time zone
    r"|deliveryDate can be at most \d+ days ahead .+"
    r"|deliverySlot .+ has already ended today .+"
    r"|quoteId is (?:not )?a quote of .+"  # a quote we did not sign, or signed for another
    r"|The declared value is above the insurable maximum .+)",
    re.DOTALL,
)
# A place the gazetteer does not know (geo.findArea), as a courier rule's `from`, `to` or country.
_PLACE = r'(Country|State|LGA or city) ".*" not found.*'
DATA_REFUSALS = {
    "POST /api/route": re.compile(_ROUTED, re.DOTALL),
    "POST /api/pricing": _PRICED,
    "POST /api/request": _PRICED,
    # A new rule's places, and its courier, whom the directory must know.
    "POST /admin/pricing/courier-rules": re.compile(
        rf"{_PLACE}|No courier has id \S+; .+", re.DOTALL
    ),
    "PATCH /admin/pricing/courier-rules/{ruleId}": re.compile(_PLACE, re.DOTALL),
    # The user's packages: the limit of untaken ones; one a delivery holds, or half deleted.
    "POST /api/package": re.compile(
        r"You already keep \d+ saved packages .+"
        r"|Package \S+ is assigned to a delivery and can no longer be edited"
        r"|Package \S+ is being deleted and can no longer be edited; .+"
        r"|Package \S+ was assigned to a delivery that has just given it back; .+",
        re.DOTALL,
    ),
    "DELETE /api/package/{packageId}": re.compile(
        r"Package \S+ is assigned to a delivery and can no longer be deleted"
        r"|Package \S+ was assigned to a delivery that has just given it back; .+",
        re.DOTALL,
    ),
    # The delivery's status, and the account's cancels of the last 3 hours.
    "POST /api/request/{deliveryId}/cancel": re.compile(
        r"This delivery cannot be cancelled.*"
        r"|This delivery is [A-Z_]+, no longer [A-Z_]+: .+"
        r"|A request may be cancelled only .+",
        re.DOTALL,
    ),
    # A country tier, or the merged tiers under its country left inconsistent by the removal.
    "DELETE /admin/pricing/tiers/{tierId}": re.compile(
        r"A country tier cannot be removed; .+"
        r"|.+?: (?:scheduled|serviceFee)\.\w+ \(.+\) must .+",
        re.DOTALL,
    ),
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
