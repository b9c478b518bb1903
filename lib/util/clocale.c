/*
** lib/util/clocale.c - the "C" numeric locale (clocale.h).
*/
#include "config.h"

#include <pthread.h>

#include "clocale.h"

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale = (locale_t)0;

static void c_locale_init(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

locale_t util_c_locale(void) {
  pthread_once(&c_locale_once, c_locale_init);
  return c_locale;
}

locale_t util_c_locale_push(void) {
  locale_t c = util_c_locale();
  return c ? uselocale(c) : (locale_t)0;
}

void util_c_locale_pop(locale_t old) {
  if (old) uselocale(old);
}
