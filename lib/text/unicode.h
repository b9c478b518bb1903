/*
** lib/text/unicode.h - the character classes of FTS5's unicode61 tokenizer
** (default categories "L* N* Co"), internal to lib/text.
**
** The tables live in unicode_data.c, which scripts/gen_unicode.py writes
** (Unicode 6.1, as unicode61 has it; the script explains how the tables
** are derived and where they differ from this machine's Unicode data).
** Every function takes any 32-bit value: unicode61's decoder can produce
** values above U+10FFFF from malformed input, and they must be classified
** as it classifies them.
*/
#ifndef H5MEM_TEXT_UNICODE_H
#define H5MEM_TEXT_UNICODE_H

#include <stdint.h>

typedef struct text_uc_run {
  uint32_t first, last; /* inclusive */
  int32_t delta;        /* fold(c) = c + delta */
} text_uc_run;

extern const uint8_t text_uc_tok_index[4096];
extern const uint8_t text_uc_tok_bits[][32];
extern const uint8_t text_uc_fold_index[256];
extern const uint16_t text_uc_fold_delta[][256];
extern const text_uc_run text_uc_fold_astral[];
extern const int text_uc_fold_nastral;
extern const uint8_t text_uc_dia_index[];
extern const uint8_t text_uc_dia[][256];
extern const int text_uc_nfold, text_uc_ndia, text_uc_nmark;

/* The first code point the diacritic table does not cover. */
#define TEXT_UC_DIA_LIMIT 0x1F00u

/* 1 when c is a token character.  Everything from U+100000 up is one: the
** classes unicode61 has no entry for are token characters. */
static inline int text_uc_is_token(uint32_t c) {
  if (c >= 0x100000u) return 1;
  return (text_uc_tok_bits[text_uc_tok_index[c >> 8]][(c >> 3) & 31] >> (c & 7)) & 1;
}

/* The diacritic code of c: 0 none, 1 a combining mark, else an ASCII
** letter, | 0x80 when only remove_diacritics=2 maps it. */
static inline unsigned text_uc_dia_code(uint32_t c) {
  if (c >= TEXT_UC_DIA_LIMIT) return 0;
  return text_uc_dia[text_uc_dia_index[c >> 8]][c & 255];
}

/* 1 when c is a combining mark that continues a token (U+0300 and a few
** others; not token characters themselves). */
static inline int text_uc_is_mark(uint32_t c) { return text_uc_dia_code(c) == 1; }

/* c as unicode61 folds it: simple case folding (BMP and Deseret), then,
** for BMP code points when rd is 1 or 2, diacritics removed.  0 means the
** character is dropped (a combining mark with rd 1 or 2).  Values of 2^31
** and above are returned unchanged, as unicode61 (which reads them as
** negative ints) does. */
static inline uint32_t text_uc_fold(uint32_t c, int rd) {
  if (c < 0x10000u) {
    uint32_t f = (c + text_uc_fold_delta[text_uc_fold_index[c >> 8]][c & 255]) & 0xFFFFu;
    if (rd) {
      unsigned d = text_uc_dia_code(f);
      if (d == 1) return 0;
      if (d && (!(d & 0x80) || rd == 2)) return d & 0x7F;
    }
    return f;
  }
  for (int i = 0; i < text_uc_fold_nastral; i++)
    if (c >= text_uc_fold_astral[i].first && c <= text_uc_fold_astral[i].last)
      return (uint32_t)((int32_t)c + text_uc_fold_astral[i].delta);
  return c;
}

#endif /* H5MEM_TEXT_UNICODE_H */
