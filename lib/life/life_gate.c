/*
** lib/life/life_gate.c - the write gate: is a text worth saving (life.h)?
**
** One pass of lib/text's tokenizer over the text gives the words, their
** characters and their distinct count in the window; one pass over the
** bytes counts the characters.  Distinct words are counted by a 64-bit
** hash in a table on the stack (a collision, ~2^-52 for 64 words, would
** count two words as one).
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "life/life.h"
#include "text/tokenize.h"

static const char *const trivial_list[] = {LIFE_TRIVIAL_LIST};

/* The longest phrase of the list, in bytes, and in words: longer texts are
** never trivial, so the joined words need only this much room. */
#define TRIVIAL_MAX_BYTES 24
#define TRIVIAL_MAX_WORDS 4
#define TABLE 128 /* a power of two, twice LIFE_GATE_WINDOW */

void life_gate_opts_default(life_gate_opts *o) {
  o->trivial = 1;
  o->min_chars = 5;
  o->min_words = 2;
  o->min_distinct_ratio = 0.4;
  o->min_alnum_ratio = 0.25;
}

int life_gate_check(const life_gate_opts *o) {
  if (!(o->min_distinct_ratio >= 0 && o->min_distinct_ratio <= 1)) return LIFE_EINVAL;
  if (!(o->min_alnum_ratio >= 0 && o->min_alnum_ratio <= 1)) return LIFE_EINVAL;
  return LIFE_OK;
}

const char *life_reason_name(int reason) {
  switch (reason) {
  case LIFE_PASSED: return "passed";
  case LIFE_TRIVIAL: return "trivial";
  case LIFE_TOO_SHORT: return "too_short";
  case LIFE_LOW_INFORMATION: return "low_information";
  default: return "";
  }
}

/* The code point at s[*i] (at least one byte left), *i moved past it.  An
** ill-formed byte is one character of its own value: only white space and
** the no-space scripts are looked for, and neither is made of such bytes. */
static uint32_t next_cp(const unsigned char *s, size_t n, size_t *i) {
  unsigned c = s[*i];
  size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (len == 1 || *i + len > n) {
    (*i)++;
    return c;
  }
  uint32_t cp = c & (0x3F >> (len - 1));
  for (size_t k = 1; k < len; k++) {
    if ((s[*i + k] & 0xC0) != 0x80) {
      (*i)++;
      return c;
    }
    cp = cp << 6 | (s[*i + k] & 0x3F);
  }
  *i += len;
  return cp;
}

/* Unicode's White_Space property. */
static int is_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

/* Scripts written without spaces between words: Hiragana, Katakana (and
** their extensions), the CJK ideographs (unified, extensions, compatibility). */
static int is_nospace(uint32_t c) {
  return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x31F0 && c <= 0x31FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF66 && c <= 0xFF9F) ||
         (c >= 0x20000 && c <= 0x3134F);
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
  return h;
}

typedef struct gate_run {
  const unsigned char *s;
  size_t n;
  uint64_t words, wchars, distinct;
  uint64_t table[TABLE]; /* hashes of the window's words; 0: empty */
  char joined[TRIVIAL_MAX_BYTES + 1];
  size_t njoined;
  int too_long; /* the joined words would not fit: not trivial */
} gate_run;

static void add_word(gate_run *g, uint64_t h) {
  if (g->words++ >= LIFE_GATE_WINDOW) return;
  if (!h) h = 1;
  size_t i = (size_t)(h ^ (h >> 29)) & (TABLE - 1);
  while (g->table[i]) {
    if (g->table[i] == h) return;
    i = (i + 1) & (TABLE - 1);
  }
  g->table[i] = h;
  g->distinct++;
}

