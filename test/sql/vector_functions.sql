-- The vector functions in the sqlite3 shell.  Distances are rounded so the
-- expected output is the same at every SIMD level.
.load ./h5mem
.headers on
.mode list
.nullvalue NULL

SELECT h5mem_version() GLOB '[0-9]*.[0-9]*.[0-9]*' AS version_ok,
       json_valid(h5mem_info()) AS info_is_json,
       json_extract(h5mem_info(), '$.simd') IN ('scalar','sse2','avx2','avx512','avx512vnni','neon') AS simd_ok;

-- construction and printing
SELECT vec_to_json(vec_f32('[1, 2.5, -3]')) AS json,
       hex(vec_f32('[1, 2.5, -3]')) AS f32_hex,
       vec_length('[1,2,3,4]') AS len,
       vec_type(vec_f32('[1]')) AS t32, vec_type(vec_f16('[1]')) AS t16;
SELECT vec_to_json(vec_f32('[0.1, 1e-7, 3.4028235e38]'), 1) AS exact,
       vec_to_json('[0.1, 1e-7]') AS compat;
SELECT hex(vec_f16('[1, -2, 0.5, 65504, 0.000000059604645]')) AS f16_hex,
       vec_to_json(vec_f16('[0.1, 1000.3]'), 1) AS f16_rounded,
       vec_length(vec_f16('[1,2,3]')) AS f16_len,
       vec_to_json(vec_f32(vec_f16('[1.5, -2]'))) AS back_to_f32;
-- an untagged BLOB is float32; vec_as_f16 declares one to hold float16
SELECT vec_to_json(vec_as_f16(x'003c00c0')) AS f16_from_blob,
       vec_to_json(vec_f32(x'0000803f000000c0')) AS f32_from_blob,
       hex(vec_f16(x'0000803f000000c0')) AS f32_blob_to_f16;

-- distances
SELECT round(vec_distance_l2('[1,2]', '[4,6]'), 6) AS l2,
       round(vec_distance_cosine('[1,0]', '[0,1]'), 6) AS cos_orth,
       round(vec_distance_cosine('[1,2,3]', '[1,2,3]'), 6) AS cos_same,
       round(vec_distance_cosine('[1,2]', '[-1,-2]'), 6) AS cos_opposite,
       vec_dot('[1,2,3]', '[4,5,6]') AS dot;
SELECT round(vec_distance_l2(vec_f16('[1,2]'), '[4,6]'), 6) AS l2_f16_f32,
       round(vec_distance_l2('[1,2]', vec_f16('[4,6]')), 6) AS l2_f32_f16,
       round(vec_distance_cosine(vec_f16('[1,0]'), vec_f16('[1,1]')), 6) AS cos_f16_f16,
       vec_dot(vec_f16('[0.5,0.25]'), '[2,4]') AS dot_f16;
-- magnitudes float sums cannot hold are computed in double
SELECT vec_distance_cosine('[1e-25,2e-25]', '[1e-25,2e-25]') AS cos_tiny,
       vec_distance_cosine('[1e20,1]', '[1e20,1]') AS cos_huge,
       vec_distance_l2('[1e-30]', '[0]') AS l2_tiny,
       vec_dot('[3e38, 3e38]', '[3e38, 3e38]') AS dot_huge,
       round(vec_distance_l2('[3e38, -3e38]', vec_f16('[1, 2]')) / 1e38, 6) AS l2_mixed;
SELECT vec_to_json(vec_normalize('[3,4]')) AS unit,
       vec_type(vec_normalize(vec_f16('[3,4]'))) AS unit16_type,
       vec_to_json(vec_normalize(vec_f16('[3,4]'))) AS unit16;

-- a table of embeddings, ranked by distance
CREATE TABLE docs(id INTEGER PRIMARY KEY, emb BLOB);
INSERT INTO docs VALUES (1, vec_f32('[1,0,0]')), (2, vec_f32('[0,1,0]')),
                        (3, vec_f32('[0.9,0.1,0]')), (4, vec_f32('[-1,0,0]'));
SELECT id, round(vec_distance_cosine(emb, '[1,0,0]'), 6) AS d
  FROM docs ORDER BY d, id;
