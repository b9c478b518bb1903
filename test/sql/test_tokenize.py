"""h5mem_tokenize against FTS5 itself: the unicode61 and porter tokenizers of
the SQLite that this Python's sqlite3 module runs (3.40.1 on Debian 12).

The oracle calls FTS5's tokenizers directly, through its C API (fts5_api,
reached with SELECT fts5(?) and sqlite3_bind_pointer, via ctypes on the
very library the sqlite3 module loaded), so it sees every token with its
byte offsets, for any input bytes, before the index truncates or merges
anything.  A first check confirms that this oracle agrees with what FTS5
indexes (an fts5vocab 'instance' table over the corpus).

Compared, token for token and offset for offset, with remove_diacritics
0, 1 and 2, with and without porter:
  - every code point of planes 0, 1, 2 and 14 (surrogates included, as
    the bytes ED A0 80...) and a sample of the others, alone and after a
    letter: classes, case folding, diacritic removal, which marks continue
    a token;
  - malformed UTF-8: every lead byte with 0..6 continuation bytes of
    several values, lone continuation bytes, truncations at the end;
  - a multilingual corpus (English, French, German, Vietnamese, Polish,
    Turkish, Greek, Russian, Arabic, Hebrew, Hindi, Thai, Chinese, Japanese,
    Korean, emoji, code, numbers) and English morphology for the stemmer;
  - thousands of random strings from a broad character mix with invalid
    bytes spliced in, and long tokens (300 B to 40 KB).
Tokens that are not valid UTF-8 are compared the way h5mem_tokenize prints
them: each maximal invalid subpart as U+FFFD (Python's 'replace' rule).

Also: options and errors of h5mem_tokenize; h5mem_embed_text (float32
subtype, unit norm, determinism, errors).

Run by make check with Debian's /usr/bin/python3.
"""
import ctypes
import json
import math
import os
import random
import sqlite3
import struct
import sys

import _sqlite3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, failures, finish  # noqa: E402

SEED = int(os.environ.get("H5MEM_TEST_SEED", "20261129"), 0)
print("seed", SEED)

# ------------------------------------------------------------------ oracle

XTOKEN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                          ctypes.c_int, ctypes.c_int, ctypes.c_int)


class Fts5Tokenizer(ctypes.Structure):
    _fields_ = [
        ("xCreate", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                     ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))),
        ("xDelete", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
        ("xTokenize", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_char_p, ctypes.c_int, XTOKEN)),
    ]


class Fts5Api(ctypes.Structure):
    _fields_ = [
        ("iVersion", ctypes.c_int),
        ("xCreateTokenizer", ctypes.c_void_p),
        ("xFindTokenizer", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(Fts5Tokenizer))),
        ("xCreateFunction", ctypes.c_void_p),
    ]


class Fts5:
    """FTS5's own tokenizers, called directly."""

    def __init__(self):
        # the SQLite library the sqlite3 module runs (symbols resolve through
        # the module's dependencies, whether it links SQLite or embeds it)
        lib = ctypes.CDLL(_sqlite3.__file__)
        lib.sqlite3_libversion.restype = ctypes.c_char_p
        version = lib.sqlite3_libversion().decode()
        if version != sqlite3.sqlite_version:
            raise SystemExit("oracle: ctypes found SQLite %s, the sqlite3 module runs %s"
                             % (version, sqlite3.sqlite_version))
        self.version = version
        lib.sqlite3_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.sqlite3_prepare_v2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        lib.sqlite3_bind_pointer.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                             ctypes.c_char_p, ctypes.c_void_p]
        lib.sqlite3_step.argtypes = [ctypes.c_void_p]
        lib.sqlite3_finalize.argtypes = [ctypes.c_void_p]
        self.db = ctypes.c_void_p()
        if lib.sqlite3_open(b":memory:", ctypes.byref(self.db)):
            raise SystemExit("oracle: sqlite3_open failed")
        stmt = ctypes.c_void_p()
        if lib.sqlite3_prepare_v2(self.db, b"SELECT fts5(?1)", -1, ctypes.byref(stmt), None):
            raise SystemExit("oracle: this SQLite has no FTS5")
        papi = ctypes.POINTER(Fts5Api)()
        lib.sqlite3_bind_pointer(stmt, 1, ctypes.addressof(papi), b"fts5_api_ptr", None)
        lib.sqlite3_step(stmt)
        lib.sqlite3_finalize(stmt)
        if not papi:
            raise SystemExit("oracle: no fts5_api pointer")
        self.lib = lib
        self.api = papi.contents
        self.toks = {}

    def tokenizer(self, rd, porter):
        key = (rd, porter)
        if key not in self.toks:
            args = [b"remove_diacritics", str(rd).encode()]
            name = b"unicode61"
            if porter:
                name, args = b"porter", [b"unicode61"] + args
            ud = ctypes.c_void_p()
            t = Fts5Tokenizer()
            if self.api.xFindTokenizer(ctypes.addressof(self.api), name, ctypes.byref(ud), ctypes.byref(t)):
                raise SystemExit("oracle: no %s tokenizer" % name)
            argv = (ctypes.c_char_p * len(args))(*args)
            h = ctypes.c_void_p()
            if t.xCreate(ud, argv, len(args), ctypes.byref(h)):
                raise SystemExit("oracle: cannot create %s %r" % (name, args))
            self.toks[key] = (t, h)
        return self.toks[key]

    def tokenize(self, data, rd=1, porter=False):
        """[(token bytes, start, end)] for the bytes data."""
        t, h = self.tokenizer(rd, porter)
        out = []

        def cb(ctx, flags, p, n, s, e):
            out.append((ctypes.string_at(p, n), s, e))
            return 0

        rc = t.xTokenize(h, None, 0, data, len(data), XTOKEN(cb))
        if rc:
            raise SystemExit("oracle: xTokenize returned %d" % rc)
        return out