static int on_token(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  gate_run *g = ctx;
  size_t i = start, nospace = 0;
  uint64_t chars = 0;
  while (i < end) {
    uint32_t c = next_cp(g->s, end, &i);
    chars++;
    nospace += is_nospace(c);
  }
  g->wchars += chars;
  if (!nospace) {
    add_word(g, fnv(FNV_OFFSET, (const unsigned char *)tok, ntok));
    if (!g->too_long) {
      if (g->njoined + (g->njoined > 0) + ntok > TRIVIAL_MAX_BYTES) {
        g->too_long = 1;
      } else {
        if (g->njoined) g->joined[g->njoined++] = ' ';
        memcpy(g->joined + g->njoined, tok, ntok);
        g->njoined += ntok;
      }
    }
    return 0;
  }
  /* each character of a no-space script a word, each run of others one
  ** (hashed from the source, ASCII case-folded: such mixed tokens are rare) */
  g->too_long = 1;
  i = start;
  uint64_t h = FNV_OFFSET;
  int run = 0;
  while (i < end) {
    size_t at = i;
    uint32_t c = next_cp(g->s, end, &i);
    if (is_nospace(c)) {
      if (run) add_word(g, h);
      run = 0;
      h = FNV_OFFSET;
      add_word(g, fnv(FNV_OFFSET, g->s + at, i - at));
    } else {
      unsigned char b[4];
      size_t nb = i - at;
      memcpy(b, g->s + at, nb);
      if (nb == 1 && b[0] >= 'A' && b[0] <= 'Z') b[0] += 'a' - 'A';
      h = fnv(h, b, nb);
      run = 1;
    }
  }
  if (run) add_word(g, h);
  return 0;
}

static int is_trivial_phrase(const gate_run *g) {
  if (g->too_long || g->words > TRIVIAL_MAX_WORDS) return 0;
  for (size_t k = 0; k < sizeof trivial_list / sizeof *trivial_list; k++)
    if (strlen(trivial_list[k]) == g->njoined && !memcmp(trivial_list[k], g->joined, g->njoined))
      return 1;
  return 0;
}

int life_gate(const life_gate_opts *o, const char *s, size_t n, life_gate_result *r) {
  life_gate_opts def;
  if (!o) {
    life_gate_opts_default(&def);
    o = &def;
  }
  memset(r, 0, sizeof *r);
  if (life_gate_check(o) != LIFE_OK) return LIFE_EINVAL;
  gate_run g;
  memset(&g, 0, sizeof g);
  g.s = (const unsigned char *)s;
  g.n = n;
  for (size_t i = 0; i < n;) r->chars += !is_space(next_cp(g.s, n, &i));
  /* on_token never fails and no token is longer than the text; a token
  ** over 256 bytes takes a malloc'd buffer, whose failure (TEXT_ENOMEM)
  ** leaves the words counted so far: the measures of a long text's start */
  if (n) text_tokenize(NULL, s, n, on_token, &g);

  r->words = g.words;
  r->distinct = g.distinct;
  uint64_t window = g.words < LIFE_GATE_WINDOW ? g.words : LIFE_GATE_WINDOW;
  r->distinct_ratio = window ? (double)g.distinct / (double)window : 0.0;
  r->alnum_ratio = r->chars ? (double)g.wchars / (double)r->chars : 0.0;
  if (r->alnum_ratio > 1) r->alnum_ratio = 1; /* (a token over white space: never, but bounded) */
  double len = log1p((double)g.words) / log1p(32.0);
  r->information = r->distinct_ratio * (len < 1 ? len : 1);

  if (o->trivial && (g.words == 0 || is_trivial_phrase(&g)))
    r->reason = LIFE_TRIVIAL;
  else if ((o->min_chars && r->chars < o->min_chars) || (o->min_words && r->words < o->min_words))
    r->reason = LIFE_TOO_SHORT;
  else if ((o->min_distinct_ratio > 0 && r->distinct_ratio < o->min_distinct_ratio) ||
           (o->min_alnum_ratio > 0 && r->alnum_ratio < o->min_alnum_ratio))
    r->reason = LIFE_LOW_INFORMATION;
  else
    r->reason = LIFE_PASSED;
  r->save = r->reason == LIFE_PASSED;
  return LIFE_OK;
}
