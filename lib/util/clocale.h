/*
** lib/util/clocale.h - the "C" numeric locale, for the number conversions
** (strtod, strtof, snprintf) that must read and write '.' whatever
** LC_NUMERIC the host process set.
*/
#ifndef H5MEM_UTIL_CLOCALE_H
#define H5MEM_UTIL_CLOCALE_H

#include <locale.h>

/* The locale object, made once (thread-safe) and never freed;
** (locale_t)0 when it cannot be made (then the conversions run in the
** process's locale). */
locale_t util_c_locale(void);

/* The calling thread switched to it (uselocale): returns the locale to
** give util_c_locale_pop afterwards ((locale_t)0: nothing was switched). */
locale_t util_c_locale_push(void);
void util_c_locale_pop(locale_t old);

#endif /* H5MEM_UTIL_CLOCALE_H */
