#!/usr/bin/env python3
"""scripts/gen_unicode.py - writes lib/text/unicode_data.c, the character
tables of lib/text/tokenize.c (FTS5's unicode61 tokenizer, default
categories "L* N* Co").

    python3 scripts/gen_unicode.py > lib/text/unicode_data.c

Run it again only to change the tables; the output is committed.

What the tokenizer needs to know about a code point, and where it comes from
--------------------------------------------------------------------------
unicode61 classifies with the Unicode 6.1 character database, so the tables
describe Unicode 6.1, built from this machine's newer data:

  - Python's unicodedata (Unicode 14.0.0 with Python 3.11): general
    category, canonical decomposition, case folding;
  - Perl's Unicode::UCD (same Unicode version, package perl-modules):
    which code points were already assigned in Unicode 6.1 (the Age
    property), because Python has no Age.

Token characters.  A code point below U+100000 is a token character when
its Unicode 6.1 category is a letter (L*), a number (N*) or private use
(Co), or when Unicode 6.1 did not list it at all (unassigned code points,
noncharacters): unicode61 gives those its "no category" class, which every
category list it parses turns on.  U+100000 and above (and the values
above U+10FFFF that unicode61's decoder can produce) are token characters
too, for the same reason; lib/text/unicode.h tests them without a table.

Case folding: Unicode's simple case folding (CaseFolding.txt status C and
S) of code points assigned in 6.1, applied only in the BMP and to the one
astral script with case in 6.1 (Deseret), as unicode61 does.  Python has no
simple folding; it is str.casefold() when that is one character, else
str.lower() when that is one character (the S entries: U+1E9E, the Greek
capitals with prosgegrammeni), else none (U+0130 has only F and T).

Diacritics.  A lower-case letter whose canonical decomposition is exactly
<base, mark> maps to an ASCII letter when base is one ("direct", e.g. U+00E9
= e + U+0301), or when base is itself such a letter and mark was already
seen as the mark of one ("indirect", two or more marks, e.g. U+1ED9),
scanning code points upwards.  remove_diacritics=1 applies direct mappings
only, =2 both.  The marks seen are the "diacritics": they stay inside a
token although they are not token characters, and are dropped when
remove_diacritics is 1 or 2.  Letters with a case folding are skipped (the
tokenizer folds before it removes diacritics).

Where the Unicode 14.0 data differs from 6.1 for characters 6.1 already had,
CATEGORY_61 below holds the 6.1 category; test/sql/test_tokenize.py compares
every code point with FTS5 in the host's SQLite and finds any other.
"""
import subprocess
import sys
import unicodedata

# Characters assigned in 6.1 whose general category changed by Unicode 14.0
# across the token / separator line (only those matter here).  Found by
# test/sql/test_tokenize.py's sweep of every code point against FTS5.
CATEGORY_61 = {
    0x1885: "Lo", 0x1886: "Lo",  # Mongolian ali gali baluda: Mn since 9.0
    # New Tai Lue vowel signs and tone marks: Lo since 8.0
    **{cp: "Mc" for cp in list(range(0x19B0, 0x19C1)) + [0x19C8, 0x19C9]},
    0x1CF2: "Mc", 0x1CF3: "Mc",  # Vedic ardhavisarga: Lo since 10.0
}


def assigned_61():
    """The Unicode 6.1 code points as a set of ranges, from Perl's Age data."""
    out = subprocess.run(
        ["perl", "-MUnicode::UCD=prop_invlist", "-e",
         'print Unicode::UCD::UnicodeVersion(), "\\n", join(" ", prop_invlist("In=6.1")), "\\n"'],
        check=True, capture_output=True, text=True).stdout.split("\n")
    perl_version, inv = out[0], [int(x) for x in out[1].split()]
    if perl_version != unicodedata.unidata_version:
        sys.exit("gen_unicode: Perl has Unicode %s, Python %s: use the same version"
                 % (perl_version, unicodedata.unidata_version))
    if len(inv) % 2:
        inv.append(0x110000)
    return [(inv[i], inv[i + 1]) for i in range(0, len(inv), 2)]


