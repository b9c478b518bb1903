#include "h5.h"
#include <stdio.h>
int h5w_flush(h5w *w, int sync) { (void)w; (void)sync; return H5_EUNSUPPORTED; }
int h5w_open(const char *path, int threads, h5w **out, char *err, size_t errlen) { (void)path; (void)threads; *out = NULL; snprintf(err, errlen, "stub"); return H5_EUNSUPPORTED; }
int h5w_lookup(h5w *w, const char *path, h5w_obj **out) { (void)w; (void)path; *out = NULL; return H5_ENOTFOUND; }
int h5w_obj_info(h5w_obj *o, h5w_info *info) { (void)o; (void)info; return H5_EUNSUPPORTED; }
