#!/usr/bin/env bash
# Run ON THE GPU MACHINE, from the repository root, in one `device run` call (fits 9 minutes):
#   run(command="bash share/dev/gpu/build_and_test.sh", carry=[".gpu-debs"], timeout_s=570)
# after `share/dev/gpu/fetch_debs.sh` here. It
#  1. unpacks the Debian packages into a prefix (Open MPI, parallel HDF5, Boost, spdlog/fmt,
#     GoogleTest: the GPU machine has none of them and cannot download), and links in the
#     fallback libraries (libcurl, libssl, ...) whose sonames the machine lacks;
#  2. builds ddptrain, its HDF5 probe and the MPI tests against the LibTorch of the machine's
#     PyTorch (CUDA), its CUDA toolkit and the NCCL of PyTorch's nvidia-nccl wheel; meanwhile
#     the torch.compile variant of the PyTorch benchmark runs (it compiles on the CPUs too);
#  3. saves the executables to $OUT/bin.tar.gz (a second call can carry them: BIN_TARBALL);
#  4. benchmarks GPT-2 124M in bf16 on the GPU: ddptrain twice around PyTorch eager (the second
#     run with train.loss_chunk = 2048, the chunked loss)
#     (share/dev/gpu/gpt2_pytorch.py), and prints the table (tokens/s, MFU against the bf16
#     matrix rate measured in the same call, peak GPU memory, checkpoint write time);
#     then generation from that checkpoint, ddptrain and PyTorch eager with a KV cache;
#  5. runs `ctest -L gpu` and FAILS if any of those tests skipped or did not run.
# Everything lands in $OUT/report.txt (the summary) and the logs beside it.
# Options: --configure-only (stop after cmake; checks the recipe on a machine without a GPU).
# Env: TORCH_CMAKE (default: torch.utils.cmake_prefix_path of python3), NCCL_HOME (default: the
#      nvidia.nccl wheel), DEPS_PREFIX (default /opt/ddptrain-deps), BUILD (default build-gpu),
#      BIN_TARBALL (a bin.tar.gz from an earlier call: skip the build), BUDGET_S (default 540:
#      the stages after the build get what is left of it).
set -uo pipefail
started=$SECONDS
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$repo" || exit 2
out=${OUT:-$repo/gpu-report}
mkdir -p "$out"
prefix=${DEPS_PREFIX:-/opt/ddptrain-deps}
build=${BUILD:-$repo/build-gpu}
python=$(command -v "${PYTHON:-python3}")
budget=${BUDGET_S:-540}
report=$out/report.txt
# $OUT brings back at most 8 files: the report, the executables and one archive of the logs.
logs=${LOGS:-/tmp/ddptrain-gpu-logs}
rm -rf "$logs" && mkdir -p "$logs"
# The logs are packed after each stage, not only at the exit: a call killed at its limit still
# brings back what the stages before it wrote.
pack() { tar -czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null; }
trap pack EXIT
# A crash (the deterministic-mode segfault) must not spend the call writing a core file.
ulimit -c 0
say() { echo "[$((SECONDS - started)) s] $*" | tee -a "$report"; }
left() { echo $((budget - (SECONDS - started))); }
# limit WANT: a stage's timeout: WANT seconds, or what the budget leaves after 15 s kept for
# packing the logs, if that is less; at least 1 (timeout 0 would mean no limit at all).
limit() {
  local room=$(($(left) - 15))
  ((room < $1)) || room=$1
  ((room >= 1)) || room=1
  echo "$room"
}
: >"$report"
failed=0

