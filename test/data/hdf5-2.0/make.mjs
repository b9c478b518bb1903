// test/data/hdf5-2.0/make.mjs - the HDF5 2.0 files of this directory, written
// by libhdf5 2.0.0 inside h5wasm 0.10 with libver "latest" (layout message
// version 5 for filtered chunked datasets, datatype message version 5 for
// compounds, the dimension scale's REFERENCE_LIST among them):
//
//   cd test/data/hdf5-2.0 && npm install --no-save h5wasm@0.10.3 && node make.mjs
//
// test/sql/test_h5_wild.py reads them against the values written here.
import h5wasm from "h5wasm/node";
await h5wasm.ready;

const n = 100;
const f32 = new Float32Array(n), i32 = new Int32Array(n);
for (let i = 0; i < n; i++) {
  f32[i] = i * 0.5;
  i32[i] = i * 3 - 7;
}
const a = new h5wasm.File("layout_v5.h5", "w", {libver: "latest"});
a.create_dataset({name: "plain", data: f32});
a.create_dataset({name: "chunked", data: f32, shape: [10, 10], chunks: [4, 4]});
a.create_dataset({name: "deflate", data: i32, shape: [10, 10], chunks: [4, 4], compression: "gzip", compression_opts: 6});
a.create_dataset({name: "ext", data: i32, shape: [100], maxshape: [null], chunks: [16]});
a.create_dataset({name: "ext_deflate", data: f32, shape: [100], maxshape: [null], chunks: [16], compression: "gzip"});
a.get("plain").create_attribute("units", "m");
a.close();

const b = new h5wasm.File("dtype_v5.h5", "w", {libver: "latest"});
b.create_dataset({name: "comp", data: new Map([["a", new Int32Array([1, 2, 3])], ["b", new Float32Array([1.5, 2.5, 3.5])]]),
                  shape: [3], dtype: [["a", "<i4"], ["b", "<f4"]]});
b.create_dataset({name: "x", data: new Float64Array([0, 1, 2, 3, 4, 5]), shape: [6]});
b.create_dataset({name: "data", data: new Float32Array([10, 11, 12, 13, 14, 15]), shape: [6]});
b.get("x").make_scale("x");
b.get("data").attach_scale(0, "/x");
b.get("comp").create_attribute("cattr", new Map([["a", new Int32Array([7])], ["b", new Float32Array([0.25])]]), [1],
                                [["a", "<i4"], ["b", "<f4"]]);
b.close();
