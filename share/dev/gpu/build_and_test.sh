#!/usr/bin/env bash
# Run ON THE GPU MACHINE, from the repository root, in one `device run` call:
#   run(command="bash share/dev/gpu/build_and_test.sh", carry=[".gpu-debs"], timeout_s=600)
# after `share/dev/gpu/fetch_debs.sh` here. It unpacks the Debian packages into a prefix
# (Open MPI, parallel HDF5, Boost, spdlog/fmt, GoogleTest: the GPU machine has none of them and
# cannot download), builds ddptrain against the LibTorch of the machine's PyTorch (CUDA), its CUDA
# toolkit and the NCCL of PyTorch's nvidia-nccl wheel, runs the `gpu` tests and a short bf16 GPT-2
# 124M run on the GPU, and writes report.txt (and the logs) under $OUT.
# Options: --configure-only (stop after cmake; checks the recipe on a machine without a GPU).
# Env: TORCH_CMAKE (default: torch.utils.cmake_prefix_path of python3), NCCL_HOME (default: the
#      nvidia.nccl wheel), DEPS_PREFIX (default /opt/ddptrain-deps), BUILD (default build-gpu).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$repo"
out=${OUT:-$repo/gpu-report}
mkdir -p "$out"
prefix=${DEPS_PREFIX:-/opt/ddptrain-deps}
build=${BUILD:-$repo/build-gpu}
python=${PYTHON:-python3}
report=$out/report.txt
say() { echo "$*" | tee -a "$report"; }
: >"$report"

# --- the Debian packages, relocated -----------------------------------------------------------
ls .gpu-debs/*.deb >/dev/null 2>&1 || { say "no .gpu-debs/: run fetch_debs.sh here first"; exit 2; }
mkdir -p "$prefix"
for deb in .gpu-debs/*.deb; do dpkg -x "$deb" "$prefix"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$prefix/usr  # Open MPI finds its wrappers' data, orted and plugins here
export PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
export PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/hdf5/openmpi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Debian's mpirun/mpicxx are alternatives links that dpkg -x does not make.
for tool in mpirun mpiexec mpicc mpicxx; do ln -sf "$tool.openmpi" "$prefix/usr/bin/$tool"; done
# h5pcc is a script with its prefix written in.
sed "s|^prefix=\"/usr\"|prefix=\"$prefix/usr\"|" "$prefix/usr/bin/h5pcc.openmpi" >"$prefix/usr/bin/h5pcc"
chmod +x "$prefix/usr/bin/h5pcc"

# --- LibTorch (CUDA), CUDA toolkit, NCCL from the machine ---------------------------------------
torch_cmake=${TORCH_CMAKE:-$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')}
nccl_home=${NCCL_HOME:-$("$python" -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)}
if [[ -n $nccl_home && ! -e $nccl_home/lib/libnccl.so ]]; then
  # The wheel ships only libnccl.so.2; the linker wants libnccl.so.
  mkdir -p "$prefix/nccl/lib"
  ln -sf "$nccl_home/include" "$prefix/nccl/include"
  ln -sf "$nccl_home"/lib/libnccl.so.* "$prefix/nccl/lib/"
  ln -sf "$(ls "$nccl_home"/lib/libnccl.so.* | head -1)" "$prefix/nccl/lib/libnccl.so"
  nccl_home=$prefix/nccl
fi
export NCCL_HOME=$nccl_home
cuda_args=()
if command -v nvcc >/dev/null; then
  cuda_args=(-DCUDAToolkit_ROOT="$(dirname "$(dirname "$(command -v nvcc)")")" -DDDPTRAIN_WITH_NCCL=ON)
fi
say "torch cmake: $torch_cmake; NCCL: ${nccl_home:-none}; nvcc: $(command -v nvcc || echo none)"

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_cmake;$prefix/usr" \
  -DMPI_C_COMPILER="$prefix/usr/bin/mpicc" -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx" \
  -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun" \
  -DHDF5_C_COMPILER_EXECUTABLE="$prefix/usr/bin/h5pcc" \
  "${cuda_args[@]}" 2>&1 | tee "$out/configure.log" | grep -E "ddptrain:|Error|error" || true
[[ ${PIPESTATUS[0]} -eq 0 ]] || { say "configure failed: see configure.log"; exit 1; }
grep -E "^(MPI_CXX_COMPILER|HDF5_C_COMPILER_EXECUTABLE|Torch_DIR|DDPTRAIN_NCCL_LIBRARY):" \
  "$build/CMakeCache.txt" | tee -a "$report"
[[ ${1:-} == --configure-only ]] && exit 0

cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; say "build failed"; exit 1; }
say "built $(ls "$build/bin")"
missing=$(ldd "$build/bin/ddptrain" | grep "not found" || true)
[[ -z $missing ]] || say "unresolved libraries: $missing"

# --- the GPU tests and a real GPU run -----------------------------------------------------------
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$report" || true
"$build/bin/ddptrain" info 2>&1 | tee -a "$report"
(cd "$build" && ctest -L gpu --output-on-failure) >"$out/ctest_gpu.log" 2>&1 && say "ctest -L gpu: passed" ||
  say "ctest -L gpu: FAILED (ctest_gpu.log)"
grep -E "tests passed|Passed|Failed|Skipped|SKIPPED" "$out/ctest_gpu.log" | tee -a "$report" || true

# GPT-2 124M, bf16, NCCL, one GPU: the everyday deck shortened to 30 steps on one rank, on
# synthetic tokens (no corpus there). The checkpoint of step 30 gives the write time.
"$build/bin/ddptrain" train inputs/gpt2_small_16gpu.cfg --train.steps=30 --log.every=10 \
  --train.global_batch=16 --train.grad_accum=1 --data.type=synthetic_tokens --data.samples=4096 \
  --eval.every=0 --checkpoint.keep_best=false --checkpoint.every=30 --train.resume=none \
  --run.dir=/tmp/gpt2_run >"$out/gpt2.log" 2>&1 && say "GPT-2 124M bf16 run: done" ||
  say "GPT-2 124M bf16 run: FAILED (gpt2.log)"
grep -E "device|GPUs|precision|throughput|final loss|checkpoint:" "$out/gpt2.log" | tee -a "$report" || true
