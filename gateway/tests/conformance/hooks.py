"""Schemathesis hooks of the conformance test (gateway/tests/it/conformance.rs).

The published schemas say what shape a request has; they cannot say that a file's bytes
are a PDF, or that a URL serves one. Two hooks cover exactly that gap, nothing else:

- `map_case`: in a schema-valid (positive) case of a route that takes files, every file's
  `data` becomes a real document of a type the route lists in `x-accepts`, and every
  file `url` (and the top-level `url` of the by-URL routes) a loopback address serving
  one. The other fields stay as generated, so the case still tests what the schema says.
- `map_case` also gives a schema-valid case a real value where a string's format is a rule
  no pattern holds (below): an `ens-name` outside the plainest names becomes a plain name
  of the same length, an `eip712-json` text that is not JSON fitting its `contentSchema`
  becomes a real EIP-712 request padded to the same length, a `pdf-password` past 127
  bytes of UTF-8 is cut to fit. The schemas state what a
  pattern can of these (the ASCII rules of ENS names, the request's shape); generated
  strings that only match the pattern are not names or JSON.
- `filter_failure`: a schema-valid request refused with 422 is still a failure, unless
  the error's code says the request is well formed but does not fit the document or the
  chain it names (a page the document does not have, a form field it lacks, a contract
  that reverts). Those codes are the list below, each with the reason the schema cannot
  state it. Every other refusal of a schema-valid request fails the run.

Solidity signatures have a grammar no regular expression states (tuples nest): the
formats `solidity-function` and `solidity-event` get generators that draw from the bundled
tables of well-known signatures (engine/data/) half the time and otherwise build one from
random names and types (elementary types, arrays, tuples, nested a few levels).

ENS names are normalised by ENSIP-15 (Unicode tables no pattern holds): the format
`ens-name` draws from names in its plainest form (lower-case letters and digits,
dot-separated, ending in `.eth`).

Two more string formats the schemas state and no regular expression can (a pattern gives the
alphabet and lengths, not the decoded size) get generators: `solana-address` (base58 of
32 bytes) and `solana-signature` (64 bytes), each drawn half the time from what the test's
local validator holds (its accounts, mints and transactions) and otherwise at random.

EIP-712 requests written as JSON text (`eip712-json`: the message must fit its types,
which no schema states) are drawn as a mail-like request with random domain and values.

The test hands the documents over in the environment: PAPERCHAIN_CONFORMANCE_SAMPLES is
a folder of `sample.<ext>` files, PAPERCHAIN_CONFORMANCE_FILES the base URL where a
loopback server serves the same files under the same names, and
PAPERCHAIN_CONFORMANCE_SOLANA the validator's fixtures (JSON: name to address or signature).
"""

import base64
import json
import os
import pathlib
import re
import zlib

import jsonschema
import schemathesis
from hypothesis import strategies as st
from hypothesis.internal import lambda_sources
from schemathesis.openapi.checks import RejectedPositiveData

SAMPLES = {
    path.suffix[1:]: base64.b64encode(path.read_bytes()).decode()
    for path in pathlib.Path(os.environ["PAPERCHAIN_CONFORMANCE_SAMPLES"]).glob("sample.*")
}
FILES = os.environ["PAPERCHAIN_CONFORMANCE_FILES"]

# The keys of a file input object (FileInput in the OpenAPI document).
FILE_KEYS = {"data", "url", "path", "keyring", "filename", "password"}

# Routes whose top-level `url` names a document to fetch, and the type it must be.
URL_ROUTES = {"/v1/pdf": "pdf", "/v1/ocr": "png", "/v1/pdf/html-to-pdf": "html"}

BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58(data):
    number = int.from_bytes(data, "big")
    text = ""
    while number:
        number, digit = divmod(number, 58)
        text = BASE58[digit] + text
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + text


def _decoded_size(text):
    number = 0
    for char in text:
        number = number * 58 + BASE58.index(char)
    zeros = len(text) - len(text.lstrip("1"))
    return zeros + (number.bit_length() + 7) // 8


SOLANA = json.loads(os.environ.get("PAPERCHAIN_CONFORMANCE_SOLANA", "{}"))


def _base58_format(size):
    known = [v for v in SOLANA.values() if isinstance(v, str) and v and all(c in BASE58 for c in v)]
    known = [v for v in known if _decoded_size(v) == size]
    drawn = st.binary(min_size=size, max_size=size).map(_base58)
    return st.one_of(st.sampled_from(known), drawn) if known else drawn


ROOT = pathlib.Path(__file__).resolve().parents[3]


