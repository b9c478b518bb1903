/*
** test/fuzz/fuzz_jsonl.c - libFuzzer target for what reads the MCP memory
** server's JSONL (kg_import_jsonl, h5mem-mcp's requests): lib/util's
** JSON as JSON.parse reads it (util_json_valid_js, util_json_string_js,
** util_json_strings_js) and the JavaScript strings of lib/util/jsstr.
**
** Input: a JSONL text, ill-formed UTF-8 read as kg_import_jsonl reads it
** (util_utf8_repair).  For each line JSON.parse would take, every string
** (member values, array elements, keys) must hold these:
**   - JSON.stringify's form (util_js_stringify) is valid JSON and decodes
**     to the same string;
**   - its store form (util_js_to_utf8) is well-formed UTF-8 without NUL,
**     with a replacement for each lone surrogate and U+0000, and equal to
**     the string when util_js_special says it needs none;
**   - kept in meta (util_js_keep) and read back against its store form
**     (util_js_kept), it is the string again; the strict decoder
**     (util_json_string) never writes more than the literal's length.
** Arrays go through util_json_strings_js too (same strings, in order).
** Seeds (H5MEM_FUZZ_SEEDS): lines the reference server writes, odd ones
** included.
*/
#include "config.h"

#include "fuzz.h"
#include "util/json.h"
#include "util/err.h"
#include "util/jsstr.h"
#include "util/utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *seeds = fuzz_seed_dir();
  if (!seeds) return 0;
  static const char *const lines[] = {
      "{\"type\":\"entity\",\"name\":\"John\",\"entityType\":\"person\",\"observations\":[\"a\",\"b\"]}\n"
      "{\"type\":\"relation\",\"from\":\"John\",\"to\":\"ghost\",\"relationType\":\"knows\"}",
      "{\"type\":\"entity\",\"name\":\"\",\"entityType\":\"x\\ud83d\",\"observations\":[\"a\\ud800b\",\"c\\u0000d\","
      "\"\xf0\x9f\x98\x80 \\u2028 \\\" \\\\ \\u0001\"]}",
      "{\"type\":\"entity\",\"name\":\"a\",\"name\":\"b\",\"entityType\":\"\\u0074\\/\",\"observations\":"
      "[\"\\ud83d\\ude00\",\"\\udc00\\ud800\"]}\r\n\n  \n[1]\nnull\n{\"type\":\"note\"}",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    char name[32];
    snprintf(name, sizeof name, "seed-%zu", i);
    fuzz_seed(seeds, name, lines[i], strlen(lines[i]));
  }
  return 0;
}

typedef struct seen {
  char **s;
  size_t *n;
  size_t count, cap;
} seen;

static int collect(void *ctx, const char *s, size_t n) {
  seen *v = ctx;
  if (v->count == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 8;
    v->s = realloc(v->s, v->cap * sizeof *v->s);
    v->n = realloc(v->n, v->cap * sizeof *v->n);
    if (!v->s || !v->n) abort();
  }
  v->s[v->count] = malloc(n + 1);
  if (!v->s[v->count]) abort();
  memcpy(v->s[v->count], s, n + 1);
  v->n[v->count++] = n;
  return 0;
}