-- float16 rows: the subtype is gone once stored, vec_as_f16 restores it
CREATE TABLE docs16(id INTEGER PRIMARY KEY, emb BLOB);
INSERT INTO docs16 SELECT id, vec_f16(emb) FROM docs;
SELECT id, length(emb) AS bytes, round(vec_distance_cosine(vec_as_f16(emb), '[1,0,0]'), 4) AS d
  FROM docs16 ORDER BY d, id;

-- bad input: every one is an error that names the problem
SELECT vec_f32('[1,2');
SELECT vec_f32('[1,,2]');
SELECT vec_f32('[NaN, 1]');
SELECT vec_f32('[1e39]');
SELECT vec_f32('[]');
SELECT vec_f32('');
SELECT vec_f32(NULL);
SELECT vec_f32(42);
SELECT vec_f32(x'000000');
SELECT vec_f32(x'0000c07f');
SELECT vec_f32(x'0000807f');
SELECT vec_f16('[70000]');
SELECT vec_f16(x'007e');
SELECT vec_as_f16(x'007e');
SELECT vec_as_f16('[1,2]');
SELECT vec_as_f16(vec_f32('[1]'));
SELECT vec_distance_l2('[1,2]', '[1,2,3]');
SELECT vec_distance_cosine('[0,0]', '[1,2]');
SELECT vec_distance_cosine('[1,2]', '[0,0]');
SELECT vec_distance_l2('[1,2]', 'x');
SELECT vec_normalize('[0,0,0]');
SELECT vec_length(NULL);
SELECT 'still running' AS after_errors;
-- a result longer than SQLite's length limit is "too big", not "out of memory"
.limit length 2000
SELECT vec_to_json(vec_f32(zeroblob(1600)));
.limit length 1000000000

-- sqlite-vec's int8 and bit vectors and its other helpers
SELECT hex(vec_int8('[1, -2, 127, -128]')) AS i8_hex, vec_type(vec_int8('[1]')) AS ti8,
       vec_length(vec_int8(x'0102030405')) AS i8_len, vec_to_json(vec_int8(x'04ff')) AS i8_json,
       hex(vec_bit(x'0f01')) AS bit_hex, vec_type(vec_bit(x'00')) AS tbit,
       vec_length(vec_bit(x'aabb')) AS bit_len, vec_to_json(vec_bit(x'0f')) AS bit_json;
-- int8 distances go through the kernels' exact integer sums
SELECT vec_distance_l2(vec_int8('[1,2,3]'), vec_int8('[-9,-8,-7]'))
         = sqrt(300) AS l2_i8,
       round(vec_distance_cosine(vec_int8('[1,2,3]'), vec_int8('[-9,-8,-7]')), 6) AS cos_i8,
       vec_dot(vec_int8('[127,-128]'), vec_int8('[127,-128]')) AS dot_i8,
       vec_distance_l1(vec_int8('[127,-128]'), vec_int8('[-128,127]')) AS l1_i8,
       typeof(vec_distance_l1(vec_int8('[1]'), vec_int8('[2]'))) AS l1_i8_type,
       vec_distance_l1('[1,2]', vec_f16('[-3,5.5]')) AS l1_mixed,
       vec_distance_hamming(vec_bit(x'ff00'), vec_bit(x'0f0f')) AS ham,
       vec_distance_hamming(vec_bit(x'ffffffffffffffff01'), vec_bit(x'000000000000000000')) AS ham_long;
SELECT hex(vec_quantize_int8('[-1, 0, 0.5, 1, 2, -3]', 'unit')) AS q8,
       hex(vec_quantize_int8(vec_f16('[-1, 1]'), 'UNIT')) AS q8_f16,
       hex(vec_quantize_binary('[-1,-1,-1,-1,1,1,1,1]')) AS qbin,
       hex(vec_quantize_binary(vec_int8('[0,1,-1,2,0,0,0,5]'))) AS qbin_i8,
       vec_type(vec_quantize_binary('[1,1,1,1,1,1,1,1]')) AS qbin_type;
