/*
** lib/store/store_prov.c - provenance: who wrote each record, with what,
** and its history (docs/SQL.md, "Provenance").
**
** A store made with provenance (store_opts.provenance; the root's
** attribute `provenance` = "on") has the declared column `+provenance
** text`. store_put fills it: the value the record comes with (an UPDATE
** keeps the old record's) is its history so far, a JSON array, and the put
** appends one event. The column is an ordinary declared column otherwise:
** in the log, the file and the signed leaves like the rest, so a signed
** store signs its records' histories. Replaying the log never calls
** store_put, so an event is made once.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_int.h"
#include "util/json.h"
#include "util/strbuf.h"

int store_has_provenance(const store *s) { return s->prov_col >= 0; }

int store_prov_find(store *s, int on) {
  s->prov_col = -1;
  for (int i = 0; on && i < s->ncols; i++)
    if (!strcmp(s->cdef[i].name, "provenance") && s->cdef[i].type == STORE_T_TEXT && s->cdef[i].role == STORE_R_AUX)
      s->prov_col = i;
  if (on && s->prov_col < 0)
    return store_fail(s, STORE_ECORRUPT, "%s: provenance is on, but the declared column +provenance text is missing",
                      s->path);
  return STORE_OK;
}

static int set_str(store *s, char **dst, const char *v) {
  char *c = v ? strdup(v) : NULL;
  if (v && !c) return store_fail(s, STORE_ENOMEM, "out of memory");
  free(*dst);
  *dst = c;
  return STORE_OK;
}

int store_prov_set(store *s, const char *writer, const char *tool) {
  if (writer && store_str_check(s, "writer", writer, strlen(writer))) return STORE_EINVAL;
  if (tool && store_str_check(s, "tool", tool, strlen(tool))) return STORE_EINVAL;
  int rc = set_str(s, &s->prov_writer, writer);
  return rc ? rc : set_str(s, &s->prov_tool, tool);
}

int store_prov_fields(store *s, const char *fields_json) { return set_str(s, &s->prov_fields, fields_json); }

void store_prov_free(store *s) {
  free(s->prov_writer);
  free(s->prov_tool);
  free(s->prov_fields);
  free(s->prov_emb);
  free(s->prov_model);
  free(s->prov_agent);
  s->prov_writer = s->prov_tool = s->prov_fields = s->prov_emb = s->prov_model = s->prov_agent = NULL;
  s->prov_known = 0;
}

/* "name": "value" into sb when value is a non-empty string. */
static void field(strbuf *sb, const char *name, const char *v) {
  if (!v || !*v) return;
  strbuf_printf(sb, ",\"%s\":", name);
  strbuf_json_string(sb, v, strlen(v));
}

int store_prov_fill(store *s, const store_rec *r, store_rec *out, void **buf) {
  *out = *r;
  *buf = NULL;
  const char *fields = s->prov_fields;
  s->prov_fields = NULL; /* (one put's) */
  if (s->prov_col < 0) {
    free((void *)fields);
    return STORE_OK;
  }
  if (!s->prov_known) { /* (fixed at creation: read once) */
    char e[1024] = "", m[1024] = "", a[1024] = "";
    store_attr(s, "embedder", e, sizeof e);
    if (store_attr(s, "embedder_model", m, sizeof m) != STORE_OK) store_attr(s, "embedder_digest", m, sizeof m);
    store_attr(s, "agent", a, sizeof a);
    if (set_str(s, &s->prov_emb, e) || set_str(s, &s->prov_model, m) || set_str(s, &s->prov_agent, a)) {
      free((void *)fields);
      return STORE_ENOMEM;
    }
    s->prov_known = 1;
  }
  /* the history so far: the value the record comes with, when it is a JSON array */
  const store_val *old = r->cols ? &r->cols[s->prov_col] : NULL;
  const char *h = old && old->type == STORE_T_TEXT ? old->p : NULL;
  size_t hn = h ? old->n : 0;
  int had = h && hn >= 2 && h[0] == '[' && h[hn - 1] == ']' && util_json_valid(h, hn, NULL, 0) == 0;
  strbuf sb = {0};
  if (had) {
    size_t end = hn - 1; /* (the closing bracket; what is before it, trimmed) */
    while (end > 1 && (h[end - 1] == ' ' || h[end - 1] == '\n' || h[end - 1] == '\t' || h[end - 1] == '\r')) end--;
    strbuf_append(&sb, h, end);
    if (end > 1) strbuf_putc(&sb, ','); /* (an empty array: "[") */
  } else {
    strbuf_putc(&sb, '[');
  }
  strbuf_printf(&sb, "{\"op\":\"%s\"", had ? "update" : "insert");
  const char *by = s->prov_writer ? s->prov_writer : s->prov_agent;
  strbuf_puts(&sb, ",\"by\":");
  strbuf_json_string(&sb, by, strlen(by));
  strbuf_printf(&sb, ",\"at\":%lld", (long long)time(NULL));
  field(&sb, "tool", s->prov_tool);
  field(&sb, "embedder", s->prov_emb);
  field(&sb, "model", s->prov_model);
  if (fields) strbuf_printf(&sb, ",\"fields\":%s", fields);
  strbuf_puts(&sb, "}]");
  free((void *)fields);
  if (strbuf_failed(&sb)) {
    strbuf_free(&sb);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  /* the record's columns with the history in place of the old */
  store_val *cv = malloc((size_t)s->ncols * sizeof *cv);
  if (!cv) {
    strbuf_free(&sb);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  if (r->cols) memcpy(cv, r->cols, (size_t)s->ncols * sizeof *cv);
  else memset(cv, 0, (size_t)s->ncols * sizeof *cv);
  cv[s->prov_col] = (store_val){STORE_T_TEXT, 0, 0, sb.buf, sb.len};
  out->cols = cv;
  /* one block: the columns, then the text (freed together) */
  void **b = malloc(2 * sizeof *b);
  if (!b) {
    free(cv);
    strbuf_free(&sb);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  b[0] = cv;
  b[1] = sb.buf;
  *buf = b;
  return STORE_OK;
}

void store_prov_buf_free(void *buf) {
  void **b = buf;
  if (!b) return;
  free(b[0]);
  free(b[1]);
  free(b);
}