def in_ranges(ranges):
    flags = bytearray(0x110000)
    for a, b in ranges:
        flags[a:b] = b"\x01" * (b - a)
    return flags


def category(cp, old):
    if not old[cp]:
        return None  # not in Unicode 6.1
    if cp in CATEGORY_61:
        return CATEGORY_61[cp]
    return unicodedata.category(chr(cp))


def simple_fold(cp):
    c = chr(cp)
    f = c.casefold()
    if len(f) == 1:
        return ord(f)
    lo = c.lower()
    return ord(lo) if len(lo) == 1 else cp


def build():
    old = in_ranges(assigned_61())

    # token characters below U+100000: 1 bit each
    tok = bytearray(0x100000)
    for cp in range(0x100000):
        cat = category(cp, old)
        if cat is None or cat == "Cn" or cat[0] in "LN" or cat == "Co":
            tok[cp] = 1
    for cp in range(0x80):  # ASCII: letters and digits only
        assert tok[cp] == (chr(cp).isascii() and chr(cp).isalnum() and cp > 0) or cp == 0

    # simple case folding of 6.1 characters (to 6.1 characters)
    fold = {}
    for cp in range(0x110000):
        if not old[cp] or 0xD800 <= cp < 0xE000:
            continue
        f = simple_fold(cp)
        if f != cp and old[f]:
            fold[cp] = f
    bmp_fold = {c: f for c, f in fold.items() if c < 0x10000}
    astral = sorted(c for c in fold if c >= 0x10000)
    # astral folds as runs with one delta each
    runs = []
    for c in astral:
        d = fold[c] - c
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == d:
            runs[-1][1] = c
        else:
            runs.append([c, c, d])

    # diacritics, scanning upwards as described above
    dia = {}        # code point -> (ascii letter, indirect)
    base_of = {}    # code point -> its ASCII letter
    marks = set()
    for cp in range(0x110000):
        if not old[cp] or cp in fold:
            continue
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) != 2:
            continue
        base, mark = parts
        indirect = 0
        if mark in marks and base in base_of:
            base = base_of[base]
            indirect = 1
        if 0x41 <= base <= 0x5A or 0x61 <= base <= 0x7A:
            dia[cp] = (chr(base).lower(), indirect)
            base_of[cp] = base
            marks.add(mark)
    return tok, bmp_fold, runs, dia, marks


def two_level(values, block, empty):
    """Split values into blocks of `block` entries; identical blocks shared.
    Returns (index per block, list of distinct blocks); block 0 is `empty`."""
    blocks = [tuple([empty] * block)]
    where = {blocks[0]: 0}
    index = []
    for i in range(0, len(values), block):
        b = tuple(values[i:i + block])
        if b not in where:
            where[b] = len(blocks)
            blocks.append(b)
        index.append(where[b])
    return index, blocks


def c_array(decl, items, per_line, fmt):
    out = [decl + " = {"]
    for i in range(0, len(items), per_line):
        out.append("  " + ", ".join(fmt(x) for x in items[i:i + per_line]) + ",")
    out.append("};")
    return "\n".join(out)


def index_type(n):
    return "uint8_t" if n <= 256 else "uint16_t"


