/*
** test/fuzz/fuzz_langgraph.c - libFuzzer target for what h5mem_migrate
** reads from a LangGraph store's rows: an item's JSON value and a
** store_vectors field name, into the text LangGraph embedded
** (ext/migrate/mig_langgraph.c, mig_langgraph_text).
**
** Input: the field name up to the first newline, the value after it.
** Invariants: a value util_json_valid refuses gives -1 and nothing else
** does; a text is returned with its length (NUL bytes inside counted, as a
** \u0000 decodes to one); the same input gives the same answer; the field
** "$" of any valid value gives a text that starts as the value's JSON
** starts ('{', '[', '"', a digit or '-', or t/f/n).
** Seeds (H5MEM_FUZZ_SEEDS): LangGraph's field-name forms over one value.
*/
#include "config.h"

#include "fuzz.h"
#include "migrate/mig.h"
#include "util/json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *seeds = fuzz_seed_dir();
  if (!seeds) return 0;
  static const char *const value =
      "{\"text\":\"hello\",\"profile\":{\"bio\":\"I like C\",\"age\":41,\"nested\":{\"z\":1,\"a\":[\"x\",\"\\u00e9\"]}},"
      "\"tags\":[\"red\",\"green\",\"blue\"],\"empty\":[],\"nul\":null,\"num\":3.0,\"big\":1e100,\"small\":1e-7,"
      "\"flag\":true,\"a\":{\"b\":\"B\",\"c\":2,\"d\":null},\"k\":1,\"k\":\"again\\u0000x\",\"items\":[{\"name\":\"n1\"},"
      "{\"name\":{\"k\":\"v\"}}],\"u\":18446744073709551615}";
  static const char *const fields[] = {"text", "profile.bio", "profile", "tags[*].1", "tags[-1]", "tags[9]",
                                       "{a,b}.0", "{text,nul,profile.bio}.1", "a.{b,c,d}.1", "items[*].name.1",
                                       "$", "", "*.3", "a.*.0", "k", "[[0]]", "{a,{b}}", "tags[ +1_0 ]", "u",
                                       "x.y.z.", "..", "{", "["};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    char name[32], buf[2048];
    int n = snprintf(buf, sizeof buf, "%s\n%s", fields[i], value);
    snprintf(name, sizeof name, "seed-%zu", i);
    fuzz_seed(seeds, name, buf, (size_t)n);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *nl = memchr(s, '\n', size);
  size_t fn = nl ? (size_t)(nl - s) : size;
  const char *v = nl ? nl + 1 : s + size;
  size_t vn = nl ? size - fn - 1 : 0;
  char *out = NULL, *again = NULL;
  size_t n = 0, m = 0;
  int rc = mig_langgraph_text(v, vn, s, fn, &out, &n);
  if (rc == -2) return 0; /* (out of memory) */
  int valid = util_json_valid(v, vn, NULL, 0) == 0;
  FUZZ_ASSERT(rc == (valid ? rc : -1) && (rc != -1 || !valid));
  FUZZ_ASSERT(rc == 1 ? out != NULL : out == NULL);
  if (rc == 1) FUZZ_ASSERT(strlen(out) <= n && out[n] == 0);
  int rc2 = mig_langgraph_text(v, vn, s, fn, &again, &m);
  FUZZ_ASSERT(rc2 == rc && m == n && (!out || !memcmp(out, again, n)));
  sqlite3_free(out);
  sqlite3_free(again);
  if (valid) {
    rc = mig_langgraph_text(v, vn, "$", 1, &out, &n);
    if (rc == -2) return 0;
    size_t i = util_json_ws(v, 0, vn);
    FUZZ_ASSERT(rc == 1 && n > 0 && (out[0] == v[i] || (out[0] >= '0' && out[0] <= '9') || out[0] == '-' ||
                                     out[0] == 'I' || out[0] == 'N'));
    sqlite3_free(out);
  }
  return 0;
}
