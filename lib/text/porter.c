/*
** lib/text/porter.c - the Porter stemmer as FTS5's porter tokenizer has it.
**
** Martin Porter's five steps (1980), with the differences FTS5 makes, all
** kept here because results must equal FTS5's:
**   - a suffix is removed only when something is left before it (a word
**     must be longer than the suffix), so "ated" stays "at";
**   - step 2 has the later additions "bli" -> "ble" and "logi" -> "log"
**     (in place of "abli" -> "able");
**   - step 1b's double consonant is any repeated last letter other than a
**     vowel or l, s, z (y included: "yy" -> "y");
**   - the letters are bytes: anything but a, e, i, o, u (and y after a
**     consonant) is a consonant, bytes of non-ASCII characters too.
** Within a step the first suffix that matches decides: when its condition
** fails nothing else is tried ("eed" before "ed", "ement" before "ment").
*/
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "text/text_int.h"

/* FTS5 leaves tokens outside these lengths alone. */
#define PORTER_MIN 3
#define PORTER_MAX 64

/* cons[i] for w[0..k): 1 when w[i] is a consonant.  y is a consonant at
** the start and after a vowel, a vowel after a consonant. */
static void consonants(const char *w, size_t k, unsigned char *cons) {
  int prev = 0;
  for (size_t i = 0; i < k; i++) {
    char c = w[i];
    int v = c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
    prev = c == 'y' ? !prev : !v;
    cons[i] = (unsigned char)prev;
  }
}

/* Porter's m of w[0..k) (the number of vowel-consonant sequences), counted
** up to 2: the conditions ask m > 0, m > 1 and m = 1. */
static int measure(const char *w, size_t k) {
  unsigned char cons[PORTER_MAX];
  int m = 0, vowel = 0;
  consonants(w, k, cons);
  for (size_t i = 0; i < k && m < 2; i++) {
    if (!cons[i]) vowel = 1;
    else if (vowel) m++, vowel = 0;
  }
  return m;
}

/* *v*: w[0..k) has a vowel. */
static int has_vowel(const char *w, size_t k) {
  unsigned char cons[PORTER_MAX];
  consonants(w, k, cons);
  for (size_t i = 0; i < k; i++)
    if (!cons[i]) return 1;
  return 0;
}

/* *o: w[0..k) ends consonant-vowel-consonant, the last not w, x or y. */
static int cvc(const char *w, size_t k) {
  unsigned char cons[PORTER_MAX];
  if (k < 3 || w[k - 1] == 'w' || w[k - 1] == 'x' || w[k - 1] == 'y') return 0;
  consonants(w, k, cons);
  return cons[k - 3] && !cons[k - 2] && cons[k - 1];
}

enum { IF_M0, IF_M1, IF_M1_ST };

/* One rule of steps 2 to 4: suffix -> replacement when the stem before the
** suffix meets the condition. */
typedef struct porter_rule {
  const char *suffix, *repl;
  unsigned char nsuffix, nrepl;
  unsigned char cond; /* IF_M0 (m > 0), IF_M1 (m > 1), IF_M1_ST (m > 1, stem ends s or t) */
} porter_rule;

#define R(suffix, repl, cond) {suffix, repl, sizeof suffix - 1, sizeof repl - 1, cond}

static const porter_rule step2[] = {
    R("ational", "ate", IF_M0), R("tional", "tion", IF_M0), R("enci", "ence", IF_M0),
    R("anci", "ance", IF_M0),   R("izer", "ize", IF_M0),    R("logi", "log", IF_M0),
    R("bli", "ble", IF_M0),     R("alli", "al", IF_M0),     R("entli", "ent", IF_M0),
    R("eli", "e", IF_M0),       R("ousli", "ous", IF_M0),   R("ization", "ize", IF_M0),
    R("ation", "ate", IF_M0),   R("ator", "ate", IF_M0),    R("alism", "al", IF_M0),
    R("iveness", "ive", IF_M0), R("fulness", "ful", IF_M0), R("ousness", "ous", IF_M0),
    R("aliti", "al", IF_M0),    R("iviti", "ive", IF_M0),   R("biliti", "ble", IF_M0),
    {NULL, NULL, 0, 0, 0}};

static const porter_rule step3[] = {
    R("icate", "ic", IF_M0), R("ative", "", IF_M0), R("alize", "al", IF_M0),
    R("iciti", "ic", IF_M0), R("ical", "ic", IF_M0), R("ful", "", IF_M0),
    R("ness", "", IF_M0),    {NULL, NULL, 0, 0, 0}};

