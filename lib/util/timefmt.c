/*
** lib/util/timefmt.c - ISO 8601 / RFC 3339 timestamps <-> Unix seconds.
**
** The calendar arithmetic is Howard Hinnant's days_from_civil and
** civil_from_days (http://howardhinnant.github.io/date_algorithms.html):
** exact for the proleptic Gregorian calendar, no tables, no C library.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "timefmt.h"

#define TF_DAY 86400
/* 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z */
#define TF_MIN (-62167219200LL)
#define TF_MAX 253402300799LL

/* Days from 1970-01-01 to y-m-d (m 1-12, d 1-31), negative before it. */
static int64_t tf_days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                          /* [0, 399] */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  /* [0, 146096] */
  return era * 146097 + doe - 719468;
}

/* The inverse: the civil date of day z (days from 1970-01-01). */
static void tf_civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;                                      /* [0, 146096] */
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
  int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int tf_days_in_month(int y, int m) {
  static const unsigned char days[12] = {31, 28, 31, 30, 31, 30,
                                         31, 31, 30, 31, 30, 31};
  if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) return 29;
  return days[m - 1];
}

/* The text, its length and the caller's error buffer. */
typedef struct tf_in {
  const char *s;
  size_t len;
  char *err; /* may be NULL */
  size_t errlen;
} tf_in;

