"""Validates every signature of a PDF with pyHanko and prints, as JSON, what it found.

Usage: pyhanko_validate.py PDF [--root ROOT.pem ...] [--at ISO8601]

Trusted are only the --root certificates (none: nothing is trusted, never the system's
list); nothing is fetched and missing revocation information is no failure. --at validates
at that time instead of now. Signature time stamps are checked with the same roots.

Prints {"signatures": [...]} in signing order, one object per signature or document time
stamp (see describe below); a signature pyHanko fails on has "error" and false flags. A file
pyHanko cannot read prints {"error": "..."}. Exits 0 either way.
"""

import argparse
import json
import sys
import warnings
from datetime import datetime, timezone

# cryptography warns that DSA is deprecated when pyHanko imports it.
warnings.simplefilter("ignore")

from cryptography import x509  # noqa: E402
from pyhanko.keys import load_cert_from_pemder  # noqa: E402
from pyhanko.pdf_utils.reader import PdfFileReader  # noqa: E402
from pyhanko.sign.validation import validate_pdf_signature, validate_pdf_timestamp  # noqa: E402
from pyhanko_certvalidator import ValidationContext  # noqa: E402


def iso(moment):
    return None if moment is None else moment.astimezone(timezone.utc).isoformat()


def name(value):
    return None if value is None else value.name


def signer(cert):
    return {
        "common_name": cert.subject.native.get("common_name"),
        "subject": x509.load_der_x509_certificate(cert.dump()).subject.rfc4514_string(),
    }


def describe(sig, status, kind):
    ts = getattr(status, "timestamp_validity", None)
    if kind == "doc_timestamp":
        signing_time = status.timestamp
    else:
        signing_time = status.signer_reported_dt
    return {
        "field": sig.field_name,
        "type": kind,
        "signer": signer(status.signing_cert),
        "intact": status.intact,
        "valid": status.valid,
        "trusted": status.trusted,
        "trust_problem": name(status.trust_problem_indic),
        "coverage": name(status.coverage),
        "modification_level": name(status.modification_level),
        "docmdp_ok": status.docmdp_ok,
        "signing_time": iso(signing_time),
        "timestamp": None
        if ts is None
        else {"time": iso(ts.timestamp), "intact": ts.intact, "valid": ts.valid, "trusted": ts.trusted},
        "subfilter": str(sig.sig_object.get("/SubFilter")),
        "md_algorithm": status.md_algorithm,
        "summary": status.summary(),
        "bottom_line": status.bottom_line,
    }


def failed(sig, error):
    return {
        "field": sig.field_name,
        "error": f"{type(error).__name__}: {error}",
        "intact": False,
        "valid": False,
        "trusted": False,
        "bottom_line": False,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pdf")
    parser.add_argument("--root", action="append", default=[])
    parser.add_argument("--at")
    args = parser.parse_args()

    roots = [load_cert_from_pemder(path) for path in args.root]
    moment = None
    if args.at:
        moment = datetime.fromisoformat(args.at)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)

    try:
        data = open(args.pdf, "rb")
        signatures = PdfFileReader(data).embedded_signatures
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return

    found = []
    for sig in signatures:
        context = ValidationContext(
            trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail", moment=moment
        )
        try:
            if sig.sig_object_type == "/DocTimeStamp":
                found.append(describe(sig, validate_pdf_timestamp(sig, context), "doc_timestamp"))
            else:
                found.append(describe(sig, validate_pdf_signature(sig, context, context), "signature"))
        except Exception as error:
            found.append(failed(sig, error))
    json.dump({"signatures": found}, sys.stdout, indent=1)
    print()


main()