static const porter_rule step4[] = {
    R("al", "", IF_M1),    R("ance", "", IF_M1), R("ence", "", IF_M1),    R("er", "", IF_M1),
    R("ic", "", IF_M1),    R("able", "", IF_M1), R("ible", "", IF_M1),    R("ant", "", IF_M1),
    R("ement", "", IF_M1), R("ment", "", IF_M1), R("ent", "", IF_M1),     R("ion", "", IF_M1_ST),
    R("ou", "", IF_M1),    R("ism", "", IF_M1),  R("ate", "", IF_M1),     R("iti", "", IF_M1),
    R("ous", "", IF_M1),   R("ive", "", IF_M1),  R("ize", "", IF_M1),     {NULL, NULL, 0, 0, 0}};

/* 1 when w[0..n) ends with suf and is longer than it. */
static int ends(const char *w, size_t n, const char *suf, size_t ns) {
  return n > ns && memcmp(w + n - ns, suf, ns) == 0;
}

/* Applies the first rule of r whose suffix w[0..*n) ends with. */
static void apply(char *w, size_t *n, const porter_rule *r) {
  char last = w[*n - 1];
  for (; r->suffix; r++) {
    size_t ns = r->nsuffix;
    if (r->suffix[ns - 1] != last || !ends(w, *n, r->suffix, ns)) continue;
    size_t k = *n - ns; /* the stem */
    int ok = r->cond == IF_M0 ? measure(w, k) > 0
             : r->cond == IF_M1 ? measure(w, k) > 1
                                : (w[k - 1] == 's' || w[k - 1] == 't') && measure(w, k) > 1;
    if (ok) {
      memcpy(w + k, r->repl, r->nrepl);
      *n = k + r->nrepl;
    }
    return;
  }
}

/* Step 1a: sses -> ss, ies -> i, other "es" and "s" (not "ss") lose the s. */
static void step1a(char *w, size_t *n) {
  size_t k = *n;
  if (w[k - 1] != 's') return;
  if (w[k - 2] == 'e') {
    if ((k > 4 && w[k - 4] == 's' && w[k - 3] == 's') || (k > 3 && w[k - 3] == 'i'))
      *n = k - 2;
    else
      *n = k - 1;
  } else if (w[k - 2] != 's') {
    *n = k - 1;
  }
}

/* Step 1b: eed -> ee (m > 0); ed, ing removed after a vowel, then at, bl,
** iz gain an e, a double consonant loses one, m = 1 and *o gain an e. */
static void step1b(char *w, size_t *n) {
  size_t k = *n;
  int cut = 0;
  if (ends(w, k, "eed", 3)) {
    if (measure(w, k - 3) > 0) *n = k - 1;
  } else if (ends(w, k, "ed", 2)) {
    if (has_vowel(w, k - 2)) *n = k - 2, cut = 1;
  } else if (ends(w, k, "ing", 3)) {
    if (has_vowel(w, k - 3)) *n = k - 3, cut = 1;
  }
  if (!cut) return;
  k = *n;
  if (ends(w, k, "at", 2) || ends(w, k, "bl", 2) || ends(w, k, "iz", 2)) {
    w[k] = 'e';
    *n = k + 1;
    return;
  }
  if (k >= 2) {
    char c = w[k - 1];
    if (c != 'a' && c != 'e' && c != 'i' && c != 'o' && c != 'u' && c != 'l' &&
        c != 's' && c != 'z' && c == w[k - 2]) {
      *n = k - 1;
      return;
    }
  }
  if (measure(w, k) == 1 && cvc(w, k)) {
    w[k] = 'e';
    *n = k + 1;
  }
}

size_t text_porter_stem(char *w, size_t n) {
  if (n < PORTER_MIN || n > PORTER_MAX) return n;
  step1a(w, &n);
  step1b(w, &n);
  /* step 1c: y -> i after a vowel */
  if (w[n - 1] == 'y' && has_vowel(w, n - 1)) w[n - 1] = 'i';
  apply(w, &n, step2);
  apply(w, &n, step3);
  apply(w, &n, step4);
  /* step 5a: a final e goes when m > 1, or m = 1 and not *o */
  if (w[n - 1] == 'e') {
    int m = measure(w, n - 1);
    if (m > 1 || (m == 1 && !cvc(w, n - 1))) n--;
  }
  /* step 5b: ll -> l when m > 1 */
  if (n > 1 && w[n - 1] == 'l' && w[n - 2] == 'l' && measure(w, n - 1) > 1) n--;
  return n;
}
