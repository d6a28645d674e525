"""OpInfo entries for the neural-network ops PyTorch exposes at top level (``torch.conv2d``,
``torch.batch_norm``, ``torch.kl_div``, ``torch.lstm`` ...), with its top-level signatures:
values and gradients against PyTorch, gradcheck and gradgradcheck through the generic tests.

The random ones (dropout forms) and the in-place ones (``celu_`` ...) are tested in
tests/nn/test_top_level_forms.py.
"""

from .._opinfo import FLOATS, OpInfo, SampleInput

F32_64 = FLOATS[2:]


def _t(shape, dtype, rng, low=-2, high=2, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, low=low, high=high, **kw)


def _int(values):
    import ember

    return ember.tensor(values)


def _signs(values, dtype):
    import ember

    return ember.tensor(values, dtype=dtype)


# -- activations -----------------------------------------------------------------------------------


def _act(dtype, rng, *args, **kwargs):
    yield SampleInput(_t((3, 4), dtype, rng), *args, **kwargs)
    yield SampleInput(_t((), dtype, rng), *args, **kwargs)


def _celu(dtype, rng):
    yield from _act(dtype, rng)
    yield SampleInput(_t((5,), dtype, rng), 0.5)


def _rrelu(dtype, rng):
    yield from _act(dtype, rng)
    yield SampleInput(_t((5,), dtype, rng), 0.1, 0.4)


def _threshold(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), 0.25, -1.5)


def _hardshrink(dtype, rng):
    yield from _act(dtype, rng)
    yield SampleInput(_t((5,), dtype, rng), 1.0)


def _prelu(dtype, rng):
    yield SampleInput(_t((2, 3, 4), dtype, rng), _t((3,), dtype, rng))
    yield SampleInput(_t((4,), dtype, rng), _t((1,), dtype, rng))


# -- convolution and pooling -----------------------------------------------------------------------


def _conv(nd):
    def gen(dtype, rng):
        sp = (5, 4, 4)[:nd] if nd > 1 else (7,)
        yield SampleInput(_t((2, 2) + sp, dtype, rng), _t((3, 2) + (2,) * nd, dtype, rng),
                          _t((3,), dtype, rng), 1, 1)
        yield SampleInput(_t((2,) + sp, dtype, rng), _t((4, 1) + (2,) * nd, dtype, rng),
                          None, 2, 0, 1, 2)
    return gen


def _conv_transpose(nd):
    def gen(dtype, rng):
        yield SampleInput(_t((1, 2) + (3,) * nd, dtype, rng),
                          _t((2, 3) + (2,) * nd, dtype, rng), _t((3,), dtype, rng), 2, 1, 1)
    return gen


def _convolution(dtype, rng):
    yield SampleInput(_t((2, 2, 5, 4), dtype, rng), _t((3, 2, 2, 2), dtype, rng),
                      _t((3,), dtype, rng), [1, 1], [1, 0], [1, 1], False, [0, 0], 1)
    yield SampleInput(_t((1, 2, 4), dtype, rng), _t((2, 3, 3), dtype, rng), None, [2], [1],
                      [1], True, [1], 1)


def _conv_tbc(dtype, rng):
    yield SampleInput(_t((6, 2, 3), dtype, rng), _t((3, 3, 4), dtype, rng),
                      _t((4,), dtype, rng), 1)


def _max_pool(nd):
    def gen(dtype, rng):
        sp = {1: (9,), 2: (5, 6), 3: (4, 5, 4)}[nd]
        yield SampleInput(_t((2, 2) + sp, dtype, rng), 2)
        yield SampleInput(_t((2,) + sp, dtype, rng), 3, 2, 1, 1, True)
    return gen


def _pool1d(dtype, rng):
    yield SampleInput(_t((2, 3, 9), dtype, rng), 3)
    yield SampleInput(_t((3, 8), dtype, rng), 3, 2, 1, True, False)


def _adaptive1d(dtype, rng):
    yield SampleInput(_t((2, 3, 9), dtype, rng), 4)
    yield SampleInput(_t((3, 7), dtype, rng), 3)


# -- normalisation ---------------------------------------------------------------------------------


def _batch_norm(dtype, rng):
    c = 3
    yield SampleInput(_t((4, c, 2), dtype, rng), _t((c,), dtype, rng), _t((c,), dtype, rng),
                      None, None, True, 0.1, 1e-5, False)
    yield SampleInput(_t((4, c), dtype, rng), None, None, _t((c,), dtype, rng),
                      _t((c,), dtype, rng, low=0.5, high=2), False, 0.1, 1e-5, False)