def shown(tok):
    """A token as h5mem_tokenize prints it."""
    return tok.decode("utf-8", "replace")


# ------------------------------------------------------------- comparisons

fts = Fts5()
print("oracle: FTS5 of SQLite", fts.version)
db = connect()
MODES = [(rd, p) for p in (False, True) for rd in (0, 1, 2)]


def ours(data, rd, porter):
    opts = json.dumps({"remove_diacritics": rd, "porter": porter, "offsets": True})
    (r,) = db.execute("SELECT h5mem_tokenize(CAST(? AS TEXT), ?)", (data, opts)).fetchone()
    return [(t, s, e) for t, s, e in json.loads(r)]


def compare(data, rd, porter, what):
    """One input: our tokens and offsets must equal FTS5's.  True if equal."""
    want = [(shown(t), s, e) for t, s, e in fts.tokenize(data, rd, porter)]
    got = ours(data, rd, porter)
    if got == want:
        return True
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    check(False, "%s rd=%d porter=%d: token %d differs: ours %r, FTS5 %r (input %r)"
          % (what, rd, porter, i, got[i:i + 3], want[i:i + 3], data[:120]))
    return False


def enc(cp):
    """cp as UTF-8 bytes, surrogates included."""
    if cp < 0x80:
        return bytes([cp])
    if cp < 0x800:
        return bytes([0xC0 | cp >> 6, 0x80 | cp & 63])
    if cp < 0x10000:
        return bytes([0xE0 | cp >> 12, 0x80 | cp >> 6 & 63, 0x80 | cp & 63])
    return bytes([0xF0 | cp >> 18, 0x80 | cp >> 12 & 63, 0x80 | cp >> 6 & 63, 0x80 | cp & 63])


def sweep():
    """Every code point of planes 0 to 2 and 14, alone and after "a"; in
    planes 3 to 13, 15 and 16 (unassigned in Unicode 6.1, or private use:
    one class each, without case) the first and last of every 256 and every
    61st.  In slices: a failure names the first differing token of its
    slice."""
    cps = [cp for cp in range(0x110000)
           if cp < 0x30000 or 0xE0000 <= cp < 0xF0000 or cp % 61 == 0 or cp % 256 in (0, 255)]
    step = 0x4000
    for rd in (0, 1, 2):
        bad = 0
        for k in range(0, len(cps), step):
            part = cps[k:k + step]
            data = b"".join(b"a" + enc(cp) + b" " + enc(cp) + b" " for cp in part)
            if not compare(data, rd, False, "code points U+%04X..U+%04X" % (part[0], part[-1])):
                bad += 1
                if bad > 5:
                    break


