// RUN: pa-opt %s -split-input-file -verify-diagnostics

// One chunk per rule of decode_v2's verifier.

// Forms: tensors and memrefs mixed.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: tensor<?x32x128xf16>) {
  // expected-error @+1 {{operands must be all tensors (value form) or all memrefs (buffer form), not a mix}}
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : tensor<?x32x128xf16>) {scale = 0.0883883461 : f32} -> tensor<?x32x128xf16>
  return
}

// -----

// Forms: the buffer form returns nothing.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{result #0 must be variadic of ranked tensor of any type values, but got 'memref<?x32x128xf16>'}}
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32} -> memref<?x32x128xf16>
  return
}

// -----

// Rank of query.
func.func @f(%q: memref<?x4096xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query must have rank 3 ([num_seqs, num_heads, head_size]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x4096xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Rank of key_cache.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x128x16xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache must have rank 5 ([num_blocks, num_kv_heads, head_size / x, block_size, x]), got rank 4}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x128x16xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Rank of value_cache.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x16x16x8xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{value_cache must have rank 4 ([num_blocks, num_kv_heads, head_size, block_size]), got rank 5}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x16x16x8xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Rank of block_tables.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_tables must have rank 2 ([num_seqs, max_blocks_per_seq]), got rank 1}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Rank of seq_lens.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?x1xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{seq_lens must have rank 1 ([num_seqs]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?x1xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Rank of output.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4096xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{output must have rank 3 ([num_seqs, num_heads, head_size]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x4096xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Query element type.
func.func @f(%q: memref<?x32x128xf64>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf64>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query element type must be f16, bf16 or f32, got 'f64'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf64>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf64>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Output element type follows the query.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf32>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{output element type ('f32') must equal query's ('f16')}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf32>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Both caches share an element type.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{value_cache element type ('bf16') must equal key_cache's ('f16')}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xbf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Cache element type follows the query unless fp8.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x128x16xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache element type ('bf16') must equal query's ('f16') or be fp8 (f8E4M3FN, f8E5M2) with kv_scales}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xbf16>, memref<?x8x128x16xbf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// fp8 caches need their scales.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x8x16x16xf8E5M2>, %vc: memref<?x8x128x16xf8E5M2>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{fp8 caches ('f8E5M2') need kv_scales(k_scale, v_scale) to dequantize}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x8x16x16xf8E5M2>, memref<?x8x128x16xf8E5M2>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Scales only with fp8 caches.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %ks: f32, %vs: f32) {
  // expected-error @+1 {{kv_scales apply only to fp8 caches, got 'f16'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) kv_scales(%ks, %vs) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// block_tables are i32.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi64>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_tables element type must be i32, got 'i64'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi64>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// seq_lens are i32.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi64>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{seq_lens element type must be i32, got 'i64'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi64>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_heads is static.
func.func @f(%q: memref<?x?x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query dim 1 (num_heads) must be static: the kernels specialize on it}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x?x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x?x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// head_size is static.
func.func @f(%q: memref<?x32x?xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query dim 2 (head_size) must be static: the kernels specialize on it}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x?xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_kv_heads is static.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x?x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache dim 1 (num_kv_heads) must be static: the kernels specialize on it}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x?x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// A static block_size must be a power of two in [8, 128] (a dynamic one is
// the runtime's to check): 48 is not.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x48x8xf16>, %vc: memref<?x8x128x?xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_size 48 is not supported; supported: 8, 16, 32, 64, 128}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x48x8xf16>, memref<?x8x128x?xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Blocks below 8 tokens (a 16-byte value chunk of f16) are not supported.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x4x8xf16>, %vc: memref<?x8x128x4xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_size 4 is not supported; supported: 8, 16, 32, 64, 128}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x4x8xf16>, memref<?x8x128x4xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// value_cache's head_size is static.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x?x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{value_cache dim 2 (head_size) must be static: the kernels specialize on it}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x?x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// x packs 16 bytes.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x32x16x4xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache dim 4 (x = 4) must equal 16 bytes / element size (8 for 'f16')}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x32x16x4xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// head_size agrees between query and key_cache.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x8x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache head_size / x (8) * x (8) = 64 must equal head_size (128, query dim 2)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x8x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// head_size agrees between query and value_cache.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x64x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{value_cache dim 2 (64) must equal query dim 2 (128): both are head_size}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x64x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_kv_heads agrees between the caches.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x4x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache dim 1 (8) must equal value_cache dim 1 (4): both are num_kv_heads}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x4x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// block_size agrees between the caches.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x32xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache dim 3 (16) must equal value_cache dim 3 (32): both are block_size}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x32xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_blocks agrees between the caches.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<100x8x16x16x8xf16>, %vc: memref<200x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{key_cache dim 0 (100) must equal value_cache dim 0 (200): both are num_blocks}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<100x8x16x16x8xf16>, memref<200x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_seqs agrees between block_tables and query.
func.func @f(%q: memref<4x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<3x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_tables dim 0 (3) must equal query dim 0 (4): both are num_seqs}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<4x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<3x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// num_seqs agrees between seq_lens and query.
func.func @f(%q: memref<4x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<5xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{seq_lens dim 0 (5) must equal query dim 0 (4): both are num_seqs}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<4x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<5xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// output has the query's shape.
func.func @f(%q: memref<5x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<5x?xi32>, %sl: memref<5xi32>, %out: memref<4x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{output shape [4, 32, 128] must equal query shape [5, 32, 128]}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<5x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<5x?xi32>, memref<5xi32>) outs(%out : memref<4x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Query heads are shared evenly by KV heads.
func.func @f(%q: memref<?x12x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x12x128xf16>, %es: memref<?x12x?xf32>, %ml: memref<?x12x?xf32>, %tmp: memref<?x12x?x128xf32>) {
  // expected-error @+1 {{num_heads (12) must be a multiple of num_kv_heads (8)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x12x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x12x128xf16>) workspace(%es, %ml, %tmp : memref<?x12x?xf32>, memref<?x12x?xf32>, memref<?x12x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Supported head sizes.
func.func @f(%q: memref<?x32x48xf16>, %kc: memref<?x8x6x16x8xf16>, %vc: memref<?x8x48x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x48xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x48xf32>) {
  // expected-error @+1 {{head_size 48 is not supported; supported: 64, 80, 96, 112, 128, 192, 256}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x48xf16>, memref<?x8x6x16x8xf16>, memref<?x8x48x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x48xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x48xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Supported block sizes.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x256x8xf16>, %vc: memref<?x8x128x256xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{block_size 256 is not supported; supported: 8, 16, 32, 64, 128}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x256x8xf16>, memref<?x8x128x256xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Partition size is a power of two in range.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{partition_size 384 must be a power of two in [64, 16384]}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32, partition_size = 384 : i64}
  return
}

// -----

// Scale is positive.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{scale (-1.000000e+00) must be finite and positive}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = -1.0 : f32}
  return
}

// -----

// Scale is finite.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{scale (INF) must be finite and positive}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0x7F800000 : f32}
  return
}

// -----

// ALiBi slopes: rank.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %al: memref<32x1xf32>) {
  // expected-error @+1 {{alibi_slopes must have rank 1 ([num_heads]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) alibi_slopes(%al : memref<32x1xf32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// ALiBi slopes: f32.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %al: memref<32xf16>) {
  // expected-error @+1 {{alibi_slopes element type must be f32, got 'f16'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) alibi_slopes(%al : memref<32xf16>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// ALiBi slopes: one per query head.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %al: memref<16xf32>) {
  // expected-error @+1 {{alibi_slopes dim 0 (16) must equal query dim 1 (32): both are num_heads}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) alibi_slopes(%al : memref<16xf32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Sinks: rank.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %sk: memref<32x1xf32>) {
  // expected-error @+1 {{sinks must have rank 1 ([num_heads]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) sinks(%sk : memref<32x1xf32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Sinks: f32.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %sk: memref<32xbf16>) {
  // expected-error @+1 {{sinks element type must be f32, got 'bf16'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) sinks(%sk : memref<32xbf16>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Sinks: one per query head (not per KV head).
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>, %sk: memref<8xf32>) {
  // expected-error @+1 {{sinks dim 0 (8) must equal query dim 1 (32): both are num_heads}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) sinks(%sk : memref<8xf32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: exp_sums rank.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{exp_sums must have rank 3 ([num_seqs, num_heads, max_num_partitions]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: tmp_output rank.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x128xf32>) {
  // expected-error @+1 {{tmp_output must have rank 4 ([num_seqs, num_heads, max_num_partitions, head_size]), got rank 3}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: max_logits is f32.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf16>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{max_logits element type must be f32, got 'f16'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf16>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: tmp_output is f32 or the query's type.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xbf16>) {
  // expected-error @+1 {{tmp_output element type must be f32 or query's ('f16'), got 'bf16'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xbf16>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: num_heads.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x16x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{exp_sums dim 1 (16) must equal query dim 1 (32): both are num_heads}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: num_seqs.
func.func @f(%q: memref<4x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<2x32x?x128xf32>) {
  // expected-error @+1 {{tmp_output dim 0 (2) must equal query dim 0 (4): both are query rows}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<4x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<2x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: partitions agree.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x4xf32>, %ml: memref<?x32x8xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{max_logits dim 2 (8) must equal exp_sums dim 2 (4): both are max_num_partitions}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x4xf32>, memref<?x32x8xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: tmp_output's partitions agree.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x4xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x2x128xf32>) {
  // expected-error @+1 {{tmp_output dim 2 (2) must equal exp_sums dim 2 (4): both are max_num_partitions}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x4xf32>, memref<?x32x?xf32>, memref<?x32x2x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: tmp_output's head_size.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x64xf32>) {
  // expected-error @+1 {{tmp_output dim 3 (64) must equal query dim 2 (128): both are head_size}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x64xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// Workspace: exp_sums, max_logits and tmp_output come together.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>) {
  // expected-error @+1 {{workspace must hold exp_sums, max_logits and tmp_output together}}
  "paged_attn.decode_v2"(%q, %kc, %vc, %bt, %sl, %out, %es) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0>, scale = 1.0 : f32}> : (memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>, memref<?x32x128xf16>, memref<?x32x?xf32>) -> ()
  return
}

// -----

// Tensor form: one result per init (checked by the destination-style interface).
func.func @f(%q: tensor<?x32x128xf16>, %kc: tensor<?x8x16x16x8xf16>, %vc: tensor<?x8x128x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %out: tensor<?x32x128xf16>) {
  // expected-error @+1 {{expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>, tensor<?x?xi32>, tensor<?xi32>) outs(%out : tensor<?x32x128xf16>) {scale = 1.0 : f32}
  return
}

// -----

// A sliding window holds at least one token.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{sliding_window (0) must be in [1, 2^31 - 1] tokens}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32, sliding_window = 0 : i64}
  return
}

// -----

// The logits soft cap divides the logits: finite and positive.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{logits_soft_cap (-3.000000e+01) must be finite and positive}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32, logits_soft_cap = -30.0 : f32}
  return
}

// -----

// query_start_loc is rank 1: [num_seqs + 1].
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %qsl: memref<?x1xi32>, %n: index, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query_start_loc must have rank 1 ([num_seqs + 1]), got rank 2}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) query_start_loc(%qsl, %n : memref<?x1xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// query_start_loc holds i32 offsets.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %qsl: memref<?xi64>, %n: index, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query_start_loc element type must be i32, got 'i64'}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) query_start_loc(%qsl, %n : memref<?xi64>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// query_start_loc has num_seqs + 1 entries.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<3x?xi32>, %sl: memref<?xi32>, %qsl: memref<3xi32>, %n: index, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query_start_loc dim 0 (3) must be num_seqs + 1 (block_tables dim 0 + 1 = 4)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<3x?xi32>, memref<?xi32>) query_start_loc(%qsl, %n : memref<3xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// max_query_len, when a constant, is 1 to 16.
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %qsl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  %c17 = arith.constant 17 : index
  // expected-error @+1 {{max_query_len (17) must be in [1, 16]}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) query_start_loc(%qsl, %c17 : memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// With query_start_loc, seq_lens still has one entry per sequence (a row of
// block_tables).
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<3x?xi32>, %sl: memref<5xi32>, %qsl: memref<?xi32>, %n: index, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{seq_lens dim 0 (5) must equal block_tables dim 0 (3): both are num_seqs}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<3x?xi32>, memref<5xi32>) query_start_loc(%qsl, %n : memref<?xi32>) outs(%out : memref<?x32x128xf16>) workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) {scale = 0.0883883461 : f32}
  return
}

// -----

// query_start_loc comes with max_query_len (the generic form can split them).
func.func @f(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %qsl: memref<?xi32>, %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  // expected-error @+1 {{query_start_loc and max_query_len come together}}
  "paged_attn.decode_v2"(%q, %kc, %vc, %bt, %sl, %qsl, %out, %es, %ml, %tmp) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1>, scale = 1.0 : f32}> : (memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>, memref<?xi32>, memref<?x32x128xf16>, memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>) -> ()
  return
}