def _native_batch_norm(dtype, rng):
    for s in _batch_norm(dtype, rng):
        yield SampleInput(s.input, *s.args[:-1])


def _instance_norm(dtype, rng):
    yield SampleInput(_t((2, 3, 5), dtype, rng), _t((3,), dtype, rng), _t((3,), dtype, rng),
                      None, None, True, 0.1, 1e-5, False)


def _layer_norm(dtype, rng):
    yield SampleInput(_t((3, 4, 5), dtype, rng), [4, 5], _t((4, 5), dtype, rng),
                      _t((4, 5), dtype, rng))
    yield SampleInput(_t((2, 3), dtype, rng), [3], None, None, 1e-3, False)


def _native_layer_norm(dtype, rng):
    yield SampleInput(_t((3, 4, 5), dtype, rng), [5], _t((5,), dtype, rng),
                      _t((5,), dtype, rng), 1e-5)


def _group_norm(dtype, rng):
    yield SampleInput(_t((2, 4, 3), dtype, rng), 2, _t((4,), dtype, rng), _t((4,), dtype, rng))


def _native_group_norm(dtype, rng):
    yield SampleInput(_t((2, 4, 3), dtype, rng), _t((4,), dtype, rng), _t((4,), dtype, rng),
                      2, 4, 3, 2, 1e-5)


def _rms_norm(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), [4], _t((4,), dtype, rng), 1e-6)
    yield SampleInput(_t((2, 3, 4), dtype, rng), (3, 4))


def _norm_except_dim(dtype, rng):
    yield SampleInput(_t((2, 3, 4), dtype, rng), 2, 0)
    yield SampleInput(_t((2, 3, 4), dtype, rng), 3, 2)
    yield SampleInput(_t((2, 3), dtype, rng), 2, -1)


# -- lookups, distances, shuffles, padding, sampling -----------------------------------------------


def _embedding(dtype, rng):
    yield SampleInput(_t((5, 3), dtype, rng), _int([[0, 2], [4, 2]]))
    yield SampleInput(_t((5, 3), dtype, rng), _int([1, 3, 1]), 1)


def _embedding_bag(dtype, rng):
    idx, offs = _int([0, 2, 4, 3, 4, 1]), _int([0, 2, 2, 5])
    yield SampleInput(_t((6, 3), dtype, rng), idx, offs, False, 0)
    yield SampleInput(_t((6, 3), dtype, rng), idx, offs, False, 1)
    yield SampleInput(_t((6, 3), dtype, rng), idx, offs, False, 2)
    yield SampleInput(_t((6, 3), dtype, rng), idx, offs, False, 1, False, None, False, 4)


def _bilinear(dtype, rng):
    yield SampleInput(_t((4, 2), dtype, rng), _t((4, 3), dtype, rng),
                      _t((5, 2, 3), dtype, rng), _t((5,), dtype, rng))


def _pair(dtype, rng):
    yield SampleInput(_t((4, 5), dtype, rng), _t((4, 5), dtype, rng))
    yield SampleInput(_t((3, 4), dtype, rng), _t((1, 4), dtype, rng), 1.5)


def _cosine_similarity(dtype, rng):
    yield SampleInput(_t((4, 5), dtype, rng), _t((4, 5), dtype, rng))
    yield SampleInput(_t((3, 4, 2), dtype, rng), _t((3, 4, 2), dtype, rng), 2)


def _pdist(dtype, rng):
    yield SampleInput(_t((5, 3), dtype, rng))
    yield SampleInput(_t((4, 2), dtype, rng), 1.5)


def _pixel_shuffle(dtype, rng):
    yield SampleInput(_t((2, 8, 2, 3), dtype, rng), 2)


def _pixel_unshuffle(dtype, rng):
    yield SampleInput(_t((2, 2, 4, 6), dtype, rng), 2)


def _channel_shuffle(dtype, rng):
    yield SampleInput(_t((2, 6, 2, 2), dtype, rng), 3)


def _constant_pad_nd(dtype, rng):
    yield SampleInput(_t((2, 3, 4), dtype, rng), [1, 2])
    yield SampleInput(_t((2, 3, 4), dtype, rng), [1, -1, 2, 0], 0.5)


def _grid_sampler(nd):
    def gen(dtype, rng):
        sp = (3, 4) if nd == 2 else (2, 3, 3)
        out = (2, 3) if nd == 2 else (2, 2, 2)
        x = _t((2, 2) + sp, dtype, rng)
        grid = _t((2,) + out + (nd,), dtype, rng, low=-1.1, high=1.1)
        yield SampleInput(x, grid, 0, 0, False)
        yield SampleInput(x, grid, 0, 1, True)
    return gen