def malformed():
    """Lead bytes with 0..6 continuation bytes, alone, before a letter and
    at the end of the input; lone continuation bytes."""
    conts = [0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xAA, 0xB5, 0xBF]
    rng = random.Random(SEED)
    pieces = []
    for lead in range(0x80, 0x100):
        for k in range(0, 7):
            for _ in range(4 if k else 1):
                pieces.append(bytes([lead] + [rng.choice(conts) for _ in range(k)]))
    for rd in (0, 1, 2):
        for sep in (b" ", b"x", b"\xcc\x81"):
            data = b"".join(b"a" + p + sep + p + b"b " for p in pieces)
            compare(data, rd, False, "malformed UTF-8 (separator %r)" % sep)
        for p in pieces:
            if not compare(b"a" + p, rd, False, "malformed at the end"):
                break
        # long runs of continuation bytes: the value wraps at 32 bits
        for lead in (0xC2, 0xE1, 0xF1, 0xF7, 0xFB, 0xFD, 0xFF):
            for k in (7, 8, 12, 40):
                data = bytes([lead] + [rng.choice(conts) for _ in range(k)])
                compare(b"x" + data + b"y " + data, rd, False, "long sequence")


CORPUS = [
    "The quick brown fox jumps over the lazy dog's back; it's 3.14159, 1,000,000 and v2.0-rc1.",
    "Connection pooling, generalizations and relational databases: conditionally hopeful "
    "adjustments; ponies, caresses, agreed, plastered, motoring, hopping, tanned, falling.",
    "E-mail: alice.smith+tag@example.org, https://example.com/path?q=a_b&x=1#frag, snake_case_id, "
    "CamelCaseName, __init__, 0xDEADBEEF, 2024-01-31T12:34:56Z, #hashtag @mention $VAR",
    "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë au delà des îles, "
    "près du mälström où brûlent les novæ.",
    "Falsches Üben von Xylophonmusik quält jeden größeren Zwerg. Straße, STRASSE, Maß, ẞ.",
    "Tiếng Việt có dấu: Người ta thường nói rằng ếch ngồi đáy giếng; ỷ ở ữ ặ ệ ộ ợ ự.",
    "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
    "Pijamalı hasta yağız şoföre çabucak güvendi. İSTANBUL, ıstanbul, İi Iı.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΣΊΣΥΦΟΣ σίσυφος, ὁ ἄνθρωπος ᾧ ᾅδης ΆΈΉΊΌΎΏ ΐΰ.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю. ЁЖ Ёж ёж, Ўў Ґґ Її.",
    "نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق ١٢٣ ٤٥٦",
    "עטלף אבק נס דרך מזגן שהתפוצץ כי חם. בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम ०१२३",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
    "我能吞下玻璃而不伤身体。天地玄黄，宇宙洪荒。𠀀𠀁𪚥 ＡＢＣ１２３ｱｲｳ",
    "いろはにほへと ちりぬるを わかよたれそ つねならむ カタカナ ｶﾀｶﾅ 日本語の文章です。",
    "키스의 고유조건은 입술끼리 만나야 하고 특별한 기술은 필요치 않다. ㄱㄴㄷ",
    "Emoji: 😀😃 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇩🇪 ❤️ ☕ 🦀 🧑‍💻 1️⃣ ©®™ ✓ ★",
    "Math: ∑ᵢ xᵢ² ≤ ∞, α+β=γ, ½ ¾ ⅔ ² ³ ¹ ⁴ ₀ ₁, ℃ ℉ Ω Å K, Ⅻ ⅻ ① ⓐ Ⓐ",
    "Private use: \ue000\ue001 \uf8ff x\U000f0000y \U0010fffd; specials \ufffd \ufeff zero\u200bwidth "
    "nb\u00a0sp soft\u00adhyphen",
    "Diacritics alone: a\u0300 e\u0301 o\u0302\u0303 n\u0303 c\u0327 A\u030a u\u0308\u0304 "
    "x\u0305 q\u0331 \u0301start i\u0307 \u0345",
    "ǅungla ǈubav ǋovo Ǳ ǲ ǳ ǆ, ﬁne ﬂow ﬀ, ŉ ſ ẛ ß ẞ µ Μ, Ꭰ ꭰ Ᏸ ᏸ, Ⴀ ⴀ Ა, Ǆ.",
    "Deseret: 𐐀𐐁𐐂 𐐨𐐩𐐪; Osage 𐒰𐓘; Adlam 𞤀𞤢; Old Italic 𐌀𐌁.",
    "Numbers: 42 ٤٢ ४२ ４２ 𝟒𝟐 ⑷ ⒋ ㊷ Ⅳ ↂ 〇 三 ፬ ༤",
    "wrapping caresses ties cries happy sky relational conditional valenci digitizer "
    "radicalli differentli vietnamization predication operator feudalism decisiveness "
    "hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize "
    "electriciti electrical goodness revival allowance inference airliner gyroscopic "
    "adjustable defensible irritant replacement adjustment dependent adoption homologou "
    "communism activate angulariti homologous effective bowdlerize probate rate cease "
    "controll roll generalization oscillators yyed ated bled sized filing fizzed",
    "cafés naïvely réalisations généralisation Überlegungen a\u438eed a\u438eing",
]