def _table(name):
    lines = (ROOT / "engine" / "data" / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# Hypothesis describes a lambda (schemathesis's own, in its filters) by parsing its module's
# source; deep in the coverage phase's recursion CPython 3.11's parser can fail there with
# "AST constructor recursion depth mismatch" (a SystemError), which ends the route's test
# as a runtime error. The description is only cosmetic: where parsing fails, it says so.
_describe = getattr(lambda_sources, "_lambda_description", None)
if _describe is not None:

    def _lambda_description(f, *args, **kwargs):
        try:
            return _describe(f, *args, **kwargs)
        except (SystemError, RecursionError):
            return "lambda: <unknown>"

    lambda_sources._lambda_description = _lambda_description

# Named functions, not lambdas, inside the strategies: Hypothesis describes a lambda by
# parsing its source, which fails in the deep stacks of schemathesis's coverage phase.
RESERVED = {"function", "event", "returns", "indexed", "anonymous", "memory", "calldata", "storage"}


def _not_reserved(name):
    return name not in RESERVED


def _uint(n):
    return f"uint{n * 8}"


def _int(n):
    return f"int{n * 8}"


def _fixed_bytes(n):
    return f"bytes{n}"


def _array_of(pair):
    item, size = pair
    return f"{item}[{size}]"


def _tuple_of(items):
    return "(" + ",".join(items) + ")"


def _arrays_and_tuples(inner):
    sizes = st.one_of(st.just(""), st.integers(1, 4).map(str))
    return st.one_of(st.tuples(inner, sizes).map(_array_of), st.lists(inner, min_size=1, max_size=3).map(_tuple_of))


def _function(parts):
    name, inputs, outputs = parts
    text = f"{name}({','.join(inputs)})"
    return text if outputs is None else f"{text} returns ({','.join(outputs)})"


def _at_most_three_indexed(params):
    return sum(1 for _, indexed, _ in params if indexed) <= 3


def _param_name(param):
    return param[2]


def _event_param(param):
    kind, indexed, name = param
    return f"{kind}{' indexed' if indexed else ''} {name}"


def _event(parts):
    name, params = parts
    return f"{name}(" + ", ".join(_event_param(p) for p in params) + ")"


def _ens_name(labels):
    return ".".join(labels) + ".eth"


IDENTIFIER = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,15}", fullmatch=True).filter(_not_reserved)
ELEMENTARY = st.one_of(
    st.sampled_from(["address", "bool", "string", "bytes", "uint", "int"]),
    st.integers(1, 32).map(_uint),
    st.integers(1, 32).map(_int),
    st.integers(1, 32).map(_fixed_bytes),
)
TYPES = st.recursive(ELEMENTARY, _arrays_and_tuples, max_leaves=6)
PARAMS = st.lists(TYPES, max_size=4)
FUNCTIONS = st.one_of(
    st.sampled_from(_table("function-signatures.txt")),
    st.tuples(IDENTIFIER, PARAMS, st.one_of(st.none(), PARAMS)).map(_function),
)
# At most three indexed parameters (Solidity's limit), each name once.
EVENT_PARAMS = st.lists(st.tuples(TYPES, st.booleans(), IDENTIFIER), max_size=4, unique_by=_param_name)
EVENTS = st.one_of(
    st.sampled_from(_table("event-signatures.txt")),
    st.tuples(IDENTIFIER, EVENT_PARAMS.filter(_at_most_three_indexed)).map(_event),
)
ENS_NAMES = st.lists(st.from_regex(r"[a-z0-9]{1,16}", fullmatch=True), min_size=1, max_size=3).map(_ens_name)
schemathesis.openapi.format("ens-name", ENS_NAMES)


def _eip712_text(parts):
    name, chain_id, contents, amount = parts
    return json.dumps({
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "chainId", "type": "uint256"}],
            "Mail": [{"name": "contents", "type": "string"}, {"name": "amount", "type": "uint256"}],
        },
        "primaryType": "Mail",
        "domain": {"name": name, "chainId": chain_id},
        "message": {"contents": contents, "amount": str(amount)},
    })


EIP712_TEXTS = st.tuples(
    st.text(max_size=20), st.integers(0, 2**32), st.text(max_size=40), st.integers(0, 2**64)
).map(_eip712_text)
schemathesis.openapi.format("eip712-json", EIP712_TEXTS)
def _pdf_password(value, schema=None):
    """`value` cut to 127 bytes of UTF-8 (PDF 2.0's limit, which qpdf's writer needs)."""
    while len(value.encode("utf-8", "surrogatepass")) > 127:
        value = value[:-1]
    return value