def _affine_grid_generator(dtype, rng):
    yield SampleInput(_t((2, 2, 3), dtype, rng), [2, 1, 3, 4], False)
    yield SampleInput(_t((1, 3, 4), dtype, rng), [1, 1, 2, 3, 2], True)


# -- losses ----------------------------------------------------------------------------------------


def _bce_logits(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng, low=0, high=1))
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng, low=0, high=1),
                      _t((4,), dtype, rng, low=0.5, high=1.5),
                      _t((4,), dtype, rng, low=0.5, high=2), 1)


def _cosine_embedding(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng),
                      _signs([1.0, -1.0, 1.0], dtype), 0.1)
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng),
                      _signs([1.0, -1.0, -1.0], dtype), 0.0, 2)


def _hinge_embedding(dtype, rng):
    yield SampleInput(_t((2, 3), dtype, rng), _signs([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]],
                                                     dtype))
    yield SampleInput(_t((4,), dtype, rng), _signs([1.0, -1.0, 1.0, -1.0], dtype), 0.5, 1)


def _kl_div(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng, low=0.1, high=1))
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng), 2, log_target=True)


def _margin_ranking(dtype, rng):
    yield SampleInput(_t((4,), dtype, rng), _t((4,), dtype, rng),
                      _signs([1.0, -1.0, 1.0, -1.0], dtype))
    yield SampleInput(_t((4,), dtype, rng), _t((4,), dtype, rng),
                      _signs([1.0, 1.0, -1.0, -1.0], dtype), 0.3, 1)


def _poisson_nll(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng, low=0, high=3), True,
                      False, 1e-8, 1)
    yield SampleInput(_t((3, 4), dtype, rng, low=0.5, high=2),
                      _t((3, 4), dtype, rng, low=0, high=3), False, True, 1e-8, 0)


def _triplet(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng), _t((3, 4), dtype, rng))
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng), _t((3, 4), dtype, rng),
                      0.5, 1.5, 1e-6, True, 2)


def _ctc(dtype, rng):
    lp = _t((6, 2, 4), dtype, rng).log_softmax(2)
    yield SampleInput(lp, _int([[1, 2], [3, 3]]), [6, 5], [2, 2], 0, 1)
    lp = _t((5, 2, 3), dtype, rng).log_softmax(2)
    yield SampleInput(lp, _int([1, 2, 2]), [5, 4], [2, 1])


# -- recurrent -------------------------------------------------------------------------------------


def _cell(gates, pair=False):
    def gen(dtype, rng):
        h = _t((2, 3), dtype, rng)
        hx = (h, _t((2, 3), dtype, rng)) if pair else h
        yield SampleInput(_t((2, 4), dtype, rng), hx, _t((gates * 3, 4), dtype, rng),
                          _t((gates * 3, 3), dtype, rng), _t((gates * 3,), dtype, rng),
                          _t((gates * 3,), dtype, rng))
        yield SampleInput(_t((2, 4), dtype, rng), hx, _t((gates * 3, 4), dtype, rng),
                          _t((gates * 3, 3), dtype, rng))
    return gen


def _rnn(gates, pair=False):
    def gen(dtype, rng):
        hid, inp = 2, 3

        def params(layers, dirs, biases):
            ps = []
            for layer in range(layers):
                for _ in range(dirs):
                    size = inp if layer == 0 else hid * dirs
                    ps += [_t((gates * hid, size), dtype, rng, low=-1, high=1),
                           _t((gates * hid, hid), dtype, rng, low=-1, high=1)]
                    if biases:
                        ps += [_t((gates * hid,), dtype, rng, low=-1, high=1),
                               _t((gates * hid,), dtype, rng, low=-1, high=1)]
            return ps

        def state(n):
            h = _t((n, 2, hid), dtype, rng, low=-1, high=1)
            return [h, _t((n, 2, hid), dtype, rng, low=-1, high=1)] if pair else h

        yield SampleInput(_t((3, 2, inp), dtype, rng), state(1), params(1, 1, True), True, 1,
                          0.0, False, False, False)
        yield SampleInput(_t((2, 3, inp), dtype, rng), state(4), params(2, 2, False), False, 2,
                          0.0, False, True, True)
    return gen


_RUNNING_STATS = {"gradients": "running statistics are not differentiable (as in PyTorch), "
                               "which finite differences cannot see; "
                               "test_gradients_match_torch checks the gradients"}
_NO_GRADGRAD = {"gradgrad": "slow: the sequence forms are covered by gradcheck"}