ENGLISH_STEMS = ["connect", "relat", "condit", "hope", "motor", "plaster", "agre", "cat",
                 "pony", "fly", "sky", "happ", "sens", "electr", "form", "general", "nation",
                 "oper", "adjust", "depend", "activ", "effect", "control", "roll", "fizz",
                 "hop", "tan", "fail", "fil", "siz", "troubl", "conflat", "bl", "at", "y",
                 "by", "yy", "ab", "oat", "sing", "feed", "bee", "caress", "rat", "ceas",
                 "box", "fix", "tax", "snow", "play", "toy", "row", "rel", "hiss", "buzz"]
ENGLISH_SUFFIXES = ["", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "ly", "y", "ational",
                    "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli",
                    "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness",
                    "ousness", "aliti", "iviti", "biliti", "icate", "ative", "alize", "iciti",
                    "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible",
                    "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism", "ate",
                    "iti", "ous", "ive", "ize", "e", "ll", "atings", "izations", "fulnesses"]


def pseudo_words(rng, count):
    """Words of random letters (English-like letter weights, doubled letters,
    y, w, x, l, s, z) with a suffix of the stemmer's lists: every rule and
    condition of the stemmer, many times."""
    letters = "aeiouy" * 3 + "bcdfghklmnprstvwxz" * 2 + "lsz" * 2
    words = []
    for _ in range(count):
        w = "".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
        if rng.random() < 0.3:
            w += w[-1]
        words.append(w + rng.choice(ENGLISH_SUFFIXES) + rng.choice(["", "", "s", "ed", "ing", "ly"]))
    return words


def corpus():
    docs = [s.encode() for s in CORPUS]
    rng = random.Random(SEED + 1)
    words = [s + x for s in ENGLISH_STEMS for x in ENGLISH_SUFFIXES] + pseudo_words(rng, 20000)
    rng.shuffle(words)
    for i in range(0, len(words), 200):
        docs.append(" ".join(words[i:i + 200]).encode())
    # long tokens: past the 256-byte stack buffer, past porter's 64 bytes
    docs.append(b"x" * 63 + b"ing " + b"y" * 64 + b"ed " + b"Ab" * 150 + b"ational")
    docs.append(("É" * 2000 + " " + "a\u0301" * 3000 + " " + "漢" * 13400).encode())
    for rd, porter in MODES:
        for d in docs:
            compare(d, rd, porter, "corpus")
    return docs


def vocab_agrees(docs):
    """The oracle against what FTS5 indexes: the terms of each document at
    each position, from an fts5vocab 'instance' table."""
    con = sqlite3.connect(":memory:")
    con.text_factory = bytes
    for rd, porter in MODES:
        tok = ("porter unicode61" if porter else "unicode61") + " remove_diacritics %d" % rd
        con.execute("DROP TABLE IF EXISTS t")
        con.execute("DROP TABLE IF EXISTS v")
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize=%r)" % tok)
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        for i, d in enumerate(docs, 1):
            con.execute("INSERT INTO t(rowid, x) VALUES (?, ?)", (i, d.decode()))
        terms = {}
        for term, doc, offset in con.execute("SELECT term, doc, offset FROM v"):
            terms.setdefault(doc, {})[offset] = term
        for i, d in enumerate(docs, 1):
            idx = terms.get(i, {})
            indexed = [idx[k] for k in sorted(idx)]
            direct = [t[:32768] for t, _, _ in fts.tokenize(d, rd, porter)]
            check(indexed == direct, "oracle vs fts5vocab, doc %d rd=%d porter=%d: %r vs %r"
                  % (i, rd, porter, indexed[:5], direct[:5]))


