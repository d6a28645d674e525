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
    ('abs', 'ember_no_raise'):
        'open: torch raises RuntimeError: Trying to resize storage that is not resizable',
    ('addr', 'ember_raises'):
        'open: RuntimeError: addr: expected both inputs to have the same dtype, but found Byt',
    ('amin', 'ember_raises'):
        'open: NotImplementedError: "amin" not implemented for \'ComplexDouble\'',
    ('aminmax', 'exception_type'):
        'open: ember NotImplementedError ("aminmax" not implemented for \'ComplexFloat\'), torc',
    ('baddbmm', 'values_nonfinite'):
        'open: out (complex64) at (0, 1, 1): ember np.complex64(nan+nanj), torch np.complex64',
    ('binary_cross_entropy_with_logits', 'ember_no_raise'):
        "open: torch raises RuntimeError: The function 'binary_cross_entropy_with_logits' is ",
    ('cosine_embedding_loss', 'values_nonfinite'):
        'open: out (bfloat16) at (1,): ember np.float32(nan), torch np.float32(0.0)',
    ('cov', 'ember_no_raise'):
        'open: torch raises RuntimeError: cov(): bool dtype is not supported for input',
    ('cov', 'shape'):
        'open: out: ember (1, 1), torch ()',
    ('ctc_loss', 'exception_type'):
        'open: ember ValueError (operands could not be broadcast together with shapes (0,) (2',
    ('diff.bool', 'values_nonfinite'):
        'open: out[0] (complex64) at (1,): ember np.complex64(-1-infj), torch np.complex64(na',
    ('fft.hfft', 'values_nonfinite'):
        'open: out (float32) at (1, 3): ember np.float32(nan), torch np.float32(-inf)',
    ('fft.hfft2', 'values_nonfinite'):
        'open: out (float64) at (0, 5, 1): ember np.float64(nan), torch np.float64(inf)',
    ('fft.irfft', 'values_nonfinite'):
        'open: out[0] (float32) at (1, 0): ember np.float32(nan), torch np.float32(-inf)',
    ('gather', 'ember_raises'):
        'open: RuntimeError: gather(): Expected dtype int32/int64 for index, but got Byte',
    ('grid_sampler_2d', 'values_nonfinite'):
        'open: out (float64) at (0, 1, 0, 0): ember np.float64(nan), torch np.float64(-inf)',
    ('group_norm', 'values_nonfinite'):
        'open: out (float32) at (0, 0, 0): ember np.float32(-inf), torch np.float32(nan)',
    ('gru', 'values'):
        'open: out[0] (complex64) at (1, 0, 2): ember np.complex64(2.6595528-0.74401575j), to',
    ('gru_cell', 'values_nonfinite'):
        'open: out (float64) at (1, 2): ember np.float64(1.0), torch np.float64(nan)',
    ('histogram', 'ember_no_raise'):
        "open: torch raises RuntimeError: torch.histogramdd: dimension 0's range [nan, nan] i",
    ('index_fill', 'exception_type'):
        'open: ember IndexError (index_fill(): index 1 is out of bounds for dimension 1 with ',
    ('index_put', 'ember_no_raise'):
        'open: torch raises IndexError: tensors used as indices must be long, int, byte or bo',
    ('index_put', 'exception_type'):
        'open: ember IndexError (index 1 is out of bounds for dimension 1 with size 1), torch',
    ('kron', 'ember_no_raise'):
        'open: torch raises RuntimeError: Trying to resize storage that is not resizable',
    ('kthvalue', 'values'):
        'open: out[1] (int64) at (0, 0): ember np.int64(4), torch np.int64(0)',
    ('lcm', 'values'):
        'open: out (int32) at (1, 1): ember np.int32(-6), torch np.int32(6)',
    ('linalg.cholesky_ex', 'requires_grad'):
        'open: out[0]: ember False, torch True',
    ('linalg.cholesky_ex', 'values'):
        'open: out[0] (complex128) at (0, 0, 0): ember np.complex128(2.4685334798620806+0j), ',
    ('linalg.cond', 'requires_grad'):
        'open: out: ember True, torch False',
    ('linalg.det', 'grad_values_nonfinite'):
        'open: grad[0] (float64) at (0, 0, 2): ember np.float64(-3.5865567447963247e+307), to',
    ('linalg.eigh', 'values'):
        'open: out[1] (float32) at (0, 0, 0): ember np.float32(0.57735026), torch np.float32(',
    ('linalg.lu', 'values'):
        'open: out[0] (float64) at (1, 1, 2): ember np.float64(1.0), torch np.float64(0.0)',
    ('linalg.lu.rectangular', 'ember_raises'):
        'open: NotImplementedError: "lu_cpu" not implemented for \'Short\'',
    ('linalg.lu_factor', 'values'):
        'open: out[0][1] (int32) at (1, 1): ember np.int32(4), torch np.int32(2)',
    ('linalg.lu_factor', 'values_nonfinite'):
        'open: out[0][0] (float32) at (1, 1, 0): ember np.float32(0.0), torch np.float32(nan)',
    ('linalg.lu_factor_ex', 'values_nonfinite'):
        'open: out[0] (complex64) at (2, 2): ember np.complex64(nan+nanj), torch np.complex64',
    ('linalg.matrix_exp', 'ember_raises'):
        'open: RuntimeError: linalg.matrix_exp: Low precision dtypes not supported. Got Half',
    ('linalg.matrix_exp', 'values_nonfinite'):
        'open: out (complex64) at (0, 0): ember np.complex64(nan+nanj), torch np.complex64(na',
    ('linalg.qr.complete', 'values_nonfinite'):
        'open: out[0] (float32) at (0, 1): ember np.float32(0.0), torch np.float32(nan)',
    ('linalg.solve_triangular', 'ember_raises'):
        'open: LinAlgError: Singular matrix',
    ('lu_solve', 'ember_no_raise'):
        'open: torch raises RuntimeError: Pivots given to lu_solve must all be greater or equ',
    ('lu_solve', 'ember_raises'):
        'open: IndexError: index 2 is out of bounds for axis 0 with size 1',
    ('lu_solve', 'exception_type'):
        'open: ember IndexError (index 2 is out of bounds for axis 0 with size 2), torch Runt',
    ('lu_unpack', 'exception_type'):
        'open: ember IndexError (index 1 is out of bounds for axis 0 with size 1), torch Runt',
    ('matrix_exp', 'ember_raises'):
        'open: RuntimeError: linalg.matrix_exp: Low precision dtypes not supported. Got BFloa',
    ('nanmedian.dim', 'exception_type'):
        'open: ember NotImplementedError ("nanmedian_cpu" not implemented for \'ComplexDouble\'',
    ('native_layer_norm', 'values_nonfinite'):
        'open: out[1] (float64) at (1, 2, 0): ember np.float64(nan), torch np.float64(-inf)',
    ('nn.functional.adaptive_avg_pool2d', 'values_nonfinite'):
        'open: out (float64) at (0, 0, 1, 1): ember np.float64(-inf), torch np.float64(nan)',
    ('nn.functional.conv1d', 'values_nonfinite'):
        'open: out (complex64) at (0, 1, 0): ember np.complex64(nan+nanj), torch np.complex64',
    ('nn.functional.group_norm', 'values_nonfinite'):
        'open: out (float64) at (1, 4, 0): ember np.float64(2.2250738585072014e-308), torch n',
    ('nn.functional.scaled_dot_product_attention', 'values_nonfinite'):
        'open: out (float64) at (0, 0, 2, 2): ember np.float64(nan), torch np.float64(-1.0)',
    ('orgqr', 'values_nonfinite'):
        'open: out (float32) at (0, 0): ember np.float32(nan), torch np.float32(0.7959508)',
    ('pairwise_distance', 'values_nonfinite'):
        'open: out (float64) at (0,): ember np.float64(inf), torch np.float64(1.7976931348623',
    ('poisson_nll_loss', 'values_nonfinite'):
        'open: out (float64) at (1, 0): ember np.float64(nan), torch np.float64(-inf)',
    ('slogdet', 'values'):
        'open: out[0] (float32) at (1,): ember np.float32(-1.0), torch np.float32(-0.0)',
    ('special.gammaincc', 'values_nonfinite'):
        'open: out (float16) at (3,): ember np.float16(nan), torch np.float32(1.0)',
    ('special.polygamma', 'values_nonfinite'):
        'open: out (float64) at (0,): ember np.float64(inf), torch np.float64(nan)',
    ('special.shifted_chebyshev_polynomial_w', 'values_nonfinite'):
        'open: out (float64) at (1, 2): ember np.float64(nan), torch np.float64(3.16535180824',
    ('sum', 'ember_no_raise'):
        'open: torch raises TypeError: sum() received an invalid combination of arguments - g',
    ('svd', 'ember_no_raise'):
        'lapack: torch (MKL gesdd) fails to converge on some inf matrices; ember: NaN',
    ('svd_lowrank', 'ember_raises'):
        'open: ValueError: svd_lowrank: q(=4) must be non-negative integer and not greater th',
    ('unbind', 'ember_raises'):
        'open: IndexError: tuple index out of range',
    ('var_mean', 'values_nonfinite'):
        'open: out[0] (float64) at (0, 2): ember np.float64(inf), torch np.float64(nan)',
    ('view_as_complex_copy', 'ember_no_raise'):
        'open: torch raises RuntimeError: view_as_complex_copy does not support automatic dif',
}
