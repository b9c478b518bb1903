/*
** test/tools/h5mdci.c - write an HDF5 file whose metadata libhdf5 leaves in
** a metadata cache image (H5Pset_mdc_image_config), for
** test/sql/test_h5_mdci.py: groups (one with enough links to be stored
** densely), attributes, chunked and compressed, compact and contiguous
** datasets.  Linked with libhdf5 (the test oracle, never part of h5mem).
**
**   test/tools/h5mdci OUT.h5
*/
#include <hdf5.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: h5mdci OUT.h5\n");
    return 2;
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  H5AC_cache_image_config_t cfg = {H5AC__CURR_CACHE_IMAGE_CONFIG_VERSION, 1, 0, -1};
  if (H5Pset_mdc_image_config(fapl, &cfg) < 0) return 1;
  hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (f < 0) return 1;
  /* an attribute on the root group */
  hsize_t three = 3;
  int av[3] = {7, -8, 9};
  hid_t s3 = H5Screate_simple(1, &three, NULL);
  hid_t a = H5Acreate2(f, "numbers", H5T_STD_I32LE, s3, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT, av);
  H5Aclose(a);
  /* a chunked, deflated dataset of 120 x 50 doubles */
  hsize_t dims[2] = {120, 50}, chunk[2] = {16, 10};
  static double v[120][50];
  for (int i = 0; i < 120; i++)
    for (int j = 0; j < 50; j++) v[i][j] = i * 0.5 - j * 1.25;
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 6);
  hid_t g = H5Gcreate2(f, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t d = H5Dcreate2(g, "chunked", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(d);
  /* compact and contiguous ones */
  hid_t cpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_layout(cpl, H5D_COMPACT);
  d = H5Dcreate2(g, "compact", H5T_STD_I32LE, s3, H5P_DEFAULT, cpl, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, av);
  H5Dclose(d);
  hsize_t n = 1000;
  static int w[1000];
  for (int i = 0; i < 1000; i++) w[i] = i * i - 500;
  hid_t sn = H5Screate_simple(1, &n, NULL);
  d = H5Dcreate2(g, "contiguous", H5T_STD_I32BE, sn, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w);
  H5Dclose(d);
  /* a group with 40 members: dense links (fractal heap, v2 B-tree) */
  hid_t many = H5Gcreate2(f, "many", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  for (int i = 0; i < 40; i++) {
    char name[32];
    snprintf(name, sizeof name, "item%02d", i);
    hid_t s1 = H5Screate(H5S_SCALAR);
    hid_t di = H5Dcreate2(many, name, H5T_STD_I32LE, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(di, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &i);
    H5Dclose(di);
    H5Sclose(s1);
  }
  H5Gclose(many);
  H5Sclose(sn);
  H5Pclose(cpl);
  H5Gclose(g);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Sclose(s3);
  H5Pclose(fapl);
  return H5Fclose(f) < 0;
}
