#!/usr/bin/env bash
# One prepared run of ember's GPU checks on a lent GPU machine, in stages that each have a
# time limit, so that a short device budget (minutes, not hours) buys every check once.
#
# Usage (from the repository root on the GPU machine; OUT is where logs go):
#
#     OUT=/tmp/out bash tools/gpu_session.sh [stage ...]
#
# Stages, in the default order (name some to run only those):
#
#     env      the GPU, driver, CuPy, cuDNN frontend and PyTorch versions
#     tests    the CUDA test files (kernels, allocator, autocast, fused optimizers, scaler)
#     device   the device-generic suite on 'cuda' (every OpInfo op's forms, nn, optim)
#     bench    python -m bench.cuda, the GPU workloads side by side with PyTorch (JSON too)
#     sync     where the ResNet-50 (fp32, AMP) and GPT-2 steps synchronise with the device
#              (python -m bench.cuda --find-sync)
#     nccl     the "nccl" backend in a world of one process: collectives, a DDP step, and
#              all-reduce times at DDP's bucket sizes (tests/cuda/test_nccl.py, printed)
#
# and, named only:
#
#     profile  host vs GPU time, top kernels and cProfile of a ResNet-50 AMP and a GPT-2 step
#              (pstats files beside the logs)
#     ab       python -m bench.cuda of an older revision on the same machine, beside the
#              bench stage's figures of this one. Prepare it before the call: `git worktree
#              add /tmp/old REV`, copy its ember/ and bench/ into .old/ (add /.old/ to
#              .git/info/exclude) and name .old in the device call's carry list;
#              GPU_SESSION_AB_K picks the workloads (bench.cuda's -k)
#
# At most 8 files come back from a device call: name few stages per call.
#
# Wheels the machine lacks (the cuDNN frontend) travel in .whl/ (see CONTRIBUTING.md,
# "GPU sessions"); they are installed into /tmp/site first when present. Each stage's log is
# $OUT/<stage>.log; a stage that runs past its limit is stopped and the next one starts.
# Limits can be scaled with GPU_SESSION_SCALE (e.g. 0.5 halves every limit); the device suite
# runs on GPU_SESSION_WORKERS pytest-xdist workers (default 8) sharing the one GPU, the CUDA
# tests on GPU_SESSION_TEST_WORKERS (default 4).

set -u
OUT=${OUT:-/tmp/ember-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || echo "warning: the wheels in .whl/ did not install" >&2
fi
export PYTHONPATH="$PWD:/tmp/site"
scale=${GPU_SESSION_SCALE:-1}
limit() { python3 -c "import sys; print(max(10, int($1 * $scale)))"; }

run_stage() {  # name seconds command...
    local name=$1 secs
    secs=$(limit "$2")
    shift 2
    echo "== $name (limit ${secs}s): $*"
    local t0=$SECONDS
    timeout --signal=INT --kill-after=10 "$secs" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0))s"
    tail -n 5 "$OUT/$name.log"
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env tests device bench sync nccl)
for s in "${stages[@]}"; do
    case $s in
    env)
        run_stage env 60 bash -c 'nvidia-smi --query-gpu=name,memory.total,driver_version \
            --format=csv; python3 -c "import cupy, numpy; print(\"cupy\", cupy.__version__, \
            \"numpy\", numpy.__version__); import cudnn; print(\"cudnn\", cudnn.backend_version())"; \
            python3 -c "import torch; print(\"torch\", torch.__version__, torch.cuda.is_available())"'
        ;;
    tests)
        run_stage tests 150 python3 -m pytest -q -p no:cacheprovider -W ignore --maxfail=60 \
            -rf --tb=short -n "${GPU_SESSION_TEST_WORKERS:-4}" tests/cuda \
            tests/_ops/test_xp_compat.py tests/amp tests/optim/test_fused_cuda.py
        ;;
    device)
        EMBER_TESTING_DEVICE_ONLY_FOR=cuda run_stage device 180 python3 -m pytest -q \
            -p no:cacheprovider -W ignore --maxfail=200 -rf --tb=line -n "${GPU_SESSION_WORKERS:-8}" \
            tests/device tests/nn tests/optim
        ;;
    bench)
        run_stage bench 150 python3 -m bench.cuda --json "$OUT/bench_cuda.json"
        ;;
    sync)
        run_stage sync 90 bash -c 'for w in resnet50_fp32 resnet50_amp gpt2_small_amp; do
            python3 -m bench.cuda --find-sync $w; done'
        ;;
    nccl)
        run_stage nccl 60 python3 -m pytest -q -s -p no:cacheprovider -W ignore -rf \
            --tb=short tests/cuda/test_nccl.py
        ;;
    ab)
        if [ -d .old/ember ]; then
            run_stage ab 120 bash -c "cd .old && PYTHONPATH=\$PWD:/tmp/site python3 -m bench.cuda \
                -k '${GPU_SESSION_AB_K:-a + b,224,GPT-2,LayerNorm,SDPA}'"
        else
            echo "== ab: no .old/ember (see the usage above)"
        fi
        ;;
    profile)
        run_stage profile 90 python3 -m bench.cuda --profile resnet50_amp \
            --profile-out "$OUT/resnet50_amp.pstats"
        run_stage profile_gpt2 90 python3 -m bench.cuda --profile gpt2_small_amp \
            --profile-out "$OUT/gpt2_small_amp.pstats"
        ;;
    *)
        echo "unknown stage: $s" >&2
        exit 2
        ;;
    esac
done