# the character mix of the random strings: (weight, code point ranges)
POOLS = [
    (20, [(0x20, 0x7E)]),                                     # ASCII
    (3, [(0x00, 0x1F), (0x7F, 0x7F)]),                        # controls
    (10, [(0xA0, 0xFF), (0x100, 0x24F), (0x1E00, 0x1EFF)]),   # Latin with diacritics
    (6, [(0x300, 0x36F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF)]),  # marks
    (6, [(0x370, 0x3FF), (0x1F00, 0x1FFF)]),                  # Greek
    (6, [(0x400, 0x52F), (0x1C80, 0x1C8F)]),                  # Cyrillic
    (3, [(0x530, 0x58F), (0x10A0, 0x10FF), (0x1C90, 0x1CBF), (0x13A0, 0x13FF), (0xAB70, 0xABBF)]),
    (4, [(0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1CD0, 0x1CFF)]),  # RTL, Indic, Thai
    (8, [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7A3), (0x20000, 0x2A6DF), (0x30000, 0x3134F)]),
    (6, [(0x1F300, 0x1FAFF), (0x2600, 0x27BF), (0x1F1E6, 0x1F1FF), (0x1F3FB, 0x1F3FF),
         (0x200D, 0x200D), (0xFE0F, 0xFE0F)]),                # emoji
    (5, [(0x2000, 0x206F), (0x3000, 0x303F), (0xFF00, 0xFFEF), (0x2100, 0x218F), (0x2460, 0x24FF)]),
    (4, [(0x660, 0x669), (0x966, 0x96F), (0xFF10, 0xFF19), (0x1D7CE, 0x1D7FF), (0xB2, 0xB3)]),
    (3, [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]),   # private use
    (2, [(0xFFF0, 0xFFFF), (0xFDD0, 0xFDEF), (0x1FFFE, 0x1FFFF)]),       # specials
    (3, [(0x10400, 0x1044F), (0x104B0, 0x104FF), (0x1E900, 0x1E95F), (0x16E40, 0x16E9F)]),
    (3, [(0x80, 0x10FFFF)]),                                  # anything
]
INVALID = [b"\x80", b"\xaa", b"\xb5", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc3", b"\xe2\x82",
           b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xef\xbf\xbe", b"\xef\xbf\xbf", b"\xf4\x90\x80\x80",
           b"\xf7\xbf\xbf\xbf", b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80", b"\xfe",
           b"\xff", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xc2\x80\x80\x80"]


def random_strings(count):
    rng = random.Random(SEED + 2)
    weights = [w for w, _ in POOLS]
    inputs = []
    for _ in range(count):
        out = []
        for _ in range(rng.randint(1, 40)):
            r = rng.random()
            if r < 0.04:
                out.append(rng.choice(INVALID))
            elif r < 0.06:
                out.append(bytes([rng.randint(0x80, 0xFF)]))
            elif r < 0.16:
                out.append(b" ")
            else:
                ranges = rng.choices(POOLS, weights)[0][1]
                a, b = rng.choice(ranges)
                out.append(enc(rng.randint(a, b)))
        inputs.append(b"".join(out))
    # one comparison per mode over all inputs joined by newlines (separators
    # both ways), then the failing inputs alone
    for rd, porter in MODES:
        if not compare(b"\n".join(inputs), rd, porter, "random strings"):
            for s in inputs:
                if not compare(s, rd, porter, "random string"):
                    break


def options_and_errors():
    def tok(sql, *args):
        return db.execute(sql, args).fetchone()[0]

    check(tok("SELECT h5mem_tokenize('Hello, World')") == '["hello","world"]', "defaults")
    check(tok("SELECT h5mem_tokenize('Élan vital', '{}')") == '["elan","vital"]', "empty options")
    check(tok("SELECT h5mem_tokenize('Élan', NULL)") == '["elan"]', "NULL options")
    check(tok("SELECT h5mem_tokenize('Élan', '{\"remove_diacritics\":0}')") == '["élan"]', "rd 0")
    check(tok("SELECT h5mem_tokenize('Ệ ệ', '{\"remove_diacritics\":1}')") == '["ệ","ệ"]', "rd 1")
    check(tok("SELECT h5mem_tokenize('Ệ', ' { \"remove_diacritics\" : 2 } ')") == '["e"]', "rd 2")
    check(tok("SELECT h5mem_tokenize('running dogs', '{\"porter\":true}')") == '["run","dog"]',
          "porter")
    check(tok("SELECT h5mem_tokenize('running', '{\"porter\":false}')") == '["running"]',
          "porter false")
    check(tok("SELECT h5mem_tokenize('ab  Cd', '{\"offsets\":true}')")
          == '[["ab",0,2],["cd",4,6]]', "offsets")
    check(tok("SELECT h5mem_tokenize('')") == "[]", "empty text")
    check(tok("SELECT h5mem_tokenize(' ,.;')") == "[]", "only separators")
    check(tok("SELECT h5mem_tokenize(NULL)") is None, "NULL text")
    check(tok("SELECT h5mem_tokenize(NULL, '{}')") is None, "NULL text with options")
    check(tok("SELECT h5mem_tokenize(12.5)") == '["12","5"]', "a number")
    check(tok("SELECT h5mem_tokenize(CAST(x'61aa62' AS TEXT))") == '["a\u00aab"]', "stray byte")
    check(tok("SELECT h5mem_tokenize(CAST(x'61f7bfbfbf62' AS TEXT))") == '["a\ufffd\ufffd\ufffd\ufffdb"]',
          "beyond U+10FFFF")
    check(tok("SELECT h5mem_tokenize('say \"hi\\there\"')") == '["say","hi","there"]', "quotes")
    check(tok("SELECT json_valid(h5mem_tokenize('a b'))") == 1, "JSON")
    check(tok("SELECT json_array_length(h5mem_tokenize('a b c'))") == 3, "JSON array")
    check(tok("SELECT h5mem_tokenize('x', '{\"porter\":true,\"remove_diacritics\":0,\"offsets\":false}')")
          == '["x"]', "all options")
    expect_error(db, "SELECT h5mem_tokenize('a', '{')", "options are not valid JSON")
    expect_error(db, "SELECT h5mem_tokenize('a', '[1]')", "must be a JSON object")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"stem\":true}')", 'unknown option "stem"')
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"remove_diacritics\":3}')",
                 "remove_diacritics must be 0, 1 or 2, not 3")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"remove_diacritics\":\"1\"}')",
                 "remove_diacritics must be 0, 1 or 2")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"remove_diacritics\":1.0}')",
                 "remove_diacritics must be 0, 1 or 2, not 1.0")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"porter\":1}')", "porter must be true or false, not 1")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"offsets\":null}')", "offsets must be true or false")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"porter\":true,\"porter\":false}')", "given twice")
    expect_error(db, "SELECT h5mem_tokenize('a', 1)", "options must be JSON text")
    expect_error(db, "SELECT h5mem_tokenize('a', '{\"porter\":true} x')", "not valid JSON")