op_db = [
    OpInfo(name, sample_inputs=gen, dtypes=F32_64, method=method, **kw)
    for name, gen, method, kw in [
        ("celu", _celu, False, {}),
        ("selu", _act, False, {}),
        ("rrelu", _rrelu, False, {}),
        ("threshold", _threshold, False, {}),
        ("hardshrink", _hardshrink, True, {}),
        ("prelu", _prelu, True, {}),
        ("conv1d", _conv(1), False, {}),
        ("conv2d", _conv(2), False, {}),
        ("conv3d", _conv(3), False, {}),
        ("conv_transpose1d", _conv_transpose(1), False, {}),
        ("conv_transpose2d", _conv_transpose(2), False, {}),
        ("conv_transpose3d", _conv_transpose(3), False, {}),
        ("convolution", _convolution, False, {}),
        ("conv_tbc", _conv_tbc, False, {}),
        ("max_pool1d", _max_pool(1), False, {}),
        ("max_pool2d", _max_pool(2), False, {}),
        ("max_pool3d", _max_pool(3), False, {}),
        ("max_pool1d_with_indices", _max_pool(1), False, {}),
        ("avg_pool1d", _pool1d, False, {}),
        ("adaptive_avg_pool1d", _adaptive1d, False, {}),
        ("adaptive_max_pool1d", _adaptive1d, False, {}),
        ("batch_norm", _batch_norm, False, {"skips": _RUNNING_STATS}),
        ("native_batch_norm", _native_batch_norm, False, {"skips": _RUNNING_STATS}),
        ("instance_norm", _instance_norm, False, {}),
        ("layer_norm", _layer_norm, False, {}),
        ("native_layer_norm", _native_layer_norm, False, {}),
        ("group_norm", _group_norm, False, {}),
        ("native_group_norm", _native_group_norm, False, {"skips": {
            "noncontiguous": "the native op refuses a non-contiguous input, as torch's"}}),
        ("rms_norm", _rms_norm, False, {}),
        ("norm_except_dim", _norm_except_dim, False, {}),
        ("embedding", _embedding, False, {"skips": {
            "gradients": "padding_idx's row gets no gradient by design (as in PyTorch), "
                         "which finite differences cannot see; test_gradients_match_torch "
                         "checks the gradients"}}),
        ("embedding_bag", _embedding_bag, False, {"skips": {
            "noncontiguous": "offset2bag's length depends on the table's layout in PyTorch "
                             "(empty on its fast path, a row-contiguous float32 table)"}}),
        ("bilinear", _bilinear, False, {}),
        ("pairwise_distance", _pair, False, {}),
        ("cosine_similarity", _cosine_similarity, False, {}),
        ("pdist", _pdist, False, {}),
        ("pixel_shuffle", _pixel_shuffle, False, {}),
        ("pixel_unshuffle", _pixel_unshuffle, False, {}),
        ("channel_shuffle", _channel_shuffle, False, {}),
        ("native_channel_shuffle", _channel_shuffle, False, {}),
        ("constant_pad_nd", _constant_pad_nd, False, {}),
        ("grid_sampler", _grid_sampler(2), False, {}),
        ("grid_sampler_2d", _grid_sampler(2), False, {}),
        ("grid_sampler_3d", _grid_sampler(3), False, {}),
        ("affine_grid_generator", _affine_grid_generator, False, {}),
        ("binary_cross_entropy_with_logits", _bce_logits, False, {"skips": {
            "gradients": "torch has no derivative for weight and pos_weight and refuses them "
                         "requiring grad (as ember does, tests/differential)"}}),
        ("cosine_embedding_loss", _cosine_embedding, False, {}),
        ("hinge_embedding_loss", _hinge_embedding, False, {}),
        ("kl_div", _kl_div, False, {}),
        ("margin_ranking_loss", _margin_ranking, False, {}),
        ("poisson_nll_loss", _poisson_nll, False, {}),
        ("triplet_margin_loss", _triplet, False, {}),
        ("ctc_loss", _ctc, False, {"skips": {
            "gradients": "the gradient assumes normalised log-probabilities (as PyTorch's "
                         "does), which finite differences leave; test_gradients_match_torch "
                         "checks it"}}),
        ("lstm_cell", _cell(4, pair=True), False, {}),
        ("gru_cell", _cell(3), False, {}),
        ("rnn_tanh_cell", _cell(1), False, {}),
        ("rnn_relu_cell", _cell(1), False, {}),
        ("lstm", _rnn(4, pair=True), False, {"skips": _NO_GRADGRAD}),
        ("gru", _rnn(3), False, {"skips": _NO_GRADGRAD}),
        ("rnn_tanh", _rnn(1), False, {"skips": _NO_GRADGRAD}),
        ("rnn_relu", _rnn(1), False, {"skips": _NO_GRADGRAD}),
    ]
]