# --- 1. the Debian packages, relocated ---------------------------------------------------------
ls .gpu-debs/*.deb >/dev/null 2>&1 || { say "no .gpu-debs/: run fetch_debs.sh here first"; exit 2; }
mkdir -p "$prefix" "$prefix/fallback" "$prefix/linkstubs"
for deb in .gpu-debs/*.deb; do dpkg -x "$deb" "$prefix"; done
for deb in .gpu-debs/fallback/*.deb; do dpkg -x "$deb" "$prefix/fallback"; done
lib=$prefix/usr/lib/x86_64-linux-gnu
# A fallback library is used only where the machine has no library of that soname.
linked=()
sonames=$(ldconfig -p | awk '{print $1}')
for so in "$prefix"/fallback/{usr/,}lib/x86_64-linux-gnu/lib*.so.*; do
  name=$(basename "$so")
  # Sonames only (libcurl.so.4, not the file libcurl.so.4.8.0 it points at).
  [[ -e $so && $name =~ \.so\.[0-9]+$ ]] || continue
  grep -qxF "$name" <<<"$sonames" && continue
  ln -sf "$so" "$lib/$name"
  linked+=("$name")
done
say "fallback libraries linked in (missing here): ${linked[*]:-none}"
# The linker wants unversioned names for what h5pcc -show lists (-lcrypto -lcurl -lsz -lz).
for name in crypto curl sz z aec; do
  target=$(compgen -G "$lib/lib$name.so.*" | head -1)
  [[ -n $target ]] || target=$(ldconfig -p | awk -v n="lib$name.so." 'index($1, n) == 1 {print $NF; exit}')
  [[ -n $target ]] && ln -sf "$target" "$prefix/linkstubs/lib$name.so"
done
export OPAL_PREFIX=$prefix/usr  # Open MPI finds its wrappers' data, orted and plugins here
export PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
export PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/hdf5/openmpi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBRARY_PATH=$prefix/linkstubs${LIBRARY_PATH:+:$LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1  # one node: no fabric plugins to probe
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# The machine's own PMIx plugins (another PMIx build) are found too and fail to load (two
# harmless lines per launch); without the zlib one, PMIx warns that it cannot compress.
export PMIX_MCA_pcompress_base_silence_warning=1
# Debian's mpirun/mpicxx are alternatives links that dpkg -x does not make.
for tool in mpirun mpiexec mpicc mpicxx; do ln -sf "$tool.openmpi" "$prefix/usr/bin/$tool"; done
# h5pcc is a script with its prefix written in.
sed "s|^prefix=\"/usr\"|prefix=\"$prefix/usr\"|" "$prefix/usr/bin/h5pcc.openmpi" >"$prefix/usr/bin/h5pcc"
chmod +x "$prefix/usr/bin/h5pcc"

# The wheel's include folder carries its own fmt (11 or later), which Debian 12's spdlog 1.10 does
# not compile with, and it comes before the prefix's among the -isystem folders. A folder of its
# own holding only fmt 9 and spdlog, given with -I, is searched before every -isystem folder (the
# prefix's include folder itself cannot be: GCC ignores -I for a folder also given as -isystem).
# ddptrain includes none of the LibTorch headers that use fmt (the profiler's and c10d's).
mkdir -p "$prefix/fmt9/include"
ln -sfn "$prefix/usr/include/fmt" "$prefix/fmt9/include/fmt"
ln -sfn "$prefix/usr/include/spdlog" "$prefix/fmt9/include/spdlog"

# --- LibTorch (CUDA), CUDA toolkit, NCCL from the machine ---------------------------------------
torch_cmake=${TORCH_CMAKE:-$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')}
torch_lib=$("$python" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nccl_home=${NCCL_HOME:-$("$python" -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)}
if [[ -n $nccl_home && ! -e $nccl_home/lib/libnccl.so ]]; then
  # The wheel ships only libnccl.so.2; the linker wants libnccl.so.
  mkdir -p "$prefix/nccl/lib"
  ln -sfn "$nccl_home/include" "$prefix/nccl/include"
  ln -sf "$nccl_home"/lib/libnccl.so.* "$prefix/nccl/lib/"
  ln -sf "$(compgen -G "$nccl_home/lib/libnccl.so.*" | head -1)" "$prefix/nccl/lib/libnccl.so"
  nccl_home=$prefix/nccl
fi
export NCCL_HOME=$nccl_home
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # no GPU probing at configure time
cuda_args=()
if command -v nvcc >/dev/null; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  cuda_args=(-DCUDAToolkit_ROOT="$cuda_root" -DDDPTRAIN_WITH_NCCL=ON
             -DCMAKE_PROJECT_INCLUDE="$repo/share/dev/gpu/torch_wheel_fixes.cmake")
  # The wheel's config looks for NVTX 3 beside PyTorch's sources; the toolkit has it.
  [[ -d $cuda_root/include/nvtx3 ]] && cuda_args+=(-Dnvtx3_dir="$cuda_root/include")
fi
say "python: $python ($("$python" -c 'import torch; print(torch.__version__)')); NCCL: ${nccl_home:-none}; nvcc: $(command -v nvcc || echo none)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$report"

# --- 2. build (the compiled PyTorch variant runs meanwhile) ---------------------------------------
bench=(--batch 16 --block 1024 --steps 10 --chunks 3)
if [[ ${1:-} != --configure-only && -z ${BIN_TARBALL:-} ]]; then
  timeout "$(limit 300)" "$python" share/dev/gpu/gpt2_pytorch.py "${bench[@]}" --impl compiled_fused \
    >"$logs/pytorch_compiled.log" 2>&1 &
  compiled_pid=$!
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_cmake;$prefix/usr" \
  -DMPI_C_COMPILER="$prefix/usr/bin/mpicc" -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx" \
  -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun" \
  -DHDF5_C_COMPILER_EXECUTABLE="$prefix/usr/bin/h5pcc" \
  -DCMAKE_LIBRARY_PATH="$prefix/linkstubs" \
  -DCMAKE_CXX_FLAGS="-I$prefix/fmt9/include" \
  -DDDPTRAIN_TORCH_PYTHON="$python" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined -Wl,-rpath,$torch_lib" \
  "${cuda_args[@]}" >"$logs/configure.log" 2>&1
rc=$?
grep -E "ddptrain:|CMake (Error|Warning)" "$logs/configure.log" | head -20 | tee -a "$report"
((rc == 0)) || { tail -40 "$logs/configure.log"; say "configure FAILED (configure.log)"; exit 1; }
grep -E "^(MPI_CXX_COMPILER|HDF5_C_COMPILER_EXECUTABLE|Torch_DIR|DDPTRAIN_NCCL_LIBRARY):" \
  "$build/CMakeCache.txt" | tee -a "$report"
[[ ${1:-} == --configure-only ]] && exit 0
if [[ -n ${BIN_TARBALL:-} ]]; then
  rm -rf "${build:?}/bin" && tar -xzf "$BIN_TARBALL" -C "$build" && mv "$build/ddptrain-bin" "$build/bin"
  say "executables from $BIN_TARBALL (not built here)"
else
  timeout "$(limit 330)" cmake --build "$build" -j "$(nproc)" \
    --target ddptrain ddptrain-h5probe ddptrain_mpi_tests ddptrain_watchdog_cuda_probe \
    >"$logs/build.log" 2>&1
  rc=$?
  ((rc == 0)) || { grep -m20 -B2 -A8 "error" "$logs/build.log"; tail -5 "$logs/build.log"; say "build FAILED (exit $rc, build.log)"; exit 1; }
  say "built: $(cd "$build/bin" && echo *)"
  rm -rf /tmp/ddptrain-bin && cp -r "$build/bin" /tmp/ddptrain-bin && strip /tmp/ddptrain-bin/* 2>/dev/null
  tar -czf "$out/bin.tar.gz" -C /tmp ddptrain-bin
fi
pack
missing=$(ldd "$build/bin/ddptrain" | grep "not found" || true)
[[ -z $missing ]] || say "unresolved libraries: $missing"
"$build/bin/ddptrain" info >"$logs/info.txt" 2>&1
grep -E "device|GPUs|backend|NCCL|LibTorch" "$logs/info.txt" | tee -a "$report"
if [[ -n ${compiled_pid:-} ]]; then
  wait "$compiled_pid" || say "torch.compile variant FAILED (pytorch_compiled.log)"
fi

# Open question (NOTES.md): with CUBLAS_WORKSPACE_CONFIG set, ddptrain crashed in LibTorch's
# regex that parses it. Does PyTorch alone crash, and do ddptrain and python load the same C++
# runtime?
CUBLAS_WORKSPACE_CONFIG=:4096:8 timeout "$(limit 60)" "$python" -c "
import torch
a = torch.randn(64, 64, device='cuda')
(a @ a).sum().item()
maps = open('/proc/self/maps').read().split()
print('python + torch with CUBLAS_WORKSPACE_CONFIG: matmul ran; C++ runtime',
      sorted({m for m in maps if 'libstdc++' in m}))" >"$logs/cublas_config.log" 2>&1
say "exit $?: $(tail -1 "$logs/cublas_config.log")"
say "ddptrain's C++ runtime: $(ldd "$build/bin/ddptrain" | awk '/libstdc/ {print $3}')"
# And whose copy of std::regex's compiler LibTorch's calls bind to (the suspicion: NOTES.md).
# LD_BIND_NOW binds, and LD_DEBUG reports, every symbol at start.
say "std::regex compiler, calls bound (count from -> to): $(LD_BIND_NOW=1 LD_DEBUG=bindings \
  timeout "$(limit 60)" "$build/bin/ddptrain" --version 2>&1 |
  awk '/binding file .*8__detail9_Compiler/ { n = split($4, a, "/"); m = split($7, b, "/"); print a[n] " -> " b[m] }' |
  sort | uniq -c | tr -s ' \n' ' ')"

# --- 4. GPT-2 124M bf16: ddptrain, PyTorch eager, ddptrain again -------------------------------
# peak_memory LOG COMMAND...: runs COMMAND (output to LOG), samples the GPU's used memory every
# 100 ms, appends "PEAK_GPU_MIB=N" to LOG.
peak_memory() {
  local log=$1 sampler peak
  shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$log.mem" 2>/dev/null &
  sampler=$!
  "$@" >"$log" 2>&1
  local rc=$?
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  peak=$(sort -n "$log.mem" | tail -1)
  echo "PEAK_GPU_MIB=${peak:-unknown}" >>"$log"
  return $rc
}
# ddptrain_gpt2 N [SWITCH...]: the everyday deck on one GPU, batch 16 x 1024, 60 steps, a
# checkpoint after the last, with the speed switches given (the table names them in the run's
# row). gpt2_table.py takes the throughput from the rows of steps 11..50 (after the warm-up row,
# before the row that holds the checkpoint), the write time from the checkpoint line.
ddptrain_gpt2() {
  local run=$1
  shift
  rm -rf /tmp/gpt2_run
  peak_memory "$logs/ddptrain_gpt2_$run.log" timeout "$(limit 120)" "$build/bin/ddptrain" train inputs/gpt2_small_16gpu.cfg \
    --train.steps=60 --log.every=10 --train.global_batch=16 --train.grad_accum=1 \
    --data.type=synthetic_tokens --data.samples=1024 --data.vocab=50257 --eval.every=0 \
    --checkpoint.keep_best=false --checkpoint.every=60 --train.resume=none \
    --run.dir=/tmp/gpt2_run "$@" || say "ddptrain GPT-2 run $run FAILED (ddptrain_gpt2_$run.log)"
  echo "SWITCHES=$*" >>"$logs/ddptrain_gpt2_$run.log"
  pack
}
# Run 1 plain, run 2 with the chunked loss (train.loss_chunk: no 16 x 1024 x 50304 fp32 logits),
# PyTorch eager between them.
ddptrain_gpt2 1
peak_memory "$logs/pytorch_eager.log" timeout "$(limit 150)" "$python" share/dev/gpu/gpt2_pytorch.py "${bench[@]}" \
  --impl eager_foreach --impl eager_fused || say "PyTorch eager FAILED (pytorch_eager.log)"
pack
ddptrain_gpt2 2 --train.loss_chunk=2048
# ZeRO-3 on GPT-2 124M: two NCCL ranks sharing the GPU (each its own NCCL_HOSTID, as
# tests/e2e/gpu_two_ranks.sh does), each holding half of the weights, gradients and moments and
# gathering each block while it runs. Not a speed figure (two ranks share one GPU): that it runs
# over NCCL, its summary (memory line: the shards and the largest unit) and its loss.
rm -rf /tmp/gpt2_zero3
peak_memory "$logs/ddptrain_gpt2_zero3.log" timeout "$(limit 120)" "$prefix/usr/bin/mpirun" -np 2 \
  --oversubscribe --bind-to none -x DDPTRAIN_TEST_SHARE_GPU=1 -x NCCL_SOCKET_IFNAME=lo \
  -x NCCL_IB_DISABLE=1 bash -c 'NCCL_HOSTID=ddptrain-zero3-$OMPI_COMM_WORLD_RANK exec "$@"' \
  ddptrain "$build/bin/ddptrain" train inputs/gpt2_small_16gpu.cfg --train.steps=20 \
  --log.every=10 --train.global_batch=16 --train.grad_accum=1 --data.type=synthetic_tokens \
  --data.samples=1024 --data.vocab=50257 --eval.every=0 --checkpoint.every=0 \
  --checkpoint.keep_best=false --train.resume=none --ddp.zero=3 --run.dir=/tmp/gpt2_zero3 ||
  say "ddptrain GPT-2 ZeRO-3 on 2 ranks FAILED (ddptrain_gpt2_zero3.log)"
grep -hE "ZeRO|memory|throughput|final loss|error" "$logs/ddptrain_gpt2_zero3.log" | tee -a "$report"
pack
# Generation with GPT-2 124M's shapes from run 2's checkpoint: ddptrain generate (KV cache) and
# PyTorch eager with a KV cache (share/dev/bench/pytorch_generate.py) on the same 64 prompts of one
# length, greedy, batch 16, 64 new tokens each, fp32: tokens/s of each (generate_speed.sh's GPU
# counterpart). The vocabulary is the deck's padded 50304.
for i in $(seq 64); do printf 'prompt %04d of the GPU generation check\n' "$i"; done >/tmp/prompts.txt
"$build/bin/ddptrain" make-data prompts --from-text /tmp/prompts.txt --output /tmp/prompts.h5 \
  >"$logs/generate.log" 2>&1
timeout "$(limit 90)" "$build/bin/ddptrain" generate inputs/gpt2_small_16gpu.cfg \
  --data.type=synthetic_tokens --data.samples=1024 --data.vocab=50257 \
  --checkpoint /tmp/gpt2_run/checkpoints/latest --input /tmp/prompts.h5 --output /tmp/gen.h5 \
  --generate.max_new_tokens=64 --generate.batch_size=16 >>"$logs/generate.log" 2>&1 ||
  say "ddptrain generate FAILED (generate.log)"
timeout "$(limit 90)" "$python" share/dev/bench/pytorch_generate.py \
  /tmp/gpt2_run/checkpoints/latest /tmp/prompts.h5 50304 1024 12 12 768 64 16 --device cuda \
  >>"$logs/generate.log" 2>&1 || say "PyTorch generation FAILED (generate.log)"
grep -hE "^generate:|^pytorch:|error" "$logs/generate.log" | tee -a "$report"
pack
"$python" share/dev/gpu/gpt2_table.py "$logs" | tee -a "$report"
grep -hE "device|precision|optimizer state|memory|step time|checkpoint:|error" "$logs"/ddptrain_gpt2_1.log |
  tee -a "$report"
grep -hE "RESULT|CHECKPOINT|Error|error" "$logs"/pytorch_*.log | tee -a "$report"

# --- 5. the GPU tests: none may skip ------------------------------------------------------------
(cd "$build" && timeout "$(limit 600)" ctest -L gpu -V) >"$logs/ctest_gpu.log" 2>&1
rc=$?
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Skipped|Not Run|SKIPPED" "$logs/ctest_gpu.log" | tee -a "$report"
if ((rc != 0)); then
  say "ctest -L gpu: FAILED (exit $rc; ctest_gpu.log)"
  failed=1
elif grep -qE "\*\*\*Skipped|Not Run|\[  SKIPPED \]" "$logs/ctest_gpu.log"; then
  say "ctest -L gpu: FAILED: a GPU test skipped on a machine with a GPU"
  failed=1
elif ! grep -q "tests passed" "$logs/ctest_gpu.log"; then
  say "ctest -L gpu: FAILED: no summary (timed out?)"
  failed=1
else
  say "ctest -L gpu: passed, none skipped"
fi
grep -E "^(ok|FAILED|FAIL):|max relative|skipped steps|exit code|loss .* ->" "$logs/ctest_gpu.log" >>"$report"
say "done"
exit $failed