# Passwords of any script, no NUL, at most 127 bytes of UTF-8.
PASSWORDS = (
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1, max_size=127)
    .map(_pdf_password)
    .filter(bool)
)
schemathesis.openapi.format("pdf-password", PASSWORDS)
schemathesis.openapi.format("solidity-function", FUNCTIONS)
schemathesis.openapi.format("solidity-event", EVENTS)

schemathesis.openapi.format("solana-address", _base58_format(32))
schemathesis.openapi.format("solana-signature", _base58_format(64))

# Regular expressions in Rust's syntax (`rust-regex`): the grammar is no pattern's to state,
# and JSON Schema's own `regex` format is ECMA 262's, which allows what Rust's engine
# refuses (look-around, back references). Drawn from patterns people redact with, or a
# literal word.
REGEXES = st.one_of(
    st.sampled_from([r"\d{3}-\d{2}-\d{4}", r"(?i)secret", r"[A-Z][a-z]+", r"\bthe\b", r"[0-9]+", r"\w+@\w+\.com"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=20),
)
schemathesis.openapi.format("rust-regex", REGEXES)

# Error codes of a well-formed request that the content it names does not fit.
CONTENT_CODES = {
    # A page selection is well formed but names pages this document does not have.
    "page_out_of_range",
    # The document is encrypted, or the password given does not open it.
    "password_required",
    "wrong_password",
    # The template's placeholders and the data's keys are a matter of this template.
    "missing_keys",
    "invalid_template",
    # A worksheet named in the request that this workbook does not have.
    "unknown_sheet",
    # Every page selected for OCR already has text.
    "no_pages_to_read",
    # The document holds no table, no transaction, no text at all.
    "no_tables",
    "no_transactions",
    "no_text_layer",
    # An OCR language this server has not installed: the set is the server's, not the schema's.
    "unknown_language",
    # Margins wider than this document's pages.
    "margins_too_large",
    # The document has no attachments, would lose every page, or has no form field of a name.
    "no_attachments",
    "no_pages_left",
    # The document has no bookmark at the level asked to split at.
    "no_bookmarks",
    "form_mismatch",
    # PDF/A needs this document's fonts embedded; an invoice XML (random bytes to a
    # schema) that is not a Factur-X invoice.
    "font_not_embedded",
    "invalid_invoice",
    # Signatures: a certificate file (random bytes to a schema, or the sample PDF) that is not a
    # PKCS#12 file or an X.509 certificate; a document without signatures to remove; a field the
    # document has of another type, or signed already; an encrypted document to sign.
    "invalid_certificate",
    "no_signatures",
    "not_a_signature_field",
    "already_signed",
    "encrypted_pdf",
    # An option for another kind of file than the one sent (PDF pages of a Word file).
    "option_not_applicable",
    # The chain holds no token, collection or market at what the request names.
    "not_a_token",
    "not_a_collection",
    "unknown_market",
    # Fields well formed one by one that together break a rule: JSON Schema cannot compare
    # one field with another (a range that ends before it starts or spans more blocks than
    # a call reads, a row of another width than its columns, a step after `protect`, an
    # EIP-712 message that does not fit its types).
    "inconsistent_fields",
    # The result of this document would pass a size or page limit.
    "too_many_pages",
    "output_too_large",
    # The logs a block range matches are more than one call answers.
    "too_many_logs",
}


def _operation(context):
    operation = getattr(context, "operation", None)
    if operation is None:
        return None, None
    raw = operation.definition.raw or {}
    return operation.path, raw


def _choose(accepts, body):
    """A sample type the route accepts, chosen from the case itself (repeatable runs)."""
    offered = [ext for ext in accepts if ext in SAMPLES]
    if not offered:
        return None
    key = zlib.crc32(json.dumps(body, sort_keys=True, default=str).encode())
    return offered[key % len(offered)]


def _is_file(value):
    return (
        isinstance(value, dict)
        and set(value) <= FILE_KEYS
        and any(key in value for key in ("data", "url", "path", "keyring"))
    )


def _replace_files(value, ext):
    if _is_file(value):
        if isinstance(value.get("data"), str):
            value["data"] = SAMPLES[ext]
        if isinstance(value.get("url"), str):
            value["url"] = f"{FILES}/sample.{ext}"
        # This server keeps no file in a keyring (cli/tests/it/kept_files.rs tests kept files).
        value.pop("keyring", None)
        if isinstance(value.get("path"), str) or not any(
            isinstance(value.get(key), str) for key in ("data", "url")
        ):
            # This server grants no folder (its refusal of paths is tested elsewhere), and a
            # file whose every source is null is not one: the sample goes inline instead.
            value.pop("path", None)
            value["data"] = SAMPLES[ext]
        if isinstance(value.get("filename"), str):
            value["filename"] = f"sample.{ext}"
        return
    if isinstance(value, dict):
        for item in value.values():
            _replace_files(item, ext)
    elif isinstance(value, list):
        for item in value:
            _replace_files(item, ext)


# ENS names ENSIP-15 takes as they are: lower-case letters and digits in dot-separated labels.
PLAIN_NAME = re.compile(r"[a-z0-9]+(\.[a-z0-9]+)*")


def _plain_name(value):
    """A plain name of the same length: `aaaa.eth`, or only letters when shorter than that."""
    if PLAIN_NAME.fullmatch(value):
        return value
    length = max(len(value), 1)
    return "a" * (length - 4) + ".eth" if length > 4 else "a" * length


def _eip712_fits(value, schema):
    try:
        content = json.loads(value)
    except ValueError:
        return False
    return jsonschema.Draft202012Validator(schema.get("contentSchema", {})).is_valid(content)


def _eip712(value, schema):
    """`value` when it is JSON fitting the request's shape, else a request padded to its length."""
    if _eip712_fits(value, schema):
        return value
    text = _eip712_text(("Paperchain", 8453, "hello", 1))
    return text + " " * max(0, len(value) - len(text))


FORMAT_VALUES = {
    "ens-name": lambda value, schema: _plain_name(value),
    "eip712-json": _eip712,
    "pdf-password": _pdf_password,
}


def _resolve(schema, spec):
    while isinstance(schema, dict) and "$ref" in schema:
        node = spec
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _string_schema(schema, spec):
    """The schema a string value of this property meets: itself, or its string branch."""
    schema = _resolve(schema, spec)
    if not isinstance(schema, dict):
        return None
    types = schema.get("type")
    if types == "string" or (isinstance(types, list) and "string" in types):
        return schema
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        found = _string_schema(branch, spec)
        if found is not None:
            return found
    return None


def _file_inputs(value, schema, spec, depth=0):
    """The objects of `value` its schema calls a FileInput (every branch of a combinator)."""
    if depth > 40 or not isinstance(schema, dict):
        return
    if schema.get("$ref", "").endswith("/FileInput"):
        if isinstance(value, dict):
            yield value
        return
    schema = _resolve(schema, spec)
    if not isinstance(schema, dict):
        return
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key, []):
            yield from _file_inputs(value, branch, spec, depth + 1)
    for key in ("then", "else"):
        if key in schema:
            yield from _file_inputs(value, schema[key], spec, depth + 1)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                yield from _file_inputs(item, properties[key], spec, depth + 1)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            yield from _file_inputs(item, schema["items"], spec, depth + 1)


