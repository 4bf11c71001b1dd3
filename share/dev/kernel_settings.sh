#!/usr/bin/env bash
# The CPU kernel settings this CPU can run: environment variables that make LibTorch (Debian's
# libtorch 1.13), its OpenBLAS (libopenblas0-openmp 0.3.21, DYNAMIC_ARCH) and its oneDNN (libdnnl2
# 2.6, convolutions) pick the kernels another x86-64 CPU would pick, so that one machine can show
# the numbers another CPU would give. share/dev/deck_spread.sh measures the spread of the
# decks' losses over them, and CI runs the numerics-sensitive tests once under each.
#   kernel_settings.sh              print the settings, one per line, as `VAR=value VAR2=value`;
#                                   the first line is empty: the native setting (nothing forced)
#   kernel_settings.sh run CMD...   run CMD once under each setting, saying which; exits 1 naming
#                                   the settings under which CMD failed (after running all)
#   kernel_settings.sh --bf16 [run CMD...]   the same for tests with bfloat16 convolutions: on an
#                                   AVX-512 CPU without oneDNN caps below AVX512_CORE (see below)
#
# What changes the kernels (each checked on Debian 12 to be honoured):
#   OPENBLAS_CORETYPE    the GEMM kernels and blocking of OpenBLAS (every nn::Linear, matmul).
#                        0.3.21 takes Prescott, Atom, Core2, Penryn, Dunnington, Nehalem, Opteron,
#                        Barcelona, Nano, Sandybridge, Bulldozer, Piledriver, Haswell, Steamroller,
#                        Excavator, Zen, SkylakeX, Cooperlake (older Intel names mean Prescott, an
#                        unknown name Cooperlake; openblas_get_corename() says which ran). It does
#                        not check that the CPU can run a forced core type: one needing
#                        instructions the CPU lacks dies of SIGILL, so each is listed only where
#                        /proc/cpuinfo has the flags it needs.
#   ATEN_CPU_CAPABILITY  LibTorch's own vectorised kernels (element-wise, reductions, softmax,
#                        batch norm, optimiser updates): default (SSE), avx2, avx512. LibTorch
#                        1.13 picks avx2 even on AVX-512 CPUs unless told avx512.
#   ONEDNN_MAX_CPU_ISA   the highest instruction set oneDNN's convolutions may use (the CNN deck;
#                        libtorch uses oneDNN for float convolutions). oneDNN 2.6 also reads
#                        DNNL_MAX_CPU_ISA; it caps at what the CPU has, so no setting can crash.
#                        Only for float32: below AVX512_CORE on an AVX-512 CPU, LibTorch still
#                        sends bfloat16 convolutions to oneDNN (it asks the CPU, not the cap),
#                        which then has no kernel for them ("could not create a primitive
#                        descriptor iterator": mpi test Models.Bf16LossesFollowFp32Over50Steps),
#                        where a real AVX2 CPU takes LibTorch's own path. --bf16 leaves those
#                        caps out there (the one-variable lines go, the whole-CPU lines keep the
#                        rest); the decks (float32) want them.
#   GLIBC_TUNABLES       glibc.cpu.hwcaps=-AVX2,-FMA makes glibc's libm take its SSE2 variants of
#                        exp, log, pow, sin, cos (double: learning-rate schedules, bias
#                        corrections, ATen's scalar fallbacks) as on a CPU without FMA. Alone it
#                        changed no deck's losses; it is there for the whole-CPU lines and for
#                        decks to come.
#   OMP_NUM_THREADS      intra-op threads per rank: ddptrain otherwise takes cores / ranks, so a
#                        CI machine with more cores splits reductions differently.
# The combined lines are whole CPUs (what an SSE4.2-only, AVX, AVX2 or AVX-512 machine picks),
# the others change one thing at a time. Setting the same variable again in the caller's
# environment is overridden by the setting for that run.
#
# DDPTRAIN_CPU_FLAGS (space-separated) replaces the flags of /proc/cpuinfo, to see what another
# CPU would get, e.g. DDPTRAIN_CPU_FLAGS="pni ssse3 sse4_1 sse4_2 avx avx2 fma" for an AVX2 CPU
# (cpuinfo calls SSE3 pni).
set -euo pipefail
bf16=false
if [[ ${1:-} == --bf16 ]]; then
  bf16=true
  shift
fi

# Flags this CPU has (the first processor's line; all cores of a machine have the same).
if [[ -n ${DDPTRAIN_CPU_FLAGS:-} ]]; then
  flags=" $DDPTRAIN_CPU_FLAGS "
else
  flags=" $(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -n 1) "
fi