def main():
    tok, bmp_fold, runs, dia, marks = build()

    # token bits: 256 code points (32 bytes) a block
    bits = bytearray(0x100000 // 8)
    for cp in range(0x100000):
        if tok[cp]:
            bits[cp >> 3] |= 1 << (cp & 7)
    tok_index, tok_blocks = two_level(list(bits), 32, 0)

    deltas = [(bmp_fold.get(c, c) - c) & 0xFFFF for c in range(0x10000)]
    fold_index, fold_blocks = two_level(deltas, 256, 0)

    dia_limit = (max(max(dia), max(marks)) // 256 + 1) * 256
    codes = [0] * dia_limit
    for m in marks:
        codes[m] = 1
    for cp, (ch, indirect) in dia.items():
        codes[cp] = ord(ch) | (0x80 if indirect else 0)
    dia_index, dia_blocks = two_level(codes, 256, 0)

    p = print
    p("/*")
    p("** lib/text/unicode_data.c - GENERATED by scripts/gen_unicode.py; do not edit.")
    p("**")
    p("** Unicode 6.1 as FTS5's unicode61 tokenizer sees it, built from Python's")
    p("** unicodedata %s and Perl's Unicode::UCD Age data; the script says how." % unicodedata.unidata_version)
    p("** Read through lib/text/unicode.h.")
    p("*/")
    p('#include "text/unicode.h"')
    p("")
    p("/* Token characters below U+100000: bit (c & 7) of byte (c >> 3) & 31 of")
    p("** block text_uc_tok_index[c >> 8] (%d distinct blocks). */" % len(tok_blocks))
    p(c_array("const %s text_uc_tok_index[4096]" % index_type(len(tok_blocks)),
              tok_index, 16, str))
    p(c_array("const uint8_t text_uc_tok_bits[%d][32]" % len(tok_blocks),
              tok_blocks, 1, lambda b: "{" + ",".join("0x%02x" % x for x in b) + "}"))
    p("")
    p("/* Simple case folding in the BMP: fold(c) = (c + delta) & 0xFFFF, delta from")
    p("** block text_uc_fold_index[c >> 8] (%d distinct blocks); %d code points. */"
      % (len(fold_blocks), len(bmp_fold)))
    p(c_array("const %s text_uc_fold_index[256]" % index_type(len(fold_blocks)),
              fold_index, 16, str))
    p(c_array("const uint16_t text_uc_fold_delta[%d][256]" % len(fold_blocks),
              fold_blocks, 1, lambda b: "{" + ",".join(str(x) for x in b) + "}"))
    p("")
    p("/* Case folding above the BMP: runs of code points with one delta. */")
    p(c_array("const text_uc_run text_uc_fold_astral[%d]" % len(runs), runs, 1,
              lambda r: "{0x%X, 0x%X, %d}" % tuple(r)))
    p("const int text_uc_fold_nastral = %d;" % len(runs))
    p("")
    p("/* Diacritics below U+%04X: 0 none, 1 a combining mark (kept inside a token,"
      % dia_limit)
    p("** dropped by remove_diacritics 1 and 2), an ASCII letter (what 1 and 2 map")
    p("** the code point to), or 0x80 | letter (2 only: two or more marks).")
    p("** %d letters, %d marks, %d distinct blocks. */" % (len(dia), len(marks), len(dia_blocks)))
    p(c_array("const %s text_uc_dia_index[%d]" % (index_type(len(dia_blocks)), dia_limit // 256),
              dia_index, 16, str))
    p(c_array("const uint8_t text_uc_dia[%d][256]" % len(dia_blocks), dia_blocks, 1,
              lambda b: "{" + ",".join(str(x) for x in b) + "}"))
    p("_Static_assert(sizeof text_uc_dia_index * 256 == TEXT_UC_DIA_LIMIT,")
    p('               "TEXT_UC_DIA_LIMIT in lib/text/unicode.h must be 0x%X");' % dia_limit)
    p("")
    p("/* checked by test_text: the generator's counts */")
    p("const int text_uc_nfold = %d, text_uc_ndia = %d, text_uc_nmark = %d;"
      % (len(bmp_fold) + sum(r[1] - r[0] + 1 for r in runs), len(dia), len(marks)))
    sys.stderr.write("gen_unicode: tok %d blocks, fold %d blocks, dia %d blocks (limit U+%04X), "
                     "%d marks, %d astral fold runs\n"
                     % (len(tok_blocks), len(fold_blocks), len(dia_blocks), dia_limit,
                        len(marks), len(runs)))


if __name__ == "__main__":
    main()