def _fill_empty_files(context, body, ext):
    """A file input with no source at all (`{}`, which the coverage phase offers as valid
    though the schema's `oneOf` refuses it) gets the sample inline."""
    spec = context.operation.schema.raw_schema
    raw = context.operation.definition.raw or {}
    media = raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    for file in list(_file_inputs(body, media.get("schema", {}), spec)):
        if not any(isinstance(file.get(key), str) for key in ("data", "url", "path", "keyring")):
            file["data"] = SAMPLES[ext]


def _give_formats_real_values(context, body):
    spec = context.operation.schema.raw_schema
    raw = context.operation.definition.raw or {}
    media = raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    properties = _resolve(media.get("schema", {}), spec).get("properties", {})
    for key, value in body.items():
        if not isinstance(value, str) or key not in properties:
            continue
        schema = _string_schema(properties[key], spec)
        make = FORMAT_VALUES.get((schema or {}).get("format"))
        if make is not None:
            body[key] = make(value, schema)


@schemathesis.hook
def map_case(context, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or not isinstance(case.body, dict):
        return case
    path, raw = _operation(context)
    if path is None:
        return case
    _give_formats_real_values(context, case.body)
    accepts = raw.get("x-accepts")
    if accepts:
        # A request that names its document's type (to-markdown's `format`) gets that type.
        named = case.body.get("format")
        ext = named if isinstance(named, str) and named in accepts and named in SAMPLES else _choose(accepts, case.body)
        if ext is not None:
            _replace_files(case.body, ext)
            _fill_empty_files(context, case.body, ext)
    if path == "/v1/pdf/sign":
        # No time-stamp authority answers here; engine/tests/it/pdf_sign.rs signs with a real one.
        case.body.pop("timestamp_url", None)
    if path in URL_ROUTES and isinstance(case.body.get("url"), str):
        case.body["url"] = f"{FILES}/sample.{URL_ROUTES[path]}"
    return case


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """False drops the failure: only a content refusal of a schema-valid request."""
    if not isinstance(failure, RejectedPositiveData) or response.status_code not in (413, 422):
        return True
    try:
        code = json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return True
    return code not in CONTENT_CODES
