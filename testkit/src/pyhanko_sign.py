"""Signs a PDF with pyHanko, in an incremental update, and prints "ok".

Usage: pyhanko_sign.py IN.pdf OUT.pdf P12 PASSWORD [--field NAME] [--tsa URL]
                       [--visible PAGE,X1,Y1,X2,Y2] [--pades]

The key and certificates come from the PKCS#12 file (its other certificates go into the
signature). --field names the signature field: an empty one is filled, else one is added
(by default the first free SignatureN). --tsa adds a signature time stamp from that RFC 3161
URL. --visible puts the field on page PAGE (1 for the first) in that box, in points; else
it is invisible. --pades signs as ETSI.CAdES.detached, else as adbe.pkcs7.detached. SHA-256.
"""

import argparse
import sys
import warnings

# cryptography warns that DSA is deprecated when pyHanko imports it.
warnings.simplefilter("ignore")

from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter  # noqa: E402
from pyhanko.sign import fields, signers, timestamps  # noqa: E402


def free_field_name(writer):
    taken = {name for name, _, _ in fields.enumerate_sig_fields(writer)}
    n = 1
    while f"Signature{n}" in taken:
        n += 1
    return f"Signature{n}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("p12")
    parser.add_argument("password")
    parser.add_argument("--field")
    parser.add_argument("--tsa")
    parser.add_argument("--visible")
    parser.add_argument("--pades", action="store_true")
    args = parser.parse_args()

    signer = signers.SimpleSigner.load_pkcs12(args.p12, passphrase=args.password.encode())
    if signer is None:
        sys.exit(f"could not load {args.p12} with that password")
    timestamper = timestamps.HTTPTimeStamper(args.tsa) if args.tsa else None

    with open(args.input, "rb") as data:
        writer = IncrementalPdfFileWriter(data)
        field = args.field or free_field_name(writer)
        spec = None
        if args.visible:
            page, *box = (int(float(v)) for v in args.visible.split(","))
            spec = fields.SigFieldSpec(field, on_page=page - 1, box=tuple(box))
        subfilter = fields.SigSeedSubFilter.PADES if args.pades else fields.SigSeedSubFilter.ADOBE_PKCS7_DETACHED
        meta = signers.PdfSignatureMetadata(field_name=field, md_algorithm="sha256", subfilter=subfilter)
        with open(args.output, "wb") as out:
            signers.sign_pdf(writer, meta, signer, timestamper=timestamper, new_field_spec=spec, output=out)
    print("ok")


main()
