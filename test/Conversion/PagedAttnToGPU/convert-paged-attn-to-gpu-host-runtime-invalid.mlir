// RUN: pa-opt %s -split-input-file -verify-diagnostics -convert-paged-attn-to-gpu="chip=sm_90 host=runtime"
// RUN: not pa-opt %s -split-input-file -convert-paged-attn-to-gpu="host=runtim" 2>&1 | FileCheck %s --check-prefix=HOST

// HOST: error: convert-paged-attn-to-gpu: host must be launch or runtime, got 'runtim'

// A function the module calls cannot grow the runtime arguments: its
// callers would not pass them.

// expected-error @+1 {{is called inside the module; host=runtime appends the runtime context, stream and status to its arguments, which its callers do not pass (give it arguments marked paged_attn.host_arg instead)}}
func.func @callee(%q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                  %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                  %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                  %es: memref<2x8x1xf32>, %ml: memref<2x8x1xf32>,
                  %tmp: memref<2x8x1x128xf32>) {
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x16x16x8xf16>,
          memref<64x8x128x16xf16>, memref<2x32xi32>, memref<2xi32>)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return
}

func.func @caller(%q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                  %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                  %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                  %es: memref<2x8x1xf32>, %ml: memref<2x8x1xf32>,
                  %tmp: memref<2x8x1x128xf32>) {
  call @callee(%q, %kc, %vc, %bt, %sl, %out, %es, %ml, %tmp)
      : (memref<2x8x128xf16>, memref<64x8x16x16x8xf16>, memref<64x8x128x16xf16>,
         memref<2x32xi32>, memref<2xi32>, memref<2x8x128xf16>,
         memref<2x8x1xf32>, memref<2x8x1xf32>, memref<2x8x1x128xf32>) -> ()
  return
}

// -----

// An argument marked as a runtime argument must be a pointer.

// expected-error @+1 {{argument marked paged_attn.host_arg = "stream" must be '!llvm.ptr'}}
func.func @bad_mark(%stream: i64 {paged_attn.host_arg = "stream"},
                    %q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                    %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                    %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                    %es: memref<2x8x1xf32>, %ml: memref<2x8x1xf32>,
                    %tmp: memref<2x8x1x128xf32>) {
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x16x16x8xf16>,
          memref<64x8x128x16xf16>, memref<2x32xi32>, memref<2xi32>)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return
}

// -----

// Host allocations the lowering cannot move to the device: an output, and
// a workspace someone else reads.

func.func @host_output(%q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                       %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                       %sl: memref<2xi32>, %es: memref<2x8x1xf32>,
                       %ml: memref<2x8x1xf32>, %tmp: memref<2x8x1x128xf32>)
    -> memref<2x8x128xf16> {
  %out = memref.alloc() : memref<2x8x128xf16>
  // expected-error @+1 {{with host=runtime writes its output into a buffer allocated on the host (bufferization could not write in place): pass the output as a function argument the result may alias}}
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x16x16x8xf16>,
          memref<64x8x128x16xf16>, memref<2x32xi32>, memref<2xi32>)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return %out : memref<2x8x128xf16>
}

// -----

func.func @shared_workspace(%q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                            %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                            %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                            %ml: memref<2x8x1xf32>, %tmp: memref<2x8x1x128xf32>)
    -> memref<2x8x1xf32> {
  %es = memref.alloc() : memref<2x8x1xf32>
  // expected-error @+1 {{with host=runtime needs a workspace used by this op alone (it is allocated on the device around the call)}}
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x16x16x8xf16>,
          memref<64x8x128x16xf16>, memref<2x32xi32>, memref<2xi32>)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return %es : memref<2x8x1xf32>
}