SELECT vec_to_json(vec_slice('[1,2,3,4]', 1, 3)) AS slice_f32,
       vec_to_json(vec_slice(vec_int8('[1,2,3]'), 0, 1)) AS slice_i8,
       hex(vec_slice(vec_bit(x'aabbccdd'), 8, 24)) AS slice_bit,
       vec_type(vec_slice(vec_f16('[1,2,3]'), 1, 3)) AS slice_f16,
       vec_to_json(vec_add('[1,2]', '[0.5,-4]')) AS add_f32,
       vec_to_json(vec_sub(vec_int8('[11,-128]'), vec_int8('[2,-1]'))) AS sub_i8,
       vec_type(vec_add(vec_f16('[1]'), vec_f16('[2]'))) AS add_f16,
       vec_type(vec_add(vec_f16('[1]'), '[2]')) AS add_mixed;
SELECT vec_to_json(vec_f32(vec_int8('[1,-2]'))) AS i8_to_f32,
       vec_to_json(vec_f16(vec_bit(x'05'))) AS bit_to_f16;
SELECT rowid, value, typeof(value) AS t FROM vec_each(vec_int8('[5,-6]'));
SELECT rowid, value FROM vec_each(vec_bit(x'05'));
SELECT rowid, value FROM vec_each(vec_f16('[0.1, -2]'));
SELECT group_concat(value, ' ') AS f32_each FROM vec_each('[1.5, 2, -3]');
SELECT vec_version() GLOB 'v0.1.9+h5mem.[0-9]*.[0-9]*.[0-9]*' AS version_ok,
       vec_version() = 'v0.1.9+h5mem.' || h5mem_version() AS version_is_h5mem,
       length(vec_debug()) - length(replace(vec_debug(), char(10), '')) AS debug_newlines,
       instr(vec_debug(), 'SIMD: ' || json_extract(h5mem_info(), '$.simd')) > 0 AS debug_simd;
-- bad input to the helpers
SELECT vec_int8('[128]');
SELECT vec_int8('[1.5]');
SELECT vec_int8('[1 2]');
SELECT vec_int8(NULL);
SELECT vec_int8(vec_f32('[1]'));
SELECT vec_bit('[1]');
SELECT vec_bit(vec_int8(x'01'));
SELECT vec_distance_l2(vec_int8('[1,2]'), '[1,2]');
SELECT vec_distance_l1(vec_int8('[1,2]'), vec_int8('[1,2,3]'));
SELECT vec_distance_hamming('[1,2]', vec_f16('[1,2]'));
SELECT vec_distance_hamming(vec_int8('[1]'), vec_int8('[1]'));
SELECT vec_distance_hamming(vec_bit(x'01'), vec_bit(x'0102'));
SELECT vec_distance_cosine(vec_bit(x'01'), vec_bit(x'01'));
SELECT vec_distance_cosine(vec_int8('[0,0]'), vec_int8('[1,2]'));
SELECT vec_quantize_binary('[1,2,3]');
SELECT vec_quantize_binary(vec_bit(x'ff'));
SELECT vec_quantize_int8('[0.5]', 'binary');
SELECT vec_quantize_int8('[0.5]', NULL);
SELECT vec_quantize_int8(vec_int8('[1]'), 'unit');
SELECT vec_slice('[1,2,3]', -1, 2);
SELECT vec_slice('[1,2,3]', 0, 4);
SELECT vec_slice('[1,2,3]', 2, 1);
SELECT vec_slice('[1,2,3]', 1, 1);
SELECT vec_slice('[1,2,3]', 0, 2.0);
SELECT vec_slice(vec_bit(x'aabb'), 4, 16);
SELECT vec_add(vec_int8('[100]'), vec_int8('[100]'));
SELECT vec_sub('[-3e38]', '[3e38]');
SELECT vec_add(vec_bit(x'01'), vec_bit(x'01'));
SELECT vec_sub(vec_int8('[1]'), vec_f16('[1]'));
SELECT vec_add(vec_f16('[60000]'), vec_f16('[60000]'));
SELECT vec_normalize(vec_int8('[1,2]'));
SELECT value FROM vec_each(NULL);
SELECT value FROM vec_each;
SELECT 'still running' AS after_helper_errors;