# has FLAG...: true when the CPU has every flag.
has() {
  local flag
  for flag in "$@"; do
    [[ $flags == *" $flag "* ]] || return 1
  done
}

# The instruction sets, as the flags each needs (OpenBLAS's and oneDNN's own CPU checks).
sse3=(pni)
ssse3=(pni ssse3)
sse41=(pni ssse3 sse4_1)
sse42=(pni ssse3 sse4_1 sse4_2)
avx=("${sse42[@]}" avx)
avx2=("${avx[@]}" avx2 fma)
avx512=("${avx2[@]}" avx512f avx512dq avx512cd avx512bw avx512vl)
avx512bf16=("${avx512[@]}" avx512_bf16)

libm_sse2=GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA
aten_sse=ATEN_CPU_CAPABILITY=default
onednn_avx512=ONEDNN_MAX_CPU_ISA=AVX512_CORE
# settings: "NEEDED FLAGS|SETTING" lines; an empty NEEDED is any x86-64 CPU.
settings=(
  "|"
  # One thing at a time. OpenBLAS core types with their own SGEMM kernels or blocking (the AMD
  # Bulldozer family needs FMA4, Opteron/Barcelona AMD-only instructions: left out).
  "${sse3[*]}|OPENBLAS_CORETYPE=Prescott"
  "${ssse3[*]}|OPENBLAS_CORETYPE=Core2"
  "${sse42[*]}|OPENBLAS_CORETYPE=Nehalem"
  "${avx[*]}|OPENBLAS_CORETYPE=Sandybridge"
  "${avx2[*]}|OPENBLAS_CORETYPE=Haswell"
  "${avx2[*]}|OPENBLAS_CORETYPE=Zen"
  "${avx512[*]}|OPENBLAS_CORETYPE=SkylakeX"
  "${avx512bf16[*]}|OPENBLAS_CORETYPE=Cooperlake"
  "|$aten_sse"
  "${avx2[*]}|ATEN_CPU_CAPABILITY=avx2"
  "${avx512[*]}|ATEN_CPU_CAPABILITY=avx512"
  "${sse41[*]}|ONEDNN_MAX_CPU_ISA=SSE41"
  "${avx[*]}|ONEDNN_MAX_CPU_ISA=AVX"
  "${avx2[*]}|ONEDNN_MAX_CPU_ISA=AVX2"
  "${avx512[*]}|$onednn_avx512"
  "|$libm_sse2"
  "|OMP_NUM_THREADS=1"
  "|OMP_NUM_THREADS=3"
  "|OMP_NUM_THREADS=4"
  # Whole CPUs: everything an SSE4.2, AVX, AVX2 (Intel, AMD Zen) or AVX-512 machine picks.
  "${sse42[*]}|OPENBLAS_CORETYPE=Nehalem $aten_sse ONEDNN_MAX_CPU_ISA=SSE41 $libm_sse2"
  "${avx[*]}|OPENBLAS_CORETYPE=Sandybridge $aten_sse ONEDNN_MAX_CPU_ISA=AVX $libm_sse2"
  "${avx2[*]}|OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2"
  "${avx2[*]}|OPENBLAS_CORETYPE=Zen ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2"
  "${avx512[*]}|OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512 $onednn_avx512"
)

supported=()
for line in "${settings[@]}"; do
  needed=${line%%|*}
  # shellcheck disable=SC2086  # NEEDED is a list of flags
  has $needed || continue
  setting=${line#*|}
  # --bf16 on a CPU where LibTorch sends bfloat16 convolutions to oneDNN (avx512bw, vl, dq):
  # no oneDNN cap below AVX512_CORE.
  if $bf16 && has avx512bw avx512vl avx512dq &&
    [[ $setting =~ ONEDNN_MAX_CPU_ISA=(SSE41|AVX|AVX2)( |$) ]]; then
    setting=$(sed -E 's/ ?ONEDNN_MAX_CPU_ISA=(SSE41|AVX|AVX2)( |$)/\2/' <<<"$setting")
    setting=${setting# }
    [[ -n $setting ]] || continue
  fi
  supported+=("$setting")
done

if [[ $# -eq 0 ]]; then
  printf '%s\n' "${supported[@]}"
  exit 0
fi
[[ $1 == run && $# -ge 2 ]] || { echo "usage: $0 [--bf16] [run CMD...]" >&2; exit 2; }
shift
failed=()
for setting in "${supported[@]}"; do
  echo "== kernel setting: ${setting:-native}"
  # shellcheck disable=SC2086  # SETTING is a list of VAR=value words
  env $setting "$@" || failed+=("${setting:-native}")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAIL: $* failed under ${#failed[@]} of ${#supported[@]} kernel setting(s):"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "PASS: $* under all ${#supported[@]} kernel setting(s)"
