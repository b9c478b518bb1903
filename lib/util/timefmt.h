/*
** lib/util/timefmt.h - ISO 8601 / RFC 3339 timestamps <-> Unix seconds.
**
** Proleptic Gregorian calendar, years 0000 to 9999, computed from the
** civil date directly: nothing here reads the TZ environment, the locale
** or the C library's time functions (mktime, timegm, strftime).
*/
#ifndef H5MEM_UTIL_TIMEFMT_H
#define H5MEM_UTIL_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Parse s[0..len) into seconds since 1970-01-01T00:00:00Z (negative
** before it).  The accepted forms (what people and SQLite's date(),
** datetime() and strftime() write):
**
**   YYYY-MM-DD                        midnight
**   YYYY-MM-DD?HH:MM
**   YYYY-MM-DD?HH:MM:SS
**   YYYY-MM-DD?HH:MM:SS.f...          any number (>= 1) of fraction digits
**
** where ? is 'T', 't' or a single space, and a time may be followed by a
** zone: 'Z', 'z', +HH:MM, -HH:MM, +HHMM, -HHMM, or +HH / -HH (zone hours
** 00-23, minutes 00-59).  Every field has exactly the digits shown.
**
** Decisions:
**   - no zone means UTC (not the process's local time);
**   - a fraction is truncated toward negative infinity: the result is the
**     floor of the exact instant, so "1969-12-31T23:59:59.9Z" is -1;
**   - second 60 (a leap second) is accepted in any minute and means the
**     first second of the next minute ("23:59:60Z" == next day's
**     "00:00:00Z"); Unix time has no leap seconds and there is no table
**     of the real ones here;
**   - hour 24 ("24:00:00", end of day) is refused: hours are 00-23;
**   - days are checked against the month, with leap years (2000-02-29 is
**     a date, 1900-02-29 and 2023-02-29 are not);
**   - nothing else: no leading or trailing whitespace, no ',' as the
**     decimal sign, no week or ordinal dates, no signed or 5-digit years,
**     no zone after a date alone.
**
** Returns 0 and sets *unix_seconds; or returns -1, leaves *unix_seconds
** alone and (when err is not NULL and errlen > 0) writes a message naming
** the problem and its byte offset: "bad month 13 at byte 5",
** "expected ':' at byte 13, found '-'".  An offset can move the instant
** just outside years 0-9999 ("0000-01-01T00:00+01:00"); that is returned
** as is, though util_iso8601_format() will not write it. */
int util_iso8601_parse(const char *s, size_t len, int64_t *unix_seconds,
                       char *err, size_t errlen);

/* Write unix_seconds as "YYYY-MM-DDTHH:MM:SSZ" (20 characters and a NUL)
** into buf, which needs at least 32 bytes (UTIL_ISO8601_BUFSIZE).  Returns
** the length written (20), or 0 and an empty string when the instant is
** outside 0000-01-01T00:00:00Z .. 9999-12-31T23:59:59Z. */
#define UTIL_ISO8601_BUFSIZE 32
size_t util_iso8601_format(int64_t unix_seconds, char *buf);

#endif /* H5MEM_UTIL_TIMEFMT_H */