def embed():
    def vec(text, dim):
        (b,) = db.execute("SELECT h5mem_embed_text(?, ?)", (text, dim)).fetchone()
        return None if b is None else struct.unpack("<%df" % dim, b)

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b))

    v = vec("The quick brown fox", 256)
    check(len(v) == 256 and abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-6, "unit norm")
    check(vec("The quick brown fox", 256) == v, "deterministic")
    check(vec("the QUICK, brown fox!", 256) == v, "case and punctuation do not matter")
    check(vec("", 64) == (0.0,) * 64 and vec(" ...", 64) == (0.0,) * 64, "no tokens: zero vector")
    check(vec(None, 64) is None, "NULL text")
    check(db.execute("SELECT vec_length(h5mem_embed_text('a b', 48)), vec_type(h5mem_embed_text('a', 8))")
          .fetchone() == (48, "float32"), "a float32 vector")
    check(db.execute("SELECT typeof(h5mem_embed_text('a', 1))").fetchone()[0] == "blob", "a BLOB")
    check(vec("x", 1) in ((1.0,), (-1.0,)), "dim 1")
    check(len(vec("x", 65536)) == 65536, "dim 65536")
    near = cos(vec("vector databases for embeddings", 512), vec("a vector database of embedding", 512))
    far = cos(vec("vector databases for embeddings", 512), vec("the cat sat on the mat", 512))
    check(near > 0.2 and abs(far) < 0.1, "lexical similarity: near %.3f far %.3f" % (near, far))
    # a stable value: the embedding is part of what a stored database holds
    (h,) = db.execute("SELECT hex(h5mem_embed_text('Hello world', 8))").fetchone()
    check(h == EMBED_HELLO_8, "h5mem_embed_text('Hello world', 8) = %s" % h)
    for bad, word in (("0", "not 0"), ("65537", "not 65537"), ("-3", "not -3"),
                      ("'8'", "integer"), ("8.0", "integer"), ("NULL", "integer")):
        expect_error(db, "SELECT h5mem_embed_text('a', %s)" % bad, word)


# the float32 values -0.130250439, 0.260500878, 0, -0.71274811, -0.260500878,
# 0, 0.582497656, 0 (test_text checks the same vector in C)
EMBED_HELLO_8 = "5F6005BE5F60853E00000000A97636BF5F6085BE00000000911E153F00000000"


def main():
    docs = corpus()
    vocab_agrees(docs[:len(CORPUS)])
    malformed()
    random_strings(3000)
    sweep()
    options_and_errors()
    embed()
    finish()


main()
