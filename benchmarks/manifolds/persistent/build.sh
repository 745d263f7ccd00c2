#!/bin/sh
# recur.cu -> recur.ptx (committed: the GPU machine needs no nvcc), checked by ptxas for sm_90.
# nvcc 13 writes PTX ISA 9.0; the kernels use nothing newer than 7.8 (sm_90 needs >= 7.8),
# the version torchc's own NVPTX output declares, so older drivers JIT it too.
set -e
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
"$NVCC" -ptx -arch=compute_90 -O3 -o recur.ptx.tmp recur.cu
sed -e 's/^\.version [0-9.]*/.version 7.8/' recur.ptx.tmp > recur.ptx
rm -f recur.ptx.tmp
"$PTXAS" -arch=sm_90 -v -o /dev/null recur.ptx 2>&1 | grep -E "Compiling|registers|spill" 