static int tf_fail(tf_in *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write the message (if there is somewhere to write it); returns -1. */
static int tf_fail(tf_in *in, const char *fmt, ...) {
  if (!in->err || !in->errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(in->err, in->errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* "expected WHAT at byte i, found X"; returns -1. */
static int tf_expected(tf_in *in, const char *what, size_t i) {
  if (i >= in->len) return tf_fail(in, "expected %s at byte %zu, found end of input", what, i);
  unsigned char c = (unsigned char)in->s[i];
  if (c >= 0x21 && c < 0x7f)
    return tf_fail(in, "expected %s at byte %zu, found '%c'", what, i, c);
  return tf_fail(in, "expected %s at byte %zu, found 0x%02x", what, i, c);
}

static int tf_is_digit(const tf_in *in, size_t i) {
  return i < in->len && in->s[i] >= '0' && in->s[i] <= '9';
}

/* Read exactly n digits at i into *v. */
static int tf_num(tf_in *in, size_t i, int n, int *v) {
  *v = 0;
  for (size_t k = i; k < i + (size_t)n; k++) {
    if (!tf_is_digit(in, k)) return tf_expected(in, "a digit", k);
    *v = *v * 10 + (in->s[k] - '0');
  }
  return 0;
}

/* The byte c at i. */
static int tf_char(tf_in *in, size_t i, char c) {
  if (i < in->len && in->s[i] == c) return 0;
  char what[4] = {'\'', c, '\'', 0};
  return tf_expected(in, what, i);
}

/* A field n digits long at i, within lo..hi. */
static int tf_field(tf_in *in, size_t i, int n, int lo, int hi,
                    const char *name, int *v) {
  if (tf_num(in, i, n, v)) return -1;
  if (*v < lo || *v > hi)
    return tf_fail(in, "bad %s %0*d at byte %zu", name, n, *v, i);
  return 0;
}

/* The zone at i (the time ended just before it): *off is seconds east of
** UTC.  Returns the offset just past the zone in *end. */
static int tf_zone(tf_in *in, size_t i, int *off, size_t *end) {
  char c = in->s[i];
  if (c == 'Z' || c == 'z') {
    *off = 0;
    *end = i + 1;
    return 0;
  }
  if (c != '+' && c != '-')
    return tf_expected(in, "'Z', '+', '-' or the end", i);
  int zh, zm = 0;
  if (tf_field(in, i + 1, 2, 0, 23, "zone hour", &zh)) return -1;
  i += 3;
  if (i < in->len && in->s[i] == ':') {
    if (tf_field(in, i + 1, 2, 0, 59, "zone minute", &zm)) return -1;
    i += 3;
  } else if (tf_is_digit(in, i)) {
    if (tf_field(in, i, 2, 0, 59, "zone minute", &zm)) return -1;
    i += 2;
  }
  *off = (c == '-' ? -1 : 1) * (zh * 3600 + zm * 60);
  *end = i;
  return 0;
}

int util_iso8601_parse(const char *s, size_t len, int64_t *unix_seconds,
                       char *err, size_t errlen) {
  tf_in in = {s ? s : "", s ? len : 0, err, errlen};
  int y, mo, d, h = 0, mi = 0, sec = 0, off = 0;
  size_t i = 10;
  if (err && errlen) err[0] = '\0';

  if (tf_num(&in, 0, 4, &y) || tf_char(&in, 4, '-') ||
      tf_field(&in, 5, 2, 1, 12, "month", &mo) || tf_char(&in, 7, '-') ||
      tf_num(&in, 8, 2, &d))
    return -1;
  if (d < 1 || d > tf_days_in_month(y, mo))
    return tf_fail(&in, "bad day %02d at byte 8 (%04d-%02d has %d days)", d,
                   y, mo, tf_days_in_month(y, mo));

  if (i < in.len) {
    char t = in.s[i];
    if (t != 'T' && t != 't' && t != ' ')
      return tf_expected(&in, "'T', ' ' or the end", i);
    if (tf_field(&in, 11, 2, 0, 23, "hour", &h) || tf_char(&in, 13, ':') ||
        tf_field(&in, 14, 2, 0, 59, "minute", &mi))
      return -1;
    i = 16;
    if (i < in.len && in.s[i] == ':') {
      if (tf_field(&in, 17, 2, 0, 60, "second", &sec)) return -1;
      i = 19;
      if (i < in.len && in.s[i] == '.') {
        /* the fraction only ever adds to a whole second: dropping it is
        ** the floor of the instant, before or after 1970 alike */
        if (!tf_is_digit(&in, ++i)) return tf_expected(&in, "a digit", i);
        while (tf_is_digit(&in, i)) i++;
      }
    }
    if (i < in.len && tf_zone(&in, i, &off, &i)) return -1;
  }
  if (i < in.len) {
    unsigned char c = (unsigned char)in.s[i];
    if (c >= 0x21 && c < 0x7f)
      return tf_fail(&in, "unexpected '%c' at byte %zu after the time", c, i);
    return tf_fail(&in, "unexpected 0x%02x at byte %zu after the time", c, i);
  }
  *unix_seconds = tf_days_from_civil(y, mo, d) * TF_DAY + h * 3600 + mi * 60 +
                  sec - off;
  return 0;
}

/* Write v as n digits (v >= 0, fits). */
static char *tf_put(char *p, int64_t v, int n) {
  for (int k = n - 1; k >= 0; k--) {
    p[k] = (char)('0' + v % 10);
    v /= 10;
  }
  return p + n;
}

size_t util_iso8601_format(int64_t unix_seconds, char *buf) {
  if (unix_seconds < TF_MIN || unix_seconds > TF_MAX) {
    buf[0] = '\0';
    return 0;
  }
  /* floor division: the day and the second within it */
  int64_t days = unix_seconds / TF_DAY, sod = unix_seconds % TF_DAY;
  if (sod < 0) {
    sod += TF_DAY;
    days--;
  }
  int64_t y;
  int m, d;
  tf_civil_from_days(days, &y, &m, &d);
  char *p = buf;
  p = tf_put(p, y, 4);
  *p++ = '-';
  p = tf_put(p, m, 2);
  *p++ = '-';
  p = tf_put(p, d, 2);
  *p++ = 'T';
  p = tf_put(p, sod / 3600, 2);
  *p++ = ':';
  p = tf_put(p, sod / 60 % 60, 2);
  *p++ = ':';
  p = tf_put(p, sod % 60, 2);
  *p++ = 'Z';
  *p = '\0';
  return (size_t)(p - buf);
}
