"""Known mismatches of the CI sample (tests/differential/test_differential.py).

``KNOWN[(op_id, kind)] = reason``: the sample of ``op_id`` is expected to show a mismatch of
``kind`` (see harness.KINDS). The CI test fails on any mismatch not listed here, and on any
listed one the sample no longer shows, so fixing a bug means deleting its line.
"""

#: ops whose CI cases get no NaN / inf / extreme values, because LAPACK may loop forever on
#: non-finite input and no in-process time-out can interrupt it. The SVD family checks its
#: input first (linalg_decomp.lapack_svd); lstsq (gelsd) does not yet. The long runner
#: (tools/difftest.py --long) still tries them, in a child it can kill
NO_SPECIALS_IN_CI = frozenset({"linalg.lstsq"})

KNOWN = {
    ('baddbmm', 'values_nonfinite'):
        "torch-specific: inf/NaN in a BLAS product; inf-or-NaN follows MKL's kernel order",
    ('fft.hfft2', 'values_nonfinite'):
        "torch-specific: MKL FFT of near-overflow input; which sums overflow to inf follows "
        "MKL's order (NOTE [ FFT of non-finite input ] covers NaN/inf inputs)",
    ('group_norm', 'values_nonfinite'):
        'torch-specific: vectorized Welford moments overflow (inf - inf) per SIMD chunking',
    ('gru', 'values'):
        'open: out[0] (complex64) at (1, 0, 2): ember np.complex64(2.6595528-0.74401575j), to',
    ('linalg.lu_factor_ex', 'values_nonfinite'):
        'torch-specific: MKL LAPACK on non-finite input; NaN-or-inf follows its internals',
    ('linalg.matrix_exp', 'values_nonfinite'):
        'torch-specific: MKL LAPACK on non-finite input; NaN-or-inf follows its internals',
    ('linalg.qr.complete', 'values_nonfinite'):
        'torch-specific: MKL LAPACK on non-finite input; NaN-or-inf follows its internals',
    ('native_layer_norm', 'values_nonfinite'):
        'torch-specific: vectorized Welford moments overflow (inf - inf) per SIMD chunking',
    ('nn.functional.conv1d', 'values_nonfinite'):
        "torch-specific: inf/NaN in a BLAS product; inf-or-NaN follows MKL's kernel order",
    ('conv3d', 'values_nonfinite'):
        "torch-specific: inf/NaN in a BLAS product; inf-or-NaN follows MKL's kernel order "
        '(seen with AVX2 kernels on AMD EPYC)',
    ('conv_transpose3d', 'values_nonfinite'):
        "torch-specific: inf/NaN in a BLAS product; inf-or-NaN follows MKL's kernel order "
        '(seen with AVX2 kernels on AMD EPYC)',
    ('nn.functional.group_norm', 'values_nonfinite'):
        'torch-specific: vectorized Welford moments overflow (inf - inf) per SIMD chunking',
    ('nn.functional.scaled_dot_product_attention', 'values_nonfinite'):
        "torch-specific: inf/NaN in a BLAS product; inf-or-NaN follows MKL's kernel order",
    ('orgqr', 'values_nonfinite'):
        'torch-specific: MKL orgqr fuses multiply-adds where float32 overflows; ember replays '
        "LAPACK's org2r order (NOTE [ Householder reflectors as LAPACK applies them ])",
    ('var_mean', 'values_nonfinite'):
        'torch-specific: vectorized Welford moments overflow (inf - inf) per SIMD chunking',
}

#: programs of the CI sample of tests/differential/test_programs.py known to differ:
#: ``KNOWN_PROGRAMS[(family, seed)] = reason``. The CI test skips them and fails once one
#: agrees, so fixing the bug means deleting its line
KNOWN_PROGRAMS = {
    ("reductions", 190): "torch-specific: logsumexp over dim=() without keepdim fails resizing "
                         "its own result ([] against [1, 1]), any dtype; ember reduces every dim",
}