/* The invariants of the JSON string at s[i]. */
static void check_string(const char *s, size_t i, size_t len) {
  size_t end = util_json_end(s, i, len), n, m;
  char *js = util_js_cstr(s, i, len, &n);
  if (!js) abort();
  FUZZ_ASSERT(strlen(js) == n); /* no NUL byte */
  /* JSON.stringify's form decodes to the same */
  strbuf lit = {0};
  util_js_stringify(&lit, js, n);
  FUZZ_ASSERT(!strbuf_failed(&lit) && util_json_valid_js(lit.buf, lit.len, NULL, 0) == 0);
  char *back = util_js_cstr(lit.buf, 0, lit.len, &m);
  FUZZ_ASSERT(back && m == n && !memcmp(back, js, n));
  free(back);
  /* the store's form */
  strbuf f = {0};
  size_t k = util_js_to_utf8(&f, js, n);
  FUZZ_ASSERT(!strbuf_failed(&f) || (!n && !f.buf));
  FUZZ_ASSERT(util_utf8_check(f.buf, f.len, 0) == f.len);
  FUZZ_ASSERT((k > 0) == util_js_special(js, n));
  if (!k) FUZZ_ASSERT(f.len == n && (!n || !memcmp(f.buf, js, n)));
  /* kept in meta and read back */
  strbuf meta = {0}, got = {0};
  FUZZ_ASSERT(util_js_keep(&meta, "text", js, n) == (k > 0));
  util_js_meta_close(&meta);
  if (k) FUZZ_ASSERT(util_json_valid(meta.buf, meta.len, NULL, 0) == 0);
  util_js_kept(&got, f.buf ? f.buf : "", f.len, meta.buf, meta.len, "text");
  FUZZ_ASSERT(got.len == n && (!n || !memcmp(got.buf, js, n)));
  /* the strict decoder stays within the literal's length */
  char *strict = malloc(end - i + 1);
  if (!strict) abort();
  util_json_string(s, i, len, strict, &m);
  FUZZ_ASSERT(m <= end - i);
  free(strict);
  strbuf_free(&lit);
  strbuf_free(&f);
  strbuf_free(&meta);
  strbuf_free(&got);
  free(js);
}

/* Every string of the valid value at s[i] (keys too), and each array's
** strings through util_json_strings_js. */
static void walk(const char *s, size_t i, size_t len, int depth) {
  int t = util_json_type(s, i, len);
  if (t == UTIL_JSON_TEXT) {
    check_string(s, i, len);
    return;
  }
  if ((t != UTIL_JSON_OBJECT && t != UTIL_JSON_ARRAY) || depth > 64) return;
  util_json_iter it;
  if (util_json_iter_init(&it, s, i, len)) return;
  int all_strings = 1;
  size_t count = 0;
  while (util_json_next(&it)) {
    if (it.object) check_string(s, it.key, len);
    all_strings &= util_json_type(s, it.v0, len) == UTIL_JSON_TEXT;
    count++;
    walk(s, it.v0, len, depth + 1);
  }
  if (t == UTIL_JSON_ARRAY) {
    seen v = {0};
    char err[200];
    size_t e = util_json_end(s, i, len);
    int rc = util_json_strings_js(s + i, e - i, collect, &v, err, sizeof err);
    FUZZ_ASSERT(all_strings ? rc == 0 && v.count == count : rc == UTIL_EINVAL);
    util_json_iter_init(&it, s, i, len);
    for (size_t k = 0; rc == 0 && k < v.count && util_json_next(&it); k++) {
      size_t n;
      char *js = util_js_cstr(s, it.v0, len, &n);
      FUZZ_ASSERT(js && n == v.n[k] && !memcmp(js, v.s[k], n));
      free(js);
    }
    for (size_t k = 0; k < v.count; k++) free(v.s[k]);
    free(v.s);
    free(v.n);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  strbuf text = {0};
  util_utf8_repair(&text, (const char *)data, size);
  if (strbuf_failed(&text)) abort();
  FUZZ_ASSERT(util_utf8_check(text.buf, text.len, 1) == text.len);
  for (size_t i = 0; i < text.len;) {
    size_t e = i;
    while (e < text.len && text.buf[e] != '\n') e++;
    const char *line = text.buf + i;
    size_t n = e - i;
    int js = util_json_valid_js(line, n, NULL, 0) == 0, strict = util_json_valid(line, n, NULL, 0) == 0;
    FUZZ_ASSERT(!strict || js); /* (JSON.parse takes whatever RFC 8259 does) */
    if (js) walk(line, util_json_ws(line, 0, n), n, 0);
    i = e + 1;
  }
  strbuf_free(&text);
  return 0;
}
